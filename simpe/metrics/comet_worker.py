"""The COMET worker: one process in COMET's own environment that loads a model once and scores on request.

unbabel-comet 2.2.7 pins transformers<5, numpy<2, protobuf<5 and huggingface-hub<1, so it cannot
live in simpe's environment (transformers 5, numpy 2). simpe starts this file with the Python of
``.venv-comet`` (``simpe.metrics.comet_env``) and talks to it in JSON lines: one request a line on
stdin, one answer a line on stdout. It imports nothing from simpe (simpe's own dependencies are
not in that environment); ``simpe.metrics.comet`` is the other end.

Requests (``op`` and its fields) and answers (``{"ok": true, ...}``, or ``{"ok": false, "error":
"ModelError" | "ConfigError" | "DataError", "message": "..."}``, one line naming the bad value):

* ``load``: ``model`` (hub id, model folder or ``model.ckpt``), ``device``, ``threads`` ->
  ``checkpoint`` (the file read), ``version`` (unbabel-comet's). Every other op needs it first.
* ``score``: ``src``, ``mt``, ``ref`` (equally long lists), ``batch_size`` -> ``scores``: COMET's own
  ``prepare_for_inference`` and ``predict_step`` in length-sorted batches under ``inference_mode``
  (``model.predict`` per batch without building a Lightning ``Trainer`` per call).
* ``matrix``: ``source``, ``hypotheses``, ``references``, ``batch_size`` -> ``matrix`` (hypotheses x
  references): COMET's encode-once API (``encoder.prepare_sample``, ``get_sentence_embedding``,
  ``estimate``), each distinct sentence embedded once for the worker's life, as ``comet-mbr`` does.
* ``predict``: ``samples`` (``{"src", "mt", "ref"}``), ``batch_size`` -> ``scores`` of COMET's own
  ``model.predict(..., gpus=0)`` (the reference the tests hold ``score`` to).
* ``digest``: -> ``weights``: sha256 of every loaded tensor's bytes, by name (the tests compare them
  with the checkpoint's).

Floats cross as JSON numbers, which Python writes and reads back exactly (``repr``), so a score
here is the score simpe gets, bit for bit. Everything COMET and Lightning print goes to stderr
(simpe keeps it in a file and shows its end only when the worker fails); stdout carries answers only.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any

_NOISY_LOGGERS = ("comet", "pytorch_lightning", "lightning", "lightning.pytorch", "lightning_fabric",
                  "transformers", "huggingface_hub", "torch", "urllib3", "filelock")
_HARMLESS_MISSING = ("position_ids",)  # buffers newer transformers versions no longer save
COMET_VERSION = "2.2.7"  # the unbabel-comet of requirements/comet-linux-x86_64-py311.txt (a loaded worker reports its own)


class WorkerError(Exception):
    """A refusal the other end raises as simpe's error of the same name (``kind``)."""

    kind = "ModelError"


class ConfigRefusal(WorkerError):
    kind = "ConfigError"


class DataRefusal(WorkerError):
    kind = "DataError"


@contextlib.contextmanager
def quiet_comet():
    """Import/load/run COMET without its INFO logging, Lightning chatter or deprecation warnings leaking out."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:  # comet's import-time logging.basicConfig(INFO) adds a handler to an unconfigured root logger
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else "no detail"


def download_hint(model: str) -> str:
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
            raise WorkerError(f"COMET model folder {model!r} has no checkpoints/model.ckpt")
        return ckpt
    if model.startswith((".", "/", "~")) or model.endswith(".ckpt") or model.count("/") > 1:
        raise WorkerError(f"COMET checkpoint {model!r} does not exist (give a hub id such as Unbabel/wmt22-comet-da, "
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
            raise WorkerError(f"COMET model {model!r} is not in the local cache and cannot be downloaded "
                              f"({type(err).__name__}: {_first_line(err)}); {download_hint(model)}") from None


def check_weights(names: Any, ckpt: Path) -> None:
    """comet loads with strict=False: refuse a checkpoint that lacks some of the model's weights (``names``: the
    model's state-dict keys; None checks only that the file is a checkpoint read without unpickling code)."""
    import torch

    try:  # weights_only: a checkpoint from anywhere is never unpickled with code (comet's own load is weights_only too)
        try:
            state = torch.load(ckpt, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError:  # an old, non-zipfile checkpoint cannot be memory-mapped
            state = torch.load(ckpt, map_location="cpu", weights_only=True)
    except Exception as err:
        raise WorkerError(f"COMET checkpoint {str(ckpt)!r} is not one simpe can read safely ({_first_line(err)[:160]})") from None
    saved = set(state.get("state_dict", {}))
    missing = [k for k in (names or ()) if k not in saved and not k.endswith(_HARMLESS_MISSING)]
    if missing:
        raise WorkerError(f"COMET checkpoint {str(ckpt)!r} lacks {len(missing)} of the model's weights "
                          f"(e.g. {', '.join(missing[:3])}); it does not match its hparams.yaml")


class Worker:
    """The loaded model and the embeddings computed so far."""

    def __init__(self) -> None:
        self.model: Any = None
        self.device: Any = None
        self.embeddings: dict[str, Any] = {}  # text -> (hidden,) embedding tensor

    def load(self, model: str, device: str = "cpu", threads: int | None = None) -> dict[str, Any]:
        import torch

        if threads:
            torch.set_num_threads(int(threads))
        with quiet_comet():
            from comet import load_from_checkpoint
        if device != "cpu" and not torch.cuda.is_available():
            raise ConfigRefusal(f"COMET device {device!r} requested but no CUDA device is available; use cpu")
        checkpoint = resolve_checkpoint(model)
        try:
            with quiet_comet():
                loaded = load_from_checkpoint(str(checkpoint))
        except Exception as err:
            raise WorkerError(f"cannot load COMET checkpoint {str(checkpoint)!r} ({type(err).__name__}: {_first_line(err)}); "
                              f"{download_hint(model)}") from None
        check_weights(list(loaded.state_dict()), checkpoint)
        loaded.eval()  # no dropout: scores and embeddings must not depend on (or draw from) the RNG
        self.device = torch.device(device)
        self.model = loaded.to(self.device)
        self.embeddings = {}
        from importlib.metadata import version

        return {"checkpoint": str(checkpoint), "version": version("unbabel-comet")}

    def _loaded(self) -> Any:
        if self.model is None:
            raise WorkerError("the COMET worker has no model loaded (send load first)")
        return self.model

    def score(self, src: list[str], mt: list[str], ref: list[str], batch_size: int = 16) -> dict[str, Any]:
        import torch
        from pytorch_lightning.utilities import move_data_to_device

        model = self._loaded()
        if not (len(src) == len(mt) == len(ref)):
            raise DataRefusal(f"COMET needs as many sources, hypotheses and references; got {len(src)}, {len(mt)}, {len(ref)}")
        samples = [{"src": str(s), "mt": str(h), "ref": str(r)} for s, h, r in zip(src, mt, ref)]
        order = sorted(range(len(samples)), key=lambda i: len(samples[i]["src"]))  # as COMET's length batching
        scores = [0.0] * len(samples)
        with quiet_comet(), torch.inference_mode():
            for start in range(0, len(order), batch_size):
                ids = order[start:start + batch_size]
                batch = move_data_to_device(model.prepare_for_inference([samples[i] for i in ids]), self.device)
                prediction = model.predict_step(batch)
                for i, value in zip(ids, prediction["scores"].view(-1).tolist()):
                    scores[i] = float(value)
        return {"scores": scores}

    def embed(self, texts: list[str], batch_size: int) -> Any:
        """(len(texts), hidden) embeddings; new texts are encoded in batches, known ones reused."""
        import torch

        model = self._loaded()
        todo = [t for t in dict.fromkeys(texts) if t not in self.embeddings]
        with quiet_comet(), torch.inference_mode():
            for start in range(0, len(todo), batch_size):
                chunk = todo[start:start + batch_size]
                inputs = model.encoder.prepare_sample(chunk)
                emb = model.get_sentence_embedding(inputs["input_ids"].to(self.device),
                                                   inputs["attention_mask"].to(self.device))  # (chunk, hidden)
                for text, row in zip(chunk, emb):
                    self.embeddings[text] = row
        return torch.stack([self.embeddings[t] for t in texts])  # (texts, hidden)

    def matrix(self, source: str, hypotheses: list[str], references: list[str], batch_size: int = 64) -> dict[str, Any]:
        import torch

        model = self._loaded()
        if not all(hasattr(model, name) for name in ("get_sentence_embedding", "estimate", "encoder")):
            raise ConfigRefusal(f"{type(model).__name__} is not a COMET regression model (needs encoder.prepare_sample, "
                                "get_sentence_embedding and estimate, e.g. wmt22-comet-da)")
        src = self.embed([source], batch_size)  # (1, hidden)
        hyp = self.embed(hypotheses, batch_size)  # (hyps, hidden)
        ref = self.embed(references, batch_size)  # (refs, hidden)
        n_hyp, n_ref = hyp.shape[0], ref.shape[0]
        out = [[0.0] * n_ref for _ in range(n_hyp)]  # (hyps, refs)
        pairs = [(i, j) for i in range(n_hyp) for j in range(n_ref)]
        with torch.inference_mode():
            for start in range(0, len(pairs), 1024):
                chunk = pairs[start:start + 1024]
                hi = torch.tensor([i for i, _ in chunk], device=hyp.device)  # (chunk,)
                rj = torch.tensor([j for _, j in chunk], device=ref.device)  # (chunk,)
                scores = model.estimate(src.expand(len(chunk), -1), hyp[hi], ref[rj])["score"]  # (chunk,)
                for (i, j), value in zip(chunk, scores.view(-1).tolist()):
                    out[i][j] = float(value)
        return {"matrix": out}

    def predict(self, samples: list[dict[str, str]], batch_size: int = 8) -> dict[str, Any]:
        model = self._loaded()
        with quiet_comet():
            return {"scores": [float(s) for s in model.predict(samples, batch_size=batch_size, gpus=0, progress_bar=False).scores]}

    def digest(self) -> dict[str, Any]:
        model = self._loaded()
        return {"weights": {name: hashlib.sha256(tensor.detach().cpu().contiguous().numpy().tobytes()).hexdigest()
                            for name, tensor in model.state_dict().items()}}


def serve(requests: Any, answers: Any) -> None:
    """Answer each JSON line of ``requests`` with one line on ``answers`` until the input ends."""
    worker = Worker()
    ops = {"load": worker.load, "score": worker.score, "matrix": worker.matrix, "predict": worker.predict,
           "digest": worker.digest}
    for line in requests:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            op = request.pop("op")
            if op not in ops:
                raise WorkerError(f"unknown COMET worker op {op!r}; known: {', '.join(sorted(ops))}")
            answer = {"ok": True, **ops[op](**request)}
        except WorkerError as err:
            answer = {"ok": False, "error": err.kind, "message": str(err)}
        except Exception as err:  # anything else: the worker stays up and says what happened, in one line
            answer = {"ok": False, "error": "ModelError", "message": f"COMET worker: {type(err).__name__}: {_first_line(err)}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def main() -> None:
    here = Path(__file__).resolve().parent  # run as a file, its folder is sys.path[0]: simpe's comet.py would shadow comet
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")  # the protocol's own copy of stdout ...
    os.dup2(2, 1)  # ... and whatever else writes to fd 1 (print, C libraries) lands on stderr
    sys.stdout = sys.stderr
    serve(sys.stdin, answers)


if __name__ == "__main__":
    main()
