"""rundir.state: the one reading of a run folder that the loop, the sweep and the writer share."""
from __future__ import annotations

from pathlib import Path

from simpe.rundir import layout
from simpe.rundir.state import RunState, foreign_message, state
from simpe.rundir.writer import RunDir
from simpe.sweep import RunSpec
from simpe.sweep import state as sweep_state


def test_each_state(tmp_path: Path):
    run = tmp_path / "group" / "full"
    assert state(run) is RunState.EMPTY  # no folder
    run.mkdir(parents=True)
    (run / layout.LOCK_FILE).write_text("")
    assert state(run) is RunState.EMPTY  # a lock alone: nothing to resume (the sweep and RunDir used to disagree)
    (run / layout.CONFIG_FILE).write_text("adapter: full\n")
    assert state(run) is RunState.INCOMPLETE
    (run / layout.DONE_FILE).write_text("")
    assert state(run) is RunState.COMPLETE
    (run / "notes.txt").write_text("mine")
    assert state(run) is RunState.FOREIGN
    assert "(notes.txt); --overwrite removes only a run" in foreign_message(run)


def test_the_sweep_and_the_writer_read_a_lock_alone_as_empty(tmp_path: Path):
    run = tmp_path / "group" / "full"
    run.mkdir(parents=True)
    (run / layout.LOCK_FILE).write_text("")
    assert RunDir.check(run, resume=False, overwrite=False) is False  # nothing to resume
    assert sweep_state(RunSpec("full", [], "full", run, None)) == "new"
