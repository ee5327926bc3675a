"""Where COMET's own environment is, and how it is built the first time it is needed.

COMET (unbabel-comet 2.2.7, the newest) pins transformers<5, numpy<2, huggingface-hub<1 and
protobuf<5, so it runs in a virtual environment of its own, ``.venv-comet`` at the repository
root, reached through ``simpe.metrics.comet_worker``. Its packages are the exact versions of
``requirements/comet-linux-x86_64-py311.txt``; torch is installed first, the version simpe itself
runs (a CPU build where the index serves one). ``SIMPE_COMET_PYTHON`` names another Python that has
unbabel-comet (for instance a conda environment), and then nothing is built.

``comet_python()`` builds the environment once (``make comet-env`` does the same ahead of time),
under a file lock so that parallel runs build it once, and rebuilds it when the lock file changes.
This module does not score; it never imports comet.
"""
from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
from pathlib import Path

from simpe.errors import ConfigError, ModelError
from simpe.paths import REPO_ROOT

logger = logging.getLogger(__name__)

ENV_VAR = "SIMPE_COMET_PYTHON"
COMET_VENV = REPO_ROOT / ".venv-comet"
COMET_LOCK = REPO_ROOT / "requirements" / "comet-linux-x86_64-py311.txt"
STAMP = ".simpe-installed"  # inside the environment: the sha256 of the lock file it was built from


def _lock_digest() -> str:
    return hashlib.sha256(COMET_LOCK.read_bytes()).hexdigest() if COMET_LOCK.is_file() else "no-lock"


def _python_of(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def is_built(venv: Path = COMET_VENV) -> bool:
    """Whether ``venv`` holds a COMET environment built from the current lock file."""
    stamp = venv / STAMP
    return _python_of(venv).is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == _lock_digest()


def torch_requirement() -> str:
    """The torch simpe runs (its version without a local build tag: pip takes the CPU build where it is served)."""
    import torch

    return f"torch=={torch.__version__.split('+')[0]}"


def build(venv: Path = COMET_VENV, quiet: bool = True) -> Path:
    """Create ``venv`` with torch and the packages of the COMET lock file; return its Python."""
    if not COMET_LOCK.is_file():
        raise ModelError(f"the COMET lock file {COMET_LOCK} is missing; set {ENV_VAR} to a Python that has unbabel-comet 2.2.7")
    python = _python_of(venv)
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(python), "-m", "pip", "install", "--upgrade", "pip<27"],
             [str(python), "-m", "pip", "install", torch_requirement()],
             [str(python), "-m", "pip", "install", "--no-deps", "-r", str(COMET_LOCK)]]
    logger.info("building COMET's own environment in %s (once; unbabel-comet 2.2.7 needs transformers<5, numpy<2)", venv)
    for step in steps:
        if quiet and "pip" in step:
            step = [*step, "--quiet"]
        done = subprocess.run(step, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if quiet else None,
                              stderr=subprocess.STDOUT if quiet else None, text=True, check=False)
        if done.returncode != 0:
            tail = " | ".join((done.stdout or "").strip().splitlines()[-2:])
            raise ModelError(f"could not build COMET's environment {venv} ({' '.join(step[2:5])} failed: {tail[:300]}); "
                             f"run `make comet-env` where the package index is reachable, or set {ENV_VAR} to a Python "
                             "that has unbabel-comet 2.2.7")
    (venv / STAMP).write_text(_lock_digest() + "\n", encoding="utf-8")
    return python


def comet_python() -> Path:
    """The Python that runs the COMET worker: ``$SIMPE_COMET_PYTHON``, else ``.venv-comet``'s (built when needed)."""
    given = os.environ.get(ENV_VAR)
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise ConfigError(f"{ENV_VAR}={given!r} is not a file; give the path of a Python that has unbabel-comet 2.2.7")
        return path
    if is_built():
        return _python_of(COMET_VENV)
    import fcntl

    COMET_VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(COMET_VENV.parent / ".venv-comet.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build, however many runs ask at once
        if not is_built():
            build()
    return _python_of(COMET_VENV)


def main() -> None:
    """``python -m simpe.metrics.comet_env``: build the environment now (``make comet-env``)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if is_built():
        print(f"COMET environment up to date: {COMET_VENV}")
        return
    print(f"COMET environment ready: {comet_python()}")


if __name__ == "__main__":
    main()
