"""Moving a run folder between machines: a cluster worker sends back the run it wrote (``sweep.execute`` with
``return_results``), and an incomplete run goes out to be resumed.

``pack`` makes an uncompressed tar of the folder; ``unpack`` extracts it beside the target (tarfile's ``data``
filter: no absolute paths, no links out, no device files) and swaps it in only once it is whole, so an
interrupted transfer never leaves half a run where a run was.
"""
from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
from pathlib import Path


def pack(folder: Path) -> bytes:
    """A run folder as an uncompressed tar archive (its files under the folder's own name)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder, arcname=folder.name)
    return buffer.getvalue()


def unpack(archive: bytes, target: Path) -> None:
    """Put a packed run folder at ``target``, replacing what is there only once it is whole."""
    target.parent.mkdir(parents=True, exist_ok=True)
    incoming = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
            tar.extractall(incoming, filter="data")
        (folder,) = list(incoming.iterdir())
        old = target.with_name(f".{target.name}.old")
        if target.exists():
            target.rename(old)
        folder.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
