"""Load a Marian MT model and its tokenizer (local folder or hub id); pick the device; encode inputs.

The embedded demo model under ``models/`` and ``Helsinki-NLP/opus-mt-en-de`` are loaded by
the same code: ``MarianMTModel.from_pretrained`` + ``MarianTokenizer.from_pretrained``.
``encode_source`` / ``encode_pair`` are the one way text becomes the model's input ids (the
loop, the ranking evaluation and select-fixed use them); ``teacher_forced_logits`` the one way
a pair is scored for a loss (the online update, demo training). This module does not translate
or train.
"""
from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
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


MODEL_TYPE = "marian"  # config.json's model_type of every model simpe can adapt
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TOKENIZER_FILES = ("source.spm", "target.spm", "vocab.json")


def _is_local(source: str) -> bool:
    """A folder (or something spelled like one) rather than a hub id ``owner/name``."""
    return Path(source).exists() or source.startswith((".", "/", "~")) or source.count("/") != 1


def _check_model_type(config: Any, where: str) -> None:
    kind = config.get("model_type") if isinstance(config, dict) else None
    if kind != MODEL_TYPE:
        arch = ", ".join(config.get("architectures") or []) if isinstance(config, dict) else ""
        raise ModelError(f"{where} is a {kind or 'unknown'} model{f' ({arch})' if arch else ''}, not a Marian one "
                         f"(config.json model_type must be {MODEL_TYPE!r}); simpe adapts MarianMTModel checkpoints "
                         "such as Helsinki-NLP/opus-mt-en-de")


def _check_safetensors(path: Path) -> None:
    """Refuse a safetensors file shorter than its header says (a truncated copy or download)."""
    import json
    import struct

    size = path.stat().st_size
    try:
        with open(path, "rb") as handle:
            (header_len,) = struct.unpack("<Q", handle.read(8))
            if header_len > size - 8:
                raise ValueError("header runs past the end of the file")
            header = json.loads(handle.read(header_len))
        end = max((info["data_offsets"][1] for name, info in header.items() if name != "__metadata__"), default=0)
    except (struct.error, ValueError, KeyError, TypeError, IndexError) as err:
        raise ModelError(f"{path} is not a valid safetensors file ({err}); copy or download the model again") from None
    if 8 + header_len + end > size:
        raise ModelError(f"{path} is truncated: {size} bytes, its header needs {8 + header_len + end}; "
                         "copy or download the model again")


def _check_weights(folder: Path, source: str) -> None:
    present = [name for name in WEIGHT_FILES if (folder / name).is_file()]
    if not present:
        raise ModelError(f"model folder {source} has no weights ({' or '.join(WEIGHT_FILES)}); "
                         "it must be written by save_pretrained of a MarianMTModel")
    if present[0] == "model.safetensors":
        _check_safetensors(folder / "model.safetensors")
    else:
        import zipfile

        if not zipfile.is_zipfile(folder / present[0]):
            raise ModelError(f"{folder / present[0]} is truncated or not a torch checkpoint; copy or download the model again")


def model_folder(model_id: str | os.PathLike[str] | None) -> Path | None:
    """The local folder ``load_model`` will read (its ``LoadedModel.path``), or None for a hub id."""
    source = str(model_id) if model_id is not None else str(DEFAULT_MODEL)
    return Path(source) if _is_local(source) else None


def check_model(model_id: str | os.PathLike[str] | None) -> None:
    """Refuse, without loading it, a local model folder that is missing, not Marian, or incomplete.

    A hub id is checked when its config is in the local cache (else by ``load_model``).
    Raises:
        ModelError: naming the folder and what is wrong (one line).
    """
    import json

    source = str(model_id) if model_id is not None else str(DEFAULT_MODEL)
    path = Path(source).expanduser()
    if not _is_local(source):
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(source, "config.json")
        if isinstance(cached, str):
            _check_model_type(json.loads(Path(cached).read_text(encoding="utf-8")), f"model {source!r}")
        return
    if not path.is_dir():
        hint = " (run `make baseline` to train the demo model)" if path.resolve() == DEFAULT_MODEL else ""
        what = "is a file, not a folder" if path.exists() else "does not exist"
        raise ModelError(f"model folder {source} {what}{hint}")
    if not (path / "config.json").is_file():
        raise ModelError(f"model folder {source} lacks config.json; it must be written by save_pretrained of a MarianMTModel and MarianTokenizer")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ModelError(f"{path / 'config.json'} is not valid JSON ({err}); copy or download the model again") from None
    _check_model_type(config, f"model folder {source}")
    for needed in TOKENIZER_FILES:
        if not (path / needed).exists():
            raise ModelError(f"model folder {source} lacks {needed}; it must be written by save_pretrained of a MarianMTModel and MarianTokenizer")
    _check_weights(path, source)


def load_model(model_id: str | os.PathLike[str] | None = None, device: str = "auto") -> LoadedModel:
    """Load a ``MarianMTModel`` and ``MarianTokenizer`` from a folder or a hub id.

    Args:
        model_id: a local folder written by ``save_pretrained`` or a hub id such as
            ``Helsinki-NLP/opus-mt-en-de``; ``None`` is the embedded demo model.
        device: ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
    Raises:
        ModelError: the folder is missing or incomplete, or the hub cannot be reached.
    """
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    torch_device = resolve_device(device)
    source = str(model_id) if model_id is not None else str(DEFAULT_MODEL)
    path = Path(source)
    looks_local = _is_local(source)
    check_model(source)
    if not looks_local:
        _check_hub(source)
    try:
        if not looks_local:
            from transformers import PretrainedConfig

            _check_model_type(PretrainedConfig.get_config_dict(source)[0], f"model {source!r}")
        tokenizer = MarianTokenizer.from_pretrained(source)
        model, info = MarianMTModel.from_pretrained(source, output_loading_info=True)
    except ModelError:
        raise
    except Exception as err:  # transformers, safetensors and torch raise many kinds for a damaged checkpoint
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        if looks_local:
            raise ModelError(f"cannot load Marian model from {source}: {first}") from None
        raise ModelError(f"cannot get Marian model {source!r} from the Hugging Face hub ({first}); "
                         + _download_hint(source)) from None
    missing = [key for key in info["missing_keys"] if not key.endswith("embed_positions.weight")]  # sinusoidal: not saved
    if missing or info["mismatched_keys"]:
        bad = missing or [str(m[0]) for m in info["mismatched_keys"]]
        raise ModelError(f"model {source} lacks {len(bad)} of its weights or has them in the wrong shape (e.g. {bad[0]}); "
                         "the checkpoint is incomplete: copy or download it again")
    model.to(torch_device)
    # Every weight in its own freshly allocated (64-byte aligned) storage: weights loaded from
    # safetensors are views at 8-byte offsets into the file's buffer, and CPU matmul kernels give
    # different last bits for different alignments. The update's SGD step moves a weight into a
    # fresh buffer (simpe.update.Backup.swap_in), so without this a resumed run (weights copied back
    # into the loaded storage) would not compute bit for bit as an uninterrupted one.
    with torch.no_grad():
        for param in model.parameters():  # tied weights are one Parameter: they stay tied
            param.data = param.data.clone()
    model.eval()
    return LoadedModel(model, tokenizer, model_name(source), path if looks_local else None, torch_device)


@dataclass
class Pair:
    """One tokenised (source, reference) pair on the model's device."""

    input_ids: Any  # (1, src_len) LongTensor
    labels: Any  # (1, tgt_len) LongTensor, ending in EOS
    truncated: tuple[str, ...] = ()  # "source" and/or "reference" when that side was cut to MAX_TOKENS


def _longer_than_limit(tokenizer: Any, kept: int, **text: str) -> bool:
    """True when a side that came back at MAX_TOKENS tokens was cut (tokenised again in full: rare, so cheap)."""
    return kept >= MAX_TOKENS and len(tokenizer(**text)["input_ids"]) > MAX_TOKENS


def encode_source(tokenizer: Any, source: str, device: Any) -> Any:
    """(1, src_len) source ids ending in EOS, on ``device`` (truncated to MAX_TOKENS)."""
    return tokenizer(source, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")["input_ids"].to(device)


def encode_pair(tokenizer: Any, source: str, reference: str, device: Any) -> Pair:
    """Tokenise one (source, reference) pair for the update, on ``device``."""
    tgt = tokenizer(text_target=reference, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")["input_ids"]  # (1, tgt_len)
    src = encode_source(tokenizer, source, device)  # (1, src_len)
    truncated = tuple(side for side, kept, text in (("source", src.shape[1], {"text": source}),
                                                    ("reference", tgt.shape[1], {"text_target": reference}))
                      if _longer_than_limit(tokenizer, kept, **text))
    return Pair(src, tgt.to(device), truncated)


def decoder_inputs(config: Any, labels: Any) -> Any:
    """(batch, tgt_len) decoder input ids for ``labels`` as Marian makes them: the start token, then
    the labels shifted right (-100 read as pad)."""
    from transformers.models.marian.modeling_marian import shift_tokens_right

    return shift_tokens_right(labels, config.pad_token_id, config.decoder_start_token_id)


@contextlib.contextmanager
def eval_mode(model: Any) -> Iterator[None]:
    """Every module in eval mode (no dropout) for the duration; each module's own flag is restored
    afterwards. Only the modules in training mode are touched: cheaper than ``model.eval()`` and
    ``model.train()``, which visit every module (0.4 ms each on the demo model, per segment)."""
    training = [module for module in model.modules() if module.training]
    for module in training:
        module.training = False
    try:
        yield
    finally:
        for module in training:
            module.training = True


def teacher_forced_logits(model: Any, input_ids: Any, labels: Any, attention_mask: Any = None) -> Any:
    """(batch, tgt_len, vocab) logits of ``labels`` given ``input_ids``: what ``model(..., labels=labels)``
    computes, without the model's own loss over the vocabulary (the caller computes its loss) and
    without a key/value cache."""
    return model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_inputs(model.config, labels),
                 use_cache=False).logits
