"""``simpe serve run`` with a stall, for the kill-and-restart tests (tests/integration/test_serve.py); not a test.

``SIMPE_TEST_STALL=update:K`` stops the server for good right after its K-th update of the model (the weights have
moved, nothing of the segment is recorded yet); ``checkpoint:K`` at its K-th checkpoint, after the segment's
record was appended and before the state after the update is saved; ``journal:K`` right after its K-th workbench
event (a revision, a comment, a flag; drafts not counted) is written and synced, before it is answered. At the stall the server writes
``SIMPE_TEST_MARKER`` and sleeps until the test kills it (SIGKILL).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def _stalling(function, at: int):
    calls = 0

    def wrapped(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == at and function.__name__ == "save_checkpoint":  # before the checkpoint is written
            _stall()
        out = function(*args, **kwargs)
        if calls == at:  # after the update
            _stall()
        return out

    wrapped.__name__ = function.__name__
    return wrapped


def _stall() -> None:
    Path(os.environ["SIMPE_TEST_MARKER"]).write_text("stalled\n")
    time.sleep(3600)


def main() -> int:
    where, _, at = os.environ.get("SIMPE_TEST_STALL", "").partition(":")
    if where == "update":
        import simpe.loop.segment  # the update SegmentSteps.finish_segment calls

        simpe.loop.segment.update = _stalling(simpe.loop.segment.update, int(at))
    elif where == "checkpoint":
        from simpe.rundir.writer import RunDir

        RunDir.save_checkpoint = _stalling(RunDir.save_checkpoint, int(at))
    elif where == "journal":  # drafts, saved as the translator types, are not counted
        from simpe.serve.events import Journal

        stalling, plain_append = _stalling(Journal.append, int(at)), Journal.append
        Journal.append = lambda self, event: (plain_append(self, event) if event.get("event") == "draft"
                                              else stalling(self, event))
    from simpe.cli import main as cli

    return cli(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
