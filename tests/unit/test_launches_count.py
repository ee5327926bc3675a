"""benchmarks/launches.py's counts (make bench-launches) on a few operations whose launches and host reads are known."""
from __future__ import annotations

import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from launches import counted  # noqa: E402


def test_kernels_foreach_calls_and_host_reads_are_counted_as_a_gpu_would_run_them() -> None:
    """x + 1 and x.sum(): one kernel each; a view and an allocation: none; a foreach call over three tensors: one (its
    per-tensor operators on the CPU not counted); float() of a sum: a host read (its _local_scalar_dense not counted
    again); .tolist(): a host read; torch.tensor of Python values: an upload; a boolean mask's index: the mask read
    back (aten::nonzero) and a gather."""
    x = torch.arange(6.0)
    tensors = [torch.zeros(3) for _ in range(3)]
    with counted() as counts:
        y = x + 1  # 1 launch
        x.view(2, 3)  # 0
        torch.empty(4)  # 0
        torch._foreach_add_(tensors, 1.0)  # 1
        float(y.sum())  # 1 launch (sum), 1 host read
        y.tolist()  # 1 host read
        torch.tensor([1, 2, 3])  # 1 upload
        x[x > 2]  # 1 launch (gt), 1 host read (nonzero), 1 launch (index)
    assert counts["launches"] == 5
    assert counts["host_reads"] == 3
    assert counts["uploads"] == 1
