"""Exact top-k: the batched best-first search (``topk``) against Algorithm 1 (``topk_dfs``).

    python benchmarks/bench_topk.py [--sentences 50] [--k 10] [--max-words 20] [--device cpu|cuda]
                                    [--model models/demo-en-de] [--threads N] [--batch-size 64]

Both searches run in this one process on the first ``--sentences`` sentences of the scalc
stream (data/libreoffice/stream.en) with at most ``--max-words`` words. Per sentence it
prints expansions and seconds of each; it checks that both return the same list (same token
sequences, scores within 1e-4; hypotheses tied within that tolerance may swap), then prints
the means and the speed ratio (goal: no more expansions). Then it runs ``topk`` once more
over all sentences together (``decode_batch``: the searches in lockstep, sharing forward
passes, as ``simpe rank`` and the loop's snapshots do) and checks and times that too: the
speed goal (issue 55) is at least 30x Algorithm 1 there. Exit status 1 when a list differs. Both searches get the same limits (none by
default); a search cut short is reported and excluded from the comparison.

CPU runs use one torch thread by default (``--threads``): on a small shared machine two
OpenMP threads spin-wait for each other and every timing becomes noise.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from entry import run_main
from record import record

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from simpe.decoders.base import DecodeResult  # noqa: E402
from simpe.decoders.topk import TopKDecoder  # noqa: E402
from simpe.decoders.topk_dfs import TopKDfsDecoder  # noqa: E402


def read_sentences(path: Path, count: int, max_words: int) -> list[str]:
    """The first ``count`` non-empty lines of ``path`` with at most ``max_words`` words."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and len(line.split()) <= max_words:
            out.append(line)
            if len(out) == count:
                break
    return out


def same_list(a: DecodeResult, b: DecodeResult, tol: float = 1e-4) -> str | None:
    """None when both are the same top-k up to ``tol`` (ties may swap), else what differs."""
    if len(a.hypotheses) != len(b.hypotheses):
        return f"{len(a.hypotheses)} vs {len(b.hypotheses)} hypotheses"
    for i, (x, y) in enumerate(zip(a.hypotheses, b.hypotheses)):
        if abs(x.score - y.score) > tol:
            return f"rank {i + 1}: score {x.score:.6f} vs {y.score:.6f}"
    scores_b = {h.tokens: h.score for h in b.hypotheses}
    last = a.hypotheses[-1].score if a.hypotheses else 0.0
    for i, x in enumerate(a.hypotheses):
        if x.tokens in scores_b:
            if abs(scores_b[x.tokens] - x.score) > tol:
                return f"rank {i + 1}: same tokens, scores {x.score:.6f} vs {scores_b[x.tokens]:.6f}"
            continue
        # absent from the other list: only allowed for a tie at the boundary
        if abs(x.score - last) > tol:
            return f"rank {i + 1}: {x.tokens} ({x.score:.6f}) missing from the reference"
    if len({h.tokens for h in a.hypotheses}) != len(a.hypotheses):
        return "duplicate hypotheses"
    return None


def run(model: Any, tokenizer: Any, sentences: list[str], k: int, batch_size: int, device: torch.device,
        max_expansions: int | None = None, max_seconds: float | None = None, reference: bool = True,
        max_rows: int = 256) -> int:
    """Run both searches on every sentence, print the table and summary; returns the number of mismatches."""
    fast = TopKDecoder(k=k, batch_size=batch_size, max_rows=max_rows, max_expansions=max_expansions, max_seconds=max_seconds)
    slow = TopKDfsDecoder(k=k, max_expansions=max_expansions, max_seconds=max_seconds)
    # warm-up (allocator, lazy imports) outside the timings
    warm = tokenizer(sentences[0], return_tensors="pt")["input_ids"].to(device)  # (1, src_len)
    TopKDecoder(k=2, max_expansions=50).decode(model, warm)
    print(f"{'#':>3s} {'src':>4s} {'exp':>7s} {'reused':>7s} {'batches':>7s} {'sec':>8s} {'ref exp':>8s} {'ref sec':>8s} "
          f"{'speedup':>8s} {'top1':>9s}  check")
    rows: list[tuple[DecodeResult, DecodeResult | None]] = []
    cpu: list[tuple[float, float]] = []  # CPU seconds of this process (topk, topk_dfs): less sensitive to other load
    mismatches = 0
    for i, sentence in enumerate(sentences):
        ids = tokenizer(sentence, return_tensors="pt")["input_ids"].to(device)  # (1, src_len)
        if device.type == "cuda":
            torch.cuda.synchronize()
        c0 = time.process_time()
        a = fast.decode(model, ids)
        if device.type == "cuda":
            torch.cuda.synchronize()
        c1 = time.process_time()
        b = slow.decode(model, ids) if reference else None
        c2 = time.process_time()
        check = "-"
        if b is not None:
            if not (a.exact and b.exact):
                check = "cut short"
            else:
                problem = same_list(a, b)
                check = "same" if problem is None else f"DIFFERENT: {problem}"
                mismatches += problem is not None
        rows.append((a, b))
        cpu.append((c1 - c0, c2 - c1))
        speed = f"{b.seconds / a.seconds:8.1f}" if b is not None else f"{'':8s}"
        print(f"{i + 1:3d} {ids.shape[1]:4d} {a.expansions:7d} {a.info['reused']:7d} {a.info['batches']:7d} {a.seconds:8.3f} "
              f"{(b.expansions if b else 0):8d} {(b.seconds if b else 0.0):8.3f} {speed} "
              f"{a.hypotheses[0].score:9.3f}  {check}", flush=True)
    n = len(rows)
    fast_sec = sum(a.seconds for a, _ in rows)
    fast_exp = sum(a.expansions for a, _ in rows)
    fast_prefixes = sum(a.expansions + a.info["reused"] for a, _ in rows)
    print(f"\nbench-topk: exact top-{k}, {n} sentences, {device}"
          + (f" ({torch.cuda.get_device_name()})" if device.type == "cuda" else f", {torch.get_num_threads()} threads")
          + f", batch {batch_size}")
    print(f"topk     : {fast_sec / n:8.3f} s/sentence  {fast_exp / n:9.1f} expansions/sentence  "
          f"(+ {(fast_prefixes - fast_exp) / n:.1f} prefixes reused from the bounding beam search; "
          f"median {statistics.median(a.seconds for a, _ in rows):.3f} s; exact {sum(bool(a.exact) for a, _ in rows)}/{n})")
    if reference:
        slow_sec = sum(b.seconds for _, b in rows)
        slow_exp = sum(b.expansions for _, b in rows)
        print(f"topk_dfs : {slow_sec / n:8.3f} s/sentence  {slow_exp / n:9.1f} expansions/sentence  "
              f"(median {statistics.median(b.seconds for _, b in rows):.3f} s; exact {sum(bool(b.exact) for _, b in rows)}/{n})")
        more = sum(a.expansions + a.info["reused"] > b.expansions for a, b in rows)
        cpu_ratio = (f", {sum(c for _, c in cpu) / max(sum(c for c, _ in cpu), 1e-9):.1f}x in CPU time"
                     if device.type == "cpu" else "")
        print(f"speed ratio (total reference seconds / total topk seconds): {slow_sec / fast_sec:.1f}x wall clock{cpu_ratio} "
              "(one at a time)")
        print(f"expansions ratio {fast_exp / max(slow_exp, 1):.3f}, prefixes ratio (reused included) "
              f"{fast_prefixes / max(slow_exp, 1):.3f} (goal <= 1); sentences where topk used more prefixes: {more}")
        print("both searches include the same bounding min-heap beam search (width k) in their seconds, not in their expansions")
        print(f"lists: {n - mismatches}/{n} the same" + ("" if not mismatches else f", {mismatches} DIFFERENT"))
    # all sentences at once: the searches in lockstep
    batch = [tokenizer(s, return_tensors="pt")["input_ids"].to(device) for s in sentences]  # each (1, src_len)
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0, c0 = time.perf_counter(), time.process_time()
    together = fast.decode_batch(model, batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall, cpu_sec = time.perf_counter() - t0, time.process_time() - c0
    differ = sum(same_list(t, a) is not None for t, (a, _) in zip(together, rows) if t.exact and a.exact)
    mismatches += differ
    print(f"topk decode_batch ({n} sentences in lockstep, at most {max_rows} prefixes per forward pass): {wall:.2f} s "
          f"= {wall / n:.3f} s/sentence, {sum(t.expansions for t in together) / n:.1f} expansions/sentence; "
          f"lists the same as one by one: {n - differ}/{n}")
    if reference:
        slow_sec = sum(b.seconds for _, b in rows)
        cpu_ratio = f", {sum(c for _, c in cpu) / max(cpu_sec, 1e-9):.1f}x in CPU time" if device.type == "cpu" else ""
        print(f"speed ratio with decode_batch (total reference seconds / decode_batch seconds): {slow_sec / wall:.1f}x "
              f"wall clock{cpu_ratio} (goal >= 30x)")
    figures = {"topk": f"{fast_sec / n:.3f} s/sentence ({fast_exp / n:.1f} expansions)",
               "decode_batch": f"{wall / n:.3f} s/sentence", "lists": f"{n - mismatches}/{n} the same"}
    if reference:
        figures["topk_dfs (Algorithm 1)"] = f"{slow_sec / n:.3f} s/sentence, {slow_sec / fast_sec:.1f}x slower"
    record("bench-topk", figures)
    return mismatches


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(REPO / "models" / "demo-en-de"))
    parser.add_argument("--stream", default=str(REPO / "data" / "libreoffice" / "stream.en"))
    parser.add_argument("--sentences", type=int, default=50)
    parser.add_argument("--max-words", type=int, default=20)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default; default: 1)")
    parser.add_argument("--max-rows", type=int, default=256, help="decode_batch: prefixes per forward pass in all")
    parser.add_argument("--max-expansions", type=int, default=None)
    parser.add_argument("--max-seconds", type=float, default=None)
    parser.add_argument("--no-reference", action="store_true", help="time the batched search only")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from simpe import log
    from simpe.model import load_model

    log.quiet()
    loaded = load_model(args.model, args.device)
    sentences = read_sentences(Path(args.stream), args.sentences, args.max_words)
    t0 = time.perf_counter()
    mismatches = run(loaded.model, loaded.tokenizer, sentences, args.k, args.batch_size, loaded.device,
                     args.max_expansions, args.max_seconds, reference=not args.no_reference, max_rows=args.max_rows)
    print(f"wall {time.perf_counter() - t0:.1f} s")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
