"""The model-family contract and its registry: what simpe needs to know about a Hugging Face model.

A family (one file each: marian, mbart, m2m100, t5, causal) says, for its models:

* how to load it (``auto_class``: ``AutoModelForSeq2SeqLM`` or ``AutoModelForCausalLM``; the
  tokenizer through ``AutoTokenizer``) and which ``config.json`` ``model_type`` values it takes;
* how a source becomes input ids (``encode_source``: language codes, a ``>>id<<`` or ``<2xx>``
  prefix, a prompt template), how a post-edit becomes the target ids a hypothesis is made of
  (``encode_target``: content tokens ending in the stop token), and what starts the target
  (``decoder_prefix``: the decoder start token and any forced BOS; for a causal LM the prompt
  itself), and the maximum length (``max_tokens``);
* the roles the methods need: the input embeddings, the output projection, the embedding
  matrices (row-selectable in ``lasso``), the top encoder and decoder layers, the linear layers
  LoRA targets, the parameters that are never adapted, the modules the profiler times;
* the incremental step the decoders need (``forward``: tokens appended to a key/value cache,
  with the family's way of handling rows whose prefixes have different lengths), and
  teacher forcing (``pair_logits``, ``target_states``) for the update and ``knn``.

A family instance holds its settings (``src_lang``, ``tgt_lang``, ``prompt_template``: the
``model`` section of the config, checked by ``FAMILIES.build`` and the constructor before any
model loads); ``attach(model, tokenizer)`` resolves its token ids and puts it on the model
object (``model.simpe_family``), so a decoder or a method given only the model finds it with
``family_of(model)`` (a model without one gets its config's family with default settings).
This module loads nothing heavy and never translates.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.registry import Registry

ATTRIBUTE = "simpe_family"  # the attribute of a model object holding its bound family
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
LEGACY_FAMILY = "marian"  # the family of a per-user store that names none (see ModelFamily.store_metadata)
CONFIG_IGNORED = ("_name_or_path", "transformers_version", "torch_dtype", "dtype", "architectures", "_attn_implementation_autoset")


@dataclass
class Pair:
    """One tokenised (source, reference) pair on the model's device.

    input_ids: what the decoders get: the source ids (encoder-decoder) or the prompt (causal LM).
    labels: the target tokens a hypothesis is made of, ending in the stop token (never the
        decoder start, a forced BOS or the prompt: those are ``family.decoder_prefix``).
    """

    input_ids: Any  # (1, src_len) LongTensor
    labels: Any  # (1, tgt_len) LongTensor, ending in EOS
    truncated: tuple[str, ...] = ()  # "source" and/or "reference" when that side was cut to the family's max_tokens
    source: str = ""  # the texts, for methods that keep them (icl)
    reference: str = ""


@dataclass
class Special:
    """The token ids a decoder needs: stop tokens, the target prefix, never-generated ids."""

    eos: int  # the stop token a reference ends in
    start: int  # the last token of the fixed target prefix (Marian: the decoder start, pad; a causal LM has none: its first stop)
    forbidden: tuple[int, ...]  # never generated: pad and a decoder start that is not a stop token
    stops: tuple[int, ...] = ()  # every token that ends a hypothesis (eos first; a chat template's end of turn); () = (eos,)

    def __post_init__(self) -> None:
        if not self.stops:
            self.stops = (self.eos,)


class ModelFamily(ABC):
    """One family of translation models. Settings are the ``model`` section's language and template keys."""

    name: str = ""  # set by FAMILIES.add
    model_types: tuple[str, ...] = ()  # config.json model_type values of this family
    encoder_decoder: bool = True
    auto_class: str = "AutoModelForSeq2SeqLM"
    lora_targets: tuple[str, ...] = ()  # linear-layer name suffixes LoRA may target (the default: all)
    frozen_markers: tuple[str, ...] = ()  # parameter-name parts that are never adapted (fixed position tables)
    base_states: bool = False  # the base model's last decoder state is the output projection's input (target_states)
    pad_before: bool = False  # batched prefixes of different lengths: padding before them (relative positions), else after
    hub_example: str = ""  # a hub id, for the docs and messages
    uses: tuple[str, ...] = ()  # the settings this family reads (src_lang, tgt_lang, prompt_template)

    def __init__(self, src_lang: str | None = None, tgt_lang: str | None = None, prompt_template: str | None = None) -> None:
        self.src_lang, self.tgt_lang, self.prompt_template = src_lang, tgt_lang, prompt_template
        for key in ("src_lang", "tgt_lang", "prompt_template"):
            value = getattr(self, key)
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"model.{key} must be a string or null, got {value!r}")
            if value is not None and key not in self.uses:
                raise ConfigError(f"model.{key} does not apply to the {self.name} family (it reads: "
                                  f"{', '.join(self.uses) or 'none of src_lang, tgt_lang, prompt_template'})")
        self.tokenizer: Any = None
        self.special: Special | None = None
        self.prefix: tuple[int, ...] = ()

    # ------------------------------------------------------------------ loading
    def check_folder(self, folder: Path, source: str) -> None:
        """Refuse a model folder without the tokenizer files this family loads (one line)."""
        names = ("tokenizer.json", "tokenizer_config.json", "sentencepiece.bpe.model", "spiece.model", "tokenizer.model",
                 "source.spm", "vocab.json")
        if not any((folder / name).is_file() for name in names):
            raise ModelError(f"model folder {source} has no tokenizer files (e.g. tokenizer_config.json or tokenizer.json); "
                             "it must be written by save_pretrained of the model and its tokenizer")

    def load_tokenizer(self, source: str) -> Any:
        """The tokenizer of a folder or hub id (the fast one only where tokenizer.json exists: no conversion)."""
        from transformers import AutoTokenizer

        folder = Path(source)
        # A folder without tokenizer.json is read by the class it was saved with: a fast tokenizer converted on the fly
        # from the SentencePiece file may segment differently (T5's "legacy" handling after special tokens, for one),
        # and the records would follow the conversion (docs/reproducibility.md, "Slow or fast tokenizer").
        use_fast = not folder.is_dir() or (folder / "tokenizer.json").is_file()
        return AutoTokenizer.from_pretrained(source, use_fast=use_fast)

    def load_model(self, source: str, dtype: str) -> tuple[Any, dict[str, Any]]:
        """The model and transformers' loading info (missing / mismatched keys)."""
        import transformers

        from simpe.models.shapes import build_random, random_init

        init = random_init(Path(source)) if Path(source).is_dir() else None
        if init is not None:  # a shape-true model of real size (simpe.models.shapes): random weights built here
            return build_random(self.auto_class, Path(source), DTYPES[dtype], init["seed"]), {"missing_keys": [], "mismatched_keys": []}
        cls = getattr(transformers, self.auto_class)
        with quiet_progress():
            return cls.from_pretrained(source, output_loading_info=True, dtype=DTYPES[dtype])

    def ignored_missing(self, key: str) -> bool:
        """A weight a checkpoint need not hold (computed at load: Marian's sinusoidal positions)."""
        return False

    def max_tokens(self, config: Any) -> int:
        """The longest source or target (in tokens) the model takes; longer sides are cut."""
        return int(getattr(config, "max_position_embeddings", None) or 512)

    # ------------------------------------------------------------------ binding
    def attach(self, model: Any, tokenizer: Any = None) -> ModelFamily:
        """Resolve the token ids this family needs (from the config, and the tokenizer when given) and put
        the family on ``model`` (``family_of(model)`` finds it). Returns self."""
        self.tokenizer = tokenizer
        self.config = model.config
        self.generation_config = getattr(model, "generation_config", None)
        self.digest = self.config_hash(model.config)  # as loaded: the loop changes config fields later (dropout)
        if tokenizer is not None:
            self.check_languages(tokenizer)
        self.prefix = self.decoder_prefix(model.config, tokenizer)
        stops = self.stop_ids(model.config, tokenizer)
        start = self.prefix[-1] if self.prefix else stops[0]
        pad = model.config.pad_token_id
        forbidden = tuple(sorted({t for t in (pad, *self.prefix[:1]) if t is not None and t not in stops}))
        self.special = Special(stops[0], int(start), forbidden, stops)
        object.__setattr__(model, ATTRIBUTE, self)  # a plain attribute (nn.Module's __setattr__ would too; this says so)
        return self

    def decoder_prefix(self, config: Any, tokenizer: Any) -> tuple[int, ...]:
        """The tokens that start every target, in order (decoder start, then any forced BOS)."""
        start = config.decoder_start_token_id if config.decoder_start_token_id is not None else config.pad_token_id
        forced = self.forced_bos(config, tokenizer)
        return (int(start),) + ((int(forced),) if forced is not None else ())

    def forced_bos(self, config: Any, tokenizer: Any) -> int | None:
        """The target-language token forced after the decoder start, or None."""
        return None

    def generation_setting(self, config: Any, key: str) -> Any:
        """A generation setting (``forced_bos_token_id``) of the bound model: its config's (transformers 4 keeps
        it there), else its ``generation_config``'s (transformers 5 keeps it only there, also when it reads an
        older config.json that holds it); None when neither has it."""
        value = getattr(config, key, None)
        if value is None:
            value = getattr(getattr(self, "generation_config", None), key, None)
        return value

    def stop_ids(self, config: Any, tokenizer: Any) -> tuple[int, ...]:
        """The tokens that end a hypothesis, the reference's own stop token first."""
        eos = config.eos_token_id
        ids = list(eos) if isinstance(eos, (list, tuple)) else [eos]
        return tuple(dict.fromkeys(int(i) for i in ids if i is not None))

    # ------------------------------------------------------------------ text -> ids
    def _limit(self) -> int:
        return self.max_tokens(self.config)

    def encode_source(self, tokenizer: Any, source: str, device: Any, examples: Sequence[tuple[str, str]] = (),
                      terms: Sequence[tuple[str, str]] = ()) -> tuple[Any, bool]:
        """((1, src_len) input ids on ``device``, whether the source was cut to ``max_tokens``). ``examples`` and
        ``terms`` (glossary pairs said in a prompt) are a causal LM's: another family refuses them."""
        if examples:
            raise ConfigError(f"the {self.name} family takes no prompt examples (icl needs a causal LM)")
        if terms:
            raise ConfigError(f"the {self.name} family has no prompt to say glossary terms in (data.glossary_prompt needs "
                              "a causal LM)")
        limit = self._limit()
        ids = tokenizer(self.source_text(source), truncation=True, max_length=limit, return_tensors="pt")["input_ids"]
        cut = ids.shape[1] >= limit and len(tokenizer(self.source_text(source))["input_ids"]) > limit
        return ids.to(device), cut

    def source_text(self, source: str) -> str:
        """The text the tokenizer reads for a source (a target-language prefix where the family has one)."""
        return source

    def encode_target(self, tokenizer: Any, reference: str) -> tuple[list[int], bool]:
        """(target ids: the reference's content tokens, then the stop token; whether they were cut)."""
        limit = self._limit()
        ids = tokenizer(reference, add_special_tokens=False)["input_ids"]
        cut = len(ids) + 1 > limit
        return list(ids[: limit - 1]) + [self.special.eos], cut

    def encode_pair(self, tokenizer: Any, source: str, reference: str, device: Any,
                    examples: Sequence[tuple[str, str]] = (), terms: Sequence[tuple[str, str]] = ()) -> Pair:
        """Tokenise one (source, reference) pair for the update and the decoders, on ``device`` (``terms``: glossary
        pairs a causal LM's prompt says)."""
        src, src_cut = self.encode_source(tokenizer, source, device, examples, terms)
        tgt, tgt_cut = self.encode_target(tokenizer, reference)
        labels = torch.tensor([tgt], dtype=torch.long, device=device)  # (1, tgt_len)
        truncated = tuple(side for side, cut in (("source", src_cut), ("reference", tgt_cut)) if cut)
        return Pair(src, labels, truncated, source, reference)

    def takes_terms(self) -> bool:
        """Whether the family's prompt can say glossary terms (``data.glossary_prompt``): a causal LM's can."""
        return False

    def check_languages(self, tokenizer: Any) -> None:
        """Refuse language codes the tokenizer does not know, and set them on it (after it loads, before the model does)."""

    def check_config(self, config: dict[str, Any], where: str) -> None:
        """Refuse settings that config.json shows are missing (e.g. no target language), before the model loads."""

    # ------------------------------------------------------------------ roles
    def output_projection(self, model: Any) -> Any:
        """The linear layer that turns the top decoder state into vocabulary logits (``lm_head``)."""
        return model.get_output_embeddings()

    def hidden_size(self, model: Any) -> int:
        """The size of the states the output projection reads (``knn``'s keys)."""
        return int(self.output_projection(model).in_features)

    def embedding_weights(self, model: Any) -> list[Any]:
        """Every embedding matrix: the input embeddings, per-side ones, and the output projection (tied ones once)."""
        found = [model.get_input_embeddings().weight, self.output_projection(model).weight]
        for part in ("get_encoder", "get_decoder"):
            body = getattr(model, part, None)
            try:
                embed = body().get_input_embeddings() if callable(body) else None
            except (NotImplementedError, AttributeError):  # a body without its own embedding accessor
                embed = None
            if embed is not None:
                found.append(embed.weight)
        return list({id(w): w for w in found}.values())

    @abstractmethod
    def top_layer_prefixes(self, model: Any) -> tuple[str, ...]:
        """Parameter-name prefixes of the topmost encoder layer and the topmost decoder layer (``top``)."""

    def timed_modules(self, model: Any) -> list[Any]:
        """The modules whose forward calls count as the model's time (outermost call timed)."""
        modules = [model]
        base = getattr(model, model.base_model_prefix, None)
        if base is not None and base is not model:
            modules.append(base)
        if self.encoder_decoder:
            modules += [model.get_encoder(), model.get_decoder()]
        modules.append(self.output_projection(model))
        return modules

    # ------------------------------------------------------------------ teacher forcing
    def pair_logits(self, model: Any, input_ids: Any, labels: Any, attention_mask: Any = None) -> Any:
        """(batch, tgt_len, vocab) logits of ``labels`` given ``input_ids`` and the target prefix: what the
        model's own loss would read, without its loss and without a cache. ``labels`` may hold -100 (padding)."""
        prefix = torch.tensor(self.prefix, dtype=torch.long, device=labels.device).expand(labels.shape[0], -1)  # (batch, P)
        body = labels[:, :-1].masked_fill(labels[:, :-1] == -100, self.config.pad_token_id)  # (batch, tgt_len - 1)
        decoder_input_ids = torch.cat([prefix, body], dim=1)  # (batch, P + tgt_len - 1)
        logits = model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids,
                       use_cache=False).logits  # (batch, P + tgt_len - 1, vocab)
        return logits[:, len(self.prefix) - 1:]

    def target_states(self, model: Any, pair: Pair) -> Any:
        """(tgt_len, hidden) states the output projection reads at each target position of ``pair`` (``knn``'s keys).

        Families whose base model's last decoder state is exactly what the projection reads
        (``base_states``: Marian, mBART, M2M100) run the base model alone; the others (T5 rescales
        it, a causal LM has a prompt) run the whole model and take the projection's input."""
        if self.base_states:
            prefix = torch.tensor(self.prefix, dtype=torch.long, device=pair.labels.device).expand(1, -1)  # (1, P)
            decoder_input_ids = torch.cat([prefix, pair.labels[:, :-1]], dim=1)  # (1, P + tgt_len - 1)
            base = getattr(model, model.base_model_prefix)
            states = base(input_ids=pair.input_ids, attention_mask=torch.ones_like(pair.input_ids),
                          decoder_input_ids=decoder_input_ids, use_cache=False).last_hidden_state  # (1, P + tgt_len - 1, d_model)
            return states[0, len(self.prefix) - 1:]
        captured: list[Any] = []
        handle = self.output_projection(model).register_forward_pre_hook(lambda module, args: captured.append(args[0]))
        try:
            self.pair_logits(model, pair.input_ids, pair.labels)
        finally:
            handle.remove()
        return captured[-1][0][-pair.labels.shape[1]:]  # (tgt_len, hidden): the target positions

    # ------------------------------------------------------------------ incremental decoding
    def new_cache(self) -> Any:
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache

        return EncoderDecoderCache(DynamicCache(), DynamicCache()) if self.encoder_decoder else DynamicCache()

    def self_cache(self, cache: Any) -> Any:
        """The decoder self-attention part of a cache."""
        return cache.self_attention_cache if self.encoder_decoder else cache

    def cross_layers(self, cache: Any) -> list[tuple[Any, Any]]:
        """Per layer (keys, values) of the cross-attention (empty for a causal LM)."""
        return [(layer.keys, layer.values) for layer in cache.cross_attention_cache.layers] if self.encoder_decoder else []

    def build_cache(self, self_layers: list[tuple[Any, Any]], cross_layers: list[tuple[Any, Any]]) -> Any:
        """A cache holding the given per-layer self-attention (and cross-attention) keys and values."""
        from transformers.cache_utils import DynamicCache, EncoderDecoderCache

        own = DynamicCache()
        for layer, (keys, values) in enumerate(self_layers):
            own.update(keys[..., :0, :], values[..., :0, :], layer)  # creates the layer (empty) ...
            own.layers[layer].keys, own.layers[layer].values = keys, values  # ... then holds the given states, uncopied
        if not self.encoder_decoder:
            return own
        cross = DynamicCache()
        for layer, (keys, values) in enumerate(cross_layers):
            cross.update(keys[:1], values[:1], layer)  # creates the layer (a copy of one row) ...
            cross.layers[layer].keys, cross.layers[layer].values = keys, values  # ... then holds the given states
        return EncoderDecoderCache(own, cross)  # marks the cross-attention layers as computed

    def encode(self, model: Any, ids: Any) -> Any:
        """(1, src_len, d_model) encoder output of a source (None for a causal LM)."""
        mask = torch.ones_like(ids)  # (1, src_len)
        return model.get_encoder()(input_ids=ids, attention_mask=mask).last_hidden_state

    def forward(self, model: Any, tokens: Any, cache: Any, *, hidden: Any = None, src_mask: Any = None,
                mask: Any = None) -> tuple[Any, Any]:
        """One decoder pass: ``tokens`` (rows, t) appended to ``cache``.

        Args:
            hidden: (rows, src_len, d_model) encoder states (only their shape is read once the cache holds
                the cross-attention states); src_mask: (rows, src_len) or None.
            mask: (rows, cached + t) decoder self-attention mask, or None (all ones). A row whose cached
                prefix is shorter than the cache has zeros there (where: ``pad_before``); the family gives
                its new token the row's own position.
        Returns:
            ((rows, vocab) logits of the last position, the updated cache).
        """
        from transformers.modeling_outputs import BaseModelOutput

        inputs = self.decoder_inputs(model, tokens, mask)
        out = model(**inputs, encoder_outputs=BaseModelOutput(last_hidden_state=hidden), attention_mask=src_mask,
                    decoder_attention_mask=mask, **{cache_keyword(model): cache}, use_cache=True, return_dict=True)
        return out.logits[:, -1, :], returned_cache(out)

    def decoder_inputs(self, model: Any, tokens: Any, mask: Any) -> dict[str, Any]:
        """The decoder's input for ``forward``: the token ids, or embeddings carrying each row's own position."""
        return {"decoder_input_ids": tokens}

    # ------------------------------------------------------------------ the store's check
    def config_hash(self, config: Any) -> str:
        """A short hash of the model's architecture and vocabulary (config.json less its volatile keys; ``digest``
        holds it as the model was loaded)."""
        import hashlib

        data = {k: v for k, v in config.to_dict().items() if k not in CONFIG_IGNORED}
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def store_metadata(self) -> dict[str, str]:
        """A per-user store's metadata naming its base model's family, a hash of its config and the family's settings.

        A Marian store without language settings carries none of them, as stores did before families
        existed: its file is byte for byte what it was (the run summaries' ``store_file_bytes`` and the
        golden records stay as they were), it is recognised by their absence (``LEGACY_FAMILY``), and
        checked against its base by the model's name (and the shapes of its tensors when applied).
        Every other store names its family and config hash and is refused on another family or config.
        """
        settings = self.settings()
        if self.name == LEGACY_FAMILY and not any(settings[k] for k in ("src_lang", "tgt_lang", "prompt_template")):
            return {}
        return {"model_family": self.name, "model_config_sha256": self.digest,
                "model_settings": json.dumps(settings, sort_keys=True)}

    def settings(self) -> dict[str, Any]:
        return {"family": self.name, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang,
                "prompt_template": self.prompt_template}


@contextmanager
def quiet_progress() -> Iterator[None]:
    """transformers' progress bars off while it loads or saves (transformers 5 draws one, "Loading weights", on
    every ``from_pretrained``: simpe's console and its one-line errors stay as they were)."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


_CACHE_KEYWORD: dict[type, str] = {}


def cache_keyword(model: Any) -> str:
    """The name of the forward argument that takes the key/value cache: ``cache`` (transformers 5.2x, where
    ``past_key_values`` is deprecated, to go in 5.40) or ``past_key_values`` (transformers 4)."""
    cls = type(model)
    if cls not in _CACHE_KEYWORD:
        import inspect

        base = model.get_base_model() if hasattr(model, "get_base_model") else model  # a peft wrapper takes **kwargs
        _CACHE_KEYWORD[cls] = "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"
    return _CACHE_KEYWORD[cls]


def returned_cache(out: Any) -> Any:
    """The updated cache of a forward's output (``cache`` in transformers 5.2x, ``past_key_values`` before)."""
    found = out.get("cache") if hasattr(out, "get") else None
    return found if found is not None else out.past_key_values


def position_lengths(mask: Any) -> Any:
    """(rows,) tokens each row holds in the cache before the new one (``mask`` (rows, cached + 1))."""
    return mask[:, :-1].sum(dim=1)


FAMILIES: Registry[ModelFamily] = Registry("model family")


def family_for_type(model_type: str | None, where: str, architectures: Sequence[str] = ()) -> str:
    """The registered family taking ``model_type``; a one-line ModelError listing the supported ones otherwise."""
    for name in FAMILIES.names():
        if model_type in FAMILIES.get(name).model_types:
            return name
    arch = f" ({', '.join(architectures)})" if architectures else ""
    supported = "; ".join(f"{name} ({', '.join(FAMILIES.get(name).model_types)})" for name in FAMILIES.names())
    raise ModelError(f"{where} is a {model_type or 'unknown'} model{arch}, which simpe does not adapt; "
                     f"supported families (config.json model_type): {supported}")


def family_of(model: Any) -> ModelFamily:
    """The family bound to ``model`` (``ModelFamily.attach``); a model without one gets its config's family,
    default settings, token ids from its config."""
    bound = getattr(model, ATTRIBUTE, None)
    if bound is not None:
        return bound
    name = family_for_type(getattr(model.config, "model_type", None), "this model")
    return FAMILIES.build(name).attach(model)
