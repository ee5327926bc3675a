"""A segment translated and not yet learnt from: what the second half of a step needs (``Loop.learn``, a lockstep
group's per-run half)."""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from simpe.datasets import Segment
from simpe.loop.phases import Phases


@dataclasses.dataclass
class Draft:
    """A segment translated and not yet learnt from (``Loop.translate``): what ``Loop.learn`` needs."""

    index: int
    segment: Segment
    examples: Any  # the in-context examples of the prompt (icl), else empty
    pair: Any  # simpe.models.base.Pair: the source's ids and the segment reference's labels
    result: Any  # the decoder's result
    best: list[int]  # the best hypothesis's tokens
    hypothesis: str  # detokenised
    phases: Phases  # the segment's clock, from its first phase to its record
    # the method's translating() context (tune-retrieve's tuned copy), entered by translate and closed by learn once
    # the correction is in, before the update; and what it yielded
    tuning: contextlib.ExitStack = dataclasses.field(default_factory=contextlib.ExitStack)
    tuned: Any = None
    terms: tuple[tuple[str, str], ...] = ()  # the glossary pairs its prompt says (data.glossary_prompt)
