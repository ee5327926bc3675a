"""How a segment's post-edit reaches the loop: one interface for the simulated post-editor, the simulated
interactive-predictive translator and a person at ``simpe serve``.

A protocol turns a ``Draft`` (the hypothesis shown) into a ``Correction``: the post-edit the loop scores against and
learns from, and, under the interactive protocol, the effort it took (``simpe.loop.interactive.Effort`` per level).

* ``PostEdit`` (``protocol.name: post-edit``): the stream's reference is the post-edit (Simianer et al. 2019).
* ``Interactive`` (``protocol.name: interactive``): the simulated translator corrects, the system completes from the
  typed prefix (``simpe.loop.interactive.run_sessions``); the reference is the sentence the translator arrives at.
* ``Served``: a person's post-edit and effort, handed over by ``simpe serve`` (``simpe.serve.session``).

A correction is asked for while the method's ``translating`` context is still open (``tune-retrieve``'s tuned copy
completes the interactive sessions, as it made the hypothesis), and before the update: the protocol never sees the
model after it has learnt from the segment.
"""
from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from simpe.errors import ConfigError
from simpe.loop.interactive import COMPLETING_DECODERS, EFFORT_OF, Effort, run_sessions

if TYPE_CHECKING:
    from simpe.config.tree import RunConfig
    from simpe.loop.draft import Draft
    from simpe.loop.segment import SegmentSteps as Loop  # a run's segment steps: its model, tokenizer and decoder


@dataclasses.dataclass
class Correction:
    """What the translator gave back for one segment: the post-edit, and the effort per level (``char``, ``word``)
    under the interactive protocol (None under plain post-editing)."""

    post_edit: str
    effort: dict[str, Effort] | None = None


class Protocol(ABC):
    """The source of a segment's post-edit (``correct``)."""

    @abstractmethod
    def correct(self, loop: Loop, draft: Draft) -> Correction:
        """The correction of ``draft``'s hypothesis, with the loop's model as it translated it."""


class PostEdit(Protocol):
    """The simulated post-editor: the stream's reference is the post-edit."""

    def correct(self, loop: Loop, draft: Draft) -> Correction:
        return Correction(draft.segment.reference)


class Interactive(Protocol):
    """The simulated interactive-predictive translator at ``levels`` (``char``, ``word`` or both): it corrects the
    first error, the system completes from the typed prefix with the run's decoder, until the sentence is the
    reference."""

    def __init__(self, levels: tuple[str, ...]) -> None:
        self.levels = levels

    def correct(self, loop: Loop, draft: Draft) -> Correction:
        effort = run_sessions(loop.model, loop.tokenizer, loop.decoder, draft.pair.input_ids, draft.hypothesis,
                              draft.segment.reference, self.levels, text=draft.segment.source)
        return Correction(draft.segment.reference, effort)


class Served(Protocol):
    """A person's correction (``simpe serve``), given from outside: returned as it is."""

    def __init__(self, correction: Correction) -> None:
        self.correction = correction

    def correct(self, loop: Loop, draft: Draft) -> Correction:
        return self.correction


def protocol_for(cfg: RunConfig) -> Protocol:
    """The simulated protocol a run config names (checked before the model loads: the interactive protocol needs a
    decoder that completes a typed prefix)."""
    if cfg.protocol.name == "interactive":
        if cfg.decoder.name not in COMPLETING_DECODERS:
            raise ConfigError(f"protocol interactive completes typed prefixes, which decoder {cfg.decoder.name!r} "
                              f"cannot; use one of {', '.join(COMPLETING_DECODERS)}")
        return Interactive(("char", "word") if cfg.protocol.level == "both" else (cfg.protocol.level,))
    return PostEdit()


def effort_of(correction: Correction) -> Any:
    """The correction's effort, as the loop's scorer takes it (``metrics.online.OnlineScorer.add``)."""
    if correction.effort is None:
        return None
    return {EFFORT_OF[level]: e.stats() for level, e in correction.effort.items()}
