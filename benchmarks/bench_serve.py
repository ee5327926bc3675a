"""simpe serve under load: simulated translators submitting post-edits as fast as the server answers, per method.

    python benchmarks/bench_serve.py [--translators 8] [--segments 20] [--methods baseline full bias ...]
                                     [--lookups both|on|off] [--no-record]

For each method: a project of ``--translators`` translators on the first ``--segments`` stream segments of the demo
model, served by uvicorn in this process (a background thread; the model work runs in its worker threads, one torch
thread each), and one client thread per translator that submits the stream's reference as its post-edit the moment
it has the next segment, over HTTP on localhost. Reported per method:

* latency of a submission (median, 95th percentile), as the client sees it: the record written and synced, the
  update, the checkpoint, and the next segment's translation;
* throughput: submissions per second over all translators together;
* memory per translator: the resident memory of a fresh process per method (libraries imported first) grown while
  the translators' sessions opened (model copy, method state, scorer), and at the end of the run (gradients,
  datastores, what the updates left), each over the number of translators. Each method runs in its own process: in
  one process for all, what an earlier method freed made later methods' growth negative;
* capacity: how many translators the machine serves at that throughput if each submits one segment every
  ``--pace`` seconds (a person post-editing; 30 s by default), keeping the server at most 70 % busy.

``--lookups both`` (the default) measures every method twice in one run, each in its own process: with the
workbench's lookups (each answer's next view carries the fuzzy matches against the translator's earlier post-edits
and the hits of the embedded LibreOffice glossary, ``simpe serve init --glossary``) and without them (``serve run
--no-lookups``), and prints how much the lookups add to the median and the 95th percentile; each row says which.

``make bench-serve`` records the figures in docs/benchmark-results.md; ``--no-record`` (a short check) does not.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import torch
from entry import run_main
from record import record

from simpe import log

RESULT = "bench-serve-result "  # a child's last line: its figures as JSON


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def bench(method: str, translators: int, segments: int, port: int, folder: Path, lookups: bool = True) -> dict[str, float]:
    import uvicorn

    from simpe.loop.run import load_stream
    from simpe.serve import project as projects
    from simpe.serve.app import create_app
    from simpe.serve.bind import allowed_names
    from simpe.serve.server import open_sessions
    from simpe.terms.glossary import DEFAULT_GLOSSARY

    names = [f"t{i}" for i in range(translators)]
    project, tokens = projects.create(folder / "projects", method.replace("_", "-"), method,
                                      [f"data.segments={segments}", f"runs_dir={folder / 'runs'}", "device=cpu"], names,
                                      glossary=DEFAULT_GLOSSARY if lookups else None)
    references = [s.reference for s in load_stream(project.run_config(names[0]))[1]]
    process = psutil.Process()
    before = process.memory_info().rss
    sessions = open_sessions(project, lookups)
    opened = process.memory_info().rss
    server = uvicorn.Server(uvicorn.Config(create_app(project, sessions, *allowed_names("127.0.0.1", port, False, [])),
                                           host="127.0.0.1", port=port, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    latencies: list[float] = []
    lock = threading.Lock()

    def call(token: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                         headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.loads(response.read())

    def translator(name: str) -> None:
        view = call(tokens[name], "/api/segment")
        while not view["done"]:
            start = time.perf_counter()
            view = call(tokens[name], "/api/submit", {"index": view["index"], "post_edit": references[view["index"]],
                                                       "seconds": 1.0, "keys": []})
            with lock:
                latencies.append(time.perf_counter() - start)

    clients = [threading.Thread(target=translator, args=(name,)) for name in names]
    start = time.perf_counter()
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    wall = time.perf_counter() - start
    end = process.memory_info().rss
    server.should_exit = True
    thread.join(timeout=30)
    for session in sessions.values():
        session.close()
    assert len(latencies) == translators * segments, (len(latencies), translators * segments)
    return {"median": statistics.median(latencies), "p95": percentile(latencies, 0.95), "throughput": len(latencies) / wall,
            "mb_open": (opened - before) / translators / 2**20, "mb_end": (end - before) / translators / 2**20}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--translators", type=int, default=8)
    parser.add_argument("--segments", type=int, default=20, help="submissions per translator (default: %(default)s)")
    parser.add_argument("--methods", nargs="+", default=["baseline", "bias", "lasso", "fixed", "top", "full", "lora", "knn"])
    parser.add_argument("--pace", type=float, default=30.0, help="seconds a person takes per segment (capacity; default: %(default)s)")
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: %(default)s)")
    parser.add_argument("--no-record", action="store_true", help="print only (a short check); do not write docs/")
    parser.add_argument("--lookups", choices=["both", "on", "off"], default="both",
                        help="with the workbench's lookups (matches, glossary hits), without, or both in one run (default)")
    parser.add_argument("--one", metavar="METHOD", help=argparse.SUPPRESS)  # a child process measuring one method
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    log.setup()
    logging.getLogger("simpe").setLevel(logging.WARNING)
    if args.one:  # a child: one method in this fresh process, its figures as the last line
        from simpe.loop.run import Loop  # noqa: F401
        from simpe.serve.app import create_app  # noqa: F401  the libraries the sessions use, before `before`

        with tempfile.TemporaryDirectory() as folder:
            row = bench(args.one, args.translators, args.segments, args.port, Path(folder) / args.one,
                        lookups=args.lookups == "on")
        print(RESULT + json.dumps(row), flush=True)
        return 0
    rows = {}
    modes = ["on", "off"] if args.lookups == "both" else [args.lookups]
    for method in args.methods:
        for mode in modes:  # the two of a method back to back: the same load on the machine, as far as it goes
            command = [sys.executable, __file__, "--one", method, "--translators", str(args.translators), "--segments",
                       str(args.segments), "--port", str(args.port), "--threads", str(args.threads), "--lookups", mode]
            done = subprocess.run(command, capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
            name = f"{method} ({'with' if mode == 'on' else 'without'} lookups)"
            if done.returncode != 0 or not lines:
                print(f"{name}: failed: {done.stderr[-500:]}", file=sys.stderr)
                return 1
            rows[name] = json.loads(lines[-1][len(RESULT):])
            print(f"{name}: {rows[name]}", flush=True)
    cores = os.cpu_count() or 1
    print(f"\nbench-serve: {args.translators} translators x {args.segments} submissions, demo model, libreoffice stream, "
          f"{cores} cores, {args.threads} torch thread(s), load {os.getloadavg()[0]:.1f}")
    print(f"{'method':30s} {'median s':>9s} {'p95 s':>7s} {'subm/s':>7s} {'MB/transl':>10s} {'MB/transl':>10s} {'serves':>7s}")
    print(f"{'':30s} {'':>9s} {'':>7s} {'':>7s} {'(opened)':>10s} {'(end)':>10s} {'(est.)':>7s}")
    capacity = {}
    for method, row in rows.items():
        # the server's service rate is `throughput` submissions/s at full load; a person submits 1 every `pace` seconds
        capacity[method] = int(0.7 * row["throughput"] * args.pace)
        print(f"{method:30s} {row['median']:9.3f} {row['p95']:7.3f} {row['throughput']:7.2f} {row['mb_open']:10.0f} "
              f"{row['mb_end']:10.0f} {capacity[method]:7d}")
    print(f"serves (est.): translators submitting one segment every {args.pace:.0f} s each, at most 70% of the measured "
          "throughput; memory is a fresh process's resident set grown per translator")
    added = {}
    if len(modes) == 2:  # what the lookups add, method by method
        for method in args.methods:
            on, off = rows[f"{method} (with lookups)"], rows[f"{method} (without lookups)"]
            added[method] = (100 * (on["median"] / off["median"] - 1), 100 * (on["p95"] / off["p95"] - 1))
            print(f"{method}: the workbench's lookups add {added[method][0]:+.1f} % to the median, {added[method][1]:+.1f} % "
                  "to the p95 from submit to the next segment")
    if not args.no_record:
        record("bench-serve", {method: f"median {row['median']:.2f} s, p95 {row['p95']:.2f} s, {row['throughput']:.2f} "
                               f"submissions/s, {row['mb_end']:.0f} MB/translator, serves ~{capacity[method]} at 1 segment/"
                               f"{args.pace:.0f} s"
                               + (f"; lookups add {added[method.split(' ')[0]][1]:+.1f} % to the p95"
                                  if method.endswith("(with lookups)") else "")
                               for method, row in rows.items()}, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
