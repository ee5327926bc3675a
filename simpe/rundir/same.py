"""Whether two run folders hold the same records, file by file, the clock left out (``differences``).

What "the same run" means for a lockstep group against its runs alone (docs/lockstep.md), and for any change meant
to keep the computation: every field of every segment record and snapshot but the timings, the store's tensors and
metadata (read by safetensors: its header's key order is its own), and the summary's figures but its seconds.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simpe.rundir import layout
from simpe.rundir.reader import read_jsonl


def _untimed(value: Any) -> Any:
    """``value`` without its timings: keys named ``seconds``, ending in ``.seconds`` or ``seconds_backward``."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items()
                if k not in ("seconds", "seconds_backward", "wall_seconds") and not k.endswith(".seconds")}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _store(path: Path) -> tuple[dict[str, str], dict[str, Any]]:
    from safetensors import safe_open

    with safe_open(str(path), "pt") as handle:
        return handle.metadata() or {}, {key: handle.get_tensor(key) for key in handle.keys()}


def differences(a: Path, b: Path) -> list[str]:
    """What differs between run folders ``a`` and ``b`` beyond the clock (empty: the same records), one line each."""
    import torch

    found = []
    for name in (layout.SEGMENTS_FILE, layout.SNAPSHOTS_FILE):
        left, right = Path(a) / name, Path(b) / name
        if left.exists() != right.exists():
            found.append(f"{name}: in one folder only")
            continue
        if not left.exists():
            continue
        rows_a, rows_b = _untimed(read_jsonl(left)), _untimed(read_jsonl(right))
        if len(rows_a) != len(rows_b):
            found.append(f"{name}: {len(rows_a)} against {len(rows_b)} records")
            continue
        for number, (x, y) in enumerate(zip(rows_a, rows_b)):
            if x != y:
                keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
                found.append(f"{name}: record {number} differs in {', '.join(keys)}")
                break
    store_a, store_b = Path(a) / layout.STORE_FILE, Path(b) / layout.STORE_FILE
    if store_a.exists() and store_b.exists():
        (meta_a, tensors_a), (meta_b, tensors_b) = _store(store_a), _store(store_b)
        if meta_a != meta_b:
            found.append(f"{layout.STORE_FILE}: metadata differs")
        elif tensors_a.keys() != tensors_b.keys() or not all(torch.equal(tensors_a[k], tensors_b[k]) for k in tensors_a):
            found.append(f"{layout.STORE_FILE}: tensors differ")
    elif store_a.exists() != store_b.exists():
        found.append(f"{layout.STORE_FILE}: in one folder only")
    summary_a, summary_b = Path(a) / layout.SUMMARY_FILE, Path(b) / layout.SUMMARY_FILE
    if summary_a.exists() and summary_b.exists():
        left_s = _untimed(json.loads(summary_a.read_text(encoding="utf-8")))
        right_s = _untimed(json.loads(summary_b.read_text(encoding="utf-8")))
        for key in ("corpus", "adapted_parameters", "store_bytes", "segments"):
            if left_s.get(key) != right_s.get(key):
                found.append(f"{layout.SUMMARY_FILE}: {key} differs")
    return found
