"""``m2m100``: M2M100 and NLLB-200 checkpoints (facebook/m2m100_418M, facebook/nllb-200-distilled-600M).

Both are ``M2M100ForConditionalGeneration`` (config ``model_type`` ``m2m_100``); the tokenizer
tells them apart (``M2M100Tokenizer``: codes ``en``, ``de``, tokens ``__de__``; ``NllbTokenizer``:
codes ``eng_Latn``, ``deu_Latn``). The source is encoded by the tokenizer with its ``src_lang``,
so the language token sits where the checkpoint wants it (NLLB's tokenizer moved it from after
``</s>`` to the front: ``legacy_behaviour``, saved in its tokenizer_config.json). The decoder
starts with ``</s>`` (``decoder_start_token_id`` 2) and a forced BOS, the target language's
token (M2M100: ``get_lang_id(tgt)``; NLLB: ``convert_tokens_to_ids(tgt)``), never part of a
hypothesis or its score; a target is the reference's content tokens and ``</s>`` (built here,
whatever ``legacy_behaviour`` says). No output bias (``bias`` adds one); embeddings, both
sides' and the output projection, are one tied matrix (``full`` and ``lasso`` step it once,
stores hold it once). The sinusoidal positions are a buffer; batched prefixes of different
lengths get their own position through the input embedding, as in Marian (mbart's ``decoder_inputs``, reading
this family's ``position_table``).
"""
from __future__ import annotations

from typing import Any

from simpe.models.base import FAMILIES
from simpe.models.mbart import MBartFamily, added_specials, check_codes


@FAMILIES.add("m2m100")
class M2M100Family(MBartFamily):
    """M2M100ForConditionalGeneration + M2M100Tokenizer or NllbTokenizer (src_lang, forced BOS tgt_lang)."""

    model_types = ("m2m_100",)
    hub_example = "facebook/nllb-200-distilled-600M"
    example_codes = "eng_Latn, deu_Latn"

    def check_languages(self, tokenizer: Any) -> None:
        m2m = getattr(tokenizer, "lang_code_to_token", None)  # M2M100Tokenizer: code -> __code__
        known = sorted(m2m) if m2m else sorted(added_specials(tokenizer))
        check_codes(self, tokenizer, known, "en, de (M2M100) or eng_Latn, deu_Latn (NLLB)")
        if self.src_lang is not None:
            tokenizer.src_lang = self.src_lang
        if self.tgt_lang is not None:
            tokenizer.tgt_lang = self.tgt_lang

    def forced_bos(self, config: Any, tokenizer: Any) -> int | None:
        if self.tgt_lang is not None and tokenizer is not None:
            if hasattr(tokenizer, "get_lang_id"):  # M2M100Tokenizer: the code's __xx__ token
                return int(tokenizer.get_lang_id(self.tgt_lang))
            return int(tokenizer.convert_tokens_to_ids(self.tgt_lang))  # NLLB: the code is the token
        return self.generation_setting(config, "forced_bos_token_id")

    def position_table(self, model: Any, positions: Any) -> Any:
        """(rows, d_model) sinusoidal embeddings of absolute target positions (index: position + padding_idx + 1)."""
        table = model.get_decoder().embed_positions
        needed = int(positions.max()) + table.padding_idx + 2
        if needed > table.weights.size(0):
            table.make_weights(needed + table.offset, table.embedding_dim, table.padding_idx)
        return table.weights[positions + table.padding_idx + 1]

