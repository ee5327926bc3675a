"""Incremental decoding, shared by every decoder, for every model family (``simpe.models``).

The encoder runs once per source (a causal LM has none: its prompt is the target's prefix);
the decoder then advances one target position per call, with the model's own key/value cache
(``transformers`` 4.57 ``EncoderDecoderCache`` / ``DynamicCache``), through the family's
``forward``, i.e. ``model(...)`` itself, so that anything an adaptation method attaches to the
model (an extra output bias, hooks, swapped modules) is honoured. Step 0 feeds the target
prefix (the decoder start and any forced BOS, or the prompt); hypotheses never include it and
their scores do not count it (a forced token has probability 1, as in ``generate``). Scores are
raw ``log_softmax`` rows; pad and a decoder start that is not a stop token are never chosen,
and their probability mass is *not* renormalised away (a hypothesis' score is log P(y|x) under
the model). A hypothesis ends at any of the family's stop tokens (EOS; a chat template's end of
turn).

Length limit: a hypothesis has at most ``max_len`` target tokens counting its EOS, with
``max_len = min(max_len_cap, floor(max_len_a * src_len + max_len_b))`` and ``src_len`` the
number of source tokens (EOS included; for a causal LM, the prompt's tokens, template included). At the last allowed position only a stop token may follow,
scored with its true log-probability (unlike ``generate``'s ``forced_eos_token_id``, which
gives it probability 1).

This module does not search: see greedy.py, beam.py, sampling.py, topk.py.
"""
from __future__ import annotations

import contextlib
import functools
import math
import time
from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from simpe.decoders import cross
from simpe.decoders.base import Decoder, DecodeResult
from simpe.errors import ConfigError
from simpe.model import eval_mode
from simpe.models import family_of
from simpe.models.base import Special

__all__ = ["Special", "LengthLimit", "Lockstep", "Source", "encode", "log_softmax_", "step_scores", "special_ids"]

NEG_INF = float("-inf")


@dataclass
class LengthLimit:
    """``max_len = min(cap, floor(a * src_len + b))`` target tokens, EOS included (at least 1)."""

    a: float = 2.0
    b: int = 10
    cap: int = 256

    def __post_init__(self) -> None:
        if not (isinstance(self.a, (int, float)) and not isinstance(self.a, bool) and 0 <= self.a <= MAX_LEN_A):
            raise ConfigError(f"max_len_a must be a number in [0, {MAX_LEN_A:g}], got {self.a!r}")
        if not (isinstance(self.b, int) and self.b >= 0):
            raise ConfigError(f"max_len_b must be an integer >= 0, got {self.b!r}")
        if not (isinstance(self.cap, int) and self.cap >= 1):
            raise ConfigError(f"max_len_cap must be an integer >= 1, got {self.cap!r}")

    def __call__(self, src_len: int) -> int:
        return max(1, min(self.cap, int(math.floor(self.a * src_len + self.b))))

    def params(self) -> dict[str, Any]:
        return {"max_len_a": self.a, "max_len_b": self.b, "max_len_cap": self.cap}


# The largest value a decoder parameter may take, where one exists: rows decoded at once (a beam of 10^9 would ask
# torch for a tensor of 10^9 rows and fail deep inside it), and torch's seed range.
LARGEST = {"beam_size": 10_000, "k": 10_000, "samples": 10_000, "batch_size": 100_000, "max_rows": 1_000_000, "seed": 2**63 - 1}
MAX_LEN_A = 1_000.0  # target tokens per source token: beyond it the cap decides anyway, and inf would not floor


def check_int(name: str, value: Any, minimum: int, allow_none: bool = False) -> None:
    """Raise ConfigError unless ``value`` is an int in [minimum, LARGEST[name]] (or None when allowed)."""
    if value is None and allow_none:
        return
    largest = LARGEST.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (largest is not None and value > largest):
        extra = " or null" if allow_none else ""
        bound = f"in [{minimum}, {largest:,}]" if largest is not None else f">= {minimum}"
        raise ConfigError(f"decoder parameter {name} must be an integer {bound}{extra}, got {value!r}")


def check_number(name: str, value: Any, minimum: float, allow_none: bool = False) -> None:
    """Raise ConfigError unless ``value`` is a number > minimum (or None when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > minimum or not math.isfinite(value):
        extra = " or null" if allow_none else ""
        raise ConfigError(f"decoder parameter {name} must be a finite number > {minimum}{extra}, got {value!r}")


def special_ids(model: Any) -> Special:
    """The stop, target-start and forbidden ids of ``model``'s family (``simpe.models``)."""
    special = family_of(model).special
    assert special is not None
    return special


@contextlib.contextmanager
def decoding(model: Any) -> Iterator[None]:
    """Eval mode and no autograd for the duration; every module's training flag is restored afterwards."""
    with eval_mode(model), torch.inference_mode():
        yield


@dataclass
class Source:
    """One encoded source sentence.

    prefix: the target's first tokens, fed at step 0: the decoder start and any forced BOS
    (encoder-decoder), or the whole prompt (causal LM, which has no encoder: ``hidden`` is None).
    Hypotheses never include them, and their scores do not count them.
    """

    hidden: torch.Tensor | None  # (1, src_len, d_model) encoder output; None for a causal LM
    src_len: int
    max_len: int  # target tokens allowed, EOS included
    special: Special
    prefix: tuple[int, ...] = ()
    device: Any = None
    room: int | None = None  # the most target tokens the model's position table allows after the prefix
    constraint: Any = None  # a typed prefix the hypotheses must agree with (simpe.decoders.prefix.CharPrefix)
    memo: Any = None  # rows of earlier decodes of this source to read, and to add to (simpe.decoders.reuse.PrefixMemo)


def encode(model: Any, input_ids: Any, limit: LengthLimit, runs: int | None = None) -> Any:
    """Run the encoder once (a causal LM: keep the prompt as the target's prefix).

    Args:
        input_ids: (1, src_len) LongTensor (a 1-D tensor or a list of ids is accepted too): the source
            ids, or a causal LM's prompt.
        runs: a stacked model's runs (``simpe.models.stacked``): one encoder pass over ``runs`` copies of the ids,
            run ``r``'s row by its own weights, and a list of one ``Source`` per run. None: one model, one ``Source``.
    """
    family = family_of(model)
    device = next(model.parameters()).device
    ids = torch.as_tensor(input_ids, dtype=torch.long, device=device)  # (1, src_len)
    if ids.dim() == 1:
        ids = ids.unsqueeze(0)
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise ConfigError(f"decode() takes one source as a (1, src_len) tensor, got shape {tuple(ids.shape)}")
    src_len = int(ids.shape[1])
    special = special_ids(model)
    prefix = family.prefix if family.encoder_decoder else tuple(ids[0].tolist())
    # the target never runs past the model's position table (an mBART-50 checkpoint of 256 positions under a cap of
    # 256 and its 2-token prefix would index past it): prefix and hypothesis together fit max_tokens
    room = max(1, family.max_tokens(model.config) - len(prefix))
    max_len = min(limit(src_len), room)
    copies = 1 if runs is None else runs
    hidden = family.encode(model, ids.expand(copies, -1)) if family.encoder_decoder else None  # (copies, src_len, d_model)
    sources = [Source(None if hidden is None else hidden[r:r + 1], src_len, max_len, special, prefix, device, room)
               for r in range(copies)]
    return sources[0] if runs is None else sources


def step_scores(logp: torch.Tensor, special: Special, last: bool, overwrite: bool = False) -> torch.Tensor:
    """Log-probabilities with forbidden tokens at -inf, and only the stop tokens when ``last``.

    Args:
        logp: (rows, vocab) raw log-probabilities (not modified, unless ``overwrite``).
        last: the next token is at the last position ``max_len`` allows.
        overwrite: the caller no longer needs ``logp``: it is masked in place and returned
            (no copy of the rows; nothing else may hold them, as a search's step hook would).
    Returns:
        (rows, vocab) float tensor.
    """
    if last:
        out = torch.full_like(logp, NEG_INF)  # (rows, vocab)
        for stop in special.stops:
            out[:, stop] = logp[:, stop]
        return out
    out = logp if overwrite else logp.clone()  # (rows, vocab)
    for token in special.forbidden:  # one or two ids: a column fill each
        out[:, token] = NEG_INF
    return out


def log_softmax_(logits: torch.Tensor) -> torch.Tensor:
    """``torch.log_softmax(logits.float(), dim=-1)``, written over ``logits`` where they are a contiguous float32 tensor
    on the CPU that nothing else reads (a model pass's fresh output): the same values (the kernel reads a row before
    writing it), without a fresh (rows, vocab) tensor per pass, i.e. without fresh memory whose pages the OS must
    zero. Elsewhere (another dtype or device, a view) as ``torch.log_softmax``."""
    if logits.dtype != torch.float32 or logits.device.type != "cpu" or not logits.is_contiguous() or logits.requires_grad:
        return torch.log_softmax(logits.float(), dim=-1)
    return torch._log_softmax(logits, -1, False, out=logits)


def stack_sources(sources: list[Source]) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Encoder outputs of several sources, right-padded: ((n, max_src, d_model), (n, max_src) mask or None for one;
    (None, None) for a causal LM)."""
    if sources[0].hidden is None:
        return None, None
    if len(sources) == 1 or len({s.src_len for s in sources}) == 1:
        # no padding, no mask: an all-ones mask is dropped by transformers' mask builder anyway (the same attention),
        # after reading it back to the host (masking_utils' padding_mask.all(), a GPU sync in every pass)
        return torch.cat([s.hidden for s in sources]) if len(sources) > 1 else sources[0].hidden, None
    longest = max(s.src_len for s in sources)
    first = sources[0].hidden
    hidden = first.new_zeros((len(sources), longest, first.shape[-1]))  # (n, max_src, d_model)
    mask = torch.zeros((len(sources), longest), dtype=torch.long, device=first.device)  # (n, max_src)
    for i, s in enumerate(sources):
        hidden[i, : s.src_len] = s.hidden[0]
        mask[i, : s.src_len] = 1
    return hidden, mask


def stack_prefixes(sources: list[Source]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The sources' target prefixes, left-padded: ((n, longest) ids, (n, longest) mask, or None when all are as long)."""
    longest = max(len(s.prefix) for s in sources)
    device = sources[0].device
    ids = torch.zeros((len(sources), longest), dtype=torch.long, device=device)  # (n, longest)
    mask = torch.zeros((len(sources), longest), dtype=torch.long, device=device)  # (n, longest)
    for i, s in enumerate(sources):
        ids[i, longest - len(s.prefix):] = torch.tensor(s.prefix, dtype=torch.long, device=device)
        mask[i, longest - len(s.prefix):] = 1
    return ids, (None if bool(mask.all()) else mask)


@functools.cache
def room_layer_type() -> type:
    """transformers' ``DynamicLayer`` over states with room: see ``room_layer``."""
    from transformers.cache_utils import DynamicLayer

    class RoomLayer(DynamicLayer):
        def __init__(self, keys: torch.Tensor, values: torch.Tensor, cached: int) -> None:
            super().__init__()
            self.room = (keys, values)
            self.keys, self.values = keys[:, :, :cached], values[:, :, :cached]
            self.device, self.is_initialized = keys.device, True

        def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
            keys, values = self.room
            cached = self.keys.shape[2]
            if (self.keys.data_ptr() != keys.data_ptr() or key_states.shape[0] != keys.shape[0]
                    or cached + key_states.shape[2] != keys.shape[2]):
                return super().update(key_states, value_states, *args, **kwargs)  # not what the room was left for
            keys[:, :, cached:] = key_states
            values[:, :, cached:] = value_states
            self.keys, self.values = keys, values
            return keys, values

    return RoomLayer


def room_layer(keys: torch.Tensor, values: torch.Tensor, cached: int) -> Any:
    """A self-attention cache layer over (rows, heads, cached + fed, head_dim) ``keys`` and ``values`` whose first
    ``cached`` positions hold the past: the model's update writes the ``fed`` positions of its pass into the room
    after them, where transformers' ``DynamicLayer`` concatenates (a fresh copy of every past state). The attention
    reads the same values either way (its kernel follows the strides). A pass of another shape concatenates."""
    return room_layer_type()(keys, values, cached)


class Lockstep:
    """Decoder rows of one or more sources advancing one target position per call, with one shared cache.

    Step 0 feeds every source's target prefix (``Source.prefix``: the decoder start and any forced
    BOS, or a causal LM's prompt; prefixes of different lengths left-padded and masked); each later
    step feeds one token per row. Rows are grouped by source (``row_source``); ``select`` keeps,
    reorders or repeats rows (beam reordering, dropping finished samples), writing the self-attention
    states into buffers with room for the next position (``room_layer``); where the family allows,
    the cross-attention states stay one per source, read in place by that source's rows
    (``simpe.decoders.cross``), else they are gathered per row. Every pass goes through
    the family's ``forward``, i.e. ``model(...)`` itself, so anything an adaptation method attaches
    to the model (an extra output bias, hooks, swapped modules) is honoured.

    Reuse (one source with a ``Source.memo``, and ``reuse``): a step reads the rows whose token prefix the memo
    holds from it, and runs the model only on the others, on a cache assembled from the memo's states of their
    prefixes; every row computed is added to the memo (simpe.decoders.reuse). There is no cache of its own then.
    """

    def __init__(self, model: Any, sources: list[Source], reuse: bool = True) -> None:
        self.model, self.sources = model, sources
        self.memo = sources[0].memo if reuse and len(sources) == 1 else None
        self.row_tokens: list[tuple[int, ...]] = [()] * len(sources)  # each row's target tokens (kept with a memo)
        self.family = family_of(model)
        self.hidden, self.src_mask = stack_sources(sources)  # (n, max_src, d_model), (n, max_src) or None
        self.prefixes, self.prefix_mask = stack_prefixes(sources)  # (n, longest), (n, longest) or None
        self.cache = self.family.new_cache()
        self.row_source = list(range(len(sources)))
        self.position = 0  # target positions consumed so far
        self._buffers: dict[tuple[str, int, int], list[torch.Tensor | None]] = {}  # select's outputs, two each, reused
        self._cross_base: list[tuple[torch.Tensor, torch.Tensor]] | None = None  # per layer (n, heads, max_src, head_dim)
        # rows read their source's cross-attention states in place (one source's rows gather them once, at the first select)
        self.by_source = len(sources) > 1 and cross.usable(model, self.family)
        self._row_index: torch.Tensor | None = None  # row_source as a tensor (_source_index)
        self.known_masks = False  # passes under cross.known_masks (a search on the device: simpe.decoders.beam_device)

    @property
    def rows(self) -> int:
        return len(self.row_source)

    def step(self, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """Feed the prefixes (step 0, ``tokens`` None) or one token per row.

        Args:
            tokens: (rows,) LongTensor on the model's device, after step 0.
        Returns:
            (rows, vocab) float32 log-probabilities of the next token.
        """
        if self.memo is not None:
            return self._reuse(tokens)
        return self._run(tokens)

    def _reuse(self, tokens: torch.Tensor | None) -> torch.Tensor:
        """``step`` with a memo: the rows it holds read from it, the others run through the model on a cache assembled
        from the memo's states of their prefixes (all rows have as many positions), and added to it."""
        memo = self.memo
        if self.position == 0:
            fed = list(self.row_tokens)
            held = memo.get(())
            if held is None:
                logp = self._run(None)  # (1, vocab)
                memo.record(fed, logp, self.states(), self.family.cross_layers(self.cache))
                self.cache = None  # from here on, caches come from the memo
                return logp
            memo.served += 1
            self.position += 1
            return held.unsqueeze(0).clone()  # (1, vocab)
        assert tokens is not None
        parents = self.row_tokens
        fed = [prefix + (token,) for prefix, token in zip(parents, tokens.tolist())]
        rows = [memo.get(prefix) for prefix in fed]
        missing = [row for row, found in enumerate(rows) if found is None]
        memo.served += len(fed) - len(missing)
        if missing:
            computed, states = self._run_missing([parents[row] for row in missing], tokens[missing])  # (missing, vocab)
            memo.record([fed[row] for row in missing], computed, states)
            for i, row in enumerate(missing):
                rows[row] = computed[i]
        self.row_tokens = fed
        self.position += 1
        return torch.stack(rows)  # (rows, vocab), a fresh tensor

    def _run_missing(self, parents: list[tuple[int, ...]], tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """((rows, vocab) log-probabilities after ``parents`` + ``tokens``, (rows, 1, layers, 2, heads, head_dim) the
        new position's states), on a cache of the parents' states from the memo."""
        rows = len(parents)
        states = self.memo.states(parents)  # (rows, positions, layers, 2, heads, head_dim)
        own = [(states[:, :, layer, 0].transpose(1, 2).contiguous(), states[:, :, layer, 1].transpose(1, 2).contiguous())
               for layer in range(states.shape[2])]  # per layer (rows, heads, positions, head_dim)
        cross = [(keys.expand(rows, -1, -1, -1), values.expand(rows, -1, -1, -1)) for keys, values in self.memo.cross]
        cache = self.family.build_cache(own, cross)
        enc = None if self.hidden is None else self.hidden[:1].expand(rows, -1, -1)  # only its shape is read
        logits, cache = self.family.forward(self.model, tokens.view(rows, 1), cache, hidden=enc, src_mask=None, mask=None)
        layers = self.family.self_cache(cache).layers
        states = torch.stack([torch.stack([layer.keys[:, :, -1:], layer.values[:, :, -1:]], dim=1)  # (rows, 2, heads, 1, head_dim)
                              for layer in layers], dim=1).permute(0, 4, 1, 2, 3, 5)  # (rows, 1, layers, 2, heads, head_dim)
        return log_softmax_(logits), states

    def _run(self, tokens: torch.Tensor | None) -> torch.Tensor:
        """``step`` through the model."""
        rows = self.rows
        if self.position == 0:
            fed, mask, enc = self.prefixes, self.prefix_mask, self.hidden  # (n, longest), ..., (n, max_src, d_model)
        else:
            assert tokens is not None and tokens.shape[0] == rows, (None if tokens is None else tokens.shape, rows)
            fed = tokens.view(rows, 1)  # (rows, 1)
            mask = None
            if self.prefix_mask is not None:  # the prompts' padding, then every token fed since
                mask = torch.cat([self.prefix_mask[self._source_index()], self.prefix_mask.new_ones((rows, self.position))], dim=1)
            enc = None if self.hidden is None else self.hidden[:1].expand(rows, -1, -1)  # only its shape is read now
        src_mask = None
        if self.src_mask is not None:
            src_mask = self.src_mask[self._source_index()]  # (rows, max_src)
        held = self._held_by_source()
        with contextlib.ExitStack() as stack:
            if self.known_masks:  # the masks' padding said, not read back (cross.known_masks)
                stack.enter_context(cross.known_masks(self.model, mask is not None, src_mask is not None))
            if held:
                stack.enter_context(cross.by_source(self.model, self.row_source, held))
            logits, self.cache = self.family.forward(self.model, fed, self.cache, hidden=enc, src_mask=src_mask, mask=mask)
        self.position += 1
        return log_softmax_(logits)  # (rows, vocab)

    def _source_index(self) -> torch.Tensor:
        """(rows,) ``row_source`` as a tensor on the model's device, made once per row layout (``select`` drops it)."""
        if self._row_index is None:
            self._row_index = torch.tensor(self.row_source, device=self.prefixes.device)
        return self._row_index

    def _held_by_source(self) -> list[torch.Tensor]:
        """The cross-attention states the cache holds once per source while its rows are not the sources one each
        (``cross.by_source``), else []."""
        if not self.by_source or self._cross_base is None or self.row_source == list(range(len(self.sources))):
            return []
        held = [layer.keys for layer in self.cache.cross_attention_cache.layers] + [layer.values for layer in self.cache.cross_attention_cache.layers]
        base = [keys for keys, _ in self._cross_base] + [values for _, values in self._cross_base]
        return base if all(a is b for a, b in zip(held, base)) and len(held) == len(base) else []

    def states(self) -> torch.Tensor:
        """(rows, new positions, layers, 2, heads, head_dim) self-attention keys/values of what the last step fed
        (all the prefix positions after step 0, one position after the others)."""
        layers = self.family.self_cache(self.cache).layers
        fed = self.prefixes.shape[1] if self.position == 1 else 1
        return torch.stack([torch.stack([layer.keys[:, :, -fed:], layer.values[:, :, -fed:]], dim=1)  # (rows, 2, heads, fed, head_dim)
                            for layer in layers], dim=1).permute(0, 4, 1, 2, 3, 5)  # (rows, fed, layers, 2, heads, head_dim)

    def select(self, keep: list[int], sources: list[int] | None = None) -> None:
        """Keep the cache rows ``keep`` (repeats allowed); ``sources``: each kept row's source (default: unchanged
        per row). Rows that stay with their own source's rows only move their self-attention states."""
        device = self.prefixes.device
        new_sources = sources if sources is not None else [self.row_source[r] for r in keep]
        if new_sources == self.row_source and keep == list(range(self.rows)):
            return
        if self.memo is not None:  # no cache to reorder: each step assembles its own from the memo
            self.row_tokens = [self.row_tokens[r] for r in keep]
            self.row_source = list(new_sources)
            self._row_index = None
            return
        self.select_index(torch.tensor(keep, dtype=torch.long, device=device), new_sources)

    def select_index(self, index: torch.Tensor, sources: list[int]) -> None:
        """``select`` with the kept rows as a (rows,) LongTensor on the model's device, never read back to the host
        (a search on the device: ``simpe.decoders.beam_device``), and ``sources`` each kept row's source."""
        moved = sources != self.row_source  # the cross-attention keys/values follow the rows' sources
        if not self._reorder_in_place(index, sources if moved else None):
            if moved:
                self.cache.reorder_cache(index)
            else:  # same sources row by row: only the self-attention states move
                self.family.self_cache(self.cache).reorder_cache(index)
        if moved:
            self._row_index = None
        self.row_source = list(sources)

    def _reorder_in_place(self, index: torch.Tensor, sources: list[int] | None) -> bool:
        """``select``'s reorder, written into buffers kept from step to step (False: not a plain dynamic cache,
        reorder as transformers does). The same values in the same shapes as ``reorder_cache`` gives, without a
        fresh allocation per tensor and step (the OS zeroes every fresh page of those large tensors), and the
        cross-attention states gathered from the sources' own (one row each, kept from step 0: small and
        cache-resident) rather than from the last step's rows. ``sources``: the rows' sources when they moved.
        The self-attention states land in buffers with room for the position the next step feeds, which the
        model's update writes in place (``room_layer``) instead of concatenating a fresh copy of them all."""
        from transformers.cache_utils import DynamicLayer

        plain = (DynamicLayer, room_layer_type())
        own = self.family.self_cache(self.cache).layers
        cross = self.cache.cross_attention_cache.layers if self.family.encoder_decoder else []
        if not all(type(layer) in plain and layer.is_initialized for layer in [*own, *cross]):
            return False
        if self._cross_base is None:  # rows are still the sources, in order (every row change goes through here)
            assert self.row_source == list(range(len(self.sources)))
            self._cross_base = [(layer.keys, layer.values) for layer in cross]
        for number, layer in enumerate(own):
            cached = layer.keys.shape[2]
            own[number] = room_layer(self._gather(("self", number, 0), layer.keys, index, room=1),
                                     self._gather(("self", number, 1), layer.values, index, room=1), cached)
        if sources is not None and cross and not self.by_source:  # (by source: each source's states stay as they are)
            by_source = torch.tensor(sources, dtype=torch.long, device=index.device)  # (rows,)
            for number, (layer, (keys, values)) in enumerate(zip(cross, self._cross_base)):
                layer.keys = self._gather(("cross", number, 0), keys, by_source)
                layer.values = self._gather(("cross", number, 1), values, by_source)
        return True

    def _gather(self, name: tuple[str, int, int], states: torch.Tensor, index: torch.Tensor, room: int = 0) -> torch.Tensor:
        """``states.index_select(0, index)`` written into one of the two buffers ``name`` (the one ``states`` does not
        live in; grown when too small), with ``room`` more positions (dim 2) after the gathered ones: returns the
        (rows, heads, length + room, head_dim) view, contiguous, whose first ``length`` positions are the states."""
        length = states.shape[2]
        shape = (index.shape[0], states.shape[1], length + room, *states.shape[3:])
        size = math.prod(shape)
        pair = self._buffers.setdefault(name, [None, None])
        held = states.untyped_storage().data_ptr()
        which = 1 if pair[0] is not None and pair[0].untyped_storage().data_ptr() == held else 0
        buffer = pair[which]
        if buffer is None or buffer.numel() < size or buffer.dtype != states.dtype:
            buffer = pair[which] = torch.empty(size + size // 4, dtype=states.dtype, device=states.device)
        out = buffer[:size].view(shape)  # (rows, heads, length + room, head_dim)
        torch.index_select(states, 0, index, out=out[:, :, :length] if room else out)
        return out


class SourceDecoder(Decoder):
    """A decoder that decodes one encoded source at a time (``decode_source``; greedy, topk_dfs): ``decode`` encodes
    the ids under the decoder's length limit (``self.limit``) and hands them over, timed from the call."""

    limit: LengthLimit

    def decode(self, model: Any, input_ids: Any, *, index: int = 0, source: str | None = None) -> DecodeResult:
        t0 = time.perf_counter()
        with decoding(model):
            return self.decode_source(model, encode(model, input_ids, self.limit), t0=t0)


class LockstepDecoder(Decoder):
    """A decoder that searches several sources in lockstep, sharing forward passes: ``decode_batch`` encodes
    them with the decoder's length limit (``self.limit``) and hands them to ``decode_sources``, which the ranking
    evaluation also calls directly with a probe set encoded once for all its decoders."""

    limit: LengthLimit

    def decode_batch(self, model: Any, batch: list[Any], *, start: int = 0) -> list[DecodeResult]:
        """Several sources in lockstep, the first at stream position ``start``; each result equals ``decode`` of
        that source up to float noise. ``seconds`` is the call's time per source."""
        if not batch:
            return []
        t0 = time.perf_counter()
        with decoding(model):
            return self.decode_sources(model, [encode(model, input_ids, self.limit) for input_ids in batch], start=start, t0=t0)

    def decode_source(self, model: Any, source: Source, *, t0: float | None = None) -> DecodeResult:
        """One source encoded already (and perhaps constrained to a typed prefix: ``simpe.decoders.prefix``)."""
        with decoding(model):
            return self.decode_sources(model, [source], t0=t0)[0]

    @abstractmethod
    def decode_sources(self, model: Any, sources: list[Source], *, start: int = 0, t0: float | None = None) -> list[DecodeResult]:
        """``decode_batch`` of sources encoded already (``encode`` with this decoder's length limit). Call inside
        ``decoding(model)``; ``t0``: when the call's clock started (default: now)."""
