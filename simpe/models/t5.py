"""``t5``: T5-family translation checkpoints, MADLAD-400 above all (google/madlad400-3b-mt).

Quirks: the target language is a source prefix ``<2xx>`` (``model.tgt_lang`` = ``xx``: the
source text becomes ``<2de> text``); the decoder starts with pad (``decoder_start_token_id``
0), no forced BOS; layers are ``encoder.block.N`` / ``decoder.block.N``; positions are relative
(a bias on attention scores by distance), so batched prefixes of different lengths are padded
*before* their cached states: every row's distances stay its own. With tied embeddings T5
rescales the decoder output before ``lm_head`` (``knn``'s keys are what ``lm_head`` reads,
after that). The linear layers LoRA targets are ``q``, ``k``, ``v``, ``o``, ``wi`` (or gated
``wi_0``, ``wi_1``), ``wo``.
"""
from __future__ import annotations

from typing import Any

from simpe.errors import ConfigError
from simpe.models.base import FAMILIES, ModelFamily


@FAMILIES.add("t5")
class T5Family(ModelFamily):
    """T5ForConditionalGeneration (t5, mt5, MADLAD-400) + its SentencePiece tokenizer."""

    model_types = ("t5", "mt5")
    lora_targets = ("q", "k", "v", "o", "wi", "wi_0", "wi_1", "wo")
    pad_before = True
    hub_example = "google/madlad400-3b-mt"
    uses = ("tgt_lang",)

    def __init__(self, src_lang: str | None = None, tgt_lang: str | None = None, prompt_template: str | None = None) -> None:
        super().__init__(src_lang, tgt_lang, prompt_template)

    def source_text(self, source: str) -> str:
        return f"<2{self.tgt_lang}> {source}" if self.tgt_lang else source

    def check_languages(self, tokenizer: Any) -> None:
        if self.tgt_lang is None:
            return
        token = f"<2{self.tgt_lang}>"
        if tokenizer.convert_tokens_to_ids(token) in (None, tokenizer.unk_token_id):
            known = sorted(t[2:-1] for t in tokenizer.get_vocab() if t.startswith("<2") and t.endswith(">"))
            raise ConfigError(f"model.tgt_lang {self.tgt_lang!r}: the tokenizer has no {token} token; known: "
                              f"{', '.join(known[:20]) or 'none (leave model.tgt_lang null for a model without <2xx> codes)'}")

    def max_tokens(self, config: Any) -> int:
        return int(getattr(config, "n_positions", None) or 512)  # relative positions: no hard limit; T5's own default

    def top_layer_prefixes(self, model: Any) -> tuple[str, ...]:
        return f"encoder.block.{len(model.encoder.block) - 1}.", f"decoder.block.{len(model.decoder.block) - 1}."
