"""The decoder states of one source's token prefixes, kept from one decode to the next (``PrefixMemo``).

The interactive-predictive protocol decodes the same source again after every correction, each time under a longer
typed prefix (``simpe.decoders.prefix``). Much of each search walks token prefixes an earlier search of the segment
walked already: the validated text, tokenised as the model prefers to write it. A ``PrefixMemo`` remembers, per token
prefix a search fed, the model's next-token log-probabilities after it and the self-attention keys/values of its last
position (and, once, the cross-attention states of the source). A later search of the same source with the same
model (``Lockstep`` with ``Source.memo``) runs from the target's start as before, with every decision taken as before
(the typed prefix's mask applies to every row, the length limit, the tie rules), but at each step it reads the rows
of the prefixes the memo holds instead of running the model on them, and runs the model only on the others, on a
cache gathered from the memo's states of their prefixes. So a completion is the completion decoded from scratch: the
same tokens, its scores equal up to float noise (a row computed in a batch of another shape).

Nothing is assumed about how the typed text is tokenised: a prefix that ends inside a word, or a tokenisation other
than the tokenizer's own, is served when (and only when) a search fed it before. ``prune`` drops the prefixes whose
text left the typed prefix: no later search of the segment can reach them, since the translator only ever types more.

This module does not search, and it is only valid for one source and one state of the model: the caller (the
interactive ``Completer``) keeps one per segment and translator, and drops it before the model adapts.
"""
from __future__ import annotations

from typing import Any

import torch

DEFAULT_BUDGET_BYTES = 256 * 2**20  # per memo: 8,000 rows of an 8,000-token vocabulary (the demo model's)


class PrefixMemo:
    """Per token prefix fed by a search of one source: (next-token log-probabilities, states of every position fed).

    The states are kept once per position in an arena (each prefix holds its slots: its parent's and its own), so a
    prefix's cache is one gather. The set of prefixes is closed under taking prefixes (a search feeds a prefix only
    after its parent). ``budget_bytes`` is checked between decodes (``over_budget``): the caller starts again.
    """

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self.rows: dict[tuple[int, ...], tuple[torch.Tensor, tuple[int, ...]]] = {}  # prefix -> ((vocab,), slots)
        self.cross: list[tuple[torch.Tensor, torch.Tensor]] = []  # per layer (1, heads, src_len, head_dim); none for a causal LM
        self.arena: torch.Tensor | None = None  # (slots, layers, 2, heads, head_dim)
        self.used = 0  # arena slots written
        self.row_bytes = 0
        self.served = 0  # rows read from the memo instead of computed
        self.computed = 0  # rows computed by the model while the memo was attached

    def __contains__(self, prefix: tuple[int, ...]) -> bool:
        return prefix in self.rows

    @property
    def started(self) -> bool:
        """A search fed the target's fixed prefix (step 0) already: its row and states are held."""
        return () in self.rows

    @property
    def bytes(self) -> int:
        arena = 0 if self.arena is None else self.used * self.arena[0].numel() * self.arena.element_size()
        return self.row_bytes + arena

    @property
    def over_budget(self) -> bool:
        return self.bytes > self.budget_bytes

    def clear(self) -> None:
        self.rows, self.cross, self.arena, self.used, self.row_bytes = {}, [], None, 0, 0

    def get(self, prefix: tuple[int, ...]) -> torch.Tensor | None:
        """(vocab,) the log-probabilities after ``prefix``, or None when not held."""
        held = self.rows.get(prefix)
        return None if held is None else held[0]

    def slots(self, prefixes: list[tuple[int, ...]]) -> torch.Tensor:
        """(rows, positions) arena slots of every position fed for each of ``prefixes`` (held, of one length)."""
        return torch.tensor([self.rows[p][1] for p in prefixes], dtype=torch.long)

    def states(self, prefixes: list[tuple[int, ...]]) -> torch.Tensor:
        """(rows, positions, layers, 2, heads, head_dim) the self-attention states of every position fed for each of
        ``prefixes`` (all held, of one length): the family's fixed prefix, then one per token."""
        assert self.arena is not None
        return self.arena[self.slots(prefixes).to(self.arena.device)]

    def record(self, prefixes: list[tuple[int, ...]], logp: torch.Tensor, states: torch.Tensor,
               cross: list[tuple[torch.Tensor, torch.Tensor]] | None = None) -> None:
        """Keep rows a search just computed (their parents held: the step before fed them).

        Args:
            prefixes: each row's target tokens (without the family's fixed prefix).
            logp: (rows, vocab) their next-token log-probabilities, before any mask (copied here).
            states: (rows, fed, layers, 2, heads, head_dim) self-attention keys/values of the positions fed last.
            cross: at step 0, per layer the (1, heads, src_len, head_dim) cross-attention keys and values.
        """
        self.computed += len(prefixes)
        if cross is not None and not self.cross:
            self.cross = [(keys[:1].clone(), values[:1].clone()) for keys, values in cross]
        fed = states.shape[1]
        for row, prefix in enumerate(prefixes):
            if prefix in self.rows:
                continue
            first = self._write(states[row])  # (fed, layers, 2, heads, head_dim)
            own = tuple(range(first, first + fed))
            self.rows[prefix] = (logp[row].clone(), (self.rows[prefix[:-1]][1] + own) if prefix else own)
            self.row_bytes += logp[row].numel() * logp.element_size()

    def _write(self, states: torch.Tensor) -> int:
        """Store (n, layers, 2, heads, head_dim) states in the next ``n`` slots; returns the first."""
        n = states.shape[0]
        if self.arena is None or self.used + n > self.arena.shape[0]:
            grown = torch.empty((max(256, 2 * (self.used + n)), *states.shape[1:]), dtype=states.dtype, device=states.device)
            if self.arena is not None:
                grown[: self.used] = self.arena[: self.used]
            self.arena = grown  # (slots, layers, 2, heads, head_dim)
        self.arena[self.used: self.used + n] = states
        self.used += n
        return self.used - n

    def prune(self, keep: Any) -> None:
        """Drop every prefix for which ``keep(prefix)`` is false (and so its descendants: ``keep`` must be false for
        every extension of a prefix it rejects, as a typed prefix's constraint is). Their arena slots stay written
        (``clear`` frees them)."""
        for prefix in [p for p in self.rows if p and not keep(p)]:
            logp, _ = self.rows.pop(prefix)
            self.row_bytes -= logp.numel() * logp.element_size()
