"""The benchmarks' own table: each ``make bench-*`` target records its headline figures here.

``record(target, figures)`` replaces the target's row in ``docs/benchmarks.json`` (command,
machine, CPU kernel set, threads, load average, date, figures) and re-renders
``docs/benchmark-results.md`` from it, so the table in the manual is written by the benchmarks
themselves, never by hand. A figure taken while the machine was busy says so (its load average
is in the row): these 2-core machines are shared, and only ratios measured side by side in one
run are comparable.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "docs" / "benchmarks.json"
PAGE = REPO / "docs" / "benchmark-results.md"


def _machine(threads: int | None = None) -> dict[str, Any]:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernels": torch.backends.cpu.get_cpu_capability(),
            "threads": threads or torch.get_num_threads(), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}


def record(target: str, figures: dict[str, str], threads: int | None = None, machine: dict[str, Any] | None = None,
           command: str | None = None, load_average: float | None = None, merge: bool = False) -> None:
    """Replace ``target``'s row with ``figures`` (name -> text with units) and re-render the page; with ``merge``,
    keep the row's other figures (a benchmark that records each measurement as it is made, or in parts).

    ``threads``: the torch threads the figures were measured with, where that is not this process's own
    (a benchmark that measures in worker processes). ``machine``, ``command`` and ``load_average``: those of another
    machine, for figures measured there and recorded here (the GPU check, ``scripts/device_check.py --record``)."""
    rows = json.loads(DATA.read_text(encoding="utf-8")) if DATA.exists() else {}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") and machine is None else load_average
    default = f"make {target} ARGS=\"{' '.join(sys.argv[1:])}\"" if sys.argv[1:] else f"make {target}"
    if merge and target in rows:
        figures = {**rows[target]["figures"], **figures}
    rows[target] = {"command": command or default,
                    "date": datetime.date.today().isoformat(), "machine": machine or _machine(threads),
                    "load_average": None if load is None else round(load, 2), "figures": figures}
    DATA.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    # rendered from the file as written (its keys sorted), so the page is always render(docs/benchmarks.json): what
    # scripts/write_docs.py --check compares it with
    PAGE.write_text(render(json.loads(DATA.read_text(encoding="utf-8"))), encoding="utf-8")


def render(rows: dict[str, Any]) -> str:
    out = ["<!-- written by benchmarks/record.py when a make bench-* target runs; do not edit by hand -->", "",
           "# Benchmark results", "",
           "The last figures of each `make bench-*` target, written by the target itself (`benchmarks/record.py`), "
           "with the command, machine and date. The load average says how busy the machine was: compare only figures "
           "taken side by side in one run. Earlier figures, and what changed between them: [benchmarks.md](benchmarks.md).",
           "", "| target | figures | command | machine | date | load |", "| --- | --- | --- | --- | --- | --- |"]
    for target, row in sorted(rows.items()):
        m = row["machine"]
        machine = f"{m['cpu']}, {m['cores']} cores, {m['kernels']}, {m['threads']} threads, torch {m['torch']}" + \
                  (f", {m['gpu']}" if m.get("gpu") else "")
        figures = "<br>".join(f"{k}: {v}" for k, v in row["figures"].items())
        out.append(f"| `{target}` | {figures} | `{row['command']}` | {machine} | {row['date']} | {row['load_average']} |")
    return "\n".join(out) + "\n"
