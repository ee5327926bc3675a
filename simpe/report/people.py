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
NO_STREAM_NOTE = ("No run of this group has references of the stream to be scored against (a project from an XLIFF file "
                  "whose targets were not all filled): every figure of this table scores the translation each translator "
                  "was shown against their own post-edit (TER is HTER against the machine translation); the translators' "
                  "tables below give HTER against what the editor started from, and the effort.")
EFFORT_NOTE = ("Against each translator's own post-edits, not the stream's references: HTER is the TER of what the "
               "editor started from (the machine translation, the XLIFF file's filled target, or a translation-memory "
               "match the translator inserted) against their final post-edit (the latest revision, else the submission "
               "the model learned from; not comparable with the table above: no difference to the baseline, no †); in "
               "parentheses, the TER of the machine translation shown against it. "
               "Editing time: from the segment shown to its submission, and each revision's, as the page measured "
               "it, pauses excluded (paused: the pauses' total). Keystrokes: the page's key log, revisions included "
               "(clicks apart); actions per character: (keystrokes + clicks) / final post-edit characters; unchanged: "
               "segments whose final post-edit is what the editor started from (in parentheses: the machine "
               "translation shown); time unchanged: the editing time of those segments, counted in the editing time "
               "(as Matecat counts it since its PR #3823); revisions: versions saved after the submission; matches: "
               "segments started from a translation-memory match (in parentheses: matches inserted). A method pools its "
               "translators' segments.")
# the key log's categories in the order the tables show them: simpe.serve.keylog.CATEGORIES's (a test keeps them equal)
KEY_KINDS = ("typing", "deleting", "moving", "selecting", "pasting", "replacing", "inserting", "undoing", "completing")
TIME_RULES = {"none": None, "matecat": (0.25, 30.0)}  # seconds per source word a segment's time must lie within
TIME_RULE_NOTE = ("Time outliers left out (Matecat's rule): a segment's editing time counts only when it lies within "
                  "{low}-{high} s per source word; {count} segment(s) outside it are left out of the editing time and "
                  "s / segment (their keystrokes are kept).")


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
    if all(is_person(run) and stream_view(run) is None for run in group.runs):
        return group, [NO_STREAM_NOTE]  # a project from a partly filled XLIFF file: no stream reference to score against
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


COUNTS = ("segments", "seconds", "paused_seconds", "keystrokes", "mouse", "chars", "unchanged", "revisions", "matches",
          "unchanged_mt", "unchanged_seconds", "inserts", "outliers", "timed_segments")
EFFORT_KEYS = ("name", "method", "translators", *COUNTS, "hter", "hter_mt", "ksmr", "keys_by")  # as the report embeds them


@dataclass
class Effort:
    """A translator's effort (or a method's: every translator of its preset), against their own post-edits.

    name: the run (per translator) or the preset (per method). seconds: editing time as the page measured it, summed
    over submissions and revisions, pauses excluded; paused_seconds: the pauses. keystrokes: the key logs' editing
    events (clicks apart); mouse: clicks in the editor. chars: the final post-edits' characters. unchanged: segments
    whose final post-edit is what the editor started from (``human.start``: the MT, the file's filled target, an
    inserted match); unchanged_mt: ... is the translation shown; unchanged_seconds: the editing time of the unchanged
    segments (part of ``seconds``). revisions: versions saved after the submissions. matches: segments whose editor
    started from a translation-memory match; inserts: matches inserted (Ctrl+1-3). hter: TER of the starts against
    the final post-edits, in points, from the summed TER statistics (pooled over translators for a method); hter_mt:
    the same for the shown translations. ksmr: the person's own KSMR (interactive protocol, first submissions), in
    percent, else None. keys_by: keystrokes per category (``simpe.serve.keylog.CATEGORIES``). outliers: segments
    whose time a time rule left out of ``seconds`` (``TIME_RULES``), timed_segments: the others (s / segment).
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
    unchanged_mt: int = 0
    unchanged_seconds: float = 0.0
    inserts: int = 0
    outliers: int = 0
    timed_segments: int = 0
    hter: float | None = None
    hter_mt: float | None = None
    ksmr: float | None = None
    keys_by: dict[str, int] = field(default_factory=dict)
    ter_stats: list[float] = field(default_factory=list, repr=False)
    mt_stats: list[float] = field(default_factory=list, repr=False)
    ksmr_stats: list[float] = field(default_factory=list, repr=False)

    @property
    def seconds_per_segment(self) -> float | None:
        return self.seconds / self.timed_segments if self.timed_segments else None

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
        hter_mt = metric_for("ter").score_from_stats(self.mt_stats) if self.mt_stats else None
        ksmr = EFFORT_METRICS["ksmr"].score_from_stats(self.ksmr_stats) if self.ksmr_stats else None
        self.hter = None if hter is None else float(hter)
        self.hter_mt = None if hter_mt is None else float(hter_mt)
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


def start_text(record: dict[str, Any], human: dict[str, Any]) -> str:
    """What the editor started from: the record's ``human.start.text`` (the MT, the file's target, a match), else the
    translation shown (a record of a simpe before starts were recorded)."""
    start = human.get("start")
    text = start.get("text") if isinstance(start, dict) else None
    return str(text) if isinstance(text, str) else str(record.get("hypothesis") or "")


def _started_from_match(human: dict[str, Any]) -> bool:
    start = human.get("start")
    if isinstance(start, dict):
        return start.get("origin") == "match"
    return _number(human.get("matches")) > 0  # before starts were recorded, matches counted insertions


def run_effort(run: Run, num_segments: int, time_rule: str = "none") -> Effort:
    """A person's effort over the first ``num_segments`` records, against their own final post-edits (``Effort``):
    each record's ``human`` part plus its revisions' from the run's ``events.jsonl``; ``time_rule`` (``TIME_RULES``)
    leaves out the time of segments outside its seconds-per-word band."""
    band = TIME_RULES[time_rule]
    records = run.segments[:num_segments]
    humans = [record.get(HUMAN) or {} for record in records]
    own = [own_part(record) for record in records]
    revisions = revisions_of(read_events(run.path)) if run.path is not None else {}
    ter = metric_for("ter")
    effort = Effort(name=run.name, method=preset_of(run), translators=[], segments=len(records))
    ter_rows, mt_rows = [], []
    for record, human, mine in zip(records, humans, own):
        versions = revisions.get(record.get("index"), [])
        parts = [human, *[v.get("human") or {} for v in versions]]
        seconds = sum(_number(h.get("seconds")) for h in parts)
        words = len(str(record.get("source") or "").split())
        if band is not None and words and not band[0] <= seconds / words <= band[1]:
            effort.outliers += 1
        else:
            effort.seconds += seconds
            effort.timed_segments += 1
        effort.paused_seconds += sum(_number(h.get("paused_seconds")) for h in parts)
        effort.keystrokes += int(sum(_number(h.get("keystrokes")) for h in parts))
        effort.mouse += int(sum(_number(h.get("mouse")) for h in parts))
        effort.inserts += int(sum(_number(h.get("inserts", h.get("matches") if "start" not in h else 0)) for h in parts))
        for h in parts:
            for name, count in (h.get("keys_by") or {}).items():
                effort.keys_by[name] = effort.keys_by.get(name, 0) + int(_number(count))
        effort.matches += _started_from_match(human)
        effort.revisions += len(versions)
        final = str(versions[-1]["post_edit"]) if versions else str(mine[POST_EDIT] or "")
        start = start_text(record, human)
        effort.chars += len(final)
        effort.unchanged += final == start
        effort.unchanged_mt += final == record.get("hypothesis")
        effort.unchanged_seconds += seconds if final == start else 0.0
        mt_row = list(ter.segment_stats(str(record.get("hypothesis") or ""), final)) if versions else mine["stats"].get("ter")
        mt_rows.append(mt_row)
        ter_rows.append(mt_row if start == record.get("hypothesis") else list(ter.segment_stats(start, final)))
    translator = next((h.get("translator") for h in humans if h.get("translator")), run.name.rpartition("@")[2])
    effort.translators = [str(translator)]
    effort.ter_stats, effort.mt_stats = _summed(ter_rows), _summed(mt_rows)
    effort.ksmr_stats = _summed([o["stats"].get("ksmr") for o in own])
    return effort.score()


def group_effort(group: RunGroup, time_rule: str = "none") -> tuple[list[Effort], list[Effort]]:
    """(per translator, per method) effort of the persons' runs of ``group`` over its compared segments; both empty
    when it has none. Methods in the order their first translator appears; a method pools its translators'
    segments (HTER from their summed TER statistics)."""
    people = [run_effort(run, group.num_segments, time_rule) for run in group.runs if is_person(run)]
    methods: dict[str, list[Effort]] = {}
    for effort in people:
        methods.setdefault(effort.method, []).append(effort)
    pooled = []
    for method, efforts in methods.items():
        total = Effort(name=method, method=method, translators=[t for e in efforts for t in e.translators],
                       ter_stats=_summed([e.ter_stats for e in efforts]), mt_stats=_summed([e.mt_stats for e in efforts]),
                       ksmr_stats=_summed([e.ksmr_stats for e in efforts]))
        for name in COUNTS:
            setattr(total, name, sum(getattr(e, name) for e in efforts))
        for e in efforts:
            for name, count in e.keys_by.items():
                total.keys_by[name] = total.keys_by.get(name, 0) + count
        pooled.append(total.score())
    return people, pooled
