"""``mbart``: mBART-50 many-to-many checkpoints (facebook/mbart-large-50-many-to-many-mmt, and mBART-25 ones).

Quirks: the source is ``[src_lang] tokens </s>`` (the tokenizer's ``src_lang``, e.g. ``en_XX``);
the decoder starts with ``</s>`` (``decoder_start_token_id`` 2) followed by a forced BOS, the
target language's code (``tgt_lang``, e.g. ``de_DE``: ``convert_tokens_to_ids``), which a
hypothesis never includes and its score never counts (probability 1, as ``generate``'s
``forced_bos_token_id``); a target is the reference's content tokens and ``</s>``. The
learned position table is a parameter like any other (``full`` adapts it); ``final_logits_bias``
is a buffer (``bias`` adds its own). Batched prefixes of different lengths: padding after them,
the new token's input embedding carries the difference between its own learned position and
the shared one.
"""
from __future__ import annotations

from typing import Any

import torch

from simpe.errors import ConfigError
from simpe.models.base import FAMILIES, ModelFamily, position_lengths


def added_specials(tokenizer: Any) -> list[str]:
    """The tokenizer's added special tokens beyond bos/eos/pad/unk (language codes in NLLB's): transformers 4
    calls them ``additional_special_tokens``, transformers 5 ``extra_special_tokens`` (a list, or a mapping)."""
    found = getattr(tokenizer, "additional_special_tokens", None)
    if not found:
        extra = getattr(tokenizer, "extra_special_tokens", None)
        found = list(extra.values()) if isinstance(extra, dict) else list(extra or [])
    return [str(token) for token in found]


def language_tokens(tokenizer: Any) -> list[str]:
    """The language-code tokens a multilingual tokenizer knows (its additional special tokens)."""
    codes = getattr(tokenizer, "lang_code_to_id", None)
    return sorted(codes) if codes else sorted(added_specials(tokenizer))


def check_codes(family: ModelFamily, tokenizer: Any, known: list[str], example: str) -> None:
    """Refuse a src_lang / tgt_lang the tokenizer does not know (one line, some known codes)."""
    for key in ("src_lang", "tgt_lang"):
        value = getattr(family, key)
        if value is not None and value not in known:
            raise ConfigError(f"unknown model.{key} {value!r} for this {family.name} tokenizer; known: "
                              f"{', '.join(known[:12])}{', ...' if len(known) > 12 else ''} (e.g. {example})")


@FAMILIES.add("mbart")
class MBartFamily(ModelFamily):
    """MBartForConditionalGeneration + MBart50Tokenizer (src_lang, forced BOS tgt_lang)."""

    model_types = ("mbart",)
    lora_targets = ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")
    base_states = True
    hub_example = "facebook/mbart-large-50-many-to-many-mmt"
    uses = ("src_lang", "tgt_lang")
    example_codes = "en_XX, de_DE"

    def __init__(self, src_lang: str | None = None, tgt_lang: str | None = None, prompt_template: str | None = None) -> None:
        super().__init__(src_lang, tgt_lang, prompt_template)

    def check_config(self, config: dict[str, Any], where: str) -> None:
        if self.tgt_lang is None and config.get("forced_bos_token_id") is None:
            raise ConfigError(f"{where} is an {self.name} model: set model.tgt_lang (e.g. --set model.tgt_lang="
                              f"{self.example_codes.split(', ')[1]}) and model.src_lang ({self.example_codes.split(', ')[0]})")

    def check_languages(self, tokenizer: Any) -> None:
        check_codes(self, tokenizer, language_tokens(tokenizer), self.example_codes)
        if self.src_lang is not None:
            tokenizer.src_lang = self.src_lang  # the tokenizer puts the source code where its checkpoint wants it
        if self.tgt_lang is not None:
            tokenizer.tgt_lang = self.tgt_lang

    def forced_bos(self, config: Any, tokenizer: Any) -> int | None:
        if self.tgt_lang is not None and tokenizer is not None:
            return int(tokenizer.convert_tokens_to_ids(self.tgt_lang))
        return self.generation_setting(config, "forced_bos_token_id")

    def max_tokens(self, config: Any) -> int:
        return int(config.max_position_embeddings)

    def top_layer_prefixes(self, model: Any) -> tuple[str, ...]:
        enc = len(model.model.encoder.layers) - 1
        dec = len(model.model.decoder.layers) - 1
        return f"model.encoder.layers.{enc}.", f"model.decoder.layers.{dec}."

    def position_table(self, model: Any, positions: Any) -> Any:
        """(rows, d_model) the decoder's position embeddings of absolute target positions ``positions`` (rows,)."""
        table = model.get_decoder().embed_positions
        return table.weight[positions + table.offset]

    def decoder_inputs(self, model: Any, tokens: Any, mask: Any) -> dict[str, Any]:
        """Token ids; for rows shorter than the cache (padding after them), embeddings carrying the difference
        between their own position's embedding and the one the decoder adds (that of the cache length)."""
        if mask is None:
            return {"decoder_input_ids": tokens}
        lengths = position_lengths(mask)  # (rows,)
        longest = mask.shape[1] - 1
        embeds = model.get_decoder().embed_tokens(tokens)  # (rows, 1, d_model), scaled inside
        if bool((lengths != longest).any()):
            shared = self.position_table(model, torch.full_like(lengths, longest))  # (rows, d_model)
            embeds = embeds + (self.position_table(model, lengths) - shared).unsqueeze(1).to(embeds.dtype)  # (rows, 1, d_model)
        return {"decoder_inputs_embeds": embeds}
