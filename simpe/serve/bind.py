"""Where ``simpe serve`` listens and which names it answers for (no web framework imported: the CLI reads it).

The server binds to 127.0.0.1 unless ``--host`` names another address, and then only with ``--tls-cert`` and
``--tls-key`` (post-edits and tokens would otherwise cross a network in clear text). The names the browsers may use
(the ``Host`` and ``Origin`` the guards of ``simpe.serve.app`` accept) are the bind address with its port,
``localhost`` and ``127.0.0.1`` for a loopback bind, and each ``--allow-host``.

Every startup error is found here, before a model loads: a bad bind (``check_bind``), a port out of range, a
certificate or key that does not load (``check_tls``), an address that cannot be bound, a port in use (``listen``
binds the socket that uvicorn then serves on). Each is a ``ConfigError``: one line, exit 2.
"""
from __future__ import annotations

import errno
import ipaddress
import socket
import ssl
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


def check_port(port: int) -> None:
    if not 0 < port < 65536:
        raise ConfigError(f"--port must be from 1 to 65535, got {port}")


def check_tls(tls_cert: Path | None, tls_key: Path | None) -> None:
    """Refuse a certificate and key that do not load together (not PEM, a key of another certificate, encrypted)."""
    if tls_cert is None or tls_key is None:
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(str(tls_cert), str(tls_key), password=lambda: b"")  # an encrypted key is refused
    except (ssl.SSLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", None) or getattr(err, "strerror", None) or str(err)
        raise ConfigError(f"--tls-cert {tls_cert} and --tls-key {tls_key} do not load as a PEM certificate and its "
                          f"unencrypted private key ({reason})") from None


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (uvicorn serves on it); ConfigError naming the address when it
    cannot be had: a name that does not resolve, an address not on this machine, a port in use or reserved."""
    check_port(port)
    address = host.strip("[]")
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as err:
        raise ConfigError(f"--host {host} is not an address or a name this machine resolves ({err})") from None
    family, kind, proto, _, where = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a restart right after a stop binds
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(where)
        sock.listen(2048)
    except OSError as err:
        sock.close()
        shown = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        if err.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} is in use on {address} (another server, or simpe serve already running); "
                              "stop it or choose another with --port") from None
        if err.errno == errno.EACCES:
            raise ConfigError(f"cannot listen on {shown}: permission denied (ports below 1024 need privileges); "
                              "choose another with --port") from None
        if err.errno == errno.EADDRNOTAVAIL:
            raise ConfigError(f"cannot listen on {shown}: --host {host} is not an address of this machine") from None
        raise ConfigError(f"cannot listen on {shown}: {err.strerror or err}") from None
    sock.set_inheritable(True)
    return sock


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


def address(host: str, port: int, tls: bool) -> str:
    """The server's address as a browser opens it: ``http://127.0.0.1:8765/``."""
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host  # an IPv6 address
    return f"{'https' if tls else 'http'}://{host}:{port}/"


def link(host: str, port: int, tls: bool, token: str) -> str:
    """A translator's link: the token travels in the fragment, which the browser never sends to a server."""
    return f"{address(host, port, tls)}#token={token}"
