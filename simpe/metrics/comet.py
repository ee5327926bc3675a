"""COMET segment scores through unbabel-comet in its own environment: a model loaded once, scored in batches, quietly.

unbabel-comet 2.2.7 pins transformers<5, numpy<2, protobuf<5 and huggingface-hub<1, which simpe
no longer runs on; so COMET runs in a process of its own (``simpe.metrics.comet_worker``, started
with the Python of ``.venv-comet``, built on first use by ``simpe.metrics.comet_env``), and this
module is simpe's end of it: requests and answers in JSON lines over the worker's stdin and stdout
(docs/metrics.md says why). A worker is started once per (model, device) and process, and serves
every ``CometScorer`` of that model: the end-of-run scores, ``simpe score --comet``,
``simpe sensitivity --utility comet`` and, through ``CometScorer.matrix``, the encode-once
utility of MBR and the ranking snapshots (``simpe.metrics.utility.CometUtility``).

``CometScorer(model)`` takes a hub id (``Unbabel/wmt22-comet-da``), a checkpoint file
(``.../checkpoints/model.ckpt``) or a model folder holding ``checkpoints/model.ckpt`` and
``hparams.yaml``. The worker scores with COMET's own ``prepare_for_inference`` and
``predict_step`` in length-sorted batches under ``torch.inference_mode`` instead of
``model.predict``: the same code per batch, without building a Lightning ``Trainer`` per call.
Scores equal ``model.predict``'s up to float noise (~1e-7, different padding per batch), and cross
the process boundary exactly (JSON numbers written with ``repr``).

comet loads checkpoints with ``strict=False``; the worker compares the checkpoint's weights with
the model's parameters itself and refuses a checkpoint that lacks some (``_check_weights``).

``CometMetric`` is COMET in the metric stack: a corpus figure is the mean of the segment
scores (statistics [score, 1]), and its signature names the model, the batch size and the
unbabel-comet version. This module does not download anything itself and does not do MBR
(the decoders do; their COMET utility is ``simpe.metrics.utility.CometUtility``).
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError, DataError, ModelError
from simpe.metrics import comet_worker
from simpe.metrics.base import METRICS, MeanMetric

logger = logging.getLogger(__name__)

WORKER_FILE = Path(comet_worker.__file__)
_ERRORS = {"ModelError": ModelError, "ConfigError": ConfigError, "DataError": DataError}


def _check_weights(model: Any, ckpt: Path) -> None:
    """comet loads with strict=False: refuse a checkpoint that lacks some of ``model``'s weights (None: only
    check that the file reads as a checkpoint without unpickling code). The worker runs the same check."""
    try:
        comet_worker.check_weights(None if model is None else list(model.state_dict()), ckpt)
    except comet_worker.WorkerError as err:
        raise ModelError(str(err)) from None


class CometWorker:
    """One worker process in COMET's environment, with one model loaded; ``call`` sends a request, returns the answer."""

    def __init__(self, model: str, device: str, threads: int) -> None:
        from simpe.metrics.comet_env import comet_python

        python = comet_python()
        self.stderr = tempfile.TemporaryFile(mode="w+b")  # COMET's and Lightning's chatter: shown only when the worker fails
        env = {**os.environ, "PYTHONNOUSERSITE": "1", "TOKENIZERS_PARALLELISM": "false"}
        env.pop("PYTHONPATH", None)  # simpe's own packages (transformers 5, numpy 2) must not shadow COMET's
        try:
            self.process = subprocess.Popen([str(python), str(WORKER_FILE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=self.stderr, env=env, cwd=str(WORKER_FILE.parent.parent.parent))
        except OSError as err:
            raise ModelError(f"cannot start the COMET worker with {python} ({err})") from None
        self.lock = threading.Lock()
        try:
            answer = self.call("load", model=model, device=device, threads=threads)
        except Exception:
            self.close()
            raise
        self.checkpoint, self.version = Path(answer["checkpoint"]), answer["version"]

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        with self.lock:
            if self.process.poll() is not None:
                raise ModelError(f"the COMET worker has exited ({self._stderr_tail()})")
            try:
                self.process.stdin.write((json.dumps({"op": op, **fields}) + "\n").encode("utf-8"))
                self.process.stdin.flush()
                line = self.process.stdout.readline()
            except (BrokenPipeError, OSError):
                line = b""
            if not line:
                self.process.wait(timeout=30)
                raise ModelError(f"the COMET worker stopped during {op} (exit {self.process.returncode}: {self._stderr_tail()})")
        answer = json.loads(line)
        if not answer.pop("ok"):
            raise _ERRORS.get(answer["error"], ModelError)(answer["message"])
        return answer

    def _stderr_tail(self) -> str:
        self.stderr.seek(0)
        lines = [ln for ln in self.stderr.read().decode("utf-8", "replace").strip().splitlines() if ln.strip()]
        return " | ".join(lines[-3:])[-400:] or "no output"

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.stderr.close()


_WORKERS: dict[tuple[str, str], CometWorker] = {}


def worker_for(model: str, device: str) -> CometWorker:
    """The process's worker for (model, device), started (and the model loaded) the first time."""
    import torch

    key = (str(Path(model).expanduser().resolve()) if Path(model).expanduser().exists() else model, device)
    found = _WORKERS.get(key)
    if found is None or found.process.poll() is not None:
        found = _WORKERS[key] = CometWorker(model, device, torch.get_num_threads())
    return found


@atexit.register
def close_workers() -> None:
    """Stop every worker (at exit; a test may call it to start afresh)."""
    while _WORKERS:
        _WORKERS.popitem()[1].close()


class CometScorer:
    """A COMET model loaded once (in its worker); ``score`` returns one float per (source, hypothesis, reference) triple."""

    def __init__(self, model: str, batch_size: int = 16, device: str = "cpu") -> None:
        """
        Args:
            model: hub id, model folder, or ``model.ckpt`` path.
            batch_size: triples per forward pass.
            device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        """
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ConfigError(f"COMET batch_size must be a positive integer, got {batch_size!r}")
        if not (device == "cpu" or device == "cuda" or device.startswith("cuda:")):
            raise ConfigError(f"unknown COMET device {device!r}; known: cpu, cuda, cuda:N")
        if device != "cpu":
            import torch

            if not torch.cuda.is_available():
                raise ConfigError(f"COMET device {device!r} requested but no CUDA device is available; use cpu")
        path = Path(model).expanduser()
        if path.exists() or model.startswith((".", "/", "~")) or model.endswith(".ckpt") or model.count("/") > 1:
            try:  # a local path: refused here, before COMET's environment is built or its worker started
                comet_worker.resolve_checkpoint(model)
            except comet_worker.WorkerError as err:
                raise ModelError(str(err)) from None
        self.model_name = model
        self.batch_size = batch_size
        self.device = device
        self.worker = worker_for(model, device)
        self.checkpoint = self.worker.checkpoint

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
        return self.worker.call("score", src=[str(s) for s in sources], mt=[str(h) for h in hypotheses],
                                ref=[str(r) for r in references], batch_size=self.batch_size)["scores"]

    def matrix(self, source: str, hypotheses: Sequence[str], references: Sequence[str], batch_size: int = 64) -> list[list[float]]:
        """(hypotheses x references) COMET(source, hypothesis, reference) from embeddings the worker computes once per
        distinct sentence (COMET's encode-once API: ``encoder.prepare_sample``, ``get_sentence_embedding``, ``estimate``)."""
        return self.worker.call("matrix", source=str(source), hypotheses=[str(h) for h in hypotheses],
                                references=[str(r) for r in references], batch_size=batch_size)["matrix"]

    def predict(self, samples: Sequence[dict[str, str]], batch_size: int = 8) -> list[float]:
        """COMET's own ``model.predict(samples, gpus=0)`` scores (the reference ``score`` is held to)."""
        return self.worker.call("predict", samples=list(samples), batch_size=batch_size)["scores"]

    def weights_digest(self) -> dict[str, str]:
        """sha256 of each loaded tensor's bytes, by name."""
        return self.worker.call("digest")["weights"]

    @property
    def version(self) -> str:
        return self.worker.version

    def __repr__(self) -> str:
        return f"CometScorer({self.model_name!r}, batch_size={self.batch_size}, device={self.device!r})"


def comet_signature(model: str, batch_size: int) -> str:
    """``model:<id>|batch:<n>|version:<unbabel-comet version>``."""
    found = [w.version for (name, _), w in _WORKERS.items() if name == model or w.checkpoint == Path(model)]
    return f"model:{model}|batch:{batch_size}|version:{found[0] if found else comet_worker.COMET_VERSION}"


@METRICS.add("comet")
class CometMetric(MeanMetric):
    """COMET as a corpus metric: the mean of segment scores (computed in batches by ``CometScorer``)."""

    label = "COMET"

    def __init__(self, model: str | None = None, batch_size: int = 16) -> None:
        self.model, self.batch_size = model, batch_size

    def signature(self) -> str:
        return comet_signature(self.model or "?", self.batch_size)

