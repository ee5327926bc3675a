"""Whether a run folder may be resumed: by these settings (its config.yaml), in this environment (its env.json), and
not by another process (``RunDir.check``). Asked before the model loads."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from simpe.config.files import load_saved_config, resume_difference
from simpe.config.tree import RunConfig
from simpe.errors import ConfigError, RunDirError
from simpe.rundir import layout
from simpe.rundir.env import env_changes
from simpe.rundir.state import RunState, state
from simpe.rundir.writer import RunDir


def check_resumable(path: Path, cfg: RunConfig, resume: bool, overwrite: bool, resume_anyway: bool,
                    environment: Callable[[], dict[str, Any]]) -> list[str]:
    """Refuse a run folder ``path`` that cannot be written or resumed with ``cfg``, or (without ``resume_anyway``) in
    another environment than the one it ran in (``simpe.rundir.env.RECORD_ENV``; ``environment()``: this one's).
    Returns the environment's changes that a resume anyway goes on with (none for a new run).

    A folder that holds a run of other settings (its config.yaml) is refused without advising ``--overwrite``, which
    would delete that run: this run needs its own name (``--set adapter=NAME``) or another runs folder."""
    if not overwrite:
        _refuse_other_settings(path, cfg)
    if not RunDir.check(path, resume, overwrite):
        return []
    changes: list[str] = []
    env_file = path / layout.ENV_FILE
    if env_file.exists():
        try:
            saved_env = json.loads(env_file.read_text(encoding="utf-8"))
        except ValueError as err:
            raise RunDirError(f"{env_file} is not JSON ({err}); pass --overwrite to start the run again") from None
        changes = env_changes(saved_env if isinstance(saved_env, dict) else {}, environment())
        if changes and not resume_anyway:
            raise RunDirError(f"{path} ran in another environment: {'; '.join(changes)}; its records "
                              "would differ from an uninterrupted run's. Resume where it ran, or pass --resume-anyway "
                              "to go on and record the change in env.json and the summary")
    saved_file = path / layout.CONFIG_FILE
    if not saved_file.exists():
        return changes  # interrupted before the config was written: nothing to compare
    try:
        saved = load_saved_config(saved_file)
    except ConfigError as err:
        raise RunDirError(f"{saved_file} cannot be read ({err}); pass --overwrite to start the run again") from None
    differs = resume_difference(saved, cfg)
    if differs:
        raise RunDirError(f"{path}: setting {differs} differs from the run's config.yaml; resume with the same "
                          f"settings (e.g. simpe simulate --config {saved_file} --resume), or give this run its own name "
                          f"(--set adapter=NAME)")
    return changes


def _refuse_other_settings(path: Path, cfg: RunConfig) -> None:
    """RunDirError when ``path`` holds a run (complete or not) whose readable config.yaml differs from ``cfg`` in a
    setting that matters to its records: another run, which --overwrite would delete."""
    found = state(path)
    saved_file = path / layout.CONFIG_FILE
    if found not in (RunState.COMPLETE, RunState.INCOMPLETE) or not saved_file.is_file():
        return
    try:
        differs = resume_difference(load_saved_config(saved_file), cfg)
    except ConfigError:
        return  # unreadable: RunDir.check and the resume's own reading name it
    if differs:
        how = "" if found is RunState.COMPLETE else f"; to continue that run: simpe simulate --config {saved_file} --resume"
        raise RunDirError(f"{path} holds a {found.value} run of other settings ({differs}); give this run its own name "
                          f"(--set adapter=NAME) or another --runs-dir (--overwrite would delete that run){how}")
