"""What a run measures besides its segments, every ``snapshots.every`` segments, with the current parameters: the
ranking snapshot on a fixed probe (``simpe.ranking``) and the forgetting probe on held-out other text.

A method that cannot change what the model computes (``Method.adapts``) gives the same figures at every point: they
are taken once and repeated, with ``repeats``: the segment of the snapshot that computed them; a resumed run repeats
the snapshot its first part took, as the uninterrupted run does, so that both write the same records.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch

from simpe.config.tree import RunConfig
from simpe.datasets import Segment
from simpe.metrics.online import metric_for
from simpe.ranking import evaluate as ranking
from simpe.rundir.reader import read_jsonl


class Probes:
    """The snapshots of one run: ``probe`` (the ranking snapshot's segments, ``simpe.loop.stream.probe_set``) and
    ``forgetting`` (``simpe.loop.stream.forgetting_set``); ``stream_length``: the positions the forgetting probe's
    sentences follow (what a seeded decoder's seeds follow), never a stream segment's."""

    def __init__(self, cfg: RunConfig, probe: list[Segment], forgetting: list[Segment], stream_length: int) -> None:
        self.cfg, self.probe, self.forgetting, self.stream_length = cfg, probe, forgetting, stream_length
        self.repeat: dict[str, Any] | None = None  # a snapshot's figures, when every later one is the same

    def take(self, model: Any, loaded: Any, decoder: Any, adapts: bool, segments_done: int) -> dict[str, Any]:
        """The snapshot after ``segments_done`` segments: ``model`` with its current parameters, ``loaded`` its
        ``simpe.model.LoadedModel`` (tokenizer, family, device), the run's ``decoder``; ``adapts``: the method's."""
        model.eval()
        if self.repeat is not None:
            return {"segment": segments_done, **self.repeat}
        figures: dict[str, Any] = {}
        with torch.inference_mode():
            if self.probe:
                figures = ranking.snapshot(model, loaded.tokenizer, [s.source for s in self.probe],
                                           [s.reference for s in self.probe], self.cfg.ranking)
            if self.forgetting:
                figures.update(self.forgetting_figures(model, loaded, decoder))
        self._keep_to_repeat(figures, segments_done, adapts)
        return {"segment": segments_done, **figures}

    def after_segment(self, loop: Any, rundir: Any, done: int) -> None:
        """As the loop's observer: after every ``snapshots.every``-th segment, the snapshot, with its wall time
        (``snapshot.seconds``: the run's summary sums them as the ``snapshot`` phase), appended to ``rundir``'s snapshots."""
        if done % self.cfg.snapshots.every:
            return
        start = time.perf_counter()
        figures = loop.snapshot(done)
        rundir.append_snapshot({**figures, "snapshot.seconds": time.perf_counter() - start})

    def _keep_to_repeat(self, figures: dict[str, Any], segment: int, adapts: bool) -> None:
        """Keep the figures of the snapshot at ``segment`` for every later one, when the method cannot change what
        the model computes and the snapshot's exact searches ended well within ``ranking.max_seconds`` (a search cut
        by the clock gives figures that depend on the machine's speed at the time: such a snapshot is not repeated)."""
        limit = self.cfg.ranking.max_seconds
        within = limit is None or "top.seconds" not in figures or figures["top.seconds"] < 0.5 * limit * figures["probe_size"]
        if within and not adapts:
            self.repeat = {**figures, "repeats": segment}

    def forgetting_figures(self, model: Any, loaded: Any, decoder: Any) -> dict[str, Any]:
        """``forget.bleu`` / ``forget.chrf``: the run's decoder on held-out other text, with the current parameters."""
        t0 = time.perf_counter()
        tokenizer = loaded.tokenizer
        batch = [loaded.family.encode_source(tokenizer, s.source, loaded.device)[0] for s in self.forgetting]
        results = decoder.decode_batch(model, batch, start=self.stream_length)
        hyps = [tokenizer.decode(list(r.hypotheses[0].tokens) if r.hypotheses else [], skip_special_tokens=True)
                for r in results]
        refs = [s.reference for s in self.forgetting]
        bleu, chrf = metric_for("bleu"), metric_for("chrf")
        # per-sentence statistics (the metric's stat_names): the learning-against-forgetting front's interval
        # (simpe.report.front) resamples them as compare resamples a stream's
        stats = {name: [metric.segment_stats(h, r) for h, r in zip(hyps, refs)] for name, metric in (("bleu", bleu), ("chrf", chrf))}
        total = {name: [sum(column) for column in zip(*rows)] for name, rows in stats.items()}  # = corpus_score's sums
        return {"forget.bleu": bleu.score_from_stats(total["bleu"]), "forget.chrf": chrf.score_from_stats(total["chrf"]),
                "forget.size": len(refs), "forget.stats": stats, "forget.seconds": time.perf_counter() - t0}

    def after_resume(self, snapshots_file: Path, adapts: bool) -> None:
        """On resume: a method that changes nothing repeats the snapshot the run's first part took."""
        if adapts:
            return
        taken = read_jsonl(snapshots_file)
        if taken and "repeats" not in taken[0]:
            self._keep_to_repeat({k: v for k, v in taken[0].items() if k not in ("segment", "snapshot.seconds")}, taken[0]["segment"],
                                 adapts)
