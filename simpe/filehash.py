"""One file's content hash, cached: what the code fingerprints (``simpe.fingerprint``) and a dataset's manifest
(``simpe.datasets.hf``) record of a file. A floor module: it imports nothing of simpe, so both can use it."""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

LARGE_FILE = 1 << 28  # 256 MiB: a larger file (an LLM's weights) is hashed by its size and its first and last SAMPLE bytes
SAMPLE = 1 << 23


@lru_cache(maxsize=None)
def _file_hash(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        if size > LARGE_FILE:  # seconds per gigabyte otherwise, at every run's start; retrained weights change both ends
            digest.update(f"size {size}\n".encode())
            digest.update(handle.read(SAMPLE))
            handle.seek(size - SAMPLE)
            digest.update(handle.read(SAMPLE))
        else:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def file_hash(path: Path) -> str:
    """The first 16 hex digits of the file's SHA-256 (of its size and first and last 8 MiB above 256 MiB), cached by
    path, size and modification time."""
    info = path.stat()
    return _file_hash(str(path), info.st_size, info.st_mtime_ns)
