"""Real-size models measured: peak memory and seconds per segment (translate / update) per method, float32 and bfloat16.

    python benchmarks/bench_size.py [--models demo nllb-600m llama3.2-1b ...] [--methods full bias ...] [--segments 2]
                                    [--threads 1] [--no-savers] [--plan] [--no-record]

Each (model, method, dtype) runs in its own process (its peak resident memory is its own VmHWM, printed at exit:
``simpe.loop.dryrun.measured_command``, not wait4's maxrss, which counts the forked copy of this process) over the first
``--segments`` segments of the LibreOffice stream (``--segments-large`` for MADLAD-400 3B, ``--segments-demo`` for the
demo model), without snapshots. The real-size models are the shape-true ones of ``simpe.models.shapes`` (published
sizes, random weights drawn at load: quality means nothing). A random-weight model never writes its end token, so each
hypothesis runs to the decoder's length limit: the bench sets the limit to the source's length
(``decoder.params.max_len_a=1.0``, ``max_len_b=0``; a causal LM's source is its whole prompt), and its updates never
reach the perplexity threshold (``update.max_repeats`` repetitions a segment). The demo model is trained: it writes and
repeats as a real run does. Each row gives the update repetitions per segment it made, and beside each measurement
the dry run's estimate (``simpe.loop.dryrun``) of the same run; ``make fit-speed`` fits the dry run's CPU rates to these
rows and compares every row again. A run whose estimate exceeds ``--memory`` GiB (default 24) or what this machine has
is not run; the table says so and why. The figures go to docs/benchmark-results.md through the benchmark recorder
(``record.py``), with the machine. At 1 thread on 2 cores a real-size run takes 0.5-3.5 minutes: at ``--segments 2``
NLLB-600M and Llama 3.2 1B took about 70 minutes together, M2M100-418M 10, mBART-50 12, MADLAD-400 3B 25 (its full
and lasso do not fit 24 GiB), and the demo model at 60 segments 4.5: about 2 hours for all.

Beside a method's plain row, a row for each memory saver that applies to it (``SAVERS``; ``--no-savers`` leaves them
out), run the same way: knn with float16 keys (``adapters/knn-fp16.yaml``) and full with activation checkpointing
(``update.checkpointing=true``). Each saver row ends with what it saves against the plain row of the same model and
dtype: peak memory, s/segment, and for knn the datastore's growth per 1,000 segments (its store bytes per segment, as
measured, times 1,000). ``--plan`` prints the runs and the dry run's estimates without running any; ``--no-record``
prints the figures without writing them to docs/benchmark-results.md. Each figure is recorded as soon as it is
measured (merged into the ``bench-size`` row: a run cut off keeps what it measured, and ``--models X`` updates X's
rows and leaves the others).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from entry import run_main
from record import record

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
METHODS = ["baseline", "full", "bias", "top", "lasso", "lora", "norms", "knn", "icl"]
# the memory savers measured beside a method's plain row: row label -> (preset, extra --set overrides)
SAVERS = {"knn": {"knn+fp16-keys": ("knn-fp16", [])}, "full": {"full+checkpointing": ("full", ["update.checkpointing=true"])}}
LENGTH = ["decoder.params.max_len_a=1.0", "decoder.params.max_len_b=0"]  # random weights: outputs as long as the source
SETTINGS = {"demo": [], "nllb-600m": ["model.src_lang=eng_Latn", "model.tgt_lang=deu_Latn"], "m2m100-418m": ["model.src_lang=en", "model.tgt_lang=de"],
            "mbart50-mmt": ["model.src_lang=en_XX", "model.tgt_lang=de_DE"], "madlad400-3b": ["model.tgt_lang=de"], "llama3.2-1b": []}


def overrides(name: str, folder: Path | None, dtype: str, extra: Sequence[str] = ()) -> list[str]:
    """The settings of a run of model ``name`` (its folder: None for the demo model) at ``dtype``: a shape-true
    model writes to the source's length (``LENGTH``); the demo model is trained and writes as it would."""
    model = ["model.path=null"] if folder is None else [f"model.path={folder}", *LENGTH]
    return [*model, f"model.dtype={dtype}", "metrics.truecaser=null", *SETTINGS[name], *extra]


def segments_of(name: str, args: argparse.Namespace) -> int:
    """The stream segments model ``name`` runs (``--segments-demo``, ``--segments-large`` for MADLAD, else ``--segments``)."""
    return {"demo": args.segments_demo, "madlad400-3b": args.segments_large}.get(name, args.segments)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(SETTINGS))
    parser.add_argument("--methods", nargs="+", default=METHODS)
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    parser.add_argument("--segments", type=int, default=2)
    parser.add_argument("--segments-large", type=int, default=2, help="segments for MADLAD-400 3B")
    parser.add_argument("--segments-demo", type=int, default=60, help="segments for the demo model (trained: its updates "
                        "stop at the perplexity threshold, and their number varies from segment to segment)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--memory", type=float, default=24.0, help="GiB a run may need (runs estimated above it are not run)")
    parser.add_argument("--no-savers", action="store_true", help="leave out the memory savers' rows (knn float16 keys, full with checkpointing)")
    parser.add_argument("--plan", action="store_true", help="print the runs and their estimates, run nothing")
    parser.add_argument("--no-record", action="store_true", help="print the figures, leave docs/benchmark-results.md as it is")
    return parser


def main() -> None:
    args = parser().parse_args()
    from simpe.config.files import load_config
    from simpe.loop.dryrun import GIB, available, estimate, measured_command, measured_peak
    from simpe.models import shapes

    budget = min(args.memory * GIB, available("cpu"))
    figures: dict[str, str] = {}

    def report(key: str) -> None:
        """Print a figure and record it at once (merged into the row: a run cut off keeps what it measured)."""
        print(key, figures[key], flush=True)
        if not args.plan and not args.no_record:
            record("bench-size", {key: figures[key]}, threads=args.threads, merge=True)
    measured: dict[str, dict[str, float | None]] = {}  # key -> peak MiB, s/segment, knn's datastore MiB per 1,000 segments
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.models:
            folder = None if name == "demo" else shapes.write(name, Path(scratch) / name)
            segments = segments_of(name, args)
            for dtype in args.dtypes:
                runs = []  # (row label, preset, extra overrides): each method, then its savers
                for method in args.methods:
                    runs.append((method, method, []))
                    if not args.no_savers:
                        runs += [(label, preset, extra) for label, (preset, extra) in SAVERS.get(method, {}).items()]
                for label, preset, extra in runs:
                    settings = overrides(name, folder, dtype, extra)
                    key = f"{name} {label} {dtype}"
                    try:
                        est = estimate(load_config(preset, settings + [f"data.segments={segments}"]), "cpu")
                    except Exception as err:  # a method that does not apply to the family (fixed needs a selection)
                        figures[key] = f"not run: {str(err).splitlines()[0][:120]}"
                        report(key)
                        continue
                    if est.peak > budget:
                        figures[key] = f"not run: estimated {est.peak / GIB:.1f} GiB > {budget / GIB:.1f} GiB"
                        report(key)
                        continue
                    if args.plan:
                        print(key, f"would run --preset {preset} {' '.join(extra)}: estimated {est.peak / 2**20:.0f} MiB"
                              + (f", {est.seconds_per_segment:.2f} s/segment" if est.seconds_per_segment else ""), flush=True)
                        continue
                    command = measured_command(["simulate", "--preset", preset, "--segments", str(segments),
                                                "--runs-dir", str(Path(scratch) / "runs"), "--no-progress", "--threads", str(args.threads),
                                                "--overwrite", "--set", "snapshots.every=0", *[x for o in settings for x in ("--set", o)]])
                    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
                    done = subprocess.run(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    if done.returncode != 0:
                        figures[key] = f"failed: {done.stderr[-300:]}"
                        report(key)
                        continue
                    (path,) = [p.parent for p in (Path(scratch) / "runs").glob(f"*/{preset}/DONE")
                               if (name if folder is not None else "demo-en-de") in str(p)]
                    rows = [json.loads(line) for line in (path / "segments.jsonl").read_text(encoding="utf-8").splitlines()]
                    translate = sum(r["seconds"]["translate"] for r in rows) / len(rows)
                    update = sum(r["seconds"].get("update", 0.0) for r in rows) / len(rows)
                    repetitions = sum((r.get("update") or {}).get("repetitions", 0) for r in rows) / len(rows)
                    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
                    store = summary.get("store_bytes")
                    peak = measured_peak(done.stderr)
                    measured[key] = {"peak": peak, "seconds": translate + update,
                                     "grows": store * 1000 / len(rows) / 2**20 if store and preset.startswith("knn") else None}
                    figures[key] = (f"peak {peak:.0f} MiB (estimated {est.peak / 2**20:.0f}); "
                                    f"{_s(translate + update)} s/segment = translate {_s(translate)} + update {_s(update)}"
                                    + (f" (estimated {_s(est.seconds_per_segment)})" if est.seconds_per_segment else "")
                                    + f"; {repetitions:.2f} update repetitions per segment"
                                    + (f"; store {store / 2**20:.1f} MiB" if store else "")
                                    + _saved(measured.get(f"{name} {label.split('+')[0]} {dtype}") if "+" in label else None, measured[key]))
                    report(key)


def _s(seconds: float) -> str:
    """Seconds with 3 significant digits below 1 s (the demo model's parts are hundredths), else 2 decimals."""
    return f"{seconds:.3g}" if seconds < 1 else f"{seconds:.2f}"


def _saved(plain: dict[str, float | None] | None, saver: dict[str, float | None]) -> str:
    """What a saver's row saves against its method's plain row (measured in this run), or nothing without one."""
    if plain is None:
        return ""
    text = (f"; against the plain row: peak {saver['peak'] - plain['peak']:+.0f} MiB, "
            f"{saver['seconds'] - plain['seconds']:+.2f} s/segment")
    if saver["grows"] is not None and plain["grows"] is not None:
        text += f", datastore {plain['grows']:.1f} -> {saver['grows']:.1f} MiB per 1,000 segments"
    return text


if __name__ == "__main__":
    sys.exit(run_main(main))
