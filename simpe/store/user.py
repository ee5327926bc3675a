"""Per-user stores as files: ``simpe export-store`` (copy a run's store out) and applying a store to a base model.

The file format (tensor keys, the typed ``StoreMetadata``, reading and checking) is
``simpe.storefile``; translating with a store is ``simpe.store.translate``. A run
writes its final adapted state as its store (``store.safetensors`` in the run folder);
``export_store`` checks it against the run's summary and copies it out; ``apply_store``
builds the named method and lets it apply the store to a freshly loaded base model
(``Method.load_store``), so ``translate`` reproduces the adapted model's outputs at the
end of the run with any decoder. The file's size is the store bytes the run reports plus
the safetensors header (8 bytes of header length and a JSON header naming every tensor
and the metadata).
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError, ModelError, RunDirError
from simpe.storefile import StoreMetadata, read_store_file, store_sizes
from simpe.textfile import check_replaceable

logger = logging.getLogger(__name__)


def read_store(path: Path) -> tuple[dict[str, Any], StoreMetadata]:
    """A store file's tensors and metadata, checked as a file (``simpe.storefile.read_store_file``) and against the
    methods: one line refusing an unknown method, or tensors that another method's stores hold (its ``store_markers``)
    under metadata naming this one (a file altered, or assembled from two stores)."""
    from simpe.methods import METHODS

    tensors, metadata = read_store_file(path)
    if metadata.method not in METHODS:
        raise ConfigError(f"{path} was made by method {metadata.method!r}, which this simpe does not know; "
                          f"known: {', '.join(METHODS.names())}")
    names = set(tensors)
    made_by = [name for name in METHODS.names() if METHODS.get(name).marks_store(names)]
    if made_by and metadata.method not in made_by:
        raise ConfigError(f"{path} holds the tensors of a {' or '.join(made_by)} store but its metadata names method "
                          f"{metadata.method!r}; the file was altered or assembled from two stores")
    return tensors, metadata


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
    check_replaceable(target, ConfigError)
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
    return {"path": str(target), "method": metadata.method, "base_model": metadata.base_model, **sizes,
            "reported_store_bytes": reported}


def apply_store(model: Any, model_name: str, path: Path) -> StoreMetadata:
    """Apply the store at ``path`` to the freshly loaded base ``model`` (``load_store``); return its metadata."""
    return load_store(model, model_name, path)[0]


def check_base(metadata: StoreMetadata, path: Path, model_name: str, family: str | None, digest: str | None = None) -> None:
    """Refuse (ModelError, one line) a store applied to another base than its own: another model name, another family,
    or another config (``digest``: the hash of config.json less its volatile keys; None: not known yet, before the
    model loads). The line names the base the store was made for and the model it met, each with family and config."""
    made = f"base model {metadata.base_model!r} ({metadata.family}" + \
           (f", config {metadata.model_config_sha256})" if metadata.model_config_sha256 else ")")
    met = f"{model_name!r} ({family or 'family unknown'}" + (f", config {digest})" if digest else ")")
    hint = f"pass --model {metadata.base_model_path or 'models/' + metadata.base_model}"
    if metadata.base_model != model_name:
        why = ""
    elif family is not None and metadata.family != family:  # a store naming no family: a Marian one
        why = ": another family"
    elif digest is not None and metadata.model_config_sha256 is not None and metadata.model_config_sha256 != digest:
        why = ": another architecture or vocabulary under the same name"
    else:
        return
    raise ModelError(f"{path} was made for {made}, not for {met}{why}; {hint}")


def load_store(model: Any, model_name: str, path: Path) -> tuple[StoreMetadata, Any]:
    """Apply the store at ``path`` to the freshly loaded base ``model`` (named ``model_name``); return its metadata
    and the method that applied it (an in-context method gives the prompts' examples from it).

    Refused (one line) on another base: another model name, another family, or another config
    (architecture, vocabulary: the hash of config.json less its volatile keys). A store written
    before stores named their family, or a Marian one (``store_base_metadata``), is checked by name and family.
    """
    from simpe.errors import SimpeError
    from simpe.methods.compose import build_method
    from simpe.models import family_of

    tensors, metadata = read_store(path)
    family = family_of(model)
    check_base(metadata, path, model_name, family.name, family.digest)
    try:
        method = build_method(metadata.method, metadata.method_params, metadata.modifiers)  # the method checked by read_store
    except SimpeError as err:
        raise ModelError(f"{path}: its method and modifiers cannot be built here: {err}") from None
    method.load_store(model, tensors)
    logger.info("applied %s store %s: %d tensors", metadata.method, path, len(tensors))
    return metadata, method
