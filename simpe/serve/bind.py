"""Where ``simpe serve`` listens and which names it answers for (no web framework imported: the CLI reads it).

The server binds to 127.0.0.1 unless ``--host`` names another address, and then only with ``--tls-cert`` and
``--tls-key`` (post-edits and tokens would otherwise cross a network in clear text). The names the browsers may use
(the ``Host`` and ``Origin`` the guards of ``simpe.serve.app`` accept) are the bind address with its port,
``localhost`` and ``127.0.0.1`` for a loopback bind, and each ``--allow-host``.
"""
from __future__ import annotations

import ipaddress
from pathlib import Path

from simpe.errors import ConfigError

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8765


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, tls_cert: Path | None, tls_key: Path | None) -> None:
    """Refuse a bind beyond this machine without TLS, and TLS settings that are half there or missing."""
    if (tls_cert is None) != (tls_key is None):
        raise ConfigError("--tls-cert and --tls-key go together")
    for flag, path in (("--tls-cert", tls_cert), ("--tls-key", tls_key)):
        if path is not None and not Path(path).is_file():
            raise ConfigError(f"{flag} {path} is not a file")
    if not is_loopback(host) and tls_cert is None:
        raise ConfigError(f"--host {host} would serve beyond this machine; give --tls-cert and --tls-key (post-edits and "
                          "tokens must not cross a network in clear text), or leave --host out (127.0.0.1)")


def allowed_names(host: str, port: int, tls: bool, allow_hosts: list[str]) -> tuple[set[str], set[str]]:
    """(Host header values, Origin values) the guards accept."""
    names = {host, *allow_hosts}
    if is_loopback(host):
        names |= {"127.0.0.1", "localhost"}
    scheme = "https" if tls else "http"
    hosts = set()
    for name in names:
        name = f"[{name}]" if ":" in name and not name.startswith("[") else name  # an IPv6 address
        hosts.add(f"{name}:{port}")
        if port == (443 if tls else 80):
            hosts.add(name)
    return hosts, {f"{scheme}://{h}" for h in hosts}


def link(host: str, port: int, tls: bool, token: str) -> str:
    """A translator's link: the token travels in the fragment, which the browser never sends to a server."""
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host  # an IPv6 address
    return f"{'https' if tls else 'http'}://{host}:{port}/#token={token}"
