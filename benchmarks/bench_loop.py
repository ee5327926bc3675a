"""Seconds per segment of the online loop, per method, split into translate / score / update,
and the share of time spent outside model forward and backward passes.

    python benchmarks/bench_loop.py [--segments 50] [--methods baseline full ...] [--device cpu|cuda]

All methods run in this one process on the same stream, so the ratios are side by side.
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time

import torch

from simpe import log
from simpe.config import load_config
from simpe.simulate import Loop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=50)
    parser.add_argument("--methods", nargs="+", default=["baseline", "full", "bias", "fixed", "top", "lasso", "lora", "knn"])
    parser.add_argument("--model", default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--beam-size", type=int, default=5)
    args = parser.parse_args()
    log.setup()
    logging.getLogger("simpe").setLevel(logging.WARNING)
    rows = []
    with tempfile.TemporaryDirectory() as runs:
        for adapter in args.methods:
            overrides = [f"data.segments={args.segments}", f"runs_dir={runs}", f"device={args.device}",
                         f"decoder.params.beam_size={args.beam_size}"]
            if args.model:
                overrides.append(f"model={args.model}")
            loop = Loop(load_config(adapter, overrides), progress=False)
            start = time.perf_counter()
            loop.run()
            wall = time.perf_counter() - start
            import json

            summary = json.loads((loop.path / "summary.json").read_text())
            sec = summary["seconds"]
            n = summary["segments"]
            loop_total = sec["translate"] + sec["score"] + sec["update"]
            model_time = sec["model_forward"] + sec["backward"]
            rows.append((adapter, sec["translate"] / n, sec["score"] / n, sec["update"] / n, loop_total / n,
                         1 - model_time / loop_total, wall / n, summary["corpus"]["bleu"]))
            loop.timer.remove()
    device = "cuda: " + torch.cuda.get_device_name() if torch.cuda.is_available() and args.device != "cpu" else f"cpu, {torch.get_num_threads()} threads"
    print(f"\nbench-loop: {args.segments} segments of libreoffice stream, beam {args.beam_size}, {device}")
    print(f"{'method':10s} {'translate':>10s} {'score':>8s} {'update':>8s} {'total':>8s} {'outside':>8s} {'wall':>8s} {'BLEU':>6s}")
    print(f"{'':10s} {'s/seg':>10s} {'s/seg':>8s} {'s/seg':>8s} {'s/seg':>8s} {'model':>8s} {'s/seg':>8s}")
    for name, tr, sc, up, tot, outside, wall, bleu in rows:
        print(f"{name:10s} {tr:10.4f} {sc:8.4f} {up:8.4f} {tot:8.4f} {100 * outside:7.1f}% {wall:8.4f} {bleu:6.2f}")
    print("outside model = 1 - (forward + backward seconds) / (translate + score + update seconds); goal < 10%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
