"""Starting ``simpe serve``: one session per translator, and uvicorn.

Every translator's session is opened before the first request (their models load, their runs resume), so a bad
project fails at the start, not at a translator's first click. The bind rules are ``simpe.serve.bind``'s.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError
from simpe.serve import project as projects
from simpe.serve.app import create_app
from simpe.serve.bind import DEFAULT_HOST, DEFAULT_PORT, allowed_names, check_bind, link
from simpe.serve.session import TranslatorSession

logger = logging.getLogger(__name__)

def open_sessions(project: projects.Project) -> dict[str, TranslatorSession]:
    """One opened session per translator (models loaded, runs resumed)."""
    sessions = {name: TranslatorSession(project.run_config(name), name) for name in project.translators}
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


def serve(folder: Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, tls_cert: Path | None = None,
          tls_key: Path | None = None, allow_hosts: list[str] | None = None, tokens: dict[str, str] | None = None) -> None:
    """Serve the project in ``folder`` until interrupted; ``tokens`` (new ones) are printed as links once it listens."""
    import uvicorn

    check_bind(host, tls_cert, tls_key)
    if not 0 < port < 65536:
        raise ConfigError(f"--port must be from 1 to 65535, got {port}")
    project = projects.load(folder)
    tls = tls_cert is not None
    hosts, origins = allowed_names(host, port, tls, list(allow_hosts or []))
    sessions = open_sessions(project)
    app = create_app(project, sessions, hosts, origins)
    for name, token in (tokens or {}).items():
        print(f"{name}: {link(host, port, tls, token)}")
    print(f"serving project {project.name} on {'https' if tls else 'http'}://{host}:{port}/ (Ctrl+C stops; every "
          "submitted post-edit is already on disk)", flush=True)
    kwargs: dict[str, Any] = {"ssl_certfile": str(tls_cert), "ssl_keyfile": str(tls_key)} if tls else {}
    try:
        uvicorn.run(app, host=host.strip("[]"), port=port, log_level="warning", access_log=False, server_header=False,
                    proxy_headers=False, timeout_keep_alive=5, **kwargs)
    finally:
        for session in sessions.values():
            session.close()
