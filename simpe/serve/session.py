"""One translator's work in ``simpe serve``: the loop of a simulation, with a person's post-edits.

A ``TranslatorSession`` owns one ``simpe.loop.run.Loop`` (its own model, method state and per-user store: two
translators never share adaptation) and that loop's run folder. It drives the loop from outside, one submission at a
time: ``Loop.translate`` shows segment i's hypothesis (θ(i-1)); the person's post-edit goes to ``Loop.learn``, which
scores and adapts exactly as a simulation does; ``RunDir`` writes the record and ``Loop.checkpoint_state`` the
resume state. The records are a run's records, plus ``human`` (editing time, keystroke counts, the compact key log).

Two references. The loop scores the shown translation against the person's post-edit (the record's ``reference``,
``metrics``, ``stats``, ``cumulative``: TER there is HTER). The session scores it a second time, with a scorer of the
same settings, against the stream's own reference, the one every simulated run of the group is scored against; that
part is the record's ``stream`` (``reference``, ``ref_tokens``, ``metrics``, ``stats``, ``cumulative``) and the
summary's ``stream`` (``corpus``, ``segment_comet``). ``simpe compare`` tables a person's run beside the simulated
runs with ``stream`` and keeps HTER and the effort apart (``simpe.report.people``).

The workbench. Besides the segment on screen (the loop's next), the translator may open any submitted segment and
revise it: the revision is an event of ``simpe.serve.events`` (the model is neither rolled back nor taught again;
the record keeps the version it learned from, ``human.version`` 1), and the latest version is the segment's final
post-edit. Each view carries the lookups of ``simpe.serve.lookup`` (fuzzy matches from the warm-start memory and
the translator's own final post-edits, glossary hits), unless the server runs without them (``lookups=False``:
``serve run --no-lookups``, what ``make bench-serve`` compares); comments and flags are events too.

Nothing submitted is lost. A submission is first written to ``state/pending.json`` and synced (fsync of the file
and its folder); then the loop learns, the record is appended and synced, and the checkpoint (the state after the
update) is written and synced; only then is the pending file removed and the answer sent. A process killed at any
point restarts from the last checkpoint (``Loop.restore``: the logs are cut back to it) and, when the pending
submission is for the segment after it, learns it again: every submitted segment is recorded exactly once, with the
model state an uninterrupted session has. This module knows nothing of HTTP.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

from simpe.config.tree import RunConfig
from simpe.datasets.xliff import PLACEHOLDER, check_tags, escape, is_tagged, placeholders, plain
from simpe.errors import DataError, RunDirError
from simpe.loop.interactive import Completer, Effort
from simpe.loop.protocols import Correction
from simpe.loop.run import Draft
from simpe.metrics.online import OnlineScorer
from simpe.model import model_folder
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl
from simpe.rundir.state import RunState, state
from simpe.rundir.writer import RunDir, write_text_atomic
from simpe.serve.events import Journal, final_versions, fsync_path
from simpe.serve.human import STREAM, HumanLoop
from simpe.serve.keylog import counts
from simpe.serve.lookup import Match, Terms, find_matches
from simpe.serve.workbench import latest_draft, qa_warnings, start_from_keys, start_of, xliff_notes

logger = logging.getLogger(__name__)

PENDING_FILE = "pending.json"  # inside the run's state/ folder (removed with it when the run is complete)
CONTEXT_BEFORE, CONTEXT_AFTER = 3, 2  # segments of the same document shown around the current one


def blank_tags(text: str) -> str:
    """``text`` with each inline tag's placeholder replaced by as many spaces (glossary matching, offsets kept)."""
    return PLACEHOLDER.sub(lambda m: " " * len(m.group(0)), text)


# The serve project of each person's run, in the run's group folder: {run folder name: project folder}. Kept beside the
# runs rather than in a run folder, whose files are the run format's (simpe.rundir.layout) and the same for every run.
OWNERS_FILE = "serve-projects.json"


def claim_run(run: Path, project: Path, translator: str, write: bool = True) -> None:
    """A person's run folder holds one project's work: its project's folder is noted in the group folder
    (``OWNERS_FILE``) when its session first opens, and another project whose translator of the same name post-edits
    the same stream with the same preset (the same run folder, ``simpe.loop.plan.run_path``) is refused in one line
    instead of resuming, and so mixing, the first project's work. A run from before the note is adopted.
    ``write=False``: check only (nothing written)."""
    run = Path(run)
    owners_file = run.parent / OWNERS_FILE
    try:
        owners = json.loads(owners_file.read_text(encoding="utf-8")) if owners_file.is_file() else {}
    except (OSError, ValueError) as err:
        raise RunDirError(f"{owners_file} does not read ({err}); it names the serve project of each person's run in "
                          "this group: restore it, or remove it to let the next project adopt the runs") from None
    owner, mine = owners.get(run.name), str(Path(project).resolve())
    if owner is not None and owner != mine:
        raise RunDirError(f"{translator}'s run folder {run} holds the work of another project ({owner}): name this "
                          "translator otherwise in this project (simpe serve token), or give the project its own runs "
                          "folder (--set runs_dir=DIR at simpe serve init)")
    if owner is None and write:
        write_text_atomic(owners_file, json.dumps({**owners, run.name: mine}, indent=1, sort_keys=True) + "\n")


class TranslatorSession:
    """One translator: the loop, its run folder, the segment on screen. Thread-safe (one lock per translator)."""

    def __init__(self, cfg: RunConfig, translator: str, terms: Terms | None = None, lookups: bool = True,
                 project: Path | None = None) -> None:
        """``terms``: the project's glossary (shared by its translators); ``lookups``: offer matches and glossary hits;
        ``project``: the project's folder, whose work the run folder holds (``claim_run``; None: not checked)."""
        self.translator = translator
        self.project = project
        self.terms, self.lookups = terms, lookups
        self.offered: dict[int, list[Match]] = {}  # the matches each segment's last view offered (what Ctrl+1-3 inserts)
        self.loop = HumanLoop(cfg, progress=False)  # checks the settings, the stream and the run folder's name
        self.cfg = cfg
        self.lock = threading.Lock()
        self.rundir: RunDir | None = None
        self.records: list[dict[str, Any]] = []
        self.next = 0  # the segment on screen (== the number recorded)
        self.draft: Draft | None = None
        self.reset = False  # reset: document returned to the base state before the draft
        self.shown_at = 0.0
        self.completer: Completer | None = None
        self.completions: list[float] = []  # latencies (ms) of the completions asked for the draft
        self.broken: str | None = None  # why this translator's state in memory is no longer the one on disk
        # the same metrics as the loop's scorer (as Loop builds it), against the stream's references
        self.stream_scorer: OnlineScorer | None = OnlineScorer(
            cfg.metrics, model_folder(cfg.model.path), train_vocab=self.loop.dataset.train_vocab(cfg.metrics.lang))
        if getattr(self.loop.dataset, "references", True) is False:  # an XLIFF file without every target: no stream
            self.stream_scorer = None                                    # reference to score against
        self.loop.stream_scorer = self.stream_scorer
        self.journal = Journal(self.path)
        self.notes = xliff_notes(self.loop.dataset)  # an XLIFF file's notes, by unit id

    @property
    def path(self) -> Path:
        return self.loop.path

    @property
    def total(self) -> int:
        return len(self.loop.segments)

    @property
    def done(self) -> bool:
        return self.next >= self.total

    @property
    def pending_file(self) -> Path:
        return self.path / layout.STATE_DIR / PENDING_FILE

    # ------------------------------------------------------------ start and stop
    def open(self) -> None:
        """Load the model and resume the run where it stopped (a complete run: read its records)."""
        if self.project is not None:  # another project's work is refused before anything is read or loaded
            claim_run(self.path, self.project, self.translator, write=False)
        self.journal.open()
        if state(self.path) is RunState.COMPLETE:
            if self.project is not None:
                claim_run(self.path, self.project, self.translator)
            self.records = read_jsonl(self.path / layout.SEGMENTS_FILE)
            self.next = len(self.records)
            logger.info("%s: complete (%d segments) in %s", self.translator, self.next, self.path)
            return
        self.loop.check_run_dir(resume=True, overwrite=False)  # not locked, same settings, same environment
        self.loop.load()
        self.rundir = RunDir(self.path)
        self.rundir.open(resume=True, overwrite=False)
        start, self.records = self.loop.restore(self.rundir, resume=True)
        if self.project is not None:  # once the run folder holds a run (its config): a failed start notes nothing
            claim_run(self.path, self.project, self.translator)
        self.next = start
        self._restore_stream_scores()
        self._learn_pending()
        logger.info("%s: segment %d of %d (%s)", self.translator, self.next + 1, self.total, self.path)

    def close(self) -> None:
        if self.rundir is not None:
            self.rundir.close()
            self.rundir = None
        if self.loop.loaded is not None:
            self.loop.timer.remove()

    def _restore_stream_scores(self) -> None:
        """The stream-reference scorer's running sums from the records kept (as ``Loop.restore`` replays its own)."""
        if self.stream_scorer is None:  # a stream without references (XLIFF targets not all filled)
            return
        for record in self.records:
            if STREAM not in record:  # recorded before simpe scored people's runs twice: none for this run
                logger.warning("%s: segment %d has no scores against the stream's reference (recorded by an older "
                               "simpe); this run is scored against the post-edits only", self.translator, record["index"])
                self.stream_scorer = self.loop.stream_scorer = None
                return
            self.stream_scorer.replay({**record[STREAM], "index": record["index"], "doc_id": record.get("doc_id")})

    def _score_stream(self, draft: Draft) -> dict[str, Any] | None:
        """The shown translation scored against the stream's reference (the record's ``stream`` part)."""
        if self.stream_scorer is None:
            return None
        pieces = self.cfg.metrics.subword == "all"
        scored = self.stream_scorer.add(draft.hypothesis, draft.segment.reference,
                                        self.loop.pieces(draft.best) if pieces else None,
                                        self.loop.pieces(draft.pair.labels[0].tolist()) if pieces else None,
                                        doc_id=draft.segment.doc_id)
        scored.pop("hyp_tokens")  # the record's own
        return {"reference": draft.segment.reference, **scored}

    def _learn_pending(self) -> None:
        """After a restart: a submission written but not covered by the checkpoint is learnt now (once)."""
        if not self.pending_file.exists():
            return
        try:
            pending = json.loads(self.pending_file.read_text(encoding="utf-8"))
        except ValueError:  # cut while written: the answer was never sent, the page submits it again
            pending = None
        if not isinstance(pending, dict) or pending.get("index") != self.next:
            self.pending_file.unlink()  # already covered by the checkpoint (or torn): nothing to learn
            return
        self._prepare()
        assert self.draft is not None
        if self.draft.hypothesis != pending["hypothesis"]:
            logger.warning("%s: segment %d translates again as %r, not as shown (%r); the record keeps the new one",
                           self.translator, self.next, self.draft.hypothesis, pending["hypothesis"])
        logger.info("%s: learning segment %d, submitted before the restart", self.translator, self.next)
        self._learn(pending["post_edit"], pending["human"], journal=False)

    # ------------------------------------------------------------ the segment on screen
    def _prepare(self) -> None:
        """Translate the segment on screen with the current parameters (once per segment)."""
        if self.done or (self.draft is not None and self.draft.index == self.next):
            return
        self.reset = self.loop.begin_segment(self.next)
        self.draft = self.loop.translate(self.next, self.loop.segments[self.next])
        self.shown_at = time.monotonic()
        self.completer, self.completions = None, []

    def view(self, index: int | None = None) -> dict[str, Any]:
        """What the page shows: segment ``index`` (None: the one on screen, the loop's next), its translation, the
        document around it and the workbench's lookups; or that the work is done."""
        with self.lock:
            return self._view(index)

    def _check_intact(self) -> None:
        if self.broken is not None:
            raise RunDirError(f"{self.translator}'s session stopped ({self.broken}); restart the server: it resumes from "
                              "the disk, the last submission included")

    def _check_open(self, index: int, current: bool) -> None:
        """Refuse a segment that is not submitted (``current``: nor on screen)."""
        if index >= self.total:
            raise DataError(f"segment {index} does not exist: the project has {self.total} segments (0 to {self.total - 1})")
        if index == self.next and not current:
            raise DataError(f"segment {index} is on screen, not submitted yet: submit it (only submitted segments are "
                            "revised)")
        if index > self.next:
            raise DataError(f"segment {index} is not translated yet: the model translates each segment after learning "
                            f"from the one before; finish segment {self.next} first")

    def tagged_source(self, index: int) -> str:
        """Segment ``index``'s source as the page shows it: with its inline tags' placeholders (XLIFF), else as is."""
        info = self.loop.segments[index].info or {}
        return info.get("tagged_source") or escape(self.loop.segments[index].source)  # a literal ⟨ is not a tag

    def _texts(self, index: int, post_edit: str) -> tuple[str, str | None]:
        """(the text the model learns and the metrics score, the tagged post-edit or None): a segment with inline
        tags must keep each of them (DataError otherwise); the model's text is without them."""
        source = self.tagged_source(index)
        if not is_tagged(source) and not is_tagged(post_edit):  # no tag, no escaped bracket: the text as written
            return post_edit, None
        check_tags(source, post_edit)
        text = plain(post_edit)
        if not text:
            raise DataError("the post-edit holds tags only; write its text")
        return text, post_edit

    def final_tagged(self, index: int) -> str:
        """Segment ``index``'s final post-edit with its tags (what an XLIFF export writes)."""
        versions = self.journal.versions(index)
        latest = versions[-1] if versions else {"post_edit": self.records[index]["reference"],
                                                 "human": self.records[index].get("human") or {}}
        return latest["human"].get("tagged") or latest["post_edit"]

    def final(self, index: int) -> str:
        """Segment ``index``'s final post-edit: its latest revision, else the submission the model learned from."""
        versions = self.journal.versions(index)
        return versions[-1]["post_edit"] if versions else self.records[index]["reference"]

    def languages(self) -> tuple[str, str]:
        return self.loop.languages()

    def _post_edits(self, leave_out: int | None) -> list[tuple[int, str, str]]:
        finals = final_versions(self.journal.events)
        return [(r["index"], r["source"], finals[r["index"]]["post_edit"] if r["index"] in finals else r["reference"])
                for r in self.records if r["index"] != leave_out]

    def _lookups(self, index: int, source: str) -> dict[str, Any]:
        if not self.lookups:
            return {"matches": [], "terms": []}
        matches = find_matches(plain(source), self.loop.warm_pairs, self._post_edits(leave_out=index))
        self.offered[index] = matches
        return {"matches": [m.to_dict() for m in matches], "terms": self._hits(index) if self.terms else []}

    def _view(self, index: int | None = None) -> dict[str, Any]:
        self._check_intact()
        src_lang, tgt_lang = self.languages()
        base = {"translator": self.translator, "total": self.total, "done_segments": self.next,
                "protocol": self.cfg.protocol.name, "src_lang": src_lang, "tgt_lang": tgt_lang,
                "lookups": self.lookups, "glossary": self.terms is not None}
        if index is None or index == self.next:
            if self.done:
                return {**base, "done": True}
            self._prepare()
            assert self.draft is not None
            index, hypothesis, status, learned = self.next, self.draft.hypothesis, "current", None
            version = 1
            info = self.loop.segments[index].info or {}
            post_edit = info.get("target") or escape(hypothesis)  # an XLIFF target already filled is the starting point
            missing = [tag for tag in placeholders(self.tagged_source(index)) if tag not in placeholders(post_edit)]
            post_edit = " ".join([post_edit, *missing]) if missing else post_edit  # the tags, for the translator to place
        else:
            self._check_open(index, current=False)
            record = self.records[index]
            hypothesis, post_edit, status, learned = record["hypothesis"], self.final_tagged(index), "done", record["reference"]
            version = 2 + len(self.journal.versions(index))
        draft = latest_draft(self.journal.events, index, version)  # what the translator typed and did not save
        segments = self.loop.segments
        doc = segments[index].doc_id
        before = [{"source": r["source"], "post_edit": self.final(r["index"])}
                  for r in self.records[max(0, index - CONTEXT_BEFORE):index] if r.get("doc_id") == doc]
        after = [s.source for s in segments[index + 1:index + 1 + CONTEXT_AFTER] if s.doc_id == doc]
        source = self.tagged_source(index)
        return {**base, "done": False, "index": index, "status": status, "doc_id": doc, "source": source,
                "tags": placeholders(source), "unit": segments[index].seg_id, "notes": self.notes.get(segments[index].seg_id, []),
                "target": (segments[index].info or {}).get("target"),
                "draft": None if draft is None else {"post_edit": draft["post_edit"], "human": draft["human"]},
                "hypothesis": hypothesis, "post_edit": post_edit, "learned": learned,
                "versions": 1 + len(self.journal.versions(index)) if status == "done" else 0,
                "comments": self.journal.comments(index), "flagged": self.journal.flagged(index),
                "before": before, "after": after, **self._lookups(index, source)}

    def segments(self) -> dict[str, Any]:
        """The segment list: every segment's index, document, status (done, current, todo), versions, flag, comments,
        and ``draft``: whether it holds unsaved text (a draft of the version it would become)."""
        with self.lock:
            self._check_intact()
            versions: dict[int, int] = {}
            flags: dict[int, bool] = {}
            notes: dict[int, int] = {}
            drafted: dict[int, int] = {}  # index -> the version its latest draft is of
            for event in self.journal.events:
                i = event.get("index")
                if event.get("event") == "draft":
                    drafted[i] = event.get("version", 0)
                elif event.get("event") == "revision":
                    versions[i] = versions.get(i, 0) + 1
                elif event.get("event") == "flag":
                    flags[i] = bool(event.get("flagged"))
                elif event.get("event") == "comment":
                    notes[i] = notes.get(i, 0) + 1
            rows = [{"index": i, "doc_id": seg.doc_id, "source": seg.source[:120],
                     "status": "done" if i < self.next else "current" if i == self.next else "todo",
                     "versions": 1 + versions.get(i, 0) if i < self.next else 0,
                     "flagged": flags.get(i, False), "comments": notes.get(i, 0),
                     "draft": drafted.get(i) == (2 + versions.get(i, 0) if i < self.next else 1)}
                    for i, seg in enumerate(self.loop.segments)]
            return {"translator": self.translator, "current": None if self.done else self.next, "segments": rows}

    def check(self, index: int, text: str) -> dict[str, Any]:
        """The glossary's target terms that ``text``, a post-edit of segment ``index``, leaves out, and its QA warnings
        (``simpe.serve.workbench.qa_warnings``)."""
        with self.lock:
            self._check_open(index, current=True)
            missing = self._missing(index, text)
            return {"index": index, "missing": missing, "warnings": qa_warnings(self.tagged_source(index), text, missing)}

    def save_draft(self, index: int, text: str, human: dict[str, Any]) -> dict[str, Any]:
        """Keep what the translator typed in segment ``index`` and not yet saved, with its timer and key log (a
        ``draft`` event, synced: it survives a reload and a kill); the segment's view gives it back."""
        with self.lock:
            self._check_intact()
            self._check_open(index, current=True)
            version = 1 if index == self.next else 2 + len(self.journal.versions(index))
            self.journal.append({"event": "draft", "index": index, "version": version, "post_edit": text, "human": human})
            return {"index": index, "version": version}

    def _missing(self, index: int, text: str) -> list[dict[str, str]]:
        if self.terms is None or not self.lookups:
            return []
        return self.terms.missing(self._hits(index), blank_tags(text))

    def _hits(self, index: int) -> list[dict[str, Any]]:
        assert self.terms is not None
        return self.terms.hits(blank_tags(self.tagged_source(index)))  # offsets of the shown source

    def _workbench_part(self, index: int, post_edit: str, human: dict[str, Any], first: bool) -> dict[str, Any]:
        """The human part of a submission (``first``) or revision: its counts, the matches it inserted, the terms it
        left out, the QA warnings it was saved with; a submission's start (what the editor started from, as text) and
        ``matches`` (1 when that was a translation-memory match)."""
        human = {"translator": self.translator, **human, **counts(human.get("keys", []))}
        start = human.pop("start", None)
        if first:
            assert self.draft is not None
            segment = self.loop.segments[index]
            human["start"] = start_of(start or start_from_keys(human.get("keys", [])), self.draft.hypothesis, (segment.info or {}).get("target"),
                                      self.tagged_source(index), self.offered.get(index, []))
            human["matches"] = int(human["start"]["origin"] == "match")
        warnings = qa_warnings(self.tagged_source(index), post_edit, self._missing(index, post_edit))
        if warnings:  # shown before the translator saved: submitted anyway
            human["qa"] = warnings
        used = [arg for _, op, arg in human.get("keys", []) if op == "t"]
        if used:
            offered = self.offered.get(index, [])
            human["matches_used"] = [offered[rank - 1].to_dict() if rank <= len(offered) else {"rank": rank}
                                     for rank in used]
        missing = self._missing(index, post_edit)
        if self.terms is not None and self.lookups:
            human["terms_missing"] = missing
        return human

    def revise(self, index: int, post_edit: str, human: dict[str, Any]) -> dict[str, Any]:
        """Record a revision of submitted segment ``index`` (an event; the model is not touched) and return the view
        of the segment after it."""
        with self.lock:
            self._check_intact()
            self._check_open(index, current=False)
            previous, versions = self.final(index), self.journal.versions(index)
            human = self._workbench_part(index, post_edit, human, first=False)
            post_edit, tagged = self._texts(index, post_edit)
            if tagged is not None:
                human["tagged"] = tagged
            if post_edit == previous and (tagged or post_edit) == self.final_tagged(index):
                logger.info("%s: segment %d saved unchanged: no revision recorded", self.translator, index)
                return {**self._view(), "unchanged": index}  # back to the segment on screen
            last = versions[-1] if versions else None
            if last is not None and last["post_edit"] == post_edit and all(last["human"].get(k) == human.get(k)
                                                                            for k in ("seconds", "keys", "pauses")):
                # the page sent it again (the answer was lost, a restart between): recorded once
                logger.info("%s: revision %d of segment %d was already recorded", self.translator, len(versions) + 1, index)
                return self._view()
            version = 2 + len(versions)
            self.journal.append({"event": "revision", "index": index, "version": version, "post_edit": post_edit,
                                 "previous": previous, "human": human})
            logger.info("%s: segment %d revised (version %d)", self.translator, index, version)
            return self._view()  # back to the segment on screen

    def note(self, index: int, comment: str | None, flagged: bool | None) -> dict[str, Any]:
        """Add a comment to segment ``index`` or set its flag (events); returns the segment's comments and flag."""
        with self.lock:
            self._check_intact()
            self._check_open(index, current=True)
            if comment is not None:
                self.journal.append({"event": "comment", "index": index, "text": comment})
            if flagged is not None:
                self.journal.append({"event": "flag", "index": index, "flagged": flagged})
            return {"index": index, "comments": self.journal.comments(index), "flagged": self.journal.flagged(index)}

    # ------------------------------------------------------------ submissions
    def submit(self, index: int, post_edit: str, human: dict[str, Any]) -> dict[str, Any]:
        """Record the post-edit of segment ``index``, adapt on it, and return the next view.

        A submission for a segment already recorded (a page that did not get the answer and sends again) changes
        nothing and gets the current view; one for a later segment than the one on screen is refused."""
        with self.lock:
            self._check_intact()
            if index < self.next:
                logger.info("%s: segment %d was already recorded; answered with segment %d", self.translator, index, self.next)
                return self._view()
            if self.done or index != self.next:
                raise DataError(f"segment {index} is not the one on screen ({self.next if not self.done else 'none: done'})")
            self._prepare()
            self._learn(post_edit, human, journal=True)
            return self._view()

    def _learn(self, post_edit: str, human: dict[str, Any], journal: bool) -> None:
        """Journal the submission, learn it, record it, checkpoint. A failure after the journal (a full disk, say)
        leaves the model ahead of the disk: the session stops answering until a restart resumes it from the disk."""
        self._check_intact()
        assert self.draft is not None and self.rundir is not None and self.draft.index == self.next
        index = self.next
        if journal:  # a fresh submission (a pending one, learnt after a restart, was journalled complete)
            human = {**self._workbench_part(index, post_edit, human, first=True), "version": 1}  # the version the model learns from
            post_edit, tagged = self._texts(index, post_edit)
            if tagged is not None:
                human["tagged"] = tagged
        if journal:  # first on disk: the submission survives a kill during the update
            self.pending_file.parent.mkdir(exist_ok=True)
            write_text_atomic(self.pending_file, json.dumps({"index": index, "post_edit": post_edit, "human": human,
                                                             "hypothesis": self.draft.hypothesis}, ensure_ascii=False))
            fsync_path(self.pending_file)
            fsync_path(self.pending_file.parent)
        try:
            effort = None
            if self.cfg.protocol.name == "interactive":  # the person's own effort, as the simulated translator's is logged
                effort = {"char": Effort("char", keystrokes=human["keystrokes"], mouse=human["mouse"],
                                         corrections=human["edits"], completions=len(self.completions),
                                         ref_chars=len(post_edit), ref_words=len(post_edit.split()),
                                         latency_ms=list(self.completions))}
            stream = self._score_stream(self.draft)  # the draft's segment is the stream's (learn scores the post-edit)
            record = self.loop.learn(self.draft, Correction(post_edit, effort))
            if self.cfg.reset != "none":
                record.reset = self.reset
            record.extra["human"] = human
            if stream is not None:
                record.extra[STREAM] = stream
            self.records.append(self.rundir.append_segment(record))
            done = index + 1
            if done < self.total:
                self.rundir.save_checkpoint(self.loop.checkpoint_state(done))  # syncs the logs first
                fsync_path(self.rundir.checkpoint_file)
                fsync_path(self.rundir.checkpoint_file.parent)
                self.pending_file.unlink(missing_ok=True)
            else:
                self.loop.finish(self.rundir, self.records)  # store, summary, DONE; removes state/ (the pending file)
                fsync_path(self.path)
                self.rundir.close()
                self.rundir = None
                logger.info("%s: complete (%s)", self.translator, self.path)
        except BaseException as err:
            self.broken = f"{type(err).__name__}: {err}"[:300]
            raise
        self.next, self.draft = done, None
        logger.info("%s: segment %d recorded (%.1f s editing)", self.translator, index, human.get("seconds", 0.0))

    # ------------------------------------------------------------ interactive protocol
    def complete(self, index: int, prefix: str) -> str:
        """The system's best completion of the typed ``prefix`` for segment ``index`` (the interactive protocol)."""
        with self.lock:
            self._check_intact()
            if self.cfg.protocol.name != "interactive":
                raise DataError("this project's protocol is post-edit: it offers no completions")
            if self.done or index != self.next:
                raise DataError(f"segment {index} is not the one on screen")
            self._prepare()
            assert self.draft is not None
            if self.completer is None:  # the source is encoded once per segment
                self.completer = Completer(self.loop.model, self.loop.tokenizer, self.loop.decoder, self.draft.pair.input_ids)
            text = self.completer(prefix)
            self.completions.append(round(self.completer.latency_ms[-1], 1))
            return text

