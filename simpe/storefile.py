"""The per-user store's file format, in one place: its tensor keys, its typed metadata, reading and checking.

A store is a safetensors file: the tensors a method's ``export_store`` returns (dense adapted
tensors; ``NAME:rows`` + ``NAME:indices`` for kept rows of a matrix, ``rows_entry``; a method's
own tensors, such as ``bias``'s ``simpe_output_bias``) and string metadata, the fields of
``StoreMetadata``: a JSON object's values as safetensors stores them (every value a string;
``method_params``, ``decoder_params`` and ``model_settings`` are JSON objects written as strings,
``segments`` a decimal number). ``format`` is ``STORE_FORMAT``; a file with another is refused.

``read_store_file`` refuses (one line, ``ConfigError``) anything a run cannot have written as a file: not
safetensors, another format, no method or base model, a JSON field that is not a JSON object, non-finite values.
``simpe.store.user.read_store`` (what every reader calls) adds what needs the methods: an unknown method, tensors of
another method than the metadata names (each method's ``store_markers``). This module imports no method: the methods
import it for the rows keys. Methods own which tensors they export and how they apply them
(``Method.export_store`` / ``load_store``); ``simpe.store.user`` exports and applies stores, ``simpe.store.translate``
translates with one.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError

STORE_FORMAT = "simpe-store/1"  # the "format" metadata of a per-user store file
ROWS_SUFFIX, INDICES_SUFFIX = ":rows", ":indices"  # store keys of the kept rows of a matrix and their int32 indices
JSON_METADATA = ("method_params", "decoder_params", "model_settings")  # metadata values written as JSON objects
JSON_LISTS = ("modifiers",)  # metadata values written as JSON lists


@dataclass(frozen=True)
class StoreMetadata:
    """What made a store and for which base model; ``to_strings`` is the file's metadata, ``from_strings`` reads it back.

    ``None`` fields are absent from the file: a store crafted by hand, or made before families
    (a Marian store without language settings names no family, config hash or settings: its
    bytes are what they were, and it is recognised as ``simpe.models.base.LEGACY_FAMILY`` by that absence).
    """

    method: str
    base_model: str
    method_params: dict[str, Any] = field(default_factory=dict)
    modifiers: list[dict[str, Any]] | None = None  # the method's modifiers ({name, params}; simpe.methods.compose)
    adapter: str | None = None  # the preset the run was made with
    base_model_path: str | None = None  # "" : the demo model
    dataset: str | None = None
    split: str | None = None
    segments: int | None = None
    reset: str | None = None
    decoder: str | None = None
    decoder_params: dict[str, Any] | None = None
    model_family: str | None = None
    model_config_sha256: str | None = None
    model_settings: dict[str, Any] | None = None
    format: str = STORE_FORMAT

    @property
    def family(self) -> str:
        """The family the store was made for (``LEGACY_FAMILY``, Marian, when it names none)."""
        from simpe.models.base import LEGACY_FAMILY

        return self.model_family or LEGACY_FAMILY

    def language_settings(self) -> dict[str, Any]:
        """The run's language settings (src_lang, tgt_lang, prompt_template) where the store names them."""
        made = self.model_settings or {}
        return {k: made[k] for k in ("src_lang", "tgt_lang", "prompt_template") if made.get(k) is not None}

    def to_strings(self) -> dict[str, str]:
        """The safetensors metadata (string values, in the order runs have always written them)."""
        out: dict[str, str] = {"format": self.format}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "format" or value is None:
                continue
            out[f.name] = json.dumps(value, sort_keys=True) if f.name in JSON_METADATA + JSON_LISTS else str(value)
        return out

    @classmethod
    def from_strings(cls, path: Path, metadata: dict[str, str]) -> StoreMetadata:
        """Read and check the metadata of the store at ``path`` (one line naming the file for anything a run never writes)."""
        if metadata.get("format") != STORE_FORMAT:
            raise ConfigError(f"{path} is not a simpe per-user store (metadata format {metadata.get('format')!r}, expected {STORE_FORMAT!r})")
        for key in ("method", "base_model"):
            if not metadata.get(key):
                raise ConfigError(f"{path} names no {key} in its metadata; a simpe store names its method and base model")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in metadata:
                continue
            text = metadata[f.name]
            if f.name in JSON_METADATA:
                try:
                    value = json.loads(text)
                except ValueError:
                    raise ConfigError(f"{path}: metadata {f.name} is not JSON ({text[:60]!r})") from None
                if not isinstance(value, dict):
                    raise ConfigError(f"{path}: metadata {f.name} must be a JSON object, got {text[:60]!r}")
                values[f.name] = value
            elif f.name in JSON_LISTS:
                try:
                    value = json.loads(text)
                except ValueError:
                    raise ConfigError(f"{path}: metadata {f.name} is not JSON ({text[:60]!r})") from None
                if not isinstance(value, list) or not all(isinstance(v, dict) and isinstance(v.get("name"), str) for v in value):
                    raise ConfigError(f"{path}: metadata {f.name} must be a JSON list of {{name, params}}, got {text[:60]!r}")
                values[f.name] = value
            elif f.name == "segments":
                if not text.isdigit():
                    raise ConfigError(f"{path}: metadata segments must be a number of segments, got {text[:60]!r}")
                values[f.name] = int(text)
            else:
                values[f.name] = text
        return cls(**values)


def write_store_file(path: Path, tensors: dict[str, Any], metadata: StoreMetadata) -> None:
    """Write a store file (safetensors) holding ``tensors`` and ``metadata`` to ``path``.

    Streamed from the tensors to the file (``safetensors.torch.save_file``), never built in memory first: ``save``
    returns the file as bytes and copies it twice on the way (2 GiB more at the peak for a 1 GiB store, measured), which
    at real size was the run's peak (NLLB-600M full, float32: 4.6 GiB of 11.9). Errors are ``OSError`` or
    safetensors' ``SafetensorError`` naming the I/O error (``RunDir.write_store`` makes them one line)."""
    from safetensors.torch import save_file

    save_file(tensors, str(path), metadata=metadata.to_strings())


def read_store_file(path: Path) -> tuple[dict[str, Any], StoreMetadata]:
    """The tensors (name -> CPU tensor) and checked metadata of a store file, as a format: one-line errors for anything
    a run cannot have written. ``simpe.store.user.read_store`` adds the check of its method; read a store with that."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file, safe_open

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"store file {path} does not exist (make one with `simpe export-store RUN --out FILE`)")
    try:
        with safe_open(str(path), framework="pt") as handle:
            strings = handle.metadata() or {}
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise ConfigError(f"{path} is not a safetensors file ({str(err).splitlines()[0]})") from None
    metadata = StoreMetadata.from_strings(path, strings)
    _check_tensors(path, tensors)
    return tensors, metadata


def _check_tensors(path: Path, tensors: dict[str, Any]) -> None:
    """Refuse (one line) non-finite values. Which method made the tensors is ``simpe.store.user.read_store``'s check: the
    format knows no method (the methods import it)."""
    import torch

    for name, tensor in tensors.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ConfigError(f"{path}: tensor {name!r} holds NaN or infinite values; a run never writes them")


def store_sizes(path: Path, tensors: dict[str, Any]) -> dict[str, int]:
    """``file_bytes``, ``data_bytes`` (the tensors) and ``header_bytes`` (the rest: length prefix + JSON header)."""
    file_bytes = Path(path).stat().st_size
    data_bytes = sum(t.numel() * t.element_size() for t in tensors.values())
    return {"file_bytes": file_bytes, "data_bytes": data_bytes, "header_bytes": file_bytes - data_bytes}


def rows_entry(name: str, weight: Any, indices: Any) -> dict[str, Any]:
    """Store entries of the rows ``indices`` of matrix ``name``: the rows and their int32 indices."""
    import torch

    indices = indices.flatten().cpu()  # (rows,)
    return {name + ROWS_SUFFIX: weight.detach()[indices.to(weight.device)].cpu().contiguous(),  # (rows, dim)
            name + INDICES_SUFFIX: indices.to(torch.int32).contiguous()}
