"""A person's run (``simpe serve``) read two ways: against the stream's references, and against their own post-edits.

A person's record holds two scorings of the one translation they were shown (``simpe.serve.session``): against
their own post-edit (the record's ``reference``, ``metrics``, ``stats``, ``cumulative``: TER there is HTER) and
against the stream's reference (the record's ``stream`` part; the summary's ``stream``). A simulated run is scored
against the stream's references, so only the second can sit beside it, with differences and significance:
``stream_view`` gives the person's run scored as the simulated runs are (the figures against their post-edit kept
under ``own``), ``stream_group`` a group with every person's run so read. Against their own
post-edits a person's run carries HTER and the editing effort (``Effort``: time without pauses, the pauses,
keystrokes, clicks, revisions, translation-memory matches inserted, per translator and per method), read from the
records' ``human`` parts and the run's workbench events (``events.jsonl``, ``simpe.rundir.events``: a revision's
time and keys add to its segment's, and the final version, not the one the model learned from, is the reference
of HTER), never tested against the baseline.

A group without a person's run is returned as it is: simulated runs are compared exactly as before. This module reads
runs only; it never translates and never writes.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from simpe.errors import RunDirError
from simpe.metrics import metric_for
from simpe.metrics.effort import EFFORT_METRICS
from simpe.rundir.events import final_versions, read_events, revisions_of
from simpe.rundir.reader import Run, RunGroup
from simpe.rundir.record import SegmentRecord

HUMAN = "human"  # a person's record's part: what the page measured (simpe.serve.session writes it)
STREAM = "stream"  # a person's record's and summary's part scored against the stream's reference (simpe.serve.session.STREAM)
OWN, POST_EDIT = "own", "post_edit"  # a view's part against the person's post-edit, and that post-edit
SCORED = ("reference", "ref_tokens", "ref_pieces", "metrics", "stats", "cumulative")  # what the stream part replaces
REFERENCE_NOTE = ("Every figure of this table is scored against the stream's references (the post-edits the data "
                  "holds), translators' runs included (their records score the translation they were shown against "
                  "the stream's reference too), so differences and † compare like with like. Each translator's HTER and "
                  "effort, against their own post-edits, are in the translators' table: no difference to the baseline, "
                  "no †.")
EFFORT_NOTE = ("Against each translator's own post-edits, not the stream's references: HTER is the TER of the "
               "translation they were shown against their final post-edit (the latest revision, else the submission "
               "the model learned from; not comparable with the table above: no difference to the baseline, no †). "
               "Editing time: from the segment shown to its submission, and each revision's, as the page measured "
               "it, pauses excluded (paused: the pauses' total). Keystrokes: the page's key log, revisions included "
               "(clicks apart); actions per character: (keystrokes + clicks) / final post-edit characters; unchanged: "
               "segments whose final post-edit is the translation shown; revisions: versions saved after the "
               "submission; matches: translation-memory matches inserted. A method pools its translators' segments.")


def is_person(run: Run) -> bool:
    """True for a person's run (its records have ``human``), its stream view included."""
    return bool(run.segments) and HUMAN in run.segments[0]


def _is_view(run: Run) -> bool:
    return all(OWN in record for record in run.segments)


def stream_view(run: Run) -> Run | None:
    """``run`` (a person's) scored against the stream's references, as a simulated run is; None when its records
    lack their ``stream`` part (a run recorded before simpe scored people's runs twice). A view is returned as is."""
    if _is_view(run):
        return run
    records = []
    for position, record in enumerate(run.segments):
        part = record.get(STREAM)
        if not isinstance(part, dict):
            return None
        view = {key: value for key, value in record.items() if key not in (STREAM, *SCORED)}
        view.update({key: part[key] for key in SCORED if key in part})
        view[OWN] = own_part(record)
        SegmentRecord.from_dict(view, f"{run.path}: record {position}'s {STREAM} part")  # its figures' types
        records.append(view)
    summary = run.summary
    if summary is not None:
        part = summary.get(STREAM)
        if not isinstance(part, dict) or not isinstance(part.get("corpus"), dict):
            return None
        summary = {**summary, "corpus": part["corpus"], "segment_comet": part.get("segment_comet")}
    return dataclasses.replace(run, segments=records, summary=summary)


def stream_group(group: RunGroup) -> tuple[RunGroup, list[str]]:
    """``group`` with every person's run replaced by its ``stream_view``, and the notes that say so. A person's run
    without a stream part is left out (named in a note); a group without a person's run is returned unchanged."""
    if not any(is_person(run) for run in group.runs):
        return group, []
    views: list[Run] = []
    left_out: list[str] = []
    for run in group.runs:
        view = stream_view(run) if is_person(run) else run
        if view is None:
            if run is group.baseline:
                raise RunDirError(f"the baseline {run.path} is a person's run recorded without scores against the "
                                  "stream's references; compare it with simulated runs of a simpe that records them")
            left_out.append(run.name)
            continue
        views.append(view)
    base = views[0].segments
    for run in views[1:]:
        for position in range(min(len(base), len(run.segments))):
            if run.segments[position].get("reference") != base[position].get("reference"):
                raise RunDirError(f"run {run.path} was scored against another reference than {views[0].path} at segment "
                                  f"{position} ({run.segments[position].get('reference')!r:.60} vs "
                                  f"{base[position].get('reference')!r:.60}): not the same stream")
    notes = [REFERENCE_NOTE]
    if left_out:
        notes.append(f"{', '.join(left_out)}: recorded before simpe scored a translator's run against the stream's "
                     "references too; left out of this table (their effort is in the translators' table)")
    return dataclasses.replace(group, baseline=views[0], methods=views[1:]), notes


COUNTS = ("segments", "seconds", "paused_seconds", "keystrokes", "mouse", "chars", "unchanged", "revisions", "matches")
EFFORT_KEYS = ("name", "method", "translators", *COUNTS, "hter", "ksmr")  # an Effort's figures as the report embeds them


@dataclass
class Effort:
    """A translator's effort (or a method's: every translator of its preset), against their own post-edits.

    name: the run (per translator) or the preset (per method). seconds: editing time as the page measured it, summed
    over submissions and revisions, pauses excluded; paused_seconds: the pauses. keystrokes: the key logs' editing
    events (clicks apart); mouse: clicks in the editor. chars: the final post-edits' characters. unchanged: segments
    whose final post-edit is the translation shown. revisions: versions saved after the submissions. matches:
    translation-memory matches inserted. hter: TER of the shown translations against the final post-edits, in
    points, from the summed TER statistics (pooled over translators for a method). ksmr: the person's own KSMR
    (interactive protocol, first submissions), in percent, else None.
    """

    name: str
    method: str
    translators: list[str]
    segments: int = 0
    seconds: float = 0.0
    paused_seconds: float = 0.0
    keystrokes: int = 0
    mouse: int = 0
    chars: int = 0
    unchanged: int = 0
    revisions: int = 0
    matches: int = 0
    hter: float | None = None
    ksmr: float | None = None
    ter_stats: list[float] = field(default_factory=list, repr=False)
    ksmr_stats: list[float] = field(default_factory=list, repr=False)

    @property
    def seconds_per_segment(self) -> float | None:
        return self.seconds / self.segments if self.segments else None

    @property
    def keystrokes_per_segment(self) -> float | None:
        return self.keystrokes / self.segments if self.segments else None

    @property
    def actions_per_char(self) -> float | None:
        """(keystrokes + clicks) / post-edit characters (summary.json's ``human.actions_per_char``)."""
        return (self.keystrokes + self.mouse) / self.chars if self.chars else None

    def score(self) -> Effort:
        """HTER and KSMR from the summed statistics; returns itself."""
        hter = metric_for("ter").score_from_stats(self.ter_stats) if self.ter_stats else None
        ksmr = EFFORT_METRICS["ksmr"].score_from_stats(self.ksmr_stats) if self.ksmr_stats else None
        self.hter = None if hter is None else float(hter)
        self.ksmr = None if ksmr is None else 100 * float(ksmr)
        return self


def _summed(rows: list[Any]) -> list[float]:
    """The element-wise sum of statistics rows; [] when one is missing (no figure for the pool)."""
    if not rows or any(not isinstance(row, list) or not row for row in rows):
        return []
    return [float(sum(values)) for values in zip(*rows)]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def preset_of(run: Run) -> str:
    """The preset a person's run was made with: its adapter name before ``@translator``."""
    return run.name.rpartition("@")[0] or run.name


def own_part(record: dict[str, Any]) -> dict[str, Any]:
    """A person's record against their own post-edit: ``post_edit``, ``metrics``, ``stats`` (of a view or not)."""
    if OWN in record:
        return record[OWN]
    return {POST_EDIT: record.get("reference"), "metrics": record.get("metrics") or {}, "stats": record.get("stats") or {}}


def revised_own(run: Run) -> dict[int, tuple[str, float | None, str]]:
    """A person's run's segments revised after the model learned from them (``events.jsonl``): index -> (the final
    version, the HTER of the translation they were shown against it, the version the model learned from), the HTER
    as ``run_effort`` scores it. Empty for a run without revisions (or without a folder)."""
    if run.path is None:
        return {}
    finals = final_versions(read_events(run.path))
    ter = metric_for("ter")
    out = {}
    for record in run.segments:
        final = finals.get(record.get("index"))
        if final is not None:
            version = str(final["post_edit"])
            hter = ter.score_from_stats(ter.segment_stats(str(record.get("hypothesis") or ""), version))
            out[record["index"]] = (version, hter, str(own_part(record)[POST_EDIT] or ""))
    return out


def run_effort(run: Run, num_segments: int) -> Effort:
    """A person's effort over the first ``num_segments`` records, against their own final post-edits (``Effort``):
    each record's ``human`` part plus its revisions' from the run's ``events.jsonl``."""

    records = run.segments[:num_segments]
    humans = [record.get(HUMAN) or {} for record in records]
    own = [own_part(record) for record in records]
    revisions = revisions_of(read_events(run.path)) if run.path is not None else {}
    ter = metric_for("ter")
    seconds = paused = 0.0
    keystrokes = mouse = matches = revised = chars = unchanged = 0
    ter_rows = []
    for record, human, mine in zip(records, humans, own):
        versions = revisions.get(record.get("index"), [])
        parts = [human, *[v.get("human") or {} for v in versions]]
        seconds += sum(_number(h.get("seconds")) for h in parts)
        paused += sum(_number(h.get("paused_seconds")) for h in parts)
        keystrokes += int(sum(_number(h.get("keystrokes")) for h in parts))
        mouse += int(sum(_number(h.get("mouse")) for h in parts))
        matches += int(sum(_number(h.get("matches")) for h in parts))
        revised += len(versions)
        final = str(versions[-1]["post_edit"]) if versions else str(mine[POST_EDIT] or "")
        chars += len(final)
        unchanged += final == record.get("hypothesis")
        ter_rows.append(list(ter.segment_stats(str(record.get("hypothesis") or ""), final)) if versions
                        else mine["stats"].get("ter"))
    translator = next((h.get("translator") for h in humans if h.get("translator")), run.name.rpartition("@")[2])
    return Effort(name=run.name, method=preset_of(run), translators=[str(translator)], segments=len(records),
                  seconds=seconds, paused_seconds=paused, keystrokes=keystrokes, mouse=mouse, chars=chars,
                  unchanged=unchanged, revisions=revised, matches=matches, ter_stats=_summed(ter_rows),
                  ksmr_stats=_summed([o["stats"].get("ksmr") for o in own])).score()


def group_effort(group: RunGroup) -> tuple[list[Effort], list[Effort]]:
    """(per translator, per method) effort of the persons' runs of ``group`` over its compared segments; both empty
    when it has none. Methods in the order their first translator appears; a method pools its translators'
    segments (HTER from their summed TER statistics)."""
    people = [run_effort(run, group.num_segments) for run in group.runs if is_person(run)]
    methods: dict[str, list[Effort]] = {}
    for effort in people:
        methods.setdefault(effort.method, []).append(effort)
    pooled = []
    for method, efforts in methods.items():
        total = Effort(name=method, method=method, translators=[t for e in efforts for t in e.translators],
                       ter_stats=_summed([e.ter_stats for e in efforts]), ksmr_stats=_summed([e.ksmr_stats for e in efforts]))
        for name in COUNTS:
            setattr(total, name, sum(getattr(e, name) for e in efforts))
        pooled.append(total.score())
    return people, pooled
