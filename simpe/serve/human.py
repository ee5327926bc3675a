"""A person's run's loop: a simulation's, whose summary adds what the page measured (``human``) and the figures
against the stream's references (``stream``). ``simpe.serve.session`` drives it; this module knows nothing of HTTP."""
from __future__ import annotations

from typing import Any

from simpe.loop.run import Loop
from simpe.metrics.online import OnlineScorer

STREAM = "stream"  # the record's and the summary's part scored against the stream's reference


class HumanLoop(Loop):
    """The loop of a person's run: its summary adds ``human``, the totals of the records' ``human`` parts, and
    ``stream``, the figures against the stream's references (when every record has its ``stream`` part)."""

    stream_scorer: OnlineScorer | None = None  # set by TranslatorSession

    def summary(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        out = super().summary(records)
        if self.stream_scorer is not None and records and all(STREAM in r for r in records):
            comet = None
            if self.comet is not None:
                comet = self.comet.score([r["source"] for r in records], [r["hypothesis"] for r in records],
                                         [r[STREAM]["reference"] for r in records])
            out[STREAM] = {"corpus": {**self.stream_scorer.summary()["corpus"],
                                      "comet": sum(comet) / len(comet) if comet else None},
                           "segment_comet": comet}
        human = [r.get("human") or {} for r in records]
        chars = sum(len(r["reference"]) for r in records)
        keys = sum(h.get("keystrokes", 0) + h.get("mouse", 0) for h in human)
        out["human"] = {
            "translator": human[0].get("translator") if human else None,
            # editing time as the page measured it, pauses excluded (first submissions: revisions are events.jsonl's)
            "seconds": sum(h.get("seconds", 0.0) for h in human),
            "paused_seconds": sum(h.get("paused_seconds", 0.0) for h in human),
            "matches": sum(h.get("matches", 0) for h in human),  # segments started from a match (simpe.serve.keylog)
            "inserts": sum(h.get("inserts", 0) for h in human),  # matches inserted
            "keystrokes": sum(h.get("keystrokes", 0) for h in human), "mouse": sum(h.get("mouse", 0) for h in human),
            "pastes": sum(h.get("pastes", 0) for h in human),
            "actions_per_char": keys / chars if chars else None,  # KSMR-like: (keystrokes + clicks) / post-edit chars
            "unchanged": sum(1 for r in records if r["reference"] == r["hypothesis"]),  # against the MT
            # against what the editor started from (the MT, a filled target, a match: human.start)
            "unchanged_start": sum(1 for r, h in zip(records, human)
                                   if r["reference"] == (h.get("start") or {}).get("text", r["hypothesis"])),
            # HTER: TER of the shown translations against the person's own post-edits (corpus.ter of this run)
            "hter": out["corpus"].get("ter"),
        }
        return out
