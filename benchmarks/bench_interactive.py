"""The interactive-predictive protocol's cost: seconds per segment and milliseconds per completion, by segment length,
with and without reusing the decoder states of a segment's earlier completions (simpe.decoders.reuse), side by side.

    python benchmarks/bench_interactive.py [--segments 50] [--decoders beam greedy] [--beam-size 5] [--threads 2]

For each stream segment: the decoder's proposal (not timed here), then both translators' sessions (char and word
level, ``simpe.loop.interactive.run_sessions``) against the post-edit, once with reuse and once without, in alternating
order; the model is not adapted (the cost of a completion does not depend on the method). Both runs must count the
same effort (checked). Buckets: the post-edit's words, <= 20, 21-40, > 40 (the issue's goal covers up to 40:
median < 100 ms and 95th percentile < 300 ms per completion on 2 cores, demo model).
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time

import torch
from entry import run_main
from record import record

from simpe import log
from simpe.config.files import load_config
from simpe.decoders import DECODERS
from simpe.loop.interactive import run_sessions
from simpe.loop.run import load_stream
from simpe.model import load_model

BUCKETS = (("<=20", 0, 20), ("21-40", 21, 40), (">40", 41, 10**9))
MODES = ("fresh", "reuse")  # without, with reuse


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear between the closest ranks."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def bucket_of(words: int) -> str:
    return next(name for name, low, high in BUCKETS if low <= words <= high)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=50)
    parser.add_argument("--decoders", nargs="+", default=["beam", "greedy"], choices=["beam", "greedy", "heap_beam"])
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--no-record", action="store_true", help="print only: leave docs/benchmarks.json as it is")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    log.setup()
    logging.getLogger("simpe").setLevel(logging.WARNING)
    overrides = [f"data.segments={args.segments}", "device=cpu"] + ([f"model={args.model}"] if args.model else [])
    cfg = load_config("baseline", overrides)
    _, segments = load_stream(cfg)
    loaded = load_model(cfg.model.path, "cpu", dtype=cfg.model.dtype, family_name=cfg.model.family,
                        settings=cfg.model.family_settings())
    model, tokenizer = loaded.model, loaded.tokenizer
    figures: dict[str, str] = {}
    device = f"cpu, {torch.get_num_threads()} threads"
    for name in args.decoders:
        decoder = DECODERS.build(name, **({} if name == "greedy" else {"beam_size": args.beam_size})).bind(tokenizer)
        # per mode and bucket: per-segment session seconds, per-completion ms
        seconds = {mode: {b[0]: [] for b in BUCKETS} for mode in MODES}
        latency = {mode: {b[0]: [] for b in BUCKETS} for mode in MODES}
        for index, seg in enumerate(segments):
            ids = loaded.family.encode_source(tokenizer, seg.source, loaded.device)[0]
            with torch.inference_mode():
                best = decoder.decode(model, ids, index=index).hypotheses[0]
            proposal = tokenizer.decode(list(best.tokens), skip_special_tokens=True)
            bucket = bucket_of(len(seg.reference.split()))
            counts = {}
            for mode in (MODES if index % 2 == 0 else MODES[::-1]):  # alternating: neither always runs on a warm cache
                start = time.perf_counter()
                effort = run_sessions(model, tokenizer, decoder, ids, proposal, seg.reference, ("char", "word"), reuse=mode == "reuse")
                seconds[mode][bucket].append(time.perf_counter() - start)
                latency[mode][bucket] += [ms for e in effort.values() for ms in e.latency_ms]
                counts[mode] = {level: {k: v for k, v in e.to_dict().items() if k != "latency_ms"} for level, e in effort.items()}
            if counts["fresh"] != counts["reuse"]:
                print(f"segment {index}: the effort differs with reuse: {counts}", file=sys.stderr)
                return 1
        params = "" if name == "greedy" else f" {args.beam_size}"
        print(f"\nbench-interactive: {len(segments)} segments of the libreoffice stream, {name}{params}, char + word level, {device}")
        print(f"{'words':6s} {'mode':6s} {'segs':>5s} {'s/seg':>7s} {'compl':>6s} {'mean':>7s} {'median':>7s} {'p95':>7s}  (ms per completion)")
        for bucket, _, _ in BUCKETS:
            for mode in MODES:
                secs, ms = seconds[mode][bucket], latency[mode][bucket]
                if not secs:
                    continue
                if ms:
                    stats = f"{statistics.mean(ms):7.1f} {statistics.median(ms):7.1f} {percentile(ms, 95):7.1f}"
                else:
                    stats = f"{'-':>7s} {'-':>7s} {'-':>7s}"
                print(f"{bucket:6s} {mode:6s} {len(secs):5d} {statistics.mean(secs):7.3f} {len(ms):6d} {stats}")
                if ms and bucket != ">40":
                    figures[f"{name} {bucket} words, {mode}"] = (f"median {statistics.median(ms):.0f} ms, p95 {percentile(ms, 95):.0f} ms "
                                                              f"per completion ({len(ms)}), {statistics.mean(secs):.2f} s/segment")
        print("s/seg: both translators' sessions of a segment (not the proposal); the goal (issue 43): median < 100 ms and\n"
              "p95 < 300 ms per completion for segments up to 40 words; fresh and reuse count the same effort (checked)")
    if not args.no_record:
        record("bench-interactive", figures)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
