"""Decoder rows on fixed shapes: a key/value cache allocated once per (rows, length bucket), and the decoding step as
one CUDA graph replayed (issue 67, items 1 and 2).

``simpe.decoders.beam_device`` keeps the beam search's state on the device; its model passes still ran on transformers'
growing cache, a tensor of another shape at every step, and each pass launched every kernel from Python. Here:

* **Length buckets.** A search of ``rows`` rows whose target may reach ``prefix + max_len`` positions gets a
  self-attention cache of ``bucket(prefix + max_len)`` positions (``BUCKETS``: 16, 32, 64, ... ), allocated once per
  (model, rows, bucket, source bucket) and kept from search to search (``_POOL``, a few entries). The sources are
  padded to a bucket too: their encoder states (the encoder ran on the source alone, unpadded) are copied into a
  (rows, source bucket, d_model) block with a mask of the real positions, so the cross-attention's keys and values
  have one shape for every source of the bucket.
* **transformers' own static layers.** The self-attention cache is ``transformers.cache_utils.StaticCache``'s layers:
  each pass writes its position with ``index_copy_`` at a position counter held on the device, and the causal mask
  over the bucket is built from that counter on the device (``cross.known_masks(..., static=True)``: no read back).
  Positions after the counter are masked: the attention reads them with weight 0. The buffers are zeroed when a
  search starts, so they are always finite (0 times a stale NaN would not be 0).
* **Rows fixed from step 0.** Every source's block has ``width`` rows from the first pass on (the prefix fed to all of
  them; ``beam_device`` marks all but the first dead), so no pass changes the row count, and the cross-attention
  states (one copy per row, computed at step 0) never move. ``select_index`` only records the parents of the rows;
  the next step reorders the self-attention states in place (``index_select``, then ``copy_`` into the same buffers).
* **One graph per step on CUDA** (``GRAPHS``: None = on CUDA only). The first step after a search's prefix runs
  eagerly (the warm-up CUDA graphs need), the second is captured once per pool entry and beam size with
  ``torch.cuda.CUDAGraph``, and every later step of every later search of that shape replays it: the reorder, the
  whole decoder pass, the log-softmax and the search's decisions (``beam_device._Search.advance``, its state in
  tensors the entry keeps: ``held``) as one launch. The graph reads fixed addresses: the weights (an update writes
  them in place off the CPU: ``simpe.loop.undo.in_place``), the cache, the tokens and parents, the search's state.
  Once per search the weights' addresses and the modules' hooks are compared with those at the capture; where
  anything moved the graph is captured anew.
  A model with a forward hook of its own (an adaptation method's: ``bias``, ``knn``: Python a replay would skip) is
  not captured, nor is one whose capture fails (an operation CUDA graphs refuse): that entry's steps run eagerly,
  said once in the log. The loop's clock (``ModelTimer``) stands aside while a step is recorded; replays run no
  hook, so a record's ``translate_model`` seconds then count the eager passes only.

Where it applies (``usable``): an encoder-decoder family whose attention reads transformers' cache layers and masks
(``cross.FAMILIES``: Marian, mBART-50, M2M100/NLLB) or a causal LM (Llama, Qwen2: the prompt is the prefix, its
positions and causal mask come from the cache's counter), running ``sdpa``; sources whose prefixes have one length
(a causal LM's prompts of different lengths in one search would need per-row positions: those keep the dynamic path;
the loop translates one segment at a time); a plain model (no stacked run axis: its rows are several runs' blocks,
which the pool would have to key on); a transformers whose static cache keeps its position on the device
(``supported``: 5.x); and ``STATIC`` (None = on every device but the CPU; the tests force it on the CPU). Elsewhere
``beam_device`` runs on ``Lockstep``.
Padding changes what the kernels sum over, not what they compute: in float32 the records equal the dynamic path's to
float noise, in bfloat16 a step moves by the logits' last bit (tests/unit/test_static_decoding.py); the CPU's records
are unchanged (off there).
"""
from __future__ import annotations

import contextlib
import functools
import logging
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch

from simpe import fastpaths
from simpe.decoders import cross
from simpe.decoders.incremental import Source, log_softmax_
from simpe.models import family_of

log = logging.getLogger(__name__)

STATIC: bool | None = None  # None: off the CPU, unless SIMPE_FIXED_SHAPES=off; True / False: forced (tests)
GRAPHS: bool | None = None  # None: on CUDA, unless SIMPE_CUDA_GRAPHS=off; False: eager steps (the device check's "off")
BUCKETS = (16, 32, 64, 128, 256, 512, 1024)  # positions; beyond the last, multiples of it
POOL_SIZE = 4  # pool entries kept (each holds a cache of rows x bucket positions per layer)


def bucket(length: int) -> int:
    """The smallest of ``BUCKETS`` >= ``length`` (beyond them, the next multiple of the largest)."""
    for size in BUCKETS:
        if length <= size:
            return size
    return -(-length // BUCKETS[-1]) * BUCKETS[-1]


def enabled(device: Any) -> bool:
    """Whether searches on ``device`` use fixed shapes: ``STATIC`` when set, else off the CPU unless
    ``SIMPE_FIXED_SHAPES=off`` (``simpe.fastpaths``)."""
    if STATIC is not None:
        return STATIC
    return torch.device(device or "cpu").type != "cpu" and fastpaths.switch(fastpaths.FIXED_SHAPES)


def graphs_enabled(device: Any) -> bool:
    """Whether the step is captured as a CUDA graph on ``device``: only on CUDA, and not where ``GRAPHS`` is False or
    ``SIMPE_CUDA_GRAPHS=off`` (``GRAPHS`` True overrides the variable)."""
    if torch.device(device or "cpu").type != "cuda" or GRAPHS is False:
        return False
    return GRAPHS is True or fastpaths.switch(fastpaths.CUDA_GRAPHS)


@functools.cache
def supported() -> bool:
    """Whether this transformers' static cache layer keeps its position counter on the device (``cumulative_length``,
    transformers 5): transformers 4's takes each pass's positions from the caller (``cache_position``), which the
    families' forwards here do not pass."""
    try:
        from transformers.cache_utils import StaticLayer
    except ImportError:
        return False
    return hasattr(StaticLayer(max_cache_len=1), "cumulative_length")


def _attention_known(model: Any, family: Any) -> bool:
    """An encoder-decoder whose attention reads transformers' cache layers and masks (``cross.usable``), or a causal LM
    running ``sdpa`` (its positions and causal mask come from the cache's counter)."""
    if family.encoder_decoder:
        return cross.usable(model, family)
    return getattr(model.config, "_attn_implementation", None) == "sdpa" and cross._registered()


def usable(model: Any, sources: list[Source]) -> bool:
    """Whether ``StaticRows`` can run these sources on ``model`` (see the module docstring)."""
    from simpe.models.stacked import StackedModel

    family = family_of(model)
    return (enabled(sources[0].device) and supported() and _attention_known(model, family)
            and not isinstance(model, StackedModel) and len({len(s.prefix) for s in sources}) == 1)


def _signature(model: Any) -> tuple:
    """What a captured graph depends on beyond its own buffers: every weight's and buffer's address, dtype and shape
    (Marian's output bias is a buffer), and how many hooks each module has (an adaptation method that attaches one
    changes what a pass runs)."""
    weights = tuple((p.data_ptr(), p.dtype, tuple(p.shape)) for p in (*model.parameters(), *model.buffers()))
    hooks = tuple(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    return weights, hooks, model.training


_CAPTURING = False  # a step is being recorded into a CUDA graph (capturing)


def capturing() -> bool:
    """Whether a decoding step is being recorded into a CUDA graph now (the loop's clock then records nothing)."""
    return _CAPTURING


def _foreign_hook(model: Any) -> str | None:
    """The name of the first module with a forward hook or pre-hook other than one whose owner stands aside during a
    capture (``stands_aside_in_capture``: the loop's clock, ``simpe.loop.phases.ModelTimer``, which checks
    ``capturing``; the loop is a layer above, so it is known by that mark, not imported), or None."""
    for name, module in model.named_modules():
        for hook in (*module._forward_pre_hooks.values(), *module._forward_hooks.values()):
            if not getattr(getattr(hook, "__self__", None), "stands_aside_in_capture", False):
                return name or type(model).__name__
    return None


@contextlib.contextmanager
def _positions_unchecked(model: Any, positions: int) -> Any:
    """M2M100's sinusoidal position table (``make_weights``) checks in every pass whether it must grow, comparing the
    cache's position counter with its size: on a static cache that counter is a tensor on the device, so the check is
    a read back (and refused inside a CUDA graph). The table is grown here once, on the host, to hold ``positions``
    (a bucket: more than any pass reaches), and for the block its forward is the same lookup without the check.
    Elsewhere (learned or fixed tables that take the positions as a tensor) nothing changes."""
    table = getattr(model.get_decoder(), "embed_positions", None)
    if table is None or not (hasattr(table, "make_weights") and hasattr(table, "create_position_ids_from_input_ids")):
        yield
        return
    needed = table.padding_idx + 1 + positions
    if needed > table.weights.size(0):
        table.make_weights(needed + table.offset, table.embedding_dim, table.padding_idx)

    def forward(input_ids: torch.Tensor | None = None, inputs_embeds: torch.Tensor | None = None,
                cache_length: Any = 0) -> torch.Tensor:
        if input_ids is None:
            position_ids = table.create_position_ids_from_inputs_embeds(inputs_embeds, cache_length, table.padding_idx)
            rows, length = inputs_embeds.shape[:2]
        else:
            position_ids = table.create_position_ids_from_input_ids(input_ids, table.padding_idx, cache_length)
            rows, length = input_ids.shape
        return table.weights.index_select(0, position_ids.view(-1)).view(rows, length, table.weights.shape[-1]).detach()

    table.forward = forward
    try:
        yield
    finally:
        del table.forward


@dataclass(eq=False)
class _Entry:
    """One pool entry: the fixed-shape tensors of (rows, bucket, source bucket), and the step's graph once captured."""

    cache: Any  # EncoderDecoderCache(StaticCache, DynamicCache over cross_keys / cross_values); a causal LM's StaticCache
    tokens: torch.Tensor  # (rows, 1) the tokens a step feeds
    parents: torch.Tensor  # (rows,) the row each row continues (the reorder a step starts with)
    self_mask: torch.Tensor  # (rows, bucket) ones: the causal mask does the rest
    src_mask: torch.Tensor | None  # (rows, source bucket) 1 on a row's source positions (None: a causal LM)
    hidden: torch.Tensor | None  # (rows, source bucket, d_model) encoder states, zero after a source's end
    cross_keys: list[torch.Tensor] = field(default_factory=list)  # per layer (rows, heads, source bucket, head_dim)
    cross_values: list[torch.Tensor] = field(default_factory=list)
    held: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)  # per beam size, the search's state
    graphs: dict[int, Any] = field(default_factory=dict)  # per beam size, the step's torch.cuda.CUDAGraph
    signatures: dict[int, tuple] = field(default_factory=dict)  # per beam size, _signature at the capture
    warm: bool = False  # one eager step ran on these buffers (a capture needs one)
    refused: str | None = None  # why a capture failed (then every step of this entry runs eagerly)


# (id(model), rows, bucket, source bucket, dtype, device) -> (weak reference to the model, entry), least recent first
_POOL: OrderedDict[tuple, tuple[Any, _Entry]] = OrderedDict()


def clear() -> None:
    """Drop every pool entry (their caches and graphs)."""
    _POOL.clear()


class StaticRows:
    """``Lockstep``'s part in ``beam_device.search`` on fixed shapes: ``width`` rows per source from step 0 on.

    ``step(None)`` feeds every row its source's prefix (a search's first pass); ``select_index`` records each row's
    parent and ``feed`` the next tokens; ``pass_`` reorders the self-attention states by the parents and feeds one
    token per row; ``step(tokens)`` is ``feed`` then ``pass_``. Each returns (rows, vocab) float32 log-probabilities,
    which the caller may mask in place. ``run(body, beam_size)`` runs a search's whole later step (``pass_`` and its
    decisions) eagerly, or as a replay of its CUDA graph."""

    def __init__(self, model: Any, sources: list[Source], width: int) -> None:  # width: rows per source
        self.model, self.sources, self.width = model, sources, width
        self.family = family_of(model)
        self.rows = len(sources) * width
        self.prefix = len(sources[0].prefix)
        self.bucket = bucket(self.prefix + max(s.max_len for s in sources))
        self.encoder_decoder = self.family.encoder_decoder
        self.src_bucket = bucket(max(s.src_len for s in sources)) if self.encoder_decoder else 0
        self.device = sources[0].device
        self.position = 0
        self.signature: tuple | None = None  # the model's _signature, taken at the search's first replay
        self.entry = self._entry()
        self._start()

    # ------------------------------------------------------------------ the pool
    def _entry(self) -> _Entry:
        dtype = next(self.model.parameters()).dtype
        key = (id(self.model), self.rows, self.bucket, self.src_bucket, dtype, str(self.device))
        held = _POOL.get(key)
        if held is not None and held[0]() is self.model:
            _POOL.move_to_end(key)
            return held[1]
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache, StaticCache

        rows = self.rows
        own = StaticCache(config=self.model.config, max_cache_len=self.bucket)
        src_mask = hidden = None
        if self.encoder_decoder:
            d_model = self.sources[0].hidden.shape[-1]
            src_mask = torch.zeros((rows, self.src_bucket), dtype=torch.long, device=self.device)
            hidden = torch.zeros((rows, self.src_bucket, d_model), dtype=self.sources[0].hidden.dtype, device=self.device)
        entry = _Entry(
            cache=EncoderDecoderCache(own, DynamicCache()) if self.encoder_decoder else own,
            tokens=torch.zeros((rows, 1), dtype=torch.long, device=self.device),
            parents=torch.arange(rows, device=self.device),
            self_mask=torch.ones((rows, self.bucket), dtype=torch.long, device=self.device),
            src_mask=src_mask, hidden=hidden)
        _POOL[key] = (weakref.ref(self.model), entry)
        while len(_POOL) > POOL_SIZE:
            _POOL.popitem(last=False)
        return entry

    def _start(self) -> None:
        """A search's start on the entry: the sources' states and masks written into its buffers, the cache emptied."""
        entry = self.entry
        if self.encoder_decoder:
            entry.hidden.zero_()
            entry.src_mask.zero_()
            for i, source in enumerate(self.sources):
                block = slice(i * self.width, (i + 1) * self.width)
                entry.hidden[block, : source.src_len] = source.hidden[0]
                entry.src_mask[block, : source.src_len] = 1
        for layer in self._own().layers:
            if layer.is_initialized:
                layer.keys.zero_()
                layer.values.zero_()
                layer.cumulative_length.zero_()

    # ------------------------------------------------------------------ the steps
    def step(self, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """Feed the prefix (``tokens`` None: step 0) or one token per row after the parents' reorder, eagerly."""
        if self.position == 0:
            logp = self._prefix()
        else:
            assert tokens is not None and tokens.shape[0] == self.rows, (None if tokens is None else tokens.shape, self.rows)
            self.feed(tokens)
            logp = self.pass_()
        self.position += 1
        return logp

    def select_index(self, index: torch.Tensor, sources: list[int]) -> None:
        """Each row's parent row, a (rows,) LongTensor on the device, applied by the next pass (``sources`` unchanged:
        a row's parent is a row of its own source's block)."""
        self.entry.parents.copy_(index)

    def feed(self, tokens: torch.Tensor) -> None:
        """The (rows,) tokens the next pass feeds."""
        self.entry.tokens.copy_(tokens.view(self.rows, 1))

    def held(self, beam_size: int) -> dict[str, torch.Tensor]:
        """The tensors a search of ``beam_size`` beams keeps its state in on this entry (``beam_device._Search``: the
        same from search to search, as a captured graph reads them)."""
        return self.entry.held.setdefault(beam_size, {})

    def _prefix(self) -> torch.Tensor:
        """Step 0: every row fed its source's prefix on the emptied cache; the cross-attention states this pass
        computes are copied into the entry's buffers, which every later pass reads in place."""
        entry = self.entry
        fed = torch.tensor([list(s.prefix) for s in self.sources for _ in range(self.width)], dtype=torch.long,
                           device=self.device)  # (rows, prefix)
        if not self.encoder_decoder:  # a causal LM: the prompt fills the cache's first positions, nothing else to keep
            logits, cache = self._forward(fed)
            assert cache is entry.cache
            return log_softmax_(logits)
        cache = entry.cache
        own = cache.self_attention_cache
        # the cross-attention is computed afresh by this pass: a cross cache of no layers, marked as not computed
        from transformers.cache_utils import DynamicCache

        cache.cross_attention_cache = DynamicCache()
        cache.is_updated = {}
        logits, cache = self._forward(fed)
        entry.cache = cache
        assert cache.self_attention_cache is own
        # the cross-attention states into the entry's own buffers (kept from search to search: the graph reads them)
        layers = cache.cross_attention_cache.layers
        if len(entry.cross_keys) != len(layers):
            entry.cross_keys = [layer.keys.clone() for layer in layers]
            entry.cross_values = [layer.values.clone() for layer in layers]
        else:
            torch._foreach_copy_(entry.cross_keys, [layer.keys for layer in layers])
            torch._foreach_copy_(entry.cross_values, [layer.values for layer in layers])
        for layer, keys, values in zip(layers, entry.cross_keys, entry.cross_values):
            layer.keys, layer.values = keys, values
        return log_softmax_(logits)

    def pass_(self) -> torch.Tensor:
        """One pass after the prefix: the self-attention states reordered by the parents in place, then the decoder on
        the entry's tokens; (rows, vocab) log-probabilities. Reads nothing back."""
        entry = self.entry
        for layer in self._own().layers:
            layer.keys.copy_(layer.keys.index_select(0, entry.parents))
            layer.values.copy_(layer.values.index_select(0, entry.parents))
        logits, _ = self._forward(entry.tokens)
        return log_softmax_(logits)

    def _own(self) -> Any:
        """The self-attention part of the entry's cache (a causal LM's whole cache)."""
        return self.entry.cache.self_attention_cache if self.encoder_decoder else self.entry.cache

    def _forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """The family's ``forward`` (``model(...)`` itself) on the entry's cache and masks, with the token ids as they
        are: every row's prefix has one length, so no row needs the position correction a padded prefix gets
        (``ModelFamily.decoder_inputs``). The self-attention mask is all ones over the bucket (given, so that the
        decoder does not build one from the position counter on the host); the causal mask does the rest."""
        from transformers.modeling_outputs import BaseModelOutput

        from simpe.models.base import cache_keyword, returned_cache

        entry = self.entry
        if not self.encoder_decoder:  # positions and the causal mask from the cache's counter; no padding to mask
            with cross.known_masks(self.model, False, False, static=True):
                out = self.model(input_ids=tokens, **{cache_keyword(self.model): entry.cache}, use_cache=True,
                                 return_dict=True, logits_to_keep=1)
            return out.logits[:, -1, :], returned_cache(out)
        with cross.known_masks(self.model, False, True, static=True), _positions_unchecked(self.model, self.bucket):
            out = self.model(decoder_input_ids=tokens, encoder_outputs=BaseModelOutput(last_hidden_state=entry.hidden),
                             attention_mask=entry.src_mask, decoder_attention_mask=entry.self_mask,
                             **{cache_keyword(self.model): entry.cache}, use_cache=True, return_dict=True)
        return out.logits[:, -1, :], returned_cache(out)

    def run(self, body: Any, beam_size: int) -> None:
        """``body`` (a search's step after the first: ``pass_`` and the search's decisions, writing only the entry's
        tensors and ``held(beam_size)``'s) eagerly, or as a replay of its CUDA graph where one is held or can be
        captured (see the module docstring). The first such step on an entry runs eagerly: the warm-up a capture
        needs."""
        entry = self.entry
        self.position += 1
        if not graphs_enabled(self.device) or entry.refused is not None:
            body()
            return
        if not entry.warm:  # the warm-up, on a side stream as CUDA graphs ask (lazy setup of the libraries' handles)
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                body()
            torch.cuda.current_stream().wait_stream(stream)
            entry.warm = True
            return
        if self.signature is None:  # once per search: nothing moves the weights while a search runs
            self.signature = _signature(self.model)
        signature = self.signature
        if entry.graphs.get(beam_size) is None or entry.signatures.get(beam_size) != signature:
            hooked = _foreign_hook(self.model)
            if hooked is not None:  # a hook runs Python in every pass, which a replay would skip: eager steps
                entry.graphs.clear()
                entry.refused = f"{hooked} has a forward hook (an adaptation method's, e.g. bias or knn)"
                log.warning("decoding step not captured as a CUDA graph: %s; its steps run eagerly", entry.refused)
                body()
                return
            try:
                self._capture(body, beam_size, signature)
            except Exception as error:  # noqa: BLE001 - any refusal of the capture: eager steps, said once
                entry.graphs.clear()
                entry.refused = f"{type(error).__name__}: {error}"
                log.warning("decoding step not captured as a CUDA graph (%s); its steps run eagerly", entry.refused)
                body()
                return
        entry.graphs[beam_size].replay()

    def _capture(self, body: Any, beam_size: int, signature: tuple) -> None:
        """Record ``body`` into a CUDA graph; nothing runs during the recording (the replay that follows takes the
        step). The loop's clock (``ModelTimer``'s hooks) is told to stand aside while it records (``capturing``): a
        replay runs no hook, so the record's ``translate_model`` seconds count the eager passes only."""
        global _CAPTURING
        entry = self.entry
        graph = torch.cuda.CUDAGraph()
        torch.cuda.current_stream().synchronize()
        _CAPTURING = True
        try:
            with torch.cuda.graph(graph):
                body()
        finally:
            _CAPTURING = False
        entry.graphs[beam_size], entry.signatures[beam_size] = graph, signature


@contextlib.contextmanager
def forced(static: bool | None = True, graphs: bool | None = None) -> Any:
    """``STATIC`` and ``GRAPHS`` set for the duration (tests, benchmarks, the device check's on/off rows)."""
    global STATIC, GRAPHS
    saved = STATIC, GRAPHS
    STATIC, GRAPHS = static, graphs
    try:
        yield
    finally:
        STATIC, GRAPHS = saved
