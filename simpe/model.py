"""Load a model of a supported family and its tokenizer (local folder or hub id); pick the device.

The family (``simpe.models``: marian, mbart, m2m100, t5, causal) is read from config.json's
``model_type`` (or named by ``model.family``) and checked, with its settings, before anything
loads; the embedded demo model under ``models/`` and ``Helsinki-NLP/opus-mt-en-de`` are loaded
by the same code. The family, bound to the loaded model (``family_of(model)``), is the one way
text becomes the model's input ids (``encode_source`` / ``encode_pair``);
``teacher_forced_logits`` the one way a pair is scored for a loss (the online update, demo
training). This module does not translate or train.
"""
from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpe.config.tree import FAMILY_AUTO
from simpe.errors import ConfigError, ModelError, SimpeError
from simpe.models import FAMILIES, ModelFamily, Pair, family_for_type, family_of
from simpe.paths import DEFAULT_MODEL

logger = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
__all__ = ["Pair", "LoadedModel", "load_model", "check_model", "check_available", "model_family", "teacher_forced_logits", "eval_mode"]


@dataclass
class LoadedModel:
    """A model, its tokenizer, where it came from, the device it lives on, and its (bound) family."""

    model: Any  # a transformers model of one of simpe's families (simpe.models)
    tokenizer: Any
    name: str
    path: Path | None
    device: Any  # torch.device
    family: ModelFamily

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
    resolved = torch.device(device)
    if resolved.type == "cuda":
        configure_cuda()
    return resolved


def configure_cuda() -> None:
    """The CUDA settings every simpe process uses: no cuDNN attention. torch prefers cuDNN's fused attention on
    Hopper GPUs, and cuDNN builds a graph for each new pair of query and key lengths; a stream's segments bring new
    lengths all the time (the update's source x target lengths, decoding's growing key length), so the builds never
    stop: on an H100, NLLB-600M in bfloat16 spent 2.4 ms of host time per attention call in its first segments
    against 0.055 ms once the shapes had been seen (benchmarks/profile_update.py). Flash and memory-efficient
    attention need no such build and take over."""
    import torch

    torch.backends.cuda.enable_cudnn_sdp(False)


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


WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")


def _is_local(source: str) -> bool:
    """A folder (or something spelled like one) rather than a hub id ``owner/name``: it exists, starts like a path,
    has other than one ``/``, or its ``owner`` part is a folder here (``models/opus-mt-en-de`` with ``models/``
    present is a folder someone has not copied yet, not the hub's user ``models``)."""
    return (Path(source).exists() or source.startswith((".", "/", "~")) or source.count("/") != 1
            or Path(source).parent.is_dir())


def _family_name(config: Any, where: str, family: str = FAMILY_AUTO) -> str:
    """The family of a config.json mapping: its model_type's, checked against an explicit ``family``."""
    kind = config.get("model_type") if isinstance(config, dict) else None
    arch = tuple(config.get("architectures") or []) if isinstance(config, dict) else ()
    if family != FAMILY_AUTO:
        FAMILIES.get(family)  # an unknown name: one line naming the known ones
        if kind not in FAMILIES.get(family).model_types:
            detected = family_for_type(kind, where, arch)
            raise ConfigError(f"model.family is {family!r} but {where} is a {kind} model (family {detected!r}); "
                              f"use model.family=auto or {detected}")
        return family
    return family_for_type(kind, where, arch)


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
        if not isinstance(header, dict) or not all(isinstance(info, dict) for info in header.values()):
            raise ValueError("its header is not a JSON object of tensor entries")
        end = max((info["data_offsets"][1] for name, info in header.items() if name != "__metadata__"), default=0)
    except (struct.error, ValueError, KeyError, TypeError, IndexError) as err:
        raise ModelError(f"{path} is not a valid safetensors file ({err}); copy or download the model again") from None
    if 8 + header_len + end > size:
        raise ModelError(f"{path} is truncated: {size} bytes, its header needs {8 + header_len + end}; "
                         "copy or download the model again")


def _check_weights(folder: Path, source: str) -> None:
    from simpe.models.shapes import random_init

    if random_init(folder) is not None:  # weights drawn at load time (simpe.models.shapes)
        return
    present = [name for name in WEIGHT_FILES if (folder / name).is_file()]
    if not present:
        raise ModelError(f"model folder {source} has no weights ({' or '.join(WEIGHT_FILES[:2])}); "
                         "it must be written by save_pretrained of the model")
    if present[0] == "model.safetensors":
        _check_safetensors(folder / "model.safetensors")
    elif present[0] == "pytorch_model.bin":
        import zipfile

        if not zipfile.is_zipfile(folder / present[0]):
            raise ModelError(f"{folder / present[0]} is truncated or not a torch checkpoint; copy or download the model again")


def model_folder(model_id: str | os.PathLike[str] | None) -> Path | None:
    """The local folder ``load_model`` will read (its ``LoadedModel.path``), or None for a hub id."""
    source = str(model_id) if model_id is not None else str(DEFAULT_MODEL)
    return Path(source) if _is_local(source) else None


def _read_config(source: str) -> dict[str, Any] | None:
    """config.json of a local folder, or of a hub id in the local cache (None when it is not there)."""
    import json

    path = Path(source).expanduser()
    if not _is_local(source):
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(source, "config.json")
        return json.loads(Path(cached).read_text(encoding="utf-8")) if isinstance(cached, str) else None
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ModelError(f"{path / 'config.json'} is not valid JSON ({err}); copy or download the model again") from None
    generation = path / "generation_config.json"
    if isinstance(config, dict) and config.get("forced_bos_token_id") is None and generation.is_file():
        try:  # transformers 5 saves forced_bos_token_id (mBART, M2M100) only there; the families' check_config reads it
            forced = json.loads(generation.read_text(encoding="utf-8")).get("forced_bos_token_id")
        except (ValueError, UnicodeDecodeError, AttributeError):
            forced = None  # an unreadable generation config is transformers' to refuse when the model loads
        if forced is not None:
            config = {**config, "forced_bos_token_id": forced}
    return config


# config.json's sizes that build tensors: each a whole number in [1, LARGEST_DIMENSION] where present. A received
# folder with num_hidden_layers -1 or a vocabulary of 10^12 is refused here, not by torch deep inside the build.
DIMENSIONS = ("vocab_size", "d_model", "hidden_size", "n_embd", "d_ff", "d_kv", "intermediate_size", "encoder_ffn_dim",
              "decoder_ffn_dim", "num_hidden_layers", "num_layers", "num_decoder_layers", "encoder_layers", "decoder_layers",
              "n_layer", "num_attention_heads", "num_key_value_heads", "num_heads", "encoder_attention_heads",
              "decoder_attention_heads", "n_head", "max_position_embeddings", "n_positions")
LARGEST_DIMENSION = 10_000_000  # the largest vocabulary or position table of a published model is a few hundred thousand


def _check_dimensions(config: Any, where: Path) -> None:
    if not isinstance(config, dict):
        raise ModelError(f"{where} holds {type(config).__name__}; a config.json is a JSON object")
    for key in DIMENSIONS:
        value = config.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LARGEST_DIMENSION):
            raise ModelError(f"{where}: {key} must be a whole number in [1, {LARGEST_DIMENSION:,}], got {value!r}")


def _checked(model_id: str | os.PathLike[str] | None, family: str) -> tuple[str | None, dict[str, Any] | None]:
    """``check_model``'s work: (the family's name, config.json as a mapping), (None, None) for an uncached hub id."""
    source = str(model_id) if model_id is not None else str(DEFAULT_MODEL)
    path = Path(source).expanduser()
    if not _is_local(source):
        config = _read_config(source)
        if config is None:
            return (None if family == FAMILY_AUTO else FAMILIES.get(family).name), None
        return _family_name(config, f"model {source!r}", family), config
    if not path.is_dir():
        hint = (" (run `make demo-model` to train the demo model)" if path.resolve() == DEFAULT_MODEL
                else f"; to fill it from the hub, run `huggingface-cli download <owner>/{path.name} --local-dir {source}` on a "
                     "machine with network access and copy the folder here" if source.count("/") == 1 and not path.exists() else "")
        what = "is a file, not a folder" if path.exists() else "does not exist"
        raise ModelError(f"model folder {source} {what}{hint}")
    if not (path / "config.json").is_file():
        raise ModelError(f"model folder {source} lacks config.json; it must be written by save_pretrained of the model and its tokenizer")
    config = _read_config(source)
    _check_dimensions(config, path / "config.json")
    name = _family_name(config, f"model folder {source}", family)
    FAMILIES.get(name)().check_folder(path, source)
    _check_weights(path, source)
    return name, config


def check_available(model_id: str | os.PathLike[str] | None) -> None:
    """Refuse, in one line and before any run starts, a model that cannot be had here: a local folder that is
    missing or incomplete, or a hub id neither in the local cache nor reachable (``load_model`` would fail in
    every run at once)."""
    source = str(model_id) if model_id is not None else str(DEFAULT_MODEL)
    if _is_local(source):
        _checked(source, FAMILY_AUTO)
    elif _read_config(source) is None:
        _check_hub(source)


def check_model(model_id: str | os.PathLike[str] | None, family: str = FAMILY_AUTO) -> str | None:
    """Refuse, without loading it, a local model folder that is missing, of no supported family, or incomplete.

    A hub id is checked when its config is in the local cache (else by ``load_model``).
    Returns:
        the family's name, or None for a hub id whose config is not cached (known when it loads).
    Raises:
        ModelError: naming the folder and what is wrong (one line).
    """
    return _checked(model_id, family)[0]


def model_family(model_id: str | os.PathLike[str] | None, family: str = FAMILY_AUTO,
                 settings: dict[str, Any] | None = None) -> ModelFamily | None:
    """The model's family with its settings (``model`` section: src_lang, tgt_lang, prompt_template), checked
    before the model loads; None for a hub id whose config is not cached and no explicit family."""
    name, config = _checked(model_id, family)
    if name is None:
        return None
    built = FAMILIES.build(name, **(settings or {}))
    if config is not None:
        built.check_config(config, f"model {model_id or DEFAULT_MODEL}")
    return built


def _load_tokenizer(family: ModelFamily, source: str) -> Any:
    """``family.load_tokenizer``, with a damaged tokenizer file refused in one line (ModelError) for every family."""
    try:
        tokenizer = family.load_tokenizer(source)
    except Exception as err:  # a garbage tokenizer file fails in sentencepiece, tokenizers or json, each its own way
        detail = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
        raise ModelError(f"the tokenizer of {source} cannot be loaded ({type(err).__name__}: {detail}); "
                         "copy or download the model folder again") from None
    if not hasattr(tokenizer, "convert_tokens_to_ids"):  # a garbage .spm: transformers 4's Marian gives False, no error
        raise ModelError(f"the tokenizer of {source} cannot be loaded (transformers gave {type(tokenizer).__name__}; is a "
                         "SentencePiece file damaged?); copy or download the model folder again")
    return tokenizer


def load_model(model_id: str | os.PathLike[str] | None = None, device: str = "auto", family: ModelFamily | None = None,
               dtype: str = "float32", family_name: str = FAMILY_AUTO, settings: dict[str, Any] | None = None) -> LoadedModel:
    """Load a model of a supported family and its tokenizer from a folder or a hub id.

    Args:
        model_id: a local folder written by ``save_pretrained`` or a hub id such as
            ``Helsinki-NLP/opus-mt-en-de``; ``None`` is the embedded demo model.
        device: ``auto`` (CUDA when present), ``cpu`` or ``cuda``.
        family: the family with its settings (``model_family``); None: ``family_name`` (auto: detected)
            built with ``settings`` (src_lang, tgt_lang, prompt_template; default none).
        dtype: float32, bfloat16 or float16.
    Raises:
        ModelError: the folder is missing or incomplete, of no supported family, or the hub cannot be reached.
    """
    import torch

    torch_device = resolve_device(device)
    source = str(model_id) if model_id is not None else str(DEFAULT_MODEL)
    path = Path(source)
    looks_local = _is_local(source)
    name, config = _checked(source, family.name if family is not None else family_name)
    if not looks_local:
        _check_hub(source)
    try:
        if name is None:
            from transformers import PretrainedConfig

            config = PretrainedConfig.get_config_dict(source)[0]
            name = _family_name(config, f"model {source!r}", family_name)
        if family is None:
            family = FAMILIES.build(name, **(settings or {}))
            if config is not None:
                family.check_config(config, f"model {source}")
        tokenizer = _load_tokenizer(family, source)
        family.check_languages(tokenizer)  # a language code the tokenizer lacks: refused before the model loads
        from simpe.models.shapes import random_init

        drawn = looks_local and path.is_dir() and random_init(path) is not None
        with torch_device if drawn else contextlib.nullcontext():  # random weights are drawn where the model will run
            model, info = family.load_model(source, dtype)
    except SimpeError:
        raise
    except Exception as err:  # transformers, safetensors and torch raise many kinds for a damaged checkpoint
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        if looks_local:
            raise ModelError(f"cannot load {family.name if family else 'the'} model from {source}: {first}") from None
        raise ModelError(f"cannot get model {source!r} from the Hugging Face hub ({first}); "
                         + _download_hint(source)) from None
    missing = [key for key in info["missing_keys"] if not family.ignored_missing(key)]
    if missing or info["mismatched_keys"]:
        bad = missing or [str(m[0]) for m in info["mismatched_keys"]]
        raise ModelError(f"model {source} lacks {len(bad)} of its weights or has them in the wrong shape (e.g. {bad[0]}); "
                         "the checkpoint is incomplete: copy or download it again")
    model.to(torch_device)
    # Every weight in its own freshly allocated (64-byte aligned) storage: weights loaded from
    # safetensors are views at 8-byte offsets into the file's buffer, and CPU matmul kernels give
    # different last bits for different alignments. The update's SGD step moves a weight into a
    # fresh buffer (simpe.loop.undo.Backup.swap_in), so without this a resumed run (weights copied back
    # into the loaded storage) would not compute bit for bit as an uninterrupted one.
    with torch.no_grad():
        for param in model.parameters():  # tied weights are one Parameter: they stay tied
            param.data = param.data.clone()
    model.eval()
    family.attach(model, tokenizer)
    return LoadedModel(model, tokenizer, model_name(source), path if looks_local else None, torch_device, family)


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
    """(batch, tgt_len, vocab) logits of ``labels`` given ``input_ids`` (and the family's target prefix or
    prompt): what ``model(..., labels=labels)`` computes, without the model's own loss over the vocabulary (the
    caller computes its loss) and without a key/value cache. For a causal LM only the target positions
    are returned: the prompt is never part of a loss."""
    return family_of(model).pair_logits(model, input_ids, labels, attention_mask)
