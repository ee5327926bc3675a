"""A ``simpe serve`` project: one stream, one model, one preset, and the translators who post-edit it.

A project is a folder (``projects/<name>/`` by default) holding ``project.json``: the preset, the config overrides
that pick the stream and the model (``--dataset``, ``--segments``, ``--set ...`` as ``simpe simulate`` takes them),
the address the server listens on (``host``, ``port``: ``serve init --host/--port``, what ``serve run`` uses and
what the printed links show), the glossary the workbench highlights (``glossary``: ``serve init --glossary FILE``,
copied into the project folder and checked there with ``simpe.terms.glossary.load_glossary``), and each
translator's name with the SHA-256 of their access token. The token itself is
printed once, when it is made, and never stored: a lost token is replaced (``simpe serve token``), not recovered. A
token is 32 random bytes, so a plain hash is enough (a slow password hash protects guessable secrets; these are not).
A running server reads the hashes again whenever ``project.json`` changes (``Project.translator_of``), so a replaced
token stops working at once.

Each translator's work is one run folder in the run format (``simpe.rundir``), in the group of the project's
stream, named ``<preset>@<translator>``: ``simpe compare`` and ``simpe report`` put it beside the simulated runs of
the same segments. This module builds the translators' run configs; it does not load models or serve anything.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.config.files import load_config
from simpe.config.tree import RunConfig
from simpe.errors import ConfigError
from simpe.rundir.writer import write_text_atomic
from simpe.serve.bind import DEFAULT_HOST, DEFAULT_PORT, address, check_port, is_loopback

logger = logging.getLogger(__name__)

PROJECT_FILE = "project.json"
XLIFF_FILE = "source.xlf"  # the CAT tool's file a project was made from (serve init --xliff), kept as given
FORMAT = "simpe-serve-project/1"
TRANSLATOR_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")  # also a part of a run folder's name
# A person's run takes no ranking snapshots (an exact top-k search would stall the page for seconds) and saves its
# state after every segment (nothing submitted may be lost); under the interactive protocol the person's own effort
# is logged at character level (KSMR: keystrokes and clicks over the post-edit's characters).
HUMAN_SETTINGS = ["snapshots.every=0", "checkpoint_every=1"]


def new_token() -> str:
    """A fresh access token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The SHA-256 (hex) under which a token is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_translator_name(name: str) -> str:
    if not isinstance(name, str) or not TRANSLATOR_NAME.fullmatch(name):
        raise ConfigError(f"translator name {name!r} is not valid: 1 to 40 lower-case letters, digits, '_' or '-', "
                          "starting with a letter or digit")
    return name


@dataclass
class Project:
    """What ``project.json`` holds (``FORMAT``); ``folder``: where it was read from (``load``), whose file
    ``translator_of`` reads again when it changes."""

    name: str
    preset: str
    overrides: list[str]
    translators: dict[str, str] = field(default_factory=dict)  # name -> sha256 of the token
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    glossary: str | None = None  # the glossary's file name inside the project folder
    folder: Path | None = field(default=None, compare=False, repr=False)
    _seen: Any = field(default=None, compare=False, repr=False)  # project.json's (inode, size, mtime) when read
    _lock: Any = field(default_factory=threading.Lock, compare=False, repr=False)

    @property
    def address(self) -> str:
        """Where the project is served and its links point: ``http://127.0.0.1:8765/`` (https beyond this machine,
        where the server requires TLS)."""
        return address(self.host, self.port, not is_loopback(self.host))

    @property
    def glossary_path(self) -> Path | None:
        return None if self.glossary is None or self.folder is None else self.folder / self.glossary

    def link(self, token: str) -> str:
        return f"{self.address}#token={token}"

    def run_config(self, translator: str) -> RunConfig:
        """The run config of ``translator``'s work: the preset with the project's overrides, then ``HUMAN_SETTINGS``,
        named ``<preset>@<translator>``."""
        check_translator_name(translator)
        cfg = load_config(self.preset, [*self.overrides, *HUMAN_SETTINGS])
        extra = [f"adapter={cfg.adapter}@{translator}"]
        if cfg.protocol.name == "interactive":
            extra.append("protocol.level=char")
        return load_config(self.preset, [*self.overrides, *HUMAN_SETTINGS, *extra])

    def refresh(self) -> None:
        """Read the token hashes again when ``project.json`` changed since it was read (``simpe serve token`` on a
        running server). A file that no longer reads as a project refuses every token until it does (logged)."""
        if self.folder is None:
            return
        path = self.folder / PROJECT_FILE
        with self._lock:
            try:
                info = path.stat()
                seen = (info.st_ino, info.st_size, info.st_mtime_ns)
            except OSError:
                seen = None
            if seen == self._seen:
                return
            try:
                translators = load(self.folder).translators
            except (ConfigError, OSError) as err:
                logger.error("%s; every token is refused until it is repaired", err)
                translators = {}
            if translators != self.translators:
                logger.info("%s changed: the tokens of %s", path, ", ".join(sorted(translators)) or "nobody")
            self.translators, self._seen = translators, seen

    def translator_of(self, token: str) -> str | None:
        """The translator whose token this is (None: nobody's), as ``project.json`` says now (``refresh``); compares
        every stored hash in constant time."""
        self.refresh()
        digest = token_hash(token)
        found = None
        for name, stored in self.translators.items():
            if hmac.compare_digest(digest, stored):
                found = name
        return found

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "name": self.name, "preset": self.preset, "overrides": list(self.overrides),
                "host": self.host, "port": self.port, "translators": dict(self.translators),
                **({"glossary": self.glossary} if self.glossary else {})}


def project_dir(projects_dir: Path, name: str) -> Path:
    if not isinstance(name, str) or not TRANSLATOR_NAME.fullmatch(name):
        raise ConfigError(f"project name {name!r} is not valid: 1 to 40 lower-case letters, digits, '_' or '-'")
    return Path(projects_dir) / name


def stream_languages(cfg: RunConfig) -> tuple[str, str]:
    """The (source, target) languages of a run config's dataset (built, not loaded)."""
    from simpe.datasets import DATASETS

    dataset = DATASETS.build(cfg.data.name, **cfg.data.params)
    return getattr(dataset, "src_lang", "en"), getattr(dataset, "tgt_lang", cfg.metrics.lang)


def create(projects_dir: Path, name: str, preset: str, overrides: list[str], translators: list[str],
           host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, glossary: Path | None = None,
           xliff: Path | None = None) -> tuple[Project, dict[str, str]]:
    """Make project ``name``, served on ``host``:``port``, and a token per translator; return it and the tokens
    (shown once, stored hashed).

    Every translator's run config is built here, and the glossary read, so a bad preset, override, name or glossary
    is refused before anything is written. ``glossary`` is copied into the project folder; so is ``xliff`` (a CAT
    tool's file: the project's stream is its segments, ``simpe.datasets.xliff``, and ``simpe serve export`` writes
    the translators' post-edits into a copy of it)."""
    folder = project_dir(projects_dir, name)
    if (folder / PROJECT_FILE).exists():
        raise ConfigError(f"project {name!r} exists ({folder / PROJECT_FILE}); serve it, or give new tokens with "
                          f"simpe serve token {name} TRANSLATOR")
    if not translators:
        raise ConfigError("a project needs at least one translator (--translators alice bob)")
    if len(set(translators)) != len(translators):
        raise ConfigError(f"translator names repeat: {' '.join(translators)}")
    check_port(port)
    xliff_text, xliff_languages = None, None
    if xliff is not None:
        from simpe.datasets.xliff import read_xliff

        read_xliff(xliff)  # DataError naming the file
        from simpe.datasets.xliff import XliffDataset

        languages = XliffDataset(str(xliff), targets="optional")
        xliff_languages = (languages.src_lang, languages.tgt_lang)
        xliff_text = Path(xliff).read_bytes()
        copied = (folder / XLIFF_FILE).resolve()
        overrides = ["data.name=xliff", f"data.params.path={copied}", "data.params.targets=optional", *overrides]
    project = Project(name, preset, list(overrides), host=host, port=port)
    for translator in translators:
        cfg = project.run_config(translator)  # checks the name, the preset and the overrides
    from simpe.datasets.languages import check_languages

    check_languages(cfg, languages if xliff is not None else None)  # the stream's languages are the model's
    text = None
    if glossary is not None:
        from simpe.terms.glossary import glossary_format, load_glossary

        load_glossary(glossary, *(xliff_languages or stream_languages(cfg)))  # DataError naming the file and the line
        text = Path(glossary).read_bytes()
        project.glossary = f"glossary.{glossary_format(glossary)}"
    tokens = {translator: new_token() for translator in translators}
    project.translators = {translator: token_hash(token) for translator, token in tokens.items()}
    if text is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / project.glossary).write_bytes(text)
    if xliff_text is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / XLIFF_FILE).write_bytes(xliff_text)
    save(folder, project)
    project.folder = folder
    return project, tokens


def reissue(projects_dir: Path, name: str, translators: list[str]) -> dict[str, str]:
    """New tokens for ``translators`` (added when new): the old tokens stop working, on a running server too (it
    reads ``project.json`` again when it changes). Returns the new tokens."""
    folder = project_dir(projects_dir, name)
    project = load(folder)
    tokens = {}
    for translator in translators:
        project.run_config(translator)
        tokens[translator] = new_token()
        project.translators[translator] = token_hash(tokens[translator])
    save(folder, project)
    return tokens


def save(folder: Path, project: Project) -> None:
    """Write ``project.json`` whole (a new file renamed over the old: a running server reads one or the other)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_text_atomic(folder / PROJECT_FILE, json.dumps(project.to_dict(), indent=1) + "\n")


def load(folder: Path) -> Project:
    """Read and check ``folder/project.json`` (ConfigError naming what is wrong)."""
    path = Path(folder) / PROJECT_FILE
    if not path.is_file():
        raise ConfigError(f"no project at {folder} ({PROJECT_FILE} is missing); create one with simpe serve init")
    try:
        info = path.stat()  # before reading: a change after it is seen by the next refresh
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ConfigError(f"{path} is not JSON ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{path} is not a simpe serve project (format {FORMAT})")
    overrides, translators = data.get("overrides"), data.get("translators")
    if not (isinstance(overrides, list) and all(isinstance(o, str) for o in overrides)):
        raise ConfigError(f"{path}: overrides must be a list of KEY=VALUE strings")
    if not (isinstance(translators, dict) and all(isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v)
                                                  for v in translators.values())):
        raise ConfigError(f"{path}: translators must map names to SHA-256 hex digests")
    for translator in translators:
        check_translator_name(translator)
    if not isinstance(data.get("preset"), str) or not isinstance(data.get("name"), str):
        raise ConfigError(f"{path}: name and preset must be strings")
    host, port = data.get("host", DEFAULT_HOST), data.get("port", DEFAULT_PORT)  # projects made before: the defaults
    if not isinstance(host, str) or not host or not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ConfigError(f"{path}: host must be an address and port a number from 1 to 65535, got {host!r}, {port!r}")
    glossary = data.get("glossary")
    if glossary is not None and (not isinstance(glossary, str) or glossary not in ("glossary.tsv", "glossary.tbx")):
        raise ConfigError(f"{path}: glossary must be glossary.tsv or glossary.tbx (a file in the project folder), got {glossary!r}")
    return Project(data["name"], data["preset"], overrides, translators, host=host, port=port, glossary=glossary,
                   folder=Path(folder),
                   _seen=(info.st_ino, info.st_size, info.st_mtime_ns))
