"""The one answer to "what does this run folder hold?", for the loop, the sweep and the writer.

- ``EMPTY``: no folder, or a folder with nothing in it but a lock file (a run that died before it
  wrote anything, or a probe): a run may start there.
- ``INCOMPLETE``: a run's files without ``DONE``: resume it, or start again with ``--overwrite``.
- ``COMPLETE``: ``DONE`` is there.
- ``FOREIGN``: the folder holds something that is not a run's file (a user's notes, another group's
  runs): simpe neither resumes, overwrites nor clears it.

Whether a complete run's settings match the ones asked for is the caller's question
(``sweep.state``, ``simpe.rundir.resume``): this module reads names, not configs.
"""
from __future__ import annotations

import enum
from pathlib import Path

from simpe.rundir import layout


class RunState(enum.Enum):
    EMPTY = "empty"
    INCOMPLETE = "incomplete"
    COMPLETE = "complete"
    FOREIGN = "foreign"


def foreign_files(path: Path) -> list[str]:
    """The names in folder ``path`` that no run writes, sorted."""
    return sorted(child.name for child in Path(path).iterdir() if not layout.is_run_file(child.name))


def state(path: Path) -> RunState:
    """What folder ``path`` holds (see the module docstring)."""
    path = Path(path)
    if not path.is_dir():
        return RunState.EMPTY
    names = {child.name for child in path.iterdir()}
    if foreign_files(path):
        return RunState.FOREIGN
    if not names - {layout.LOCK_FILE}:
        return RunState.EMPTY
    return RunState.COMPLETE if layout.DONE_FILE in names else RunState.INCOMPLETE


def foreign_message(path: Path) -> str:
    """The one-line refusal for a FOREIGN folder, naming (up to three of) the files that are not a run's."""
    foreign = foreign_files(path)
    return (f"{path} holds files that are not a simpe run's ({', '.join(foreign[:3])}{', …' if len(foreign) > 3 else ''}); "
            "--overwrite removes only a run and --resume continues only one, so nothing was touched: move them away "
            "or choose another --runs-dir")
