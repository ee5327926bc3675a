"""Per-user stores as files: ``simpe export-store`` and ``simpe translate [--store FILE]``.

A store is a safetensors file: the tensors a method's ``export_store`` returns (dense
adapted tensors; ``NAME:rows`` + ``NAME:indices`` for kept embedding rows; the ``bias``
method's second output bias as ``simpe_output_bias``) and string metadata naming the
format, the method and its parameters, the base model and the run that made it. A run
writes its final adapted state as its store (``store.safetensors`` in the run folder);
``export_store`` checks it against the run's summary and copies it out; ``apply_store``
builds the named method and lets it apply the store to a freshly loaded base model
(``Method.load_store``), so ``translate`` reproduces the adapted model's outputs at the
end of the run with any decoder. The file's size is the store bytes the run reports plus
the safetensors header (8 bytes of header length and a JSON header naming every tensor
and the metadata).
"""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError, ModelError, RunDirError
from simpe.methods.base import STORE_FORMAT

logger = logging.getLogger(__name__)


def read_store(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The tensors (name -> CPU tensor) and metadata of a store file; one-line errors for anything else."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file, safe_open

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"store file {path} does not exist (make one with `simpe export-store RUN --out FILE`)")
    try:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise ConfigError(f"{path} is not a safetensors file ({str(err).splitlines()[0]})") from None
    if metadata.get("format") != STORE_FORMAT:
        raise ConfigError(f"{path} is not a simpe per-user store (metadata format {metadata.get('format')!r}, expected {STORE_FORMAT!r})")
    _check_store(path, tensors, metadata)
    return tensors, metadata


def _check_store(path: Path, tensors: dict[str, Any], metadata: dict[str, str]) -> None:
    """Refuse (one line) a store whose metadata or values cannot be what a run wrote: a missing or unknown method,
    metadata that is not JSON where JSON is written, tensors of another method than the metadata's, non-finite values."""
    import torch

    from simpe.methods import METHODS

    for key in ("method", "base_model"):
        if not metadata.get(key):
            raise ConfigError(f"{path} names no {key} in its metadata; a simpe store names its method and base model")
    if metadata["method"] not in METHODS:
        raise ConfigError(f"{path} was made by method {metadata['method']!r}, which this simpe does not know; known: {', '.join(METHODS.names())}")
    for key in JSON_METADATA:
        if key in metadata:
            try:
                value = json.loads(metadata[key])
            except ValueError:
                raise ConfigError(f"{path}: metadata {key} is not JSON ({metadata[key][:60]!r})") from None
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: metadata {key} must be a JSON object, got {metadata[key][:60]!r}")
    made_by = _made_by(tensors)
    if made_by is not None and metadata["method"] not in made_by:
        raise ConfigError(f"{path} holds the tensors of a {' or '.join(made_by)} store but its metadata names method "
                          f"{metadata['method']!r}; the file was altered or assembled from two stores")
    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ConfigError(f"{path}: tensor {name!r} holds NaN or infinite values; a run never writes them")


JSON_METADATA = ("method_params", "decoder_params", "model_settings")  # metadata values a run writes as JSON objects


def _made_by(tensors: dict[str, Any]) -> tuple[str, ...] | None:
    """The methods whose stores hold these tensors, where their names tell (None: dense parameters, any of several)."""
    from simpe.methods.bias import OUTPUT_BIAS
    from simpe.methods.icl import MEMORY
    from simpe.methods.knn import KEYS, VALUES

    names = set(tensors)
    if names & {KEYS, VALUES}:
        return ("knn",)
    if MEMORY in names:
        return ("icl",)
    if any("lora_" in name for name in names):
        return ("lora",)
    if OUTPUT_BIAS in names:
        return ("bias",) if names == {OUTPUT_BIAS} else ("lasso", "bias")
    return None


def store_sizes(path: Path, tensors: dict[str, Any]) -> dict[str, int]:
    """``file_bytes``, ``data_bytes`` (the tensors) and ``header_bytes`` (the rest: length prefix + JSON header)."""
    file_bytes = Path(path).stat().st_size
    data_bytes = sum(t.numel() * t.element_size() for t in tensors.values())
    return {"file_bytes": file_bytes, "data_bytes": data_bytes, "header_bytes": file_bytes - data_bytes}


def export_store(run: Path, out: Path | None = None, overwrite: bool = False) -> dict[str, Any]:
    """Copy a complete run's store to ``out`` and report its sizes.

    ``out`` defaults to ``<group>--<preset>.safetensors`` in the current folder (a file to ship, outside runs/).

    Returns ``{"path", "method", "base_model", "file_bytes", "data_bytes", "header_bytes", "reported_store_bytes"}``.
    """
    from simpe.rundir.layout import DONE_FILE, SEGMENTS_FILE
    from simpe.rundir.reader import load_run, run_store

    run = Path(run)
    if run.is_dir() and (run / SEGMENTS_FILE).is_file() and not (run / DONE_FILE).exists():
        raise RunDirError(f"run {run} is incomplete (no {DONE_FILE}): export-store exports the final state of a "
                          "complete run; finish it first (simpe simulate with the run's arguments and --resume)")
    record = load_run(run)
    source = run_store(record.path)
    target = Path(out) if out is not None else Path(f"{record.path.parent.name}--{record.path.name}.safetensors")
    if target.is_dir():
        raise ConfigError(f"--out {target} is a folder; give the store's file name (e.g. {target / record.path.name}.safetensors)")
    if target.exists() and not overwrite:
        raise ConfigError(f"{target} exists; pass --overwrite to replace it")
    tensors, metadata = read_store(source)
    sizes = store_sizes(source, tensors)
    reported = record.summary.get("store_bytes")
    if reported is not None and reported != sizes["data_bytes"]:
        raise RunDirError(f"{source} holds {sizes['data_bytes']} bytes of tensors but the run reports store_bytes {reported}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    try:
        shutil.copyfile(source, tmp)
        tmp.replace(target)
    except OSError as err:
        raise ConfigError(f"cannot write {target}: {err.strerror or err}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return {"path": str(target), "method": metadata["method"], "base_model": metadata["base_model"], **sizes,
            "reported_store_bytes": reported}


def apply_store(model: Any, model_name: str, path: Path) -> dict[str, str]:
    """Apply the store at ``path`` to the freshly loaded base ``model`` (``load_store``); return its metadata."""
    return load_store(model, model_name, path)[0]


def load_store(model: Any, model_name: str, path: Path) -> tuple[dict[str, str], Any]:
    """Apply the store at ``path`` to the freshly loaded base ``model`` (named ``model_name``); return its metadata
    and the method that applied it (an in-context method gives the prompts' examples from it).

    Refused (one line) on another base: another model name, another family, or another config
    (architecture, vocabulary: the hash of config.json less its volatile keys). A store written
    before stores named their family, or a Marian one (``store_base_metadata``), is checked by name and family.
    """
    from simpe.methods import METHODS
    from simpe.models import family_of
    from simpe.models.base import LEGACY_FAMILY

    tensors, metadata = read_store(path)
    family = family_of(model)
    hint = f"pass --model {metadata.get('base_model_path') or 'models/' + str(metadata.get('base_model'))}"
    if metadata.get("base_model") != model_name:
        raise ModelError(f"{path} was made for base model {metadata.get('base_model')!r}, not {model_name!r}; {hint}")
    made_for = metadata.get("model_family", LEGACY_FAMILY)  # a store without it: a Marian one (ModelFamily.store_metadata)
    if made_for != family.name:
        raise ModelError(f"{path} was made for a {made_for} model, not this {family.name} one; {hint}")
    digest = metadata.get("model_config_sha256")
    if digest is not None and digest != family.digest:
        raise ModelError(f"{path} was made for a base model whose config hashes to {digest}, this one's is "
                         f"{family.digest} (another architecture or vocabulary under the same name); {hint}")
    method = METHODS.build(metadata["method"], **json.loads(metadata.get("method_params") or "{}"))  # checked by read_store
    method.load_store(model, tensors)
    logger.info("applied %s store %s: %d tensors", metadata["method"], path, len(tensors))
    return metadata, method


def translate_lines(model: Any, tokenizer: Any, decoder: Any, sources: list[str], device: Any, method: Any = None) -> list[str]:
    """Translate ``sources`` one by one with ``decoder`` (the loop's way: segment i decodes with index i); a
    ``method`` gives each prompt its examples (``icl``; none for the others)."""
    import torch

    from simpe.models import family_of

    family = family_of(model)
    model.eval()
    out = []
    with torch.inference_mode():
        for index, source in enumerate(sources):
            examples = method.examples(source) if method is not None else []
            result = decoder.decode(model, family.encode_source(tokenizer, source, device, examples)[0], index=index, source=source)
            best = list(result.hypotheses[0].tokens) if result.hypotheses else []
            out.append(tokenizer.decode(best, skip_special_tokens=True))
    return out


def translate_file(model_id: str | None, source: Path, store: Path | None = None, decoder: str | None = None,
                   decoder_params: dict[str, Any] | None = None, device: str = "auto",
                   model_settings: dict[str, Any] | None = None) -> list[str]:
    """``simpe translate``: every line of ``source`` with the base model, or with the per-user store ``store`` applied.

    Args:
        decoder: a registered decoder (default: the decoder section of presets/defaults.yaml);
            decoder_params: its parameters (default: those of defaults.yaml when the names match, else none).
        model_settings: keys of the ``model`` section (family, src_lang, tgt_lang, prompt_template, dtype)
            over those of defaults.yaml; a store made by a run applies the run's own language settings.
    """
    from simpe.config import defaults
    from simpe.decoders import DECODERS
    from simpe.model import load_model, model_family
    from simpe.textfile import read_lines

    base = defaults("decoder")
    name = decoder or base.name
    params = decoder_params if decoder_params is not None else (base.params if name == base.name else {})
    built = DECODERS.build(name, **params)  # checked before the model loads
    sources = read_lines(Path(source), "source file")
    given = dict(model_settings or {})
    if store is not None:
        _, metadata = read_store(Path(store))  # refuse a bad file before the model loads
        made = json.loads(metadata.get("model_settings") or "{}")
        for key in ("src_lang", "tgt_lang", "prompt_template"):  # the run's languages, unless given
            if made.get(key) is not None:
                given.setdefault(key, made[key])
    cfg = defaults("model", **given)
    family = model_family(model_id, cfg.family, cfg.family_settings())  # settings checked before the model loads
    loaded = load_model(model_id, device, family, cfg.dtype, family_name=cfg.family, settings=cfg.family_settings())
    method = None
    if store is not None:
        _, method = load_store(loaded.model, loaded.name, Path(store))
    built.bind(loaded.tokenizer)
    return translate_lines(loaded.model, loaded.tokenizer, built, sources, loaded.device, method)
