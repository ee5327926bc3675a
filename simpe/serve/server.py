"""Starting ``simpe serve``: one session per translator, and uvicorn.

The socket is bound first (``simpe.serve.bind.listen``: a port in use or an address that is not this machine's is
one line, exit 2, before anything loads); then every translator's session is opened before the first request (their
models load, their runs resume), so a bad project fails at the start, not at a translator's first click; then
uvicorn serves on the socket. The bind rules are ``simpe.serve.bind``'s.
"""
from __future__ import annotations

import logging
import socket
from pathlib import Path
from typing import Any

from simpe.serve import project as projects
from simpe.serve.app import create_app
from simpe.serve.bind import DEFAULT_HOST, DEFAULT_PORT, address, allowed_names, check_bind, check_tls, link, listen
from simpe.serve.session import TranslatorSession

logger = logging.getLogger(__name__)

def open_sessions(project: projects.Project, lookups: bool = True) -> dict[str, TranslatorSession]:
    """One opened session per translator (models loaded, runs resumed), sharing the project's glossary.

    ``lookups``: the workbench's matches and glossary hits in every view (False: ``serve run --no-lookups``)."""
    configs = {name: project.run_config(name) for name in project.translators}
    terms = None
    if project.glossary_path is not None and configs:
        from simpe.serve.lookup import Terms

        terms = Terms(project.glossary_path, *projects.stream_languages(next(iter(configs.values()))))
    sessions = {name: TranslatorSession(cfg, name, terms, lookups, project.folder) for name, cfg in configs.items()}
    opened: dict[str, TranslatorSession] = {}
    try:
        for name, session in sessions.items():
            session.open()
            opened[name] = session
    except BaseException:
        for session in opened.values():
            session.close()
        raise
    return opened


def check_start(host: str, port: int, tls_cert: Path | None, tls_key: Path | None) -> socket.socket:
    """Every startup check that needs no model, then the bound socket: the bind rules, the port, the certificate and
    key, the address (ConfigError, one line)."""
    check_bind(host, tls_cert, tls_key)
    check_tls(tls_cert, tls_key)
    return listen(host, port)


def serve(folder: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, tls_cert: Path | None = None,
          tls_key: Path | None = None, allow_hosts: list[str] | None = None, tokens: dict[str, str] | None = None,
          sock: socket.socket | None = None, lookups: bool = True) -> None:
    """Serve the project in ``folder`` until interrupted; ``tokens`` (new ones) are printed as links once it listens.

    ``sock``: the socket ``check_start`` bound (the caller checked before making tokens); else it is bound here,
    before the models load."""
    import uvicorn

    project = projects.load(folder)
    sock = sock if sock is not None else check_start(host, port, tls_cert, tls_key)
    try:
        tls = tls_cert is not None
        hosts, origins = allowed_names(host, port, tls, list(allow_hosts or []))
        sessions = open_sessions(project, lookups)
    except BaseException:
        sock.close()
        raise
    app = create_app(project, sessions, hosts, origins)
    for name, token in (tokens or {}).items():
        print(f"{name}: {link(host, port, tls, token)}")
    where = address(host, port, tls)
    if tokens is None and where != project.address:
        print(f"the links made by simpe serve init and simpe serve token point to {project.address}; this server is at "
              f"{where}: the translators open it with the same #token=... (without --host and --port, serve run "
              "listens where the links point)")
    print(f"serving project {project.name} on {where} (Ctrl+C stops; every submitted post-edit is already on disk)",
          flush=True)
    kwargs: dict[str, Any] = {"ssl_certfile": str(tls_cert), "ssl_keyfile": str(tls_key)} if tls else {}
    config = uvicorn.Config(app, host=host.strip("[]"), port=port, log_level="warning", access_log=False,
                            server_header=False, proxy_headers=False, timeout_keep_alive=5, **kwargs)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        for session in sessions.values():
            session.close()
