"""A complete run's summary (summary.json): corpus scores with their signatures, COMET, the store's size, the
updates, the seconds per phase of the loop, the raw MT's HTER where the corpus has one, the repeated-error rate, and with
a glossary its term facts (the term figures themselves are in ``corpus``, their signature under ``signatures``).

Derived from the segment records (and the snapshot records, for the ``snapshot`` phase), the run's scorer and its
method; it writes nothing (``simpe.rundir.writer.RunDir.finish`` does).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simpe.datasets import stream_hash
from simpe.loop.phases import SEGMENT_PHASES
from simpe.metrics.online import metric_for
from simpe.metrics.recall import repeated_errors
from simpe.metrics.text import split_tokens
from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl
from simpe.terms.glossary import glossary_label

if TYPE_CHECKING:  # a complete run's plan, with its model loaded (simpe.loop.run.Loop, which imports this module)
    from simpe.loop.plan import RunPlan as Loop



def _preferences(records: list[dict[str, Any]]) -> dict[str, int]:
    """A preference update's counts (``prefer``; nothing for runs without one): the segments whose update had its DPO
    term (``preferred``) and those whose update stepped on the NLL alone because the MT output equals the post-edit
    (``preference_skipped``). A segment that took no step (its post-edit already below the perplexity threshold) is
    in neither."""
    preferred = sum(1 for r in records if "preference_loss" in r["update"])
    skipped = sum(1 for r in records if r["update"].get("preference_skipped"))
    return {"preferred": preferred, "preference_skipped": skipped} if preferred or skipped else {}


def run_summary(loop: Loop, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary of ``loop``'s complete run whose segment records are ``records``."""
    cfg = loop.cfg
    corpus = loop.scorer.summary()
    comet, segment_comet = None, None
    if loop.comet is not None:
        segment_comet = loop.comet.score(
            [r["source"] for r in records], [r["hypothesis"] for r in records], [r["reference"] for r in records])
        comet = sum(segment_comet) / len(segment_comet)
    # the phases the records hold (SEGMENT_PHASES: interact under the interactive protocol; records of runs begun by
    # older versions may lack some)
    seconds = {k: sum(r["seconds"].get(k, 0.0) for r in records) for k in SEGMENT_PHASES
               if any(k in r["seconds"] for r in records) or k in ("prepare", "translate", "score", "update")}
    snapshots_file = loop.path / layout.SNAPSHOTS_FILE
    if snapshots_file.exists():  # the probes' phase: each snapshot's wall time (older snapshot records have none)
        seconds["snapshot"] = sum(s.get("snapshot.seconds", 0.0) for s in read_jsonl(snapshots_file))
    raw_mt = {}
    if records and all("mt" in r for r in records):  # HTER-style: how far the corpus's own MT was from the post-edits
        ter = metric_for("ter")
        raw_mt = {"raw_mt": {"hter": ter.corpus_score([r["mt"] for r in records], [r["reference"] for r in records]),
                             "signature": ter.signature(), "segments": len(records)}}
    content, split = loop.scorer.content_types, split_tokens
    repeated = repeated_errors([content(split(r["hyp_tokens"])) for r in records],
                               [content(split(r["ref_tokens"])) for r in records])
    again, shown = sum(a for a, _ in repeated), sum(s for _, s in repeated)
    store_method = loop.store_method()
    return {
        "method": cfg.method.name, "adapter": cfg.adapter, "dataset": cfg.data.name,
        "split": cfg.data.split, "segments": len(records), "model": loop.loaded.name,
        "stream_sha256": stream_hash(loop.segments),
        "corpus": {**corpus["corpus"], "comet": comet}, "signatures": corpus["signatures"],
        "segment_comet": segment_comet,
        "adapted_parameters": store_method.adapted_parameters(), "store_bytes": store_method.store_bytes(),
        "reset": cfg.reset, "method_facts": loop.method.describe(),
        **({"warm_start": loop.warm_facts} if getattr(loop, "warm_facts", None) else {}),
        "updates": {"repetitions": sum(r["update"]["repetitions"] for r in records),
                    "skipped": sum(1 for r in records if r["update"]["skipped"]), **_preferences(records)},
        "seconds": {**seconds, "model_forward": loop.timer.seconds}, **raw_mt,
        # of the content words a post-edit showed after a miss, the share missed again at their next occurrence
        "repeated_errors": {"again": again, "shown": shown, "rate": again / shown if shown else None},
        **({"terms": term_facts(loop, records)} if getattr(loop, "glossary", None) is not None else {}),
    }


def term_facts(loop: Loop, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A glossary run's term facts: the glossary (``simpe.terms.glossary.glossary_label``: relative to the repository,
    never an absolute path; its entries), the counted terms and their hits (the ``term``
    figure's sums), and with a decoder that places terms (constrained_beam) how many it was given (``constrained``: the
    applicable terms that fit the length limit), ``dropped`` (those that did not), and ``in_output``: of the
    constrained ones, those the detokenised output holds by the term metrics' rule (whole Moses tokens, case ignored;
    the decoder places a term's tokens, which a following subword could join to a longer word)."""
    counter = loop.scorer.terms
    hits, counted = counter.totals["term"]
    glossary = glossary_label(loop.glossary.path, loop.cfg.data.glossary, loop.cfg.data.name)
    facts: dict[str, Any] = {"glossary": glossary, "entries": len(loop.glossary), "counted": counted,
                             "hits": hits, "fixed": sum(len(r.get("terms_fixed") or []) for r in records)}
    placed = [r["constrained"] for r in records if r.get("constrained") is not None]
    if placed:
        matcher = counter.matcher
        in_output = 0
        for record in records:
            targets = (record.get("constrained") or {}).get("terms") or []
            if targets:
                in_output += len(matcher.targets_in(matcher.target_tokens(record["hypothesis"]), targets))
        facts.update({"segments_constrained": sum(1 for p in placed if p["terms"] or p["dropped"]),
                      "constrained": sum(len(p["terms"]) for p in placed), "dropped": sum(len(p["dropped"]) for p in placed),
                      "in_output": in_output})
    return facts
