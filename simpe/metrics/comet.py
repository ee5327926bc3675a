"""COMET segment scores through unbabel-comet: a model loaded once, scored in batches, quietly.

``CometScorer(model)`` takes a hub id (``Unbabel/wmt22-comet-da``), a checkpoint file
(``.../checkpoints/model.ckpt``) or a model folder holding ``checkpoints/model.ckpt`` and
``hparams.yaml``. ``comet`` is imported lazily (it is slow and, on import, calls
``logging.basicConfig(INFO)``; simpe restores the root logger afterwards), and scoring
runs COMET's own ``prepare_for_inference`` and ``predict_step`` in length-sorted batches
under ``torch.inference_mode`` instead of ``model.predict``: the same code per batch,
without building a Lightning ``Trainer`` per call (its banners and overhead would land on
every segment of the online loop). Scores equal ``model.predict``'s up to float noise
(~1e-7, different padding per batch).

comet loads checkpoints with ``strict=False``; simpe compares the checkpoint's weights with
the model's parameters itself and refuses a checkpoint that lacks some.

``CometMetric`` is COMET in the metric stack: a corpus figure is the mean of the segment
scores (statistics [score, 1]), and its signature names the model, the batch size and the
unbabel-comet version. This module does not download anything itself and does not do MBR
(the decoders do; their COMET utility is ``simpe.metrics.utility.CometUtility``).
"""
from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from simpe.errors import ConfigError, DataError, ModelError
from simpe.metrics.base import METRICS, MeanMetric

logger = logging.getLogger(__name__)

_NOISY_LOGGERS = ("comet", "pytorch_lightning", "lightning", "lightning.pytorch", "lightning_fabric",
                  "transformers", "huggingface_hub", "torch", "urllib3", "filelock")
_HARMLESS_MISSING = ("position_ids",)  # buffers newer transformers versions no longer save


@contextlib.contextmanager
def quiet_comet() -> Iterator[None]:
    """Import/load/run COMET without its INFO logging, Lightning chatter or deprecation warnings leaking out."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in _NOISY_LOGGERS}
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        # comet's import-time logging.basicConfig(INFO) adds a handler to an unconfigured root logger.
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
        for name, old in levels.items():
            # keep comet's own logger quiet for good: it logs "Encoder model frozen." on every load
            logging.getLogger(name).setLevel(logging.ERROR if name == "comet" else old)


def _download_hint(model: str) -> str:
    return (f"where a network is reachable, run `huggingface-cli download {model}` (it lands in the Hugging Face cache, "
            f"~/.cache/huggingface/hub, where simpe finds it), or copy the model folder (the one holding "
            f"checkpoints/model.ckpt and hparams.yaml) here and pass its path; the encoder named in its hparams.yaml "
            f"(pretrained_model, e.g. xlm-roberta-large) must be in the same cache")


def resolve_checkpoint(model: str) -> Path:
    """The ``model.ckpt`` file of a checkpoint path, a model folder, or a hub id (local cache first, then the hub)."""
    path = Path(model).expanduser()
    if path.is_file():
        return path
    if path.is_dir():
        ckpt = path / "checkpoints" / "model.ckpt"
        if not ckpt.is_file():
            raise ModelError(f"COMET model folder {model!r} has no checkpoints/model.ckpt")
        return ckpt
    if model.startswith((".", "/", "~")) or model.endswith(".ckpt") or model.count("/") > 1:
        raise ModelError(f"COMET checkpoint {model!r} does not exist (give a hub id such as Unbabel/wmt22-comet-da, "
                         "a model folder or a .ckpt file)")
    with quiet_comet():
        from huggingface_hub import snapshot_download

        try:
            folder = snapshot_download(repo_id=model, local_files_only=True)
            return Path(folder) / "checkpoints" / "model.ckpt"
        except Exception:
            pass
        try:
            from comet import download_model

            return Path(download_model(model))
        except Exception as err:
            raise ModelError(f"COMET model {model!r} is not in the local cache and cannot be downloaded "
                             f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no detail'}); "
                             f"{_download_hint(model)}") from None


def _check_weights(model, ckpt: Path) -> None:
    """comet loads with strict=False: refuse a checkpoint that lacks some of the model's weights."""
    import torch

    try:  # weights_only: a checkpoint from anywhere is never unpickled with code (comet's own load is weights_only too)
        try:
            state = torch.load(ckpt, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:  # an old, non-zipfile checkpoint cannot be memory-mapped
            state = torch.load(ckpt, map_location="cpu", weights_only=True)
    except Exception as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"COMET checkpoint {str(ckpt)!r} is not one simpe can read safely ({detail[:160]})") from None
    saved = set(state.get("state_dict", {}))
    missing = [k for k in model.state_dict() if k not in saved and not k.endswith(_HARMLESS_MISSING)]
    if missing:
        raise ModelError(f"COMET checkpoint {str(ckpt)!r} lacks {len(missing)} of the model's weights "
                         f"(e.g. {', '.join(missing[:3])}); it does not match its hparams.yaml")


class CometScorer:
    """A COMET model loaded once; ``score`` returns one float per (source, hypothesis, reference) triple."""

    def __init__(self, model: str, batch_size: int = 16, device: str = "cpu") -> None:
        """
        Args:
            model: hub id, model folder, or ``model.ckpt`` path.
            batch_size: triples per forward pass.
            device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        """
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"COMET batch_size must be a positive integer, got {batch_size!r}")
        if not (device == "cpu" or device == "cuda" or device.startswith("cuda:")):
            raise ConfigError(f"unknown COMET device {device!r}; known: cpu, cuda, cuda:N")
        try:
            with quiet_comet():
                import torch
                from comet import load_from_checkpoint
        except ImportError as err:
            raise ModelError(f"COMET needs the unbabel-comet package ({err}); install simpe's dependencies: pip install -e .") from None
        if device != "cpu" and not torch.cuda.is_available():
            raise ConfigError(f"COMET device {device!r} requested but no CUDA device is available; use cpu")
        self.model_name = model
        self.batch_size = batch_size
        self.device = torch.device(device)
        self.checkpoint = resolve_checkpoint(model)
        try:
            with quiet_comet():
                self.model = load_from_checkpoint(str(self.checkpoint))
        except ModelError:
            raise
        except Exception as err:
            raise ModelError(f"cannot load COMET checkpoint {str(self.checkpoint)!r} "
                             f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no detail'}); "
                             f"{_download_hint(model)}") from None
        _check_weights(self.model, self.checkpoint)
        self.model.eval()
        self.model.to(self.device)

    def score(self, sources: Sequence[str], hypotheses: Sequence[str], references: Sequence[str]) -> list[float]:
        """COMET score of each triple, in input order.

        Args:
            sources, hypotheses, references: detokenised segments, equally many.
        Returns:
            One float per segment (scale depends on the model; roughly [0, 1] for wmt22-comet-da).
        """
        if not (len(sources) == len(hypotheses) == len(references)):
            raise DataError(f"COMET needs as many sources, hypotheses and references; got {len(sources)}, "
                            f"{len(hypotheses)}, {len(references)}")
        if not sources:
            return []
        import torch
        from pytorch_lightning.utilities import move_data_to_device

        samples = [{"src": str(s), "mt": str(h), "ref": str(r)} for s, h, r in zip(sources, hypotheses, references)]
        order = sorted(range(len(samples)), key=lambda i: len(samples[i]["src"]))  # as COMET's length batching
        scores: list[float] = [0.0] * len(samples)
        with quiet_comet(), torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                ids = order[start:start + self.batch_size]
                batch = self.model.prepare_for_inference([samples[i] for i in ids])
                batch = move_data_to_device(batch, self.device)
                prediction = self.model.predict_step(batch)
                for i, value in zip(ids, prediction["scores"].view(-1).tolist()):
                    scores[i] = float(value)
        return scores

    def __repr__(self) -> str:
        return f"CometScorer({self.model_name!r}, batch_size={self.batch_size}, device={str(self.device)!r})"


def comet_signature(model: str, batch_size: int) -> str:
    """``model:<id>|batch:<n>|version:<unbabel-comet version>``."""
    try:
        from importlib.metadata import version

        comet_version = version("unbabel-comet")
    except Exception:  # pragma: no cover - metadata missing
        comet_version = "unknown"
    return f"model:{model}|batch:{batch_size}|version:{comet_version}"


@METRICS.add("comet")
class CometMetric(MeanMetric):
    """COMET as a corpus metric: the mean of segment scores (computed in batches by ``CometScorer``)."""

    label = "COMET"

    def __init__(self, model: str | None = None, batch_size: int = 16) -> None:
        self.model, self.batch_size = model, batch_size

    def signature(self) -> str:
        return comet_signature(self.model or "?", self.batch_size)

