"""The web application of ``simpe serve``: a Starlette ASGI app, its routes and its guards.

Routes: ``GET /`` the page (static HTML; ``/static/page.js`` and ``/static/page.css`` beside it), ``GET
/api/segment`` the translator's current segment (``?index=N``: a submitted one), ``GET /api/segments`` the segment
list, ``POST /api/submit`` a post-edit, ``POST /api/revise`` a revision of a submitted segment, ``POST /api/note`` a
comment or a flag, ``POST /api/check`` the glossary terms a draft leaves out and its QA warnings, ``POST /api/draft``
what the translator typed and has not saved (kept as a draft event), ``POST /api/complete`` a completion of
a typed prefix (interactive protocol). The page carries no data: it fetches JSON and sets every text
with ``textContent``, so no text of a segment, a post-edit or a name is ever parsed as HTML.

Guards (``Guard``, in front of every route):

* the ``Host`` header must name this server (the bind address and port, or ``--allow-host``): a page of another site
  that rebinds its DNS name to 127.0.0.1 is refused;
* a request whose ``Origin`` is not this server's, or whose ``Sec-Fetch-Site`` says another site sent it, is refused;
* the token travels in the ``Authorization: Bearer`` header only (checked against ``project.json`` as it is now:
  ``simpe serve token`` on a running server takes effect at the next request) (no cookie: nothing another site can make the browser
  send), and the API answers no CORS preflight, so another site's script cannot send one;
* request bodies are limited to ``MAX_BODY`` bytes and ``MAX_DEPTH`` levels of nesting, and must be JSON; every field
  is checked (``simpe.serve.keylog``);
* every answer carries a strict Content-Security-Policy (scripts and styles from this server only, no framing),
  ``nosniff``, ``no-referrer`` and ``no-store``.

The model work runs in worker threads (``run_in_threadpool``), one translator at a time per translator.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from simpe.errors import DataError, RunDirError
from simpe.serve.keylog import check_draft, check_index, check_note, check_submission, check_text
from simpe.serve.project import Project
from simpe.serve.session import TranslatorSession

logger = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY = 512 * 1024  # bytes of a request body: a post-edit and a long key log fit many times over
MAX_DEPTH = 16  # JSON nesting of a request body: a submission's key log is 3 deep ({"keys": [[ms, op, arg]]})
JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def check_depth(body: bytes) -> None:
    """Refuse (DataError) a body whose JSON nests deeper than ``MAX_DEPTH``, before parsing it: the parser recurses
    once per level, and a body nested 100,000 deep ends in a RecursionError (brackets inside strings are text)."""
    depth = 0
    for bracket in re.findall(rb"[\[\]{}]", JSON_STRING.sub(b"", body)):
        depth += 1 if bracket in b"[{" else -1
        if depth > MAX_DEPTH:
            raise DataError(f"the request body nests JSON deeper than {MAX_DEPTH} levels")
HEADERS = [
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                                 b"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
STATIC_FILES = {"/": ("page.html", "text/html; charset=utf-8"), "/static/page.js": ("page.js", "text/javascript; charset=utf-8"),
                "/static/page.css": ("page.css", "text/css; charset=utf-8")}


class Guard:
    """ASGI middleware: host, origin and size checks, and the security headers (module docstring)."""

    def __init__(self, app: Any, hosts: set[str], origins: set[str]) -> None:
        self.app, self.hosts, self.origins = app, {h.lower() for h in hosts}, {o.lower() for o in origins}

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

        async def send_guarded(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        refusal = self.refusal(scope, headers)
        if refusal is not None:
            status, text = refusal
            logger.warning("refused %s %s: %s", scope.get("method"), scope.get("path"), text)
            await JSONResponse({"error": text}, status_code=status)(scope, receive, send_guarded)
            return
        body = b""
        if scope.get("method") == "POST":  # read the body here, within the limit, and hand it on
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                body += message.get("body", b"")
                if len(body) > MAX_BODY:
                    await JSONResponse({"error": f"the request is larger than {MAX_BODY} bytes"},
                                       status_code=413)(scope, receive, send_guarded)
                    return
                if not message.get("more_body"):
                    break
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send_guarded)

    def refusal(self, scope: dict, headers: dict[str, str]) -> tuple[int, str] | None:
        """(status, reason) when the request must not reach the app, else None."""
        if headers.get("host", "").lower() not in self.hosts:
            return 421, "this server does not answer for that host name"
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return 403, "cross-site requests are refused"
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return 403, "cross-site requests are refused"
        if scope.get("method") not in ("GET", "HEAD", "POST"):
            return 405, "only GET and POST are answered"
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return 413, f"the request is larger than {MAX_BODY} bytes"
        return None


def create_app(project: Project, sessions: dict[str, TranslatorSession], hosts: set[str], origins: set[str]) -> Any:
    """The ASGI app serving ``sessions`` (one per translator of ``project``), behind ``Guard``."""
    files = {path: ((STATIC / name).read_bytes(), kind) for path, (name, kind) in STATIC_FILES.items()}

    async def static(request: Request) -> Response:
        content, kind = files[request.url.path]
        return Response(content, media_type=kind.split(";")[0], headers={"content-type": kind})

    def session_of(request: Request) -> TranslatorSession:
        auth = request.headers.get("authorization", "")
        scheme, _, token = auth.partition(" ")
        name = project.translator_of(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
        if name is not None and name not in sessions:  # added by simpe serve token while this server runs
            raise PermissionError(f"{name} joined the project after the server started; it serves them once it is "
                                  "started again")
        if name is None:
            raise PermissionError
        return sessions[name]

    async def body_of(request: Request) -> Any:
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            raise DataError("send JSON (Content-Type: application/json)")
        body = await request.body()
        check_depth(body)
        try:
            return json.loads(body)
        except RecursionError:  # check_depth counts brackets; this is its backstop
            raise DataError(f"the request body nests JSON deeper than {MAX_DEPTH} levels") from None
        except ValueError:
            raise DataError("the request body is not JSON") from None

    def answer(handler: Callable) -> Callable:
        async def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(await handler(request))
            except PermissionError as err:
                return JSONResponse({"error": str(err) or "unknown or missing token; open the link you were given"},
                                    status_code=401)
            except DataError as err:
                return JSONResponse({"error": str(err)}, status_code=400)
            except RunDirError as err:  # e.g. a full disk: the page keeps the post-edit; the journal holds it
                logger.error("%s", err)
                return JSONResponse({"error": "the server could not record this; try again later"}, status_code=503)
            except Exception:  # noqa: BLE001 (one line to the page, the traceback to the server's log)
                logger.exception("%s %s failed", request.method, request.url.path)
                return JSONResponse({"error": "the server failed; try again later"}, status_code=500)
        return endpoint

    async def segment(request: Request) -> dict[str, Any]:
        session = session_of(request)
        index = request.query_params.get("index")
        if index is not None and not (index.isascii() and index.isdigit() and len(index) < 10):
            raise DataError("index must be a whole number >= 0")
        return await run_in_threadpool(session.view, None if index is None else int(index))

    async def segments(request: Request) -> dict[str, Any]:
        session = session_of(request)
        return await run_in_threadpool(session.segments)

    async def revise(request: Request) -> dict[str, Any]:
        session = session_of(request)
        index, post_edit, human = check_submission(await body_of(request))
        return await run_in_threadpool(session.revise, index, post_edit, human)

    async def note(request: Request) -> dict[str, Any]:
        session = session_of(request)
        index, comment, flagged = check_note(await body_of(request))
        return await run_in_threadpool(session.note, index, comment, flagged)

    async def check(request: Request) -> dict[str, Any]:
        session = session_of(request)
        data = await body_of(request)
        if not isinstance(data, dict) or set(data) != {"index", "text"}:
            raise DataError("a check request holds index and text")
        index, text = check_index(data["index"]), check_text(data["text"], "text", allow_empty=True)
        return await run_in_threadpool(session.check, index, text)

    async def submit(request: Request) -> dict[str, Any]:
        session = session_of(request)
        index, post_edit, human = check_submission(await body_of(request))
        return await run_in_threadpool(session.submit, index, post_edit, human)

    async def draft(request: Request) -> dict[str, Any]:
        session = session_of(request)
        index, text, human = check_draft(await body_of(request))
        return await run_in_threadpool(session.save_draft, index, text, human)

    async def complete(request: Request) -> dict[str, Any]:
        session = session_of(request)
        data = await body_of(request)
        if not isinstance(data, dict) or set(data) != {"index", "prefix"}:
            raise DataError("a completion request holds index and prefix")
        index, prefix = check_index(data["index"]), check_text(data["prefix"], "prefix", allow_empty=True)
        return {"index": index, "prefix": prefix, "completion": await run_in_threadpool(session.complete, index, prefix)}

    routes = [Route(path, static, methods=["GET", "HEAD"]) for path in files]
    routes += [Route("/api/segment", answer(segment), methods=["GET"]),
               Route("/api/segments", answer(segments), methods=["GET"]),
               Route("/api/submit", answer(submit), methods=["POST"]),
               Route("/api/revise", answer(revise), methods=["POST"]),
               Route("/api/note", answer(note), methods=["POST"]),
               Route("/api/check", answer(check), methods=["POST"]),
               Route("/api/draft", answer(draft), methods=["POST"]),
               Route("/api/complete", answer(complete), methods=["POST"])]
    return Guard(Starlette(routes=routes), hosts, origins)
