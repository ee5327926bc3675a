"""Load a Marian MT model and its tokenizer (local folder or hub id); pick the device; encode inputs.

The embedded demo model under ``models/`` and ``Helsinki-NLP/opus-mt-en-de`` are loaded by
the same code: ``MarianMTModel.from_pretrained`` + ``MarianTokenizer.from_pretrained``.
``encode_source`` / ``encode_pair`` are the one way text becomes the model's input ids (the
loop, the ranking evaluation and select-fixed use them). This module does not translate or
train.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError, ModelError
from simpe.paths import DEFAULT_MODEL

logger = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
MAX_TOKENS = 512  # Marian's position limit: longer sides are truncated


@dataclass
class LoadedModel:
    """A Marian model, its tokenizer, where it came from, and the device it lives on."""

    model: Any  # transformers.MarianMTModel
    tokenizer: Any  # transformers.MarianTokenizer
    name: str
    path: Path | None
    device: Any  # torch.device

    @property
    def model_dir(self) -> Path | None:
        return self.path


def resolve_device(device: str) -> Any:
    """Map ``auto|cpu|cuda`` to a ``torch.device``; ``cuda`` without a GPU is an error."""
    import torch

    if device not in DEVICES:
        raise ConfigError(f"unknown device {device!r}; known: {', '.join(DEVICES)}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device 'cuda' was asked for but torch sees no CUDA GPU; use --device cpu or auto")
    return torch.device(device)


def model_name(model_id: str | os.PathLike[str]) -> str:
    """A short name for run directories: the folder name or the hub id with '/' -> '--'."""
    text = str(model_id).rstrip("/")
    return Path(text).name if Path(text).exists() else text.replace("/", "--")


def _download_hint(source: str) -> str:
    local = f"models/{model_name(source)}"
    return (f"on a machine with network access run `huggingface-cli download {source} --local-dir {local}`, "
            f"copy that folder to {local} here, and pass --model {local}")


def _check_hub(source: str, timeout: float = 5.0) -> None:
    """Fail fast (no minutes of retries) when ``source`` is neither cached nor reachable."""
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(source, "config.json"), str):
        return  # in the local Hugging Face cache: loads offline
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        raise ModelError(f"model {source!r} is not in the local Hugging Face cache and HF_HUB_OFFLINE=1; " + _download_hint(source))
    import socket

    host = "huggingface.co"
    try:
        socket.setdefaulttimeout(timeout)
        socket.create_connection((host, 443), timeout=timeout).close()
    except OSError as err:
        raise ModelError(f"cannot reach the Hugging Face hub ({host}: {err.strerror or err}) to get model {source!r}; "
                         + _download_hint(source)) from None
    finally:
        socket.setdefaulttimeout(None)


def load_model(model_id: str | os.PathLike[str] | None = None, device: str = "auto") -> LoadedModel:
    """Load a ``MarianMTModel`` and ``MarianTokenizer`` from a folder or a hub id.

    Args:
        model_id: a local folder written by ``save_pretrained`` or a hub id such as
            ``Helsinki-NLP/opus-mt-en-de``; ``None`` is the embedded demo model.
        device: ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
    Raises:
        ModelError: the folder is missing or incomplete, or the hub cannot be reached.
    """
    from transformers import MarianMTModel, MarianTokenizer

    torch_device = resolve_device(device)
    source = str(model_id) if model_id is not None else str(DEFAULT_MODEL)
    path = Path(source)
    looks_local = path.exists() or source.startswith((".", "/", "~")) or source.count("/") != 1
    if looks_local:
        if not path.is_dir():
            hint = " (run `make baseline` to train the demo model)" if path.resolve() == DEFAULT_MODEL else ""
            raise ModelError(f"model folder {source} does not exist{hint}")
        for needed in ("config.json", "source.spm", "target.spm", "vocab.json"):
            if not (path / needed).exists():
                raise ModelError(f"model folder {source} lacks {needed}; it must be written by save_pretrained of a MarianMTModel and MarianTokenizer")
    if not looks_local:
        _check_hub(source)
    try:
        tokenizer = MarianTokenizer.from_pretrained(source)
        model = MarianMTModel.from_pretrained(source)
    except (OSError, TypeError, ValueError) as err:
        if looks_local:
            raise ModelError(f"cannot load Marian model from {source}: {err}") from None
        raise ModelError(f"cannot get Marian model {source!r} from the Hugging Face hub ({str(err).splitlines()[0]}); "
                         + _download_hint(source)) from None
    model.to(torch_device)
    model.eval()
    return LoadedModel(model, tokenizer, model_name(source), path if looks_local else None, torch_device)


@dataclass
class Pair:
    """One tokenised (source, reference) pair on the model's device."""

    input_ids: Any  # (1, src_len) LongTensor
    labels: Any  # (1, tgt_len) LongTensor, ending in EOS


def encode_source(tokenizer: Any, source: str, device: Any) -> Any:
    """(1, src_len) source ids ending in EOS, on ``device`` (truncated to MAX_TOKENS)."""
    return tokenizer(source, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")["input_ids"].to(device)


def encode_pair(tokenizer: Any, source: str, reference: str, device: Any) -> Pair:
    """Tokenise one (source, reference) pair for the update, on ``device``."""
    tgt = tokenizer(text_target=reference, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")["input_ids"]  # (1, tgt_len)
    return Pair(encode_source(tokenizer, source, device), tgt.to(device))
