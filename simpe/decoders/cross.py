"""Cross-attention of a batch's rows to their own source's encoder states, read in place rather than copied per row.

A decoder batch holds the rows of several sources (the beams, samples or search prefixes of a probe set), grouped by
source. transformers' attention reads the cross-attention keys and values from the cache as one (heads, src_len,
head_dim) block per row, so the decoders gathered each row's copy from its source's states: src_len x d_model x 2 floats
per row, layer and step, the largest memory traffic of a sampling step, which the attention then read again. Under
``by_source`` the cache holds each source's states once, (sources, heads, max_src, head_dim), and the model's attention
function is, for that pass, a wrapper of transformers' own ``sdpa`` (registered under ``NAME``, masks made by the same
``sdpa_mask``) that runs each source's rows against that source's states as a broadcast view. Each row's output is the
value its own copy gave (the kernel computes rows independently and follows strides; the tests compare the records);
every other attention call (self-attention, the encoder, the update's passes) goes to ``sdpa`` unchanged.

``known_masks`` makes a pass's masks from what simpe knows instead of reading them back: transformers' mask builder
checks on the host whether a mask masks anything (on a GPU a synchronisation per pass) and the encoder-decoder
families build an all-ones self-attention mask when given none; a search that keeps its state on the device
(``simpe.decoders.beam_device``) says there is no padding, or that the sources are padded, and the same masks (None,
or the padded mask) follow without the read.

``usable`` says where: a family whose attention reads the cache's cross-attention states and calls transformers'
attention interface with them (Marian, mBART-50, M2M100/NLLB), running ``sdpa``, on a transformers that has the
interfaces. Elsewhere (T5's position bias, a causal LM, ``eager`` attention) the decoders gather per row as before.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from typing import Any

import torch

NAME = "simpe_sdpa_by_source"
KNOWN = "simpe_sdpa_known_masks"  # sdpa, with masks made from what simpe knows (known_masks)
FAMILIES = ("marian", "mbart", "m2m100")  # simpe.models families whose attention reads the cache's cross-attention states

# the pass under way: (its row blocks as (first row, end, source), the per-source state tensors it holds in the cache)
_PASS: contextvars.ContextVar[tuple[list[tuple[int, int, int]], list[torch.Tensor]] | None] = contextvars.ContextVar(
    "simpe_cross_pass", default=None)
# the pass under way in known_masks: (the decoder's rows are padded, the sources are padded, the cache is static)
_KNOWN: contextvars.ContextVar[tuple[bool, bool, bool] | None] = contextvars.ContextVar("simpe_known_masks", default=None)


def _attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attention_mask: Any,
               *args: Any, **kwargs: Any) -> tuple[torch.Tensor, None]:
    """transformers' ``sdpa_attention_forward``; a cross-attention call over per-source states runs source by source."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    current = _PASS.get()
    if current is None or not any(key is held for held in current[1]):
        return sdpa_attention_forward(module, query, key, value, attention_mask, *args, **kwargs)
    outputs = []
    for first, end, source in current[0]:
        rows = end - first
        mask = attention_mask if attention_mask is None or attention_mask.shape[0] == 1 else attention_mask[first:end]
        out, _ = sdpa_attention_forward(module, query[first:end], key[source:source + 1].expand(rows, -1, -1, -1),
                                        value[source:source + 1].expand(rows, -1, -1, -1), mask, *args, **kwargs)
        outputs.append(out)  # (rows, q_len, heads, head_dim)
    return torch.cat(outputs), None


@functools.cache
def _registered() -> bool:
    """Register ``NAME`` with transformers' attention and mask interfaces, once; False where either is missing."""
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface, sdpa_mask  # noqa: F401 (_mask's)
    except ImportError:
        return False
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    AttentionInterface.register(NAME, _attention)
    AttentionMaskInterface.register(NAME, _mask)
    AttentionInterface.register(KNOWN, sdpa_attention_forward)
    AttentionMaskInterface.register(KNOWN, _mask)
    return all(name in ALL_MASK_ATTENTION_FUNCTIONS._global_mapping for name in (NAME, KNOWN))  # else masks dropped


def _mask(*args: Any, **kwargs: Any) -> Any:
    """transformers' ``sdpa_mask``; during a ``known_masks`` pass it does not read back what simpe knows already.

    ``sdpa_mask`` drops a mask that masks nothing, after reading it back to the host (``fast_all``, ``.all()``):
    on a GPU a synchronisation in every pass. A causal mask (the decoder's self-attention) for one new position, or for
    a prefix on an empty cache, over rows without padding (transformers' encoder-decoder models build an all-ones mask when given none): None, which
    ``sdpa_mask`` answers too. Over rows known to be padded, or a bidirectional mask (the cross-attention's) over
    sources known to be padded: built without first checking whether it masks anything (it does). On a static cache
    (``simpe.decoders.static``) the causal mask is always built, on the device from the cache's position counter: the
    positions after it hold nothing yet."""
    from transformers.masking_utils import sdpa_mask

    known = _KNOWN.get()
    if known is not None and kwargs.get("local_size") is None:
        rows_padded, sources_padded, static = known
        causal = kwargs.get("allow_is_causal_skip", True)  # a bidirectional mask is asked with False
        # ... and so is a causal one over a static cache at one new position; the bidirectional one says its own skip
        causal = causal or (static and "allow_is_bidirectional_skip" not in kwargs)
        if causal and static:
            kwargs["allow_is_causal_skip"] = False
        elif causal and not rows_padded and (kwargs.get("q_length") == 1 or kwargs.get("kv_length") == kwargs.get("q_length")):
            return None  # sdpa_mask's first reason to skip: one new position, or a prefix on an empty cache
        if causal and rows_padded:
            kwargs["allow_is_causal_skip"] = False
        if not causal and sources_padded and kwargs.get("allow_is_bidirectional_skip"):
            kwargs["allow_is_bidirectional_skip"] = False
    return sdpa_mask(*args, **kwargs)


@contextlib.contextmanager
def known_masks(model: Any, rows_padded: bool, sources_padded: bool, static: bool = False) -> Iterator[None]:
    """One pass of ``model`` (running ``sdpa``, or ``by_source``'s attention) whose masks ``_mask`` makes without
    reading them back: ``rows_padded``, whether the decoder's rows have padding (the family's forward was given a
    mask, which has zeros; else none); ``sources_padded``, whether the cross-attention mask has padding (sources of
    different lengths); ``static``, whether the decoder's cache is a static one (``simpe.decoders.static``: its causal
    mask is never skipped). Elsewhere (another attention, a transformers without the interfaces) the pass runs as it
    would."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else model
    configs = {id(c): c for c in (model.config, getattr(decoder, "config", model.config))}  # T5's stacks copy theirs
    before = {key: c._attn_implementation for key, c in configs.items()}
    if any(name not in ("sdpa", NAME) for name in before.values()) or not _registered():
        yield
        return
    token = _KNOWN.set((rows_padded, sources_padded, static))
    for key, config in configs.items():
        if before[key] == "sdpa":
            config._attn_implementation = KNOWN
    try:
        yield
    finally:
        for key, config in configs.items():
            config._attn_implementation = before[key]
        _KNOWN.reset(token)


def usable(model: Any, family: Any) -> bool:
    """Whether ``model``'s passes may hold per-source cross-attention states (``by_source``): a family of ``FAMILIES``
    (by name: a run's code fingerprint counts only its own family's module) running ``sdpa``."""
    return (family.name in FAMILIES and getattr(model.config, "_attn_implementation", None) == "sdpa"
            and _registered())


def blocks(row_source: list[int]) -> list[tuple[int, int, int]]:
    """The runs of rows of one source: (first row, end, source), in row order."""
    runs: list[tuple[int, int, int]] = []
    first = 0
    for row in range(1, len(row_source) + 1):
        if row == len(row_source) or row_source[row] != row_source[first]:
            runs.append((first, row, row_source[first]))
            first = row
    return runs


@contextlib.contextmanager
def by_source(model: Any, row_source: list[int], states: list[torch.Tensor]) -> Iterator[None]:
    """One pass of ``model`` whose cache holds the cross-attention ``states`` (keys and values of every layer, each
    (sources, heads, max_src, head_dim)) once per source, for rows grouped by source (``row_source``). Only where
    ``usable``. The model's configuration is as before afterwards."""
    config = model.config
    before = config._attn_implementation
    token = _PASS.set((blocks(row_source), states))
    config._attn_implementation = NAME
    try:
        yield
    finally:
        config._attn_implementation = before
        _PASS.reset(token)
