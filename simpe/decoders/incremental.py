"""Incremental decoding for Marian encoder-decoder models: shared by every decoder.

The encoder runs once per source; the decoder then advances one target position per call,
with the model's own key/value cache (``transformers`` 4.57 ``EncoderDecoderCache``), through
``model(...)`` itself so that anything an adaptation method attaches to the model (an
extra output bias, hooks, swapped modules) is honoured. Scores are raw
``log_softmax`` rows; the pad / decoder-start token is never chosen, and its probability
mass is *not* renormalised away (a hypothesis' score is log P(y|x) under the model).

Length limit: a hypothesis has at most ``max_len`` target tokens counting its EOS, with
``max_len = min(max_len_cap, floor(max_len_a * src_len + max_len_b))`` and ``src_len`` the
number of source tokens (EOS included). At the last allowed position only EOS may follow,
scored with its true log-probability (unlike ``generate``'s ``forced_eos_token_id``, which
gives it probability 1).

This module does not search: see greedy.py, beam.py, sampling.py, topk.py.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from simpe.errors import ConfigError
from simpe.model import eval_mode

NEG_INF = float("-inf")


@dataclass
class LengthLimit:
    """``max_len = min(cap, floor(a * src_len + b))`` target tokens, EOS included (at least 1)."""

    a: float = 2.0
    b: int = 10
    cap: int = 256

    def __post_init__(self) -> None:
        if not (isinstance(self.a, (int, float)) and self.a >= 0):
            raise ConfigError(f"max_len_a must be a number >= 0, got {self.a!r}")
        if not (isinstance(self.b, int) and self.b >= 0):
            raise ConfigError(f"max_len_b must be an integer >= 0, got {self.b!r}")
        if not (isinstance(self.cap, int) and self.cap >= 1):
            raise ConfigError(f"max_len_cap must be an integer >= 1, got {self.cap!r}")

    def __call__(self, src_len: int) -> int:
        return max(1, min(self.cap, int(math.floor(self.a * src_len + self.b))))

    def params(self) -> dict[str, Any]:
        return {"max_len_a": self.a, "max_len_b": self.b, "max_len_cap": self.cap}


def check_int(name: str, value: Any, minimum: int, allow_none: bool = False) -> None:
    """Raise ConfigError unless ``value`` is an int >= minimum (or None when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        extra = " or null" if allow_none else ""
        raise ConfigError(f"decoder parameter {name} must be an integer >= {minimum}{extra}, got {value!r}")


def check_number(name: str, value: Any, minimum: float, allow_none: bool = False) -> None:
    """Raise ConfigError unless ``value`` is a number > minimum (or None when allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > minimum:
        extra = " or null" if allow_none else ""
        raise ConfigError(f"decoder parameter {name} must be a number > {minimum}{extra}, got {value!r}")


@dataclass
class Special:
    """The model's special token ids."""

    eos: int
    start: int  # decoder start token (Marian: the pad id)
    forbidden: tuple[int, ...]  # never generated: pad and decoder start


def special_ids(model: Any) -> Special:
    """EOS, decoder-start and forbidden ids from the model config."""
    cfg = model.config
    eos = cfg.eos_token_id[0] if isinstance(cfg.eos_token_id, (list, tuple)) else cfg.eos_token_id
    start = cfg.decoder_start_token_id if cfg.decoder_start_token_id is not None else cfg.pad_token_id
    forbidden = tuple(sorted({t for t in (cfg.pad_token_id, start) if t is not None and t != eos}))
    return Special(int(eos), int(start), forbidden)


@contextlib.contextmanager
def decoding(model: Any) -> Iterator[None]:
    """Eval mode and no autograd for the duration; every module's training flag is restored afterwards."""
    with eval_mode(model), torch.inference_mode():
        yield


@dataclass
class Source:
    """One encoded source sentence."""

    hidden: torch.Tensor  # (1, src_len, d_model) encoder output
    src_len: int
    max_len: int  # target tokens allowed, EOS included
    special: Special


def encode(model: Any, input_ids: Any, limit: LengthLimit) -> Source:
    """Run the encoder once.

    Args:
        input_ids: (1, src_len) LongTensor (a 1-D tensor or a list of ids is accepted too).
    """
    device = next(model.parameters()).device
    ids = torch.as_tensor(input_ids, dtype=torch.long, device=device)  # (1, src_len)
    if ids.dim() == 1:
        ids = ids.unsqueeze(0)
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise ConfigError(f"decode() takes one source as a (1, src_len) tensor, got shape {tuple(ids.shape)}")
    mask = torch.ones_like(ids)  # (1, src_len)
    hidden = model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state  # (1, src_len, d_model)
    src_len = int(ids.shape[1])
    return Source(hidden, src_len, limit(src_len), special_ids(model))


def step_scores(logp: torch.Tensor, special: Special, last: bool, overwrite: bool = False) -> torch.Tensor:
    """Log-probabilities with forbidden tokens at -inf, and only EOS when ``last``.

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
        out[:, special.eos] = logp[:, special.eos]
        return out
    out = logp if overwrite else logp.clone()  # (rows, vocab)
    for token in special.forbidden:  # one or two ids: a column fill each
        out[:, token] = NEG_INF
    return out


class CachedDecoder:
    """Decoder rows advancing together over one source, with one shared key/value cache.

    ``step(tokens)`` feeds one token per row and returns the next-token log-probabilities;
    ``select(rows)`` keeps / reorders / repeats rows (beam reordering, dropping finished
    samples) through ``Cache.reorder_cache``.
    """

    def __init__(self, model: Any, source: Source) -> None:
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache

        self.model = model
        self.source = source
        self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        self.rows = 1
        self.length = 0  # target positions consumed so far (the start token included)

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token per row.

        Args:
            tokens: (rows,) LongTensor on the model's device.
        Returns:
            (rows, vocab) float32 log-probabilities of the next token.
        """
        from transformers.modeling_outputs import BaseModelOutput

        rows = tokens.shape[0]
        assert rows == self.rows, (rows, self.rows)
        hidden = self.source.hidden.expand(rows, -1, -1)  # (rows, src_len, d_model), a view
        out = self.model(decoder_input_ids=tokens.view(rows, 1), encoder_outputs=BaseModelOutput(last_hidden_state=hidden),
                         past_key_values=self.cache, use_cache=True, return_dict=True)
        self.cache = out.past_key_values
        self.length += 1
        return torch.log_softmax(out.logits[:, -1, :].float(), dim=-1)  # (rows, vocab)

    def select(self, rows: torch.Tensor) -> None:
        """Keep the cache rows ``rows`` (a (new_rows,) LongTensor; repeats allowed)."""
        self.cache.reorder_cache(rows)
        self.rows = int(rows.shape[0])


def stack_sources(sources: list[Source]) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Encoder outputs of several sources, right-padded: ((n, max_src, d_model), (n, max_src) mask or None for one)."""
    if len(sources) == 1:
        return sources[0].hidden, None
    longest = max(s.src_len for s in sources)
    first = sources[0].hidden
    hidden = first.new_zeros((len(sources), longest, first.shape[-1]))  # (n, max_src, d_model)
    mask = torch.zeros((len(sources), longest), dtype=torch.long, device=first.device)  # (n, max_src)
    for i, s in enumerate(sources):
        hidden[i, : s.src_len] = s.hidden[0]
        mask[i, : s.src_len] = 1
    return hidden, mask


def new_cache() -> Any:
    """An empty ``EncoderDecoderCache`` for ``batched_step``."""
    from transformers.cache_utils import DynamicCache, EncoderDecoderCache

    return EncoderDecoderCache(DynamicCache(), DynamicCache())


def batched_step(model: Any, tokens_in: torch.Tensor, hidden: torch.Tensor, src_mask: torch.Tensor | None,
                 row_source: list[int], cache: Any, position: int) -> tuple[torch.Tensor, Any]:
    """One decoder step for rows of several sources (the batched beam search and sampler).

    Args:
        tokens_in: (rows,) the last token of each row; row r continues source ``row_source[r]``.
        hidden, src_mask: ``stack_sources`` of the sources (read at step 0; the cache holds them after).
        cache: the rows' ``EncoderDecoderCache`` (``new_cache()`` at step 0), reordered by the caller.
    Returns:
        ((rows, vocab) float32 log-probabilities of the next token, the updated cache).
    """
    from transformers.modeling_outputs import BaseModelOutput

    rows = len(row_source)
    enc = hidden if position == 0 else hidden[:1].expand(rows, -1, -1)  # (rows, max_src, d_model); after step 0 only its shape is read
    mask = None if src_mask is None else src_mask[torch.tensor(row_source, device=hidden.device)]  # (rows, max_src)
    out = model(decoder_input_ids=tokens_in.view(rows, 1), encoder_outputs=BaseModelOutput(last_hidden_state=enc),
                attention_mask=mask, past_key_values=cache, use_cache=True, return_dict=True)
    return torch.log_softmax(out.logits[:, -1, :].float(), dim=-1), out.past_key_values  # (rows, vocab)


def new_states(cache: Any, position: int) -> torch.Tensor:
    """(rows, layers, 2, heads, head_dim) self-attention keys/values at ``position`` of an EncoderDecoderCache."""
    layers = cache.self_attention_cache.layers
    return torch.stack([torch.stack([layer.keys[:, :, position], layer.values[:, :, position]], dim=1)  # (rows, 2, heads, head_dim)
                        for layer in layers], dim=1)  # (rows, layers, 2, heads, head_dim)


def start_tokens(source: Source, rows: int) -> torch.Tensor:
    """(rows,) LongTensor of decoder start tokens on the encoder's device."""
    return torch.full((rows,), source.special.start, dtype=torch.long, device=source.hidden.device)  # (rows,)
