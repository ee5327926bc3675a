"""``marian``: MarianMTModel checkpoints (Helsinki-NLP/opus-mt-*, the embedded demo model).

Quirks: the decoder starts with the pad token; ``final_logits_bias`` is a buffer, not a
parameter (``bias`` adds its own); the sinusoidal position table is a fixed parameter that is
never adapted (and is not saved: a checkpoint need not hold it); the source and the target
have their own SentencePiece models (``source.spm``, ``target.spm``), so a reference is
tokenised as a target (``text_target``); a multi-target model (e.g. opus-mt-en-mul) takes a
``>>id<<`` prefix on the source, given as ``model.tgt_lang`` (the id inside the brackets).
Batched prefixes of different lengths: padding after each prefix, and the new token's input
embedding carries the difference between its own sinusoidal position and the shared one.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch

from simpe.errors import ConfigError, ModelError
from simpe.models.base import FAMILIES, ModelFamily, position_lengths, quiet_progress

TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json")


@FAMILIES.add("marian")
class MarianFamily(ModelFamily):
    """MarianMTModel + MarianTokenizer."""

    model_types = ("marian",)
    lora_targets = ("q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")
    frozen_markers = ("embed_positions",)  # sinusoidal: fixed, not learned
    base_states = True
    hub_example = "Helsinki-NLP/opus-mt-en-de"
    uses = ("tgt_lang",)

    def __init__(self, src_lang: str | None = None, tgt_lang: str | None = None, prompt_template: str | None = None) -> None:
        super().__init__(src_lang, tgt_lang, prompt_template)

    def check_folder(self, folder: Path, source: str) -> None:
        for needed in TOKENIZER_FILES:
            if not (folder / needed).exists():
                raise ModelError(f"model folder {source} lacks {needed}; it must be written by save_pretrained of a "
                                 "MarianMTModel and MarianTokenizer")

    def load_tokenizer(self, source: str) -> Any:
        from transformers import MarianTokenizer

        return MarianTokenizer.from_pretrained(source)

    def load_model(self, source: str, dtype: str) -> tuple[Any, dict[str, Any]]:
        from transformers import MarianMTModel

        from simpe.models.base import DTYPES

        with _vectorised_position_table(), quiet_progress():
            return MarianMTModel.from_pretrained(source, output_loading_info=True, dtype=DTYPES[dtype])

    def ignored_missing(self, key: str) -> bool:
        return key.endswith("embed_positions.weight")  # sinusoidal: not saved

    def source_text(self, source: str) -> str:
        return f">>{self.tgt_lang}<< {source}" if self.tgt_lang else source

    def check_languages(self, tokenizer: Any) -> None:
        if self.tgt_lang and f">>{self.tgt_lang}<<" not in tokenizer.get_vocab():
            known = sorted(t[2:-2] for t in tokenizer.get_vocab() if t.startswith(">>") and t.endswith("<<"))
            raise ConfigError(f"model.tgt_lang {self.tgt_lang!r}: the tokenizer has no >>{self.tgt_lang}<< token; "
                              f"known: {', '.join(known[:30]) or 'none (a single-target model: leave model.tgt_lang null)'}")

    def encode_target(self, tokenizer: Any, reference: str) -> tuple[list[int], bool]:
        """The target SentencePiece model's ids, ending in EOS (MarianTokenizer's ``text_target``)."""
        limit = self._limit()
        ids = tokenizer(text_target=reference, truncation=True, max_length=limit)["input_ids"]
        cut = len(ids) >= limit and len(tokenizer(text_target=reference)["input_ids"]) > limit
        return list(ids), cut

    def top_layer_prefixes(self, model: Any) -> tuple[str, ...]:
        enc = len(model.model.encoder.layers) - 1
        dec = len(model.model.decoder.layers) - 1
        return f"model.encoder.layers.{enc}.", f"model.decoder.layers.{dec}."

    def decoder_inputs(self, model: Any, tokens: Any, mask: Any) -> dict[str, Any]:
        """Token ids; for rows whose prefixes are shorter than the cache (padding after them), embeddings
        whose sinusoidal position is the row's own: the decoder adds the position of the cache length to
        every row, the input carries the difference (divided by the decoder's embedding scale, which it
        multiplies the input embeddings by)."""
        if mask is None:
            return {"decoder_input_ids": tokens}
        decoder = model.get_decoder()
        rows = tokens.shape[0]
        lengths = position_lengths(mask)  # (rows,)
        longest = mask.shape[1] - 1
        embeds = decoder.embed_tokens(tokens)  # (rows, 1, d_model)
        if bool((lengths != longest).any()):
            positions = decoder.embed_positions((rows, 1), 0, position_ids=lengths)  # (rows, d_model)
            shared = decoder.embed_positions((1, 1), 0, position_ids=torch.tensor([longest], device=tokens.device))  # (1, d_model)
            embeds = embeds + ((positions - shared) / decoder.embed_scale).unsqueeze(1).to(embeds.dtype)  # (rows, 1, d_model)
        return {"decoder_inputs_embeds": embeds}


def _position_values(self: Any) -> Any:
    """(positions, dim) the sinusoidal table of ``MarianSinusoidalPositionalEmbedding``, built by numpy array operations.

    transformers builds the table with a Python loop over every cell (0.8 s of a 0.9 s load of the
    demo model, on every load, since the table is not saved). The same float64 values here: the dim
    powers ``np.power(10000, 2 * (j // 2) / dim)`` are the same scalar calls, and ``pos / power`` is
    one correctly rounded division either way; the rest is transformers' code as it stands
    (``tests/unit/test_models.py`` checks the tables are bit-identical).
    """
    n_pos, dim = self.weight.shape
    powers = np.array([np.power(10000, 2 * (j // 2) / dim) for j in range(dim)])
    position_enc = np.arange(n_pos, dtype=np.float64)[:, None] / powers[None, :]
    out = torch.empty(n_pos, dim, dtype=self.weight.dtype, requires_grad=False)  # (positions, dim)
    sentinel = dim // 2 if dim % 2 == 0 else (dim // 2) + 1
    out[:, 0:sentinel] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
    out[:, sentinel:] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    return out


def _position_table(self: Any) -> None:
    """transformers 4's ``_init_weight``: the table as the module's (frozen) weight."""
    from torch import nn

    self.weight = nn.Parameter(_position_values(self), requires_grad=False)


@contextmanager
def _vectorised_position_table() -> Iterator[None]:
    """transformers' position-table initialisation replaced by ``_position_values`` while a model loads
    (transformers 4: ``_init_weight`` sets the weight; transformers 5: ``create_weight`` returns the table,
    which the model's ``_init_weights`` copies in)."""
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding as Table

    name, replacement = ("create_weight", _position_values) if hasattr(Table, "create_weight") else ("_init_weight", _position_table)
    original = getattr(Table, name)
    setattr(Table, name, replacement)
    try:
        yield
    finally:
        setattr(Table, name, original)
