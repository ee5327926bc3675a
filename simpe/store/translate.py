"""``simpe translate``: translate a file with a base model, or with a per-user store applied (``simpe.store.user``)."""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any


def translate_lines(model: Any, tokenizer: Any, decoder: Any, sources: list[str], device: Any, method: Any = None) -> list[str]:
    """Translate ``sources`` one by one with ``decoder`` (the loop's way: segment i decodes with index i); a
    ``method`` gives each prompt its examples (``icl``; none for the others)."""
    import torch

    from simpe.models import family_of

    family = family_of(model)
    model.eval()
    out = []
    for index, source in enumerate(sources):
        examples = method.examples(source) if method is not None else []
        ids = family.encode_source(tokenizer, source, device, examples)[0]
        # tune-retrieve: a copy tuned on the store's memory for this source, reset after it (as in the run)
        with method.translating(source) if method is not None else contextlib.nullcontext(), torch.inference_mode():
            result = decoder.decode(model, ids, index=index, source=source)
        best = list(result.hypotheses[0].tokens) if result.hypotheses else []
        out.append(tokenizer.decode(best, skip_special_tokens=True))
    return out


def translate_file(model_id: str | None, source: Path, store: Path | None = None, decoder: str | None = None,
                   decoder_params: dict[str, Any] | None = None, device: str = "auto",
                   model_settings: dict[str, Any] | None = None) -> list[str]:
    """``simpe translate``: every line of ``source`` with the base model, or with the per-user store ``store`` applied.

    Args:
        decoder: a registered decoder (default: the decoder section of adapters/defaults.yaml);
            decoder_params: its parameters (default: those of defaults.yaml when the names match, else none).
        model_settings: keys of the ``model`` section (family, src_lang, tgt_lang, prompt_template, dtype)
            over those of defaults.yaml; a store made by a run applies the run's own language settings.
    """
    from simpe.config.files import defaults
    from simpe.decoders import DECODERS
    from simpe.model import load_model, model_family
    from simpe.store.user import check_base, load_store, read_store
    from simpe.textfile import read_lines

    base = defaults("decoder")
    name = decoder or base.name
    params = decoder_params if decoder_params is not None else (base.params if name == base.name else {})
    built = DECODERS.build(name, **params)  # checked before the model loads
    sources = read_lines(Path(source), "source file")
    given = dict(model_settings or {})
    if store is not None:
        _, metadata = read_store(Path(store))  # refuse a bad file before the model loads
        # and a store of another base (its name, its family) before its settings meet a model they do not fit
        from simpe.model import check_model
        from simpe.model import model_name as name_of
        from simpe.paths import DEFAULT_MODEL

        check_base(metadata, Path(store), name_of(model_id) if model_id else DEFAULT_MODEL.name,
                   check_model(model_id, model_settings.get("family", "auto") if model_settings else "auto"))
        for key, value in metadata.language_settings().items():  # the run's languages, unless given
            given.setdefault(key, value)
    cfg = defaults("model", **given)
    family = model_family(model_id, cfg.family, cfg.family_settings())  # settings checked before the model loads
    loaded = load_model(model_id, device, family, cfg.dtype, family_name=cfg.family, settings=cfg.family_settings())
    method = None
    if store is not None:
        from simpe.loop.update import Tuner
        from simpe.methods.base import Context

        _, method = load_store(loaded.model, loaded.name, Path(store))
        update_cfg, family = defaults("update"), loaded.family
        method.prepare(Context(encode=lambda s, r: family.encode_pair(loaded.tokenizer, s, r, loaded.device),
                               sentences=lambda split, n: [], tune=Tuner(loaded.model, update_cfg).tune, lr=update_cfg.lr,
                               read_pairs=lambda path: []), resume=True)  # a store's state is complete: nothing to make
    built.bind(loaded.tokenizer)
    return translate_lines(loaded.model, loaded.tokenizer, built, sources, loaded.device, method)
