"""A stream's languages against the model's, checked before the model loads; a multilingual model takes the stream's.

The stream's languages are its dataset's (``src_lang``/``tgt_lang``: an XLIFF file's ``source-language`` and
``target-language``, a TMX's or a parallel file's settings, the shipped data's en -> de); the warm-start memory and
the glossary are read in those languages (``simpe.datasets.parallel.read_memory``, ``simpe.terms.glossary``), so they
are checked against the stream, and the stream against the model here:

* a one-pair model (Marian: its tokenizer_config.json's ``source_lang`` / ``target_lang``, which Helsinki-NLP's
  checkpoints and the demo model write, else a folder named ``opus-mt-xx-yy`` or ``demo-xx-yy``) must translate the
  stream's pair; a model that names no pair (``mul``, a folder of another name) is not checked;
* a multilingual model (M2M100, NLLB-200, mBART-50, a causal LM) takes the stream's languages, in its family's codes
  (``de`` -> ``deu_Latn``, ``de_DE``, ``German``), where ``model.src_lang`` / ``model.tgt_lang`` are not set; set
  ones must name the stream's languages;
* ``metrics.lang`` (the Moses tokenizer, the stopwords, the truecaser) must be the stream's target language.

A mismatch is a ``ConfigError`` of one line naming both pairs (``cli`` prints it and exits 2). ``stream_pair``
gives the pair ``simpe.loop.run.group_identity`` hashes. This module loads no model and no tokenizer (it reads their JSON files).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from simpe.config.tree import RunConfig
from simpe.errors import ConfigError
from simpe.paths import DEFAULT_MODEL

# ISO 639-1 -> NLLB-200 (FLORES-200) codes, mBART-50 codes and language names (a causal LM's prompt), for the
# languages a study is likely to use; a code not listed is given as it is
NLLB = {"en": "eng_Latn", "de": "deu_Latn", "fr": "fra_Latn", "es": "spa_Latn", "it": "ita_Latn", "nl": "nld_Latn",
        "pt": "por_Latn", "pl": "pol_Latn", "ru": "rus_Cyrl", "uk": "ukr_Cyrl", "cs": "ces_Latn", "sv": "swe_Latn",
        "da": "dan_Latn", "fi": "fin_Latn", "tr": "tur_Latn", "ja": "jpn_Jpan", "ko": "kor_Hang", "zh": "zho_Hans",
        "ar": "arb_Arab"}
MBART50 = {"en": "en_XX", "de": "de_DE", "fr": "fr_XX", "es": "es_XX", "it": "it_IT", "nl": "nl_XX", "pt": "pt_XX",
           "pl": "pl_PL", "ru": "ru_RU", "uk": "uk_UA", "cs": "cs_CZ", "sv": "sv_SE", "fi": "fi_FI", "tr": "tr_TR",
           "ja": "ja_XX", "ko": "ko_KR", "zh": "zh_CN", "ar": "ar_AR"}
NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "nl": "Dutch",
         "pt": "Portuguese", "pl": "Polish", "ru": "Russian", "uk": "Ukrainian", "cs": "Czech", "sv": "Swedish",
         "da": "Danish", "fi": "Finnish", "tr": "Turkish", "ja": "Japanese", "ko": "Korean", "zh": "Chinese",
         "ar": "Arabic"}
TYPES = {"marian": "marian", "m2m_100": "m2m100", "mbart": "mbart", "t5": "t5", "mt5": "t5"}  # config.json's model_type
MULTILINGUAL = ("m2m100", "mbart", "causal")  # families that take any pair of their languages (t5 only a target)
NAMED_PAIR = re.compile(r"(?:opus-mt|demo)-([a-z]{2,3})-([a-z]{2,3})$")
OLD_PAIR = ("en", "de")  # the pair of every run before languages were checked: hashed as before (same groups)


def base(code: str | None) -> str | None:
    """The ISO 639-1 code of a language code or name (``de-AT``, ``de_DE``, ``deu_Latn``, ``German`` -> ``de``)."""
    if not code:
        return None
    for table in (NLLB, MBART50, NAMES):
        for short, long in table.items():
            if code.lower() == long.lower():
                return short
    return re.split(r"[-_]", code.strip())[0].lower()


def stream_pair(cfg: RunConfig, dataset: Any = None) -> tuple[str, str]:
    """The stream's (source, target) languages: its dataset's, else en -> ``metrics.lang`` (``Loop.languages``)."""
    if dataset is None:
        from simpe.datasets import DATASETS

        dataset = DATASETS.build(cfg.data.name, **DATASETS.resolve(cfg.data.name, cfg.data.params))
    return base(getattr(dataset, "src_lang", "en")) or "en", base(getattr(dataset, "tgt_lang", cfg.metrics.lang)) or "de"


def pair_text(pair: tuple[str, str]) -> str | None:
    """The pair as ``simpe.rundir.layout.group_digest`` hashes it: None for en -> de (the digest it always had)."""
    return None if tuple(pair) == OLD_PAIR else f"{pair[0]}-{pair[1]}"


def _model_json(source: str, name: str) -> dict[str, Any]:
    """A model's JSON file ``name`` (a local folder, or a hub id in the local cache), {} when there is none."""
    path = Path(source).expanduser() / name
    if not path.is_file() and not Path(source).expanduser().is_dir():
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(source, name)
        except Exception:  # noqa: BLE001 (not a hub id: nothing to read)
            cached = None
        path = Path(cached) if isinstance(cached, str) else path
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        data = {}  # a damaged file is refused when the model loads
    return data if isinstance(data, dict) else {}


def _tokenizer_config(source: str) -> dict[str, Any]:
    return _model_json(source, "tokenizer_config.json")


def family_name(source: str, family: str) -> str | None:
    """The model's family: ``model.family``, else the one its config.json's ``model_type`` names (``TYPES``, a causal
    LM by its architecture; None: no config here, or another type, which ``simpe.model`` checks in its own words)."""
    if family != "auto":
        return family
    config = _model_json(source, "config.json")
    kind = config.get("model_type")
    if kind in TYPES:
        return TYPES[kind]
    causal = any(str(a).endswith("ForCausalLM") for a in config.get("architectures") or [])
    return "causal" if causal else None


def model_pair(source: str, family: str | None, settings: dict[str, Any]) -> tuple[str | None, str | None]:
    """The (source, target) languages a one-pair model translates, or a multilingual model is set to (None: not
    named)."""
    if family in MULTILINGUAL or family == "t5":
        return base(settings.get("src_lang")), base(settings.get("tgt_lang"))
    data = _tokenizer_config(source)
    src, tgt = data.get("source_lang"), data.get("target_lang")
    named = NAMED_PAIR.search(Path(source).name.lower())
    if not (isinstance(src, str) and isinstance(tgt, str)) and named:
        src, tgt = named.groups()
    src = base(src) if isinstance(src, str) else None
    tgt = base(settings.get("tgt_lang")) or (base(tgt) if isinstance(tgt, str) else None)
    return (None if src == "mul" else src), (None if tgt == "mul" else tgt)


def family_codes(family: str, source: str, pair: tuple[str, str]) -> tuple[str, str]:
    """The stream's pair in a multilingual family's codes."""
    if family == "mbart":
        return MBART50.get(pair[0], pair[0]), MBART50.get(pair[1], pair[1])
    if family == "causal":
        return NAMES.get(pair[0], pair[0]), NAMES.get(pair[1], pair[1])
    if "nllb" in str(_tokenizer_config(source).get("tokenizer_class", "")).lower():
        return NLLB.get(pair[0], pair[0]), NLLB.get(pair[1], pair[1])
    return pair  # M2M100: ISO codes


def check_languages(cfg: RunConfig, dataset: Any) -> None:
    """Refuse a stream whose languages are not the model's or ``metrics.lang`` (ConfigError, one line naming both);
    give a multilingual model the stream's languages where ``model.src_lang`` / ``model.tgt_lang`` are not set."""
    pair = stream_pair(cfg, dataset)  # dataset None: built from cfg.data
    where = f"{cfg.data.name} {Path(str(getattr(dataset, 'path', ''))).name}".strip() if getattr(dataset, "path", None) \
        else cfg.data.name
    source = str(cfg.model.path) if cfg.model.path else str(DEFAULT_MODEL)
    family = family_name(source, cfg.model.family)  # None: a hub id not in the cache (checked when it loads)
    unset = cfg.model.src_lang is None and cfg.model.tgt_lang is None
    if family in MULTILINGUAL and unset and not (family == "causal" and pair == OLD_PAIR):  # a causal LM's default
        cfg.model.src_lang, cfg.model.tgt_lang = family_codes(family, source, pair)       # prompt says en -> de
    model = model_pair(source, family, cfg.model.family_settings())
    for mine, theirs in zip(pair, model):
        if theirs is not None and mine != theirs:
            raise ConfigError(f"the stream ({where}) is {pair[0]}->{pair[1]} but the model {Path(source).name} translates "
                              f"{model[0] or '?'}->{model[1] or '?'}; give a model that translates {pair[0]}->{pair[1]} "
                              f"(--model) or a stream in {model[0] or '?'}->{model[1] or '?'}")
    if base(cfg.metrics.lang) != pair[1]:
        raise ConfigError(f"metrics.lang is {cfg.metrics.lang!r} but the stream ({where}) is {pair[0]}->{pair[1]}: its "
                          f"metrics would tokenise and count words as {cfg.metrics.lang!r}; set --set metrics.lang={pair[1]}")
