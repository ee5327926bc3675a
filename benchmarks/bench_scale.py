"""Cost as the stream grows: seconds per segment at the start and the end of long runs, peak memory,
and knn's datastore (exact search against the inverted file, with its recall).

    python benchmarks/bench_scale.py [--segments 4000] [--methods baseline full ... knn knn:exact] [--threads 1]

Each method runs once, in its own process (so its peak resident memory is its own: ``os.wait4``),
over the first ``--segments`` segments of the LibreOffice ``scalc`` stream, without snapshots.
Seconds per segment are the loop's own (translate + score + update + prepare, from the records),
averaged over a window of ``--window`` segments: at the start (after the first 20), at 1,000 when the
run is longer, and at the end; and per word of source + post-edit over the same windows, since the
stream's segments differ in length from one part of the stream to another. Beyond the run, the cost at the whole stream (14,972 segments) is
extrapolated by a straight line through the 1,000 and end windows, and printed as such.
``knn:exact`` is knn with ``method.params.index=exact`` (exact search at every size).
The recall of the inverted file is measured on the knn run's own datastore: its last 2,000 keys
(decoder states of later post-edits) query the entries before them, exact search against the
inverted file with knn's settings, recall@k = the share of exact search's k nearest the inverted file finds.
``--store-sizes 20000 85000 320000`` times knn's search alone at the sizes its datastore reaches over the
first 1,000 / 4,000 segments and the whole stream (about 21 entries a segment), on the real keys (the demo
model's states over the stream's post-edits, which is what knn stores): milliseconds per decoding step of 5
rows (a beam of 5), inverted file against exact search, its recall, and the seconds spent growing the store
segment by segment (with the longest single segment: a k-means retraining each time the store doubles).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from entry import run_main
from record import record

STREAM = 14972  # segments of the scalc stream


def run(method: str, segments: int, threads: int, runs: Path) -> dict:
    adapter, _, variant = method.partition(":")
    extra = ["--set", f"method.params.index={variant}"] if variant else []
    command = [sys.executable, "-m", "simpe", "simulate", "--preset", adapter, "--segments", str(segments), "--runs-dir",
               str(runs), "--no-progress", "--threads", str(threads), "--set", "snapshots.every=0", *extra]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise SystemExit(f"{method} failed: {process.stderr.read()[-2000:]}")
    (path,) = [p.parent for p in runs.glob(f"*/{adapter}/DONE")]
    records = [json.loads(line) for line in (path / "segments.jsonl").read_text(encoding="utf-8").splitlines()]
    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    loop = [sum(r["seconds"].get(k, 0.0) for k in ("prepare", "translate", "score", "update")) for r in records]
    words = [len(r["source"].split()) + len(r["reference"].split()) for r in records]
    return {"path": path, "loop": loop, "words": words, "peak_mb": usage.ru_maxrss / 1024, "bleu": summary["corpus"]["bleu"],
            "facts": summary.get("method_facts") or {}}


def window(loop: list[float], end: int, width: int) -> float:
    part = loop[max(20, end - width): end]
    return sum(part) / len(part)


def per_word(loop: list[float], words: list[int], end: int, width: int) -> float:
    """Milliseconds of the loop per word (source + post-edit) over the window ending at ``end``: the stream's
    segments differ in length (the baseline itself costs 0.12 to 0.33 s/segment from one window of 200 to
    another), so this is the figure that says whether a method's cost grows with the stream."""
    start = max(20, end - width)
    return 1000 * sum(loop[start:end]) / max(1, sum(words[start:end]))


def recall(store_file: Path, settings: dict, queries: int = 2000, ks: tuple[int, ...] = (2, 8)) -> dict[str, float]:
    """recall@k of the inverted file against exact search on the run's own keys (the last ``queries`` query the rest)."""
    from safetensors.torch import load_file

    from simpe.methods.datastore import Datastore
    from simpe.methods.knn import KEYS

    keys = load_file(str(store_file))[KEYS]
    queries = min(queries, keys.shape[0] // 4)  # a short run: a quarter of its keys
    base, probe = keys[:-queries], keys[-queries:]
    ids = torch.arange(base.shape[0])  # values = entry numbers, so the answers can be compared
    exact = Datastore(keys.shape[1], index="exact")
    exact.add(base, ids)
    ivf = Datastore(keys.shape[1], index="auto", exact_entries=settings["exact_entries"], probe_lists=settings["probe_lists"])
    ivf.add(base, ids)
    return {"entries": float(base.shape[0]), **{f"recall@{k}": v for k, v in recall_at(exact, ivf, probe, ks).items()}}


def recall_at(exact: Any, ivf: Any, probe: torch.Tensor, ks: tuple[int, ...], rows: int = 5) -> dict[int, float]:
    """recall@k of ``ivf`` against ``exact`` (two Datastores whose values are entry numbers) over the ``probe`` queries,
    ``rows`` at a time as a beam's: the share of exact search's k nearest the inverted file also returns."""
    out = {}
    for k in ks:
        found = 0
        for start in range(0, probe.shape[0], rows):
            _, want = exact.search(probe[start: start + rows], k)
            _, got = ivf.search(probe[start: start + rows], k)
            found += sum(len(set(w.tolist()) & set(g.tolist())) for w, g in zip(want, got))
        out[k] = found / (probe.shape[0] * k)
    return out


def stream_keys(entries: int) -> tuple[torch.Tensor, list[int]]:
    """The keys knn's datastore holds after the stream's first segments, up to ``entries`` entries: the demo model's
    decoder states over each post-edit (teacher-forced; knn never changes the model, so these are its keys
    exactly), and the entries each segment adds."""
    from simpe.datasets import DATASETS
    from simpe.model import load_model

    loaded = load_model(None, "cpu")
    family, model = loaded.family, loaded.model.eval()
    keys, sizes = [], []
    with torch.no_grad():
        for seg in DATASETS.build("libreoffice").load("stream"):
            if not seg.reference.strip():
                continue
            pair = family.encode_pair(loaded.tokenizer, seg.source, seg.reference, "cpu")
            keys.append(family.target_states(model, pair).float())  # (tgt_len, d_model)
            sizes.append(int(pair.labels.shape[1]))
            entries -= sizes[-1]
            if entries <= 0:
                break
    return torch.cat(keys), sizes


def store_search(sizes: list[int], rows: int = 5, k: int = 2, queries: int = 1000) -> dict[str, str]:
    """knn's search per decoding step at each datastore size, inverted file ("auto") and exact, on the real keys of the
    stream's post-edits (``stream_keys``): the store grown segment by segment as the loop grows it, queried by the
    ``queries`` states of the post-edits that follow, ``rows`` at a time (a beam); recall@k of the inverted file
    against exact search on those queries."""
    import time

    from simpe.methods.datastore import Datastore

    print(f"  the stream's keys for up to {max(sizes)} entries (the demo model over each post-edit) ...", flush=True)
    keys, per_segment = stream_keys(max(sizes) + queries)
    figures = {}
    for size in sizes:
        segments = next((i + 1 for i, total in enumerate(itertools.accumulate(per_segment)) if total >= size), len(per_segment))
        size = min(size, keys.shape[0] - queries)
        probe = keys[size: size + queries]
        cells, stores = [], {}
        for index in ("exact", "auto"):
            store = Datastore(keys.shape[1], index=index)
            started, longest, at = time.perf_counter(), 0.0, 0
            for count in per_segment:
                if at >= size:
                    break
                count = min(count, size - at)
                begun = time.perf_counter()
                store.add(keys[at: at + count], torch.arange(at, at + count))  # values: entry numbers, to compare answers
                longest, at = max(longest, time.perf_counter() - begun), at + count
            build = time.perf_counter() - started
            store.search(probe[:rows], k)
            started = time.perf_counter()
            for i in range(0, queries, rows):
                store.search(probe[i: i + rows], k)
            step_ms = 1000 * (time.perf_counter() - started) / -(-queries // rows)
            stores[index] = store
            cells.append(f"{'inverted file' if index == 'auto' else 'exact'} {step_ms:.2f} ms/step (built in {build:.1f} s, "
                         f"longest add {longest:.1f} s, {store.memory_bytes() / 2**20:.0f} MiB)")
        found = recall_at(stores["exact"], stores["auto"], probe, (k, 8), rows)
        label = f"knn search at {size} entries (~{segments} segments)"
        figures[label] = ", ".join(cells) + "; recall " + ", ".join(f"@{kk} {v:.3f}" for kk, v in found.items())
        print(f"  {label}, {rows} rows a step, k {k}: {figures[label]}", flush=True)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=4000)
    parser.add_argument("--methods", nargs="*",
                        default=["baseline", "full", "bias", "fixed", "top", "lasso", "lora", "knn", "knn:exact"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--window", type=int, default=200)
    parser.add_argument("--store-sizes", nargs="+", type=int, default=[], metavar="N",
                        help="also time knn's search alone at these datastore sizes (the stream's real keys); --methods with no name: only this")
    parser.add_argument("--runs-dir", type=Path, default=None,
                        help="write the runs here and keep them (default: a temporary folder, removed at the end); a long "
                             "run cut short leaves its records there")
    parser.add_argument("--keep", action="store_true",
                        help="keep the figures of methods this call does not run from the last call's row in docs/benchmark-results.md")
    args = parser.parse_args()
    rows, recalls, word_ratios = [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.runs_dir is not None:
            args.runs_dir.mkdir(parents=True, exist_ok=True)
        for method in args.methods:
            print(f"bench-scale: {method} over {args.segments} segments ...", flush=True)
            result = run(method, args.segments, args.threads, (args.runs_dir or Path(tmp)) / method.replace(":", "-"))
            loop, n = result["loop"], len(result["loop"])
            start, end = window(loop, 20 + args.window, args.window), window(loop, n, args.window)
            at_1k = window(loop, 1000, args.window) if n >= 1000 + args.window else None
            slope = (end - at_1k) / (n - 1000) if at_1k is not None else (end - start) / max(1, n - 20 - args.window)
            whole = end + slope * (STREAM - n)
            facts = result["facts"]
            rows.append((method, start, at_1k, end, end / start, whole, whole / start, result["peak_mb"],
                         facts.get("datastore_memory_bytes"), facts.get("datastore_entries"), result["bleu"]))
            word_start, word_end = per_word(loop, result["words"], 20 + args.window, args.window), per_word(loop, result["words"], n, args.window)
            word_ratios[method] = word_end / word_start
            print(f"  {method}: {start:.3f} s/segment at the start, {end:.3f} at the end (x{end / start:.2f}), "
                  f"x{whole / start:.2f} extrapolated to {STREAM}; per word {word_start:.2f} -> {word_end:.2f} ms "
                  f"(x{word_end / word_start:.2f}); peak {result['peak_mb']:.0f} MB", flush=True)
            if method == "knn":
                recalls = recall(result["path"] / "store.safetensors", {"exact_entries": 16384, "probe_lists": 8})
    if rows:
        print(f"\nbench-scale: first {args.segments} scalc segments, {args.threads} torch thread(s), no snapshots; "
              f"s/seg of the loop over windows of {args.window} segments; 'at {STREAM}' is a straight-line extrapolation")
        print(f"{'method':10s} {'start':>8s} {'at 1000':>8s} {'end':>8s} {'end/start':>9s} {'at ' + str(STREAM):>9s} "
              f"{'x start':>7s} {'peak MB':>8s} {'store MB':>8s} {'entries':>8s} {'BLEU':>6s}")
        for method, start, at_1k, end, ratio, whole, whole_ratio, peak, store, entries, bleu in rows:
            print(f"{method:10s} {start:8.3f} {'-' if at_1k is None else f'{at_1k:.3f}':>8s} {end:8.3f} {ratio:9.2f} {whole:9.3f} "
                  f"{whole_ratio:7.2f} {peak:8.0f} {'-' if store is None else f'{store / 2**20:.1f}':>8s} "
                  f"{'-' if entries is None else entries:>8} {bleu:6.2f}")
    if recalls:
        print(f"\nknn inverted file (exact up to 16384 entries, 8 lists probed) on the run's own datastore of "
              f"{int(recalls['entries'])} entries, its last keys as queries: "
              + ", ".join(f"{k} {v:.3f}" for k, v in recalls.items() if k != "entries"))
    figures = {method: f"{start:.3f} → {end:.3f} s/segment over {args.segments} (×{ratio:.2f}; per word ×{word_ratios[method]:.2f}); "
                       f"×{whole_ratio:.2f} extrapolated to {STREAM}; peak {peak:.0f} MB"
               for method, start, _, end, ratio, whole, whole_ratio, peak, *_ in rows}
    if recalls:
        figures["knn recall"] = ", ".join(f"{k} {v:.3f}" for k, v in recalls.items() if k != "entries")
    if args.store_sizes:
        print(f"\nbench-scale: knn's search alone, {args.threads} torch thread(s)", flush=True)
        torch.set_num_threads(args.threads)
        figures.update(store_search(args.store_sizes))
    if args.keep:  # the other methods' figures of the last call stay in the row (each names its own run length)
        from record import DATA

        previous = json.loads(DATA.read_text(encoding="utf-8")).get("bench-scale", {}) if DATA.exists() else {}
        replaced = ("knn search at",) if args.store_sizes else ()  # one call's store sizes replace the last call's
        figures = {**{name: text for name, text in previous.get("figures", {}).items()
                      if name not in figures and not name.startswith(replaced)}, **figures}
    record("bench-scale", figures, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
