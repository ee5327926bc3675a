"""Logging setup: terse INFO on the console, DEBUG with timestamps in a run's log.txt.

Only ``simpe.cli`` calls ``setup``; every module uses ``logging.getLogger(__name__)``.
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

_FILE_HANDLER: logging.Handler | None = None
_GROUP_HANDLERS: list[logging.Handler] = []  # a lockstep group's runs' log files (add_files)
_RUN: contextvars.ContextVar[int | None] = contextvars.ContextVar("simpe_log_run", default=None)
_VERBOSE = False


def is_verbose() -> bool:
    """The console shows DEBUG (``simpe -v``): third-party start-up chatter (Ray's) may show too."""
    return _VERBOSE


def setup(verbose: bool = False) -> None:
    """Configure the console handler (INFO, or DEBUG with ``verbose``) and quiet noisy libraries."""
    global _VERBOSE
    _VERBOSE = verbose
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    console = logging.StreamHandler()
    console.setLevel(logging.DEBUG if verbose else logging.INFO)
    console.setFormatter(logging.Formatter("%(message)s" if not verbose else "%(levelname)s %(name)s: %(message)s"))
    root.addHandler(console)
    root.setLevel(logging.DEBUG)
    quiet()


def quiet() -> None:
    """Silence third-party chatter (transformers, Lightning, COMET) that would bury simpe's output."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for name in ("transformers", "pytorch_lightning", "lightning", "lightning.pytorch", "comet", "urllib3",
                 "matplotlib", "PIL", "filelock", "fsspec", "huggingface_hub", "torch"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*generation flags are not valid.*")
    warnings.filterwarnings("ignore", category=FutureWarning)


class _LogFile(logging.FileHandler):
    """A run's log.txt: a failed write (a full disk) is dropped silently; the run writer reports it in one line."""

    def handleError(self, record: logging.LogRecord) -> None:
        pass

    def close(self) -> None:
        try:
            super().close()
        except OSError:
            pass


def add_file(path: Path) -> None:
    """Also log DEBUG with timestamps to ``path`` (a run's log.txt); replaces an earlier file."""
    global _FILE_HANDLER
    root = logging.getLogger()
    remove_file()
    handler = _LogFile(path, encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    _FILE_HANDLER = handler


def remove_file() -> None:
    global _FILE_HANDLER
    if _FILE_HANDLER is not None:
        logging.getLogger().removeHandler(_FILE_HANDLER)
        _FILE_HANDLER.close()
        _FILE_HANDLER = None
    for handler in _GROUP_HANDLERS:
        logging.getLogger().removeHandler(handler)
        handler.close()
    _GROUP_HANDLERS.clear()


def add_files(paths: list[Path]) -> None:
    """A lockstep group's log files (replacing any earlier ones): a line logged inside ``for_run(i)`` goes to
    ``paths[i]`` only, a line of the group's shared work to every file."""
    remove_file()
    root = logging.getLogger()
    for number, path in enumerate(paths):
        handler = _LogFile(path, encoding="utf-8")
        handler.setLevel(logging.DEBUG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.addFilter(lambda record, number=number: _RUN.get() in (None, number))
        root.addHandler(handler)
        _GROUP_HANDLERS.append(handler)


def remove_run_file(number: int) -> None:
    """Stop writing the log file of the group's run ``number`` (the run failed and leaves the group; its folder may be
    removed); ``remove_file`` still ends the others."""
    if number < len(_GROUP_HANDLERS):
        handler = _GROUP_HANDLERS[number]
        logging.getLogger().removeHandler(handler)
        handler.close()


@contextlib.contextmanager
def for_run(number: int) -> Iterator[None]:
    """Lines logged inside go to the log file of the group's run ``number`` only (``add_files``)."""
    token = _RUN.set(number)
    try:
        yield
    finally:
        _RUN.reset(token)
