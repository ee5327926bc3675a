"""One segment of one run: translate with θ(i-1), take the translator's correction, score, update, record.

``SegmentSteps.step`` reads top to bottom: ``translate`` (the hypothesis, before reference i is seen) then ``learn``
(the correction, the score, the update on (source_i, reference_i), the record). ``simpe serve`` calls the two halves
itself. A lockstep group takes the same steps for all its runs at once (``simpe.loop.group.Group._segment``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
from typing import Any

import torch

from simpe.datasets import Segment
from simpe.loop.draft import Draft
from simpe.loop.phases import Phases, record_seconds
from simpe.loop.protocols import Correction, Served, effort_of
from simpe.loop.update import update
from simpe.rundir.record import SegmentRecord

logger = logging.getLogger(__name__)


class SegmentSteps:
    """The segment steps of a ``simpe.loop.run.Loop`` (a mixin: they read the loop's model, method, decoder, scorer)."""

    def prompt_terms(self, source: str) -> tuple[tuple[str, str], ...]:
        """The glossary pairs the prompt of ``source`` says (``data.glossary_prompt``): those constrained decoding would
        place (``TermMatcher.to_constrain``); none without the setting."""
        if not self.cfg.data.glossary_prompt:
            return ()
        matcher = self.scorer.terms.matcher
        return tuple(matcher.pairs[i] for i in matcher.to_constrain(matcher.source_tokens(source)))

    def step(self, index: int, seg: Segment, given: Correction | None = None) -> SegmentRecord:
        """One segment: translate with θ(index-1), take the translator's correction, score, update, record.

        ``given``: a person's correction (``simpe serve``), else the run's simulated protocol makes one. ``simpe serve``
        calls the two halves itself (``translate`` shows the hypothesis, ``learn`` takes the submission).
        """
        return self.learn(self.translate(index, seg), given)

    def translate(self, index: int, seg: Segment) -> Draft:
        """The first half of ``step``: segment ``index``'s hypothesis with the current parameters θ(index-1).

        ``seg.reference`` is tokenised here for the update but never reaches the decoder.
        """
        phases = Phases(self.timer)
        with phases("prepare"):  # in-context methods: earlier post-edits only (reference i is not among them)
            examples = self.method.examples(seg.source)
            terms = self.prompt_terms(seg.source)
            pair = self.loaded.family.encode_pair(self.tokenizer, seg.source, seg.reference, self.loaded.device, examples,
                                                  terms=terms)
        tuning = contextlib.ExitStack()  # tune-retrieve's tuned copy lives until the correction is in (Draft.tuning)
        with phases("translate"), contextlib.ExitStack() as failing:
            failing.callback(tuning.close)
            tuned = tuning.enter_context(self.method.translating(seg.source))
            with torch.inference_mode():
                result = self.decoder.decode(self.model, pair.input_ids, index=index, source=seg.source)
            failing.pop_all()  # decoded: the tuned copy stays open for learn
        best = list(result.hypotheses[0].tokens) if result.hypotheses else []
        hypothesis = self.tokenizer.decode(best, skip_special_tokens=True)
        return Draft(index, seg, examples, pair, result, best, hypothesis, phases, tuning, tuned, terms)

    def learn(self, draft: Draft, given: Correction | None = None) -> SegmentRecord:
        """The second half of ``step``: correct, score, update, record (the parameters have not changed since
        ``translate`` made ``draft``)."""
        phases, protocol = draft.phases, self.protocol if given is None else Served(given)
        with draft.tuning, phases("interact"):  # the tuned copy (tune-retrieve) completes the sessions, then resets
            correction = protocol.correct(self, draft)
        with phases("prepare"):
            draft = self.corrected(draft, correction.post_edit)
        with phases("score"):
            scored = self.score(draft, correction)
        with phases("update"):
            # reference i is seen only here; the hypothesis it corrects, for a method that prefers one to the other
            upd = update(self.model, self.method, draft.pair, self.cfg.update, hypothesis=draft.hypothesis)
            self.method.after_segment(draft.pair)  # knn stores the post-edit, icl remembers the pair
        return self.record(draft, correction, scored, upd)

    def corrected(self, draft: Draft, post_edit: str) -> Draft:
        """``draft`` with ``post_edit`` as its reference (a person's post-edit differs from the stream's)."""
        if post_edit == draft.segment.reference:
            return draft
        seg = dataclasses.replace(draft.segment, reference=post_edit)
        pair = self.loaded.family.encode_pair(self.tokenizer, seg.source, post_edit, self.loaded.device, draft.examples,
                                              terms=draft.terms)
        return dataclasses.replace(draft, segment=seg, pair=pair)

    def pieces(self, ids: list[int]) -> list[str]:
        """The subword pieces of ``ids`` without special tokens (``metrics.subword: all``)."""
        special = set(self.tokenizer.all_special_ids)
        return self.tokenizer.convert_ids_to_tokens([i for i in ids if i not in special])

    def score(self, draft: Draft, correction: Correction) -> dict[str, Any]:
        """The hypothesis scored against the post-edit by the run's streaming scorer (per segment and cumulative)."""
        pieces = self.cfg.metrics.subword == "all"
        return self.scorer.add(draft.hypothesis, draft.segment.reference, self.pieces(draft.best) if pieces else None,
                               self.pieces(draft.pair.labels[0].tolist()) if pieces else None,
                               doc_id=draft.segment.doc_id, effort=effort_of(correction), source=draft.segment.source)

    def record(self, draft: Draft, correction: Correction, scored: dict[str, Any], upd: dict[str, Any]) -> SegmentRecord:
        """The segment's record (one line of segments.jsonl)."""
        index, seg, pair, examples, result = draft.index, draft.segment, draft.pair, draft.examples, draft.result
        if upd["skipped"]:
            logger.warning("segment %d: update skipped (%s)", index, upd["skipped"])
        backward = upd.pop("seconds_backward")
        if draft.tuned:
            upd["tune"] = draft.tuned
        seconds = draft.phases.seconds
        record = SegmentRecord(
            index=index, doc_id=seg.doc_id, seg_id=seg.seg_id, source=seg.source, reference=seg.reference,
            hypothesis=draft.hypothesis, mt=seg.mt, examples=len(examples) if examples else None,
            info=dict(seg.info) if seg.info else None, hyp_score=result.hypotheses[0].score if result.hypotheses else None,
            **scored, update=upd,
            seconds=record_seconds(seconds, backward, correction.effort is not None),  # simpe.loop.phases.SEGMENT_PHASES
        )
        placed = result.info or {}
        if "terms" in placed and "dropped" in placed:  # a decoder that places glossary terms (constrained_beam)
            record.constrained = {"terms": list(placed["terms"]), "dropped": list(placed["dropped"])}
        if correction.effort is not None:
            record.effort = {level: e.to_dict() for level, e in correction.effort.items()}
        if pair.truncated:
            record.truncated = list(pair.truncated)
            self.truncated += 1
            if self.truncated == 1:
                logger.warning("segment %d: the %s is longer than %d tokens and is cut to them for translation and update "
                               "(the model's position limit); further cut segments are counted at the end",
                               index, " and ".join(pair.truncated), self.loaded.family.max_tokens(self.model.config))
        return record
