"""The GPU check, ready before any GPU: one command that runs on a GPU machine without network (scripts/device_check.sh).

Steps, each timed, each recorded even when it fails (a failure does not stop the later steps):

1. ``cuda_tests``: the CUDA-marked tests (``pytest -m cuda``); they skip without a GPU.
2. ``demo``: the demo model, presets baseline, full, lasso, lora and knn, ``--segments`` segments of the LibreOffice
   stream, in float32 and bfloat16, on the device; each compared with the CPU records of the same run carried in the
   checkout (``benchmarks/device_reference/``, made beforehand by ``--make-reference`` on a CPU): the share of identical
   hypotheses and the difference of corpus BLEU and of the mean loss before the update. Without a reference the
   step records the run alone.
3. ``real_size``: NLLB-200-distilled-600M and Llama 3.2 1B of ``simpe.models.shapes`` (random weights, built on the
   device), 11 segments per method decoded to the source's length (``TRANSLATION_LENGTH``): the median seconds per
   segment (translate / update) of the 10 after the warm-up, the update repetitions and the seconds per repetition,
   and peak memory.
4. ``shared``: 4 plain ``simpe simulate`` processes of the demo model's ``full`` on one device against one alone
   (aggregate segments per second; Ray is not in the GPU image, so ``--gpus-per-run`` stays unverified).
5. ``group``: lockstep (docs/lockstep.md), 8 runs of ``full`` as one group against one alone (``step_group``).
6. ``exact_topk``: exact top-10 search on the demo model's dev sentences, beside Yan et al. (2021)'s seconds per
   sentence, and its cost per expansion on the NLLB-600M shape (``step_exact_topk``).
7. ``graphs``: decoding on fixed shapes (``simpe.decoders.static``) with its step as a CUDA graph, against the same
   static cache stepped eagerly and against the dynamic cache, in one call: milliseconds per beam-5 step on the
   NLLB-600M and demo models, and whether the three give the same hypotheses; and ``full``'s update repetition on the
   NLLB-600M shape as CUDA graphs (``simpe.loop.update_graph``), eagerly on fixed shapes, and by the eager update
   (``step_graphs``).

Writes ``device-check.json`` and ``device-check.md`` to ``--out``, after each step. Back on the development machine,
``--record DIR/device-check.json`` writes its figures into docs/benchmark-results.md (``benchmarks/record.py``, the
``device-check`` row), with the GPU machine's description. ``--cpu`` runs the same steps on tiny inputs on the
CPU (2 segments, baseline and full, one narrow layer of the real-size models): the tests run it, so the script works the
first time it meets a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
REFERENCE = REPO / "benchmarks" / "device_reference"
PRESETS = ["baseline", "full", "lasso", "lora", "knn"]
DTYPES = ["float32", "bfloat16"]
SHAPE_SETTINGS = {"nllb-600m": ["model.src_lang=eng_Latn", "model.tgt_lang=deu_Latn"], "llama3.2-1b": []}
TINY = {"nllb-600m": dict(encoder_layers=1, decoder_layers=1, d_model=64, encoder_ffn_dim=128, decoder_ffn_dim=128,
                          encoder_attention_heads=2, decoder_attention_heads=2),
        "llama3.2-1b": dict(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=2,
                            num_key_value_heads=1, head_dim=32)}


def _run(preset: str, overrides: list[str], runs: Path) -> tuple[Path, list[dict], float]:
    """One simulate run in this process; (its folder, its records, its peak accelerator memory in MiB or None)."""
    import torch

    from simpe.config.files import load_config
    from simpe.loop.run import Loop
    from simpe.rundir import layout

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    cfg = load_config(preset, [f"runs_dir={runs}", "snapshots.every=0", *overrides])
    loop = Loop(cfg, progress=False)
    path = loop.run(overwrite=True)
    loop.timer.remove()
    records = [json.loads(line) for line in (path / layout.SEGMENTS_FILE).read_text(encoding="utf-8").splitlines()]
    peak = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None
    return path, records, peak


def _summary(records: list[dict], warmup: int = 0) -> dict[str, Any]:
    """A run's figures: per segment, the median seconds of translate, update and their sum over the segments after the
    first ``warmup`` (kernels chosen, caches allocated: not a segment's cost), the update repetitions per segment (their
    mean, and per repetition the median update seconds), the mean loss before the update and the run's BLEU."""
    n = len(records)
    timed = records[warmup:] if n > warmup else records
    per = {k: sorted(r["seconds"].get(k, 0.0) for r in timed) for k in ("translate", "update")}
    total = sorted(r["seconds"].get("translate", 0.0) + r["seconds"].get("update", 0.0) for r in timed)
    repetitions = [r["update"]["repetitions"] for r in timed if r.get("update")]
    per_repetition = sorted(r["seconds"]["update"] / r["update"]["repetitions"] for r in timed
                            if r.get("update") and r["update"]["repetitions"])
    losses = [r["update"]["loss_before"] for r in records if r.get("update") and r["update"].get("loss_before") is not None]
    return {"segments": n, "timed_segments": len(timed), "s_per_segment": round(statistics.median(total), 4),
            "translate_s": round(statistics.median(per["translate"]), 4), "update_s": round(statistics.median(per["update"]), 4),
            "repetitions": round(sum(repetitions) / len(repetitions), 2) if repetitions else 0.0,
            "update_s_per_repetition": round(statistics.median(per_repetition), 4) if per_repetition else None,
            "hypothesis_tokens": round(sum(len((r.get("hyp_tokens") or "").split()) for r in timed) / len(timed), 1),
            "mean_loss_before": sum(losses) / len(losses) if losses else None, "bleu": records[-1]["cumulative"]["bleu"]}


def _compare(records: list[dict], reference: list[dict]) -> dict[str, Any]:
    pairs = list(zip(records, reference))
    same = sum(a["hypothesis"] == b["hypothesis"] for a, b in pairs) / len(pairs)
    mine, theirs = _summary(records), _summary(reference[:len(records)])
    loss = None if mine["mean_loss_before"] is None else abs(mine["mean_loss_before"] - theirs["mean_loss_before"])
    return {"identical_hypotheses": round(same, 4), "bleu_difference": round(mine["bleu"] - theirs["bleu"], 3),
            "mean_loss_difference": None if loss is None else round(loss, 4)}


def step_cuda_tests(cpu: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "tests/integration/test_cuda.py", "-p", "no:cacheprovider"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=240)
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return {"ok": done.returncode in (0, 5) and "failed" not in last, "summary": last}


def step_demo(device: str, segments: int, presets: list[str], runs: Path, make_reference: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dtype in DTYPES:
        for preset in presets:
            key = f"{preset}-{dtype}"
            _, records, peak = _run(preset, [f"device={device}", f"model.dtype={dtype}", f"data.segments={segments}"], runs / key)
            row = {**_summary(records), "peak_mib": peak}
            reference = REFERENCE / f"{key}.jsonl"
            if make_reference:
                REFERENCE.mkdir(parents=True, exist_ok=True)
                reference.write_text("".join(json.dumps({k: r[k] for k in ("hypothesis", "update", "cumulative", "seconds")}) + "\n"
                                             for r in records), encoding="utf-8")
            elif reference.is_file():
                carried = [json.loads(line) for line in reference.read_text(encoding="utf-8").splitlines()]
                row["against_cpu"] = _compare(records, carried)
            out[key] = row
    return out


# A shape-true model with random weights never chooses EOS: it would decode to the length limit (2 x source + 10
# tokens), a cost no translation has. The real-size rows decode to the source's length instead (max_len_a 1, max_len_b
# 1: about the reference's, en -> de), so that a row shows what translating a segment costs.
TRANSLATION_LENGTH = ["decoder.params.max_len_a=1.0", "decoder.params.max_len_b=1"]


def step_real_size(device: str, tiny: bool, segments: int, presets: list[str], runs: Path) -> dict[str, Any]:
    """The shape-true real-size models, ``segments`` segments per preset; the first is the warm-up, left out of the
    medians (``_summary``)."""
    from simpe.models import shapes

    out: dict[str, Any] = {}
    for name, settings in SHAPE_SETTINGS.items():
        folder = shapes.write(name, runs / f"shape-{name}", **(TINY[name] if tiny else {}))
        for preset in presets:
            dtype = "float32" if tiny else "bfloat16"
            start = time.perf_counter()
            _, records, peak = _run(preset, [f"model.path={folder}", f"device={device}", f"model.dtype={dtype}",
                                             f"data.segments={segments}", "metrics.truecaser=null", *TRANSLATION_LENGTH,
                                             *settings], runs / f"{name}-{preset}")
            out[f"{name}-{preset}-{dtype}"] = {**_summary(records, warmup=1), "peak_mib": peak,
                                               "wall_s": round(time.perf_counter() - start, 1)}
    return out


def step_shared(device: str, processes: int, segments: int, runs: Path) -> dict[str, Any]:
    """Several plain ``simpe simulate`` processes sharing one device (the GPU image has no Ray): the demo model's
    ``full`` on ``segments`` segments, one process alone, then ``processes`` at once; segments per second of one run alone
    and of all in aggregate (over the slowest run's loop seconds, start-up and model load left out), and the aggregate
    over one run's (goal on a GPU: >= 3 with 4 processes)."""
    def loop_seconds(folder: Path) -> float:
        """The run's own seconds in its segments' phases (summary.json): the process's start and model load left out."""
        summary = json.loads(next(folder.glob("*/*/summary.json")).read_text(encoding="utf-8"))
        return sum(summary["seconds"][k] for k in ("prepare", "translate", "score", "update"))

    def launch(tag: str, count: int) -> float:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        commands = [[sys.executable, "-m", "simpe", "simulate", "--preset", "full", "--segments", str(segments),
                     "--device", device, "--runs-dir", str(runs / f"{tag}-{i}"), "--set", "snapshots.every=0", "--no-progress"]
                    for i in range(count)]
        start = time.perf_counter()
        running = [subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                   for command in commands]
        for process in running:
            _, err = process.communicate(timeout=900)
            if process.returncode:
                raise RuntimeError(f"simpe simulate exited {process.returncode}: {err.strip().splitlines()[-1:] or ''}")
        wall = time.perf_counter() - start
        return max(loop_seconds(runs / f"{tag}-{i}") for i in range(count)) if wall else wall

    alone = launch("alone", 1)
    together = launch("shared", processes)  # the slowest run's loop seconds: the runs overlap in their loops
    one, aggregate = segments / alone, processes * segments / together
    return {"processes": processes, "segments": segments, "alone_s": round(alone, 1), "shared_s": round(together, 1),
            "segments_per_s_alone": round(one, 3), "segments_per_s_aggregate": round(aggregate, 3),
            "aggregate_over_one": round(aggregate / one, 2)}


def step_group(device: str, tiny: bool, runs_in_group: int, segments: int, runs: Path) -> dict[str, Any]:
    """Lockstep (docs/lockstep.md): ``full`` under ``runs_in_group`` learning rates as one group against one run alone,
    on the demo model (float32) and the NLLB-600M shape (bfloat16), ``segments`` segments each: segments per second of
    all the group's runs over one run's (goal on a GPU: >= 6 with 8 runs), from the runs' own loop seconds (the model's
    load left out; a group's shared phases are split evenly among its runs, so their sum is the group's)."""
    from simpe.config.files import load_config
    from simpe.loop.group import Group
    from simpe.loop.run import check_runs
    from simpe.models import shapes

    def loop_seconds(configs: list[Any]) -> float:
        loops = check_runs(configs, progress=False)
        Group(loops).run(overwrite=True)
        total = 0.0
        for loop in loops:
            summary = json.loads((loop.path / "summary.json").read_text(encoding="utf-8"))
            total += sum(summary["seconds"][k] for k in ("prepare", "translate", "score", "update"))
            loop.timer.remove()
        return total

    models = {"demo": ([], "float32")}
    name = "nllb-600m"
    folder = shapes.write(name, runs / f"group-shape-{name}", **(TINY[name] if tiny else {}))
    models[name] = ([f"model.path={folder}", "metrics.truecaser=null", *TRANSLATION_LENGTH, *SHAPE_SETTINGS[name]],
                    "float32" if tiny else "bfloat16")
    out: dict[str, Any] = {}
    for label, (settings, dtype) in models.items():
        common = [*settings, f"device={device}", f"model.dtype={dtype}", f"data.segments={segments}", "snapshots.every=0"]
        alone = loop_seconds([load_config("full", [*common, f"runs_dir={runs / f'group-{label}-alone'}"])])
        grouped = loop_seconds([load_config("full", [*common, f"update.lr={0.01 * (1 + i / 10):.4f}",
                                                     f"runs_dir={runs / f'group-{label}'}", f"adapter=full-lr{i}"])
                                for i in range(runs_in_group)])
        one, together = segments / alone, runs_in_group * segments / grouped
        out[f"{label}-full-{dtype}"] = {"runs": runs_in_group, "segments": segments, "alone_s": round(alone, 2),
                                        "group_s": round(grouped, 2), "segments_per_s_alone": round(one, 3),
                                        "segments_per_s_group": round(together, 3), "group_over_one": round(together / one, 2)}
    return out


# Yan et al. (2021), Table 5 (its text's line 397: "Exact Top-10 w/ Minheap BS lower bounds 18,908.4 12,918.9"): seconds
# and expansions "with 4 sampled runs on 100 test sentences", on their GPU and model. Read as the 400 searches' total,
# about 47 s a sentence (189 s if it is one run's 100); simpe's exact search was never timed on a GPU before this step
YAN_EXACT_TOP10 = 18908.4 / (4 * 100)
EXACT_CAP = 20000  # expansions per sentence, as make replicate's decoding studies
SHAPE_CAP = 2000  # on a random-weight shape every search runs to its cap: the cost of so many expansions


def step_exact_topk(device: str, tiny: bool, sentences: int, runs: Path) -> dict[str, Any]:
    """Exact top-10 (``simpe.decoders.topk``; its bound from a beam of 10, ``EXACT_CAP`` expansions per sentence, as the
    replication's studies) on the demo model's first ``sentences`` dev sentences of at most 20 words: seconds per
    sentence (all, and the searches that ended exact), expansions per second, the share cut short; beside Yan et al.
    (2021)'s 47 s. On the NLLB-600M shape (random weights: no search ends, each runs to ``SHAPE_CAP`` expansions,
    bfloat16 on a GPU) the seconds per 1,000 expansions on a real-size model. One search at a time, as the studies."""
    import torch

    from simpe.datasets import DATASETS
    from simpe.decoders.topk import TopKDecoder
    from simpe.model import load_model
    from simpe.models import shapes
    from simpe.models.base import family_of

    def search(model: Any, tokenizer: Any, sources: list[str], cap: int) -> dict[str, Any]:
        decoder, found = TopKDecoder(k=10, beam_size=10, max_expansions=cap), []
        with torch.inference_mode():
            for source in sources:
                ids = family_of(model).encode_source(tokenizer, source, next(model.parameters()).device)[0]
                start = time.perf_counter()
                result = decoder.decode(model, ids)
                if device == "cuda":
                    torch.cuda.synchronize()
                found.append((time.perf_counter() - start, result.exact, result.expansions))
        seconds, expansions = sum(f[0] for f in found), sum(f[2] for f in found)
        exact = [f[0] for f in found if f[1]]
        return {"sentences": len(found), "exact": len(exact), "s_per_sentence": round(seconds / len(found), 3),
                "s_per_exact_sentence": round(statistics.mean(exact), 3) if exact else None,
                "expansions_per_s": round(expansions / seconds, 1) if seconds else None,
                "s_per_1000_expansions": round(1000 * seconds / expansions, 3) if expansions else None}

    dev = [seg.source for seg in DATASETS.build("libreoffice").load("dev") if len(seg.source.split()) <= 20][:sentences]
    loaded = load_model(None, device)
    out = {"demo-float32": {**search(loaded.model, loaded.tokenizer, dev, EXACT_CAP), "cap": EXACT_CAP,
                            "yan2021_s_per_sentence": round(YAN_EXACT_TOP10, 1)}}
    del loaded
    name, dtype = "nllb-600m", "float32" if tiny else "bfloat16"
    folder = shapes.write(name, runs / f"exact-shape-{name}", **(TINY[name] if tiny else {}))
    shape = load_model(str(folder), device, dtype=dtype, settings={"src_lang": "eng_Latn", "tgt_lang": "deu_Latn"})
    cap = 50 if tiny else SHAPE_CAP
    out[f"{name}-{dtype}"] = {**search(shape.model, shape.tokenizer, dev[:2], cap), "cap": cap}
    return out


def step_graphs(device: str, tiny: bool, sentences: int, runs: Path) -> dict[str, Any]:
    """Beam-5 search over the first ``sentences`` dev sentences of at most 20 words (each to its source's length plus
    one: ``TRANSLATION_LENGTH``), three ways on one warm model: ``graphs`` (fixed shapes, the step replayed as a CUDA
    graph: CUDA's default), ``static`` (the same fixed shapes stepped eagerly) and ``dynamic`` (transformers' growing
    cache, the path before issue 67). Milliseconds per decoding step (all the search's steps, the stop checks and the
    results included; after one sentence of warm-up per way), and the share of sentences whose hypotheses equal the
    dynamic path's (bfloat16: its last bits move the search now and then, see tests/unit/test_static_decoding.py).
    The NLLB-600M shape (random weights: every search runs to its length) in bfloat16 and the demo model in float32."""
    import torch

    from simpe.datasets import DATASETS
    from simpe.decoders import beam_device, static
    from simpe.decoders.beam import BeamDecoder
    from simpe.decoders.incremental import decoding, encode
    from simpe.model import load_model
    from simpe.models import shapes

    dev = [seg.source for seg in DATASETS.build("libreoffice").load("dev") if len(seg.source.split()) <= 20][:sentences + 1]
    ways = {"graphs": (True, True), "static": (True, False), "dynamic": (False, None)}
    on_device = None if device == "cuda" else True  # --cpu: the device path forced, as the tests force it

    def timed(loaded: Any) -> dict[str, Any]:
        decoder = BeamDecoder(5, max_len_a=1.0, max_len_b=1)
        found: dict[str, Any] = {}
        saved = beam_device.ON_DEVICE
        beam_device.ON_DEVICE = on_device
        try:
            for way, (fixed, graphs) in ways.items():
                static.clear()
                with static.forced(fixed, graphs), decoding(loaded.model):
                    sources = [encode(loaded.model, loaded.family.encode_source(loaded.tokenizer, text, device)[0],
                                      decoder.limit) for text in dev]
                    decoder.decode_sources(loaded.model, sources[:1])  # warm-up (and the graph's capture)
                    if device == "cuda":
                        torch.cuda.synchronize()
                    start, results = time.perf_counter(), []
                    for source in sources[1:]:
                        results += decoder.decode_sources(loaded.model, [source])
                    if device == "cuda":
                        torch.cuda.synchronize()
                    seconds = time.perf_counter() - start
                steps = sum(r.info["steps"] for r in results)
                refused = [entry.refused for _, entry in static._POOL.values() if entry.refused]
                captured = any(entry.graphs for _, entry in static._POOL.values())
                found[way] = {"captured": captured, "ms_per_step": round(1000 * seconds / steps, 3), "steps": steps,
                              "hypotheses": [[h.tokens for h in r.hypotheses] for r in results], "refused": refused}
        finally:
            beam_device.ON_DEVICE = saved
            static.clear()
        dynamic = found["dynamic"]["hypotheses"]
        row: dict[str, Any] = {"sentences": len(dynamic)}
        for way, got in found.items():
            row[f"{way}_ms_per_step"] = got["ms_per_step"]
            row[f"{way}_same_as_dynamic"] = round(sum(a == b for a, b in zip(got["hypotheses"], dynamic)) / len(dynamic), 3)
            if got["refused"]:
                row[f"{way}_refused"] = got["refused"][:1]
        row["steps"] = found["dynamic"]["steps"]
        row["graph_captured"] = found["graphs"]["captured"]
        row["graphs_over_dynamic"] = round(found["dynamic"]["ms_per_step"] / found["graphs"]["ms_per_step"], 2)
        return row

    def timed_update(base: Any) -> dict[str, Any]:
        """``full``'s update, 3 repetitions per pair (a threshold no pair reaches) on the dev sentences (each its own
        target), three ways on a fresh copy of ``base``'s model each: ``graphs`` (simpe.loop.update_graph, each repetition a CUDA graph
        replay: CUDA's default), ``static`` (the same repetitions eagerly) and ``eager`` (the update before issue 67,
        weights in place); ms per repetition after one pair of warm-up, and the records' repetitions."""
        import copy
        import dataclasses

        from simpe.config.files import defaults
        from simpe.loop import undo, update_graph
        from simpe.loop.update import update
        from simpe.methods import METHODS
        from simpe.model import Pair

        row: dict[str, Any] = {}
        saved = update_graph.ON_DEVICE, update_graph.GRAPHS, undo.IN_PLACE
        try:
            for way, (fixed, graphs) in {"graphs": (True, True), "static": (True, False), "eager": (False, None)}.items():
                update_graph.ON_DEVICE, update_graph.GRAPHS = fixed, graphs
                undo.IN_PLACE = True  # --cpu: the in-place update a GPU runs
                update_graph.clear()
                loaded = dataclasses.replace(base, model=copy.deepcopy(base.model))
                method = METHODS.build("full")
                cfg = defaults("update", lr=0.05, ppl_threshold=1.0)
                method.attach(loaded.model, None, cfg)
                pairs = []
                for text in dev:
                    ids = loaded.family.encode_source(loaded.tokenizer, text, device)[0]
                    pairs.append(Pair(ids, ids[:, 1:]))
                for _ in range(1 if tiny else 2):  # warm-up (and on CUDA the graphs' capture: the second update)
                    update(loaded.model, method, pairs[0], cfg)
                if device == "cuda":
                    torch.cuda.synchronize()
                start, repetitions = time.perf_counter(), 0
                for pair in pairs[1:2] if tiny else pairs[1:]:  # --cpu: one pair (the NLLB vocabulary is real-size)
                    repetitions += update(loaded.model, method, pair, cfg)["repetitions"]
                if device == "cuda":
                    torch.cuda.synchronize()
                row[f"update_{way}_ms_per_repetition"] = round(1000 * (time.perf_counter() - start) / max(1, repetitions), 3)
                row[f"update_{way}_repetitions"] = repetitions
                refused = [r.refused for _, r in update_graph._POOL.values() if r.refused]
                if refused and way == "graphs":
                    row["update_graphs_refused"] = refused[:1]
                row.setdefault("update_graph_captured", any(g is not None for _, r in update_graph._POOL.values()
                                                            for g in r.graphs))
                del loaded, method
        finally:
            update_graph.ON_DEVICE, update_graph.GRAPHS, undo.IN_PLACE = saved
            update_graph.clear()
        row["update_graphs_over_eager"] = round(row["update_eager_ms_per_repetition"] / row["update_graphs_ms_per_repetition"], 2)
        return row

    name, dtype = "nllb-600m", "float32" if tiny else "bfloat16"
    folder = shapes.write(name, runs / f"graphs-shape-{name}", **(TINY[name] if tiny else {}))

    shape = load_model(str(folder), device, dtype=dtype, settings={"src_lang": "eng_Latn", "tgt_lang": "deu_Latn"})
    out = {f"{name}-{dtype}": {**timed(shape), **timed_update(shape)}}
    del shape
    out["demo-float32"] = timed(load_model(None, device))
    return out


def graphs_text(key: str, row: dict[str, Any]) -> str:
    """One line of the graphs step."""
    same = ", ".join(f"{way} {row[f'{way}_same_as_dynamic']:.0%}" for way in ("graphs", "static"))
    refused = f"; capture refused: {row['graphs_refused'][0]}" if row.get("graphs_refused") else ""
    graph = "with the CUDA graph" if row.get("graph_captured") else "on the graphs way, not captured (no CUDA: eager)"
    text = (f"beam-5 step, {key}: {row['graphs_ms_per_step']} ms {graph}, {row['static_ms_per_step']} ms "
            f"on the static cache stepped eagerly, {row['dynamic_ms_per_step']} ms on the dynamic cache "
            f"({row['graphs_over_dynamic']}x; {row['steps']} steps over {row['sentences']} sentences; hypotheses as the "
            f"dynamic path's: {same}){refused}")
    if "update_graphs_ms_per_repetition" in row:
        graph = "as CUDA graphs" if row.get("update_graph_captured") else "on the graphs way, not captured (no CUDA: eager)"
        text += (f"; full's update repetition: {row['update_graphs_ms_per_repetition']} ms {graph}, "
                 f"{row['update_static_ms_per_repetition']} ms on fixed shapes eagerly, {row['update_eager_ms_per_repetition']} "
                 f"ms by the eager update ({row['update_graphs_over_eager']}x; {row['update_eager_repetitions']} repetitions)"
                 + (f"; capture refused: {row['update_graphs_refused'][0]}" if row.get("update_graphs_refused") else ""))
    return text


def exact_text(key: str, row: dict[str, Any]) -> str:
    """One line of the exact top-10 step: the demo model's seconds per sentence beside Yan et al.'s, or a shape's cost of
    its capped searches."""
    text = (f"exact top-10, {key}: {row['s_per_sentence']:.3f} s a sentence over {row['sentences']} "
            f"({row['exact']} exact, at most {row['cap']} expansions each), {row['expansions_per_s']} expansions/s")
    if "yan2021_s_per_sentence" in row:
        return text + (f"; Yan et al. (2021), Table 5: about {row['yan2021_s_per_sentence']} s a sentence on their GPU and "
                       "model (18,908.4 s over 4 runs of 100 sentences)")
    return text + f" ({row['s_per_1000_expansions']} s per 1,000; random weights: no search ends)"


def markdown(result: dict[str, Any]) -> str:
    lines = [f"# Device check ({result['device']}, {result['machine']['gpu'] or 'no GPU'})", "",
             f"torch {result['machine']['torch']}, transformers {result['machine']['transformers']}, "
             f"{result['seconds']:.0f} s in all", "", "| step | run | s/segment (translate / update) | peak MiB | against the CPU |",
             "| --- | --- | --- | --- | --- |"]
    for step in ("demo", "real_size"):
        for key, row in (result["steps"].get(step) or {}).items():
            if not isinstance(row, dict) or "s_per_segment" not in row:
                continue
            against = row.get("against_cpu")
            text = (f"{against['identical_hypotheses']:.0%} identical, BLEU {against['bleu_difference']:+.2f}" if against else "-")
            peak = f"{row['peak_mib']:.0f}" if row.get("peak_mib") is not None else "-"
            reps = (f"; {row['repetitions']:.2f} repetitions, {row['update_s_per_repetition']:.3f} s each"
                    if row.get("update_s_per_repetition") else "")
            lines.append(f"| {step} | {key} | {row['s_per_segment']:.3f} ({row['translate_s']:.3f} / {row['update_s']:.3f}){reps}, "
                         f"median of {row.get('timed_segments', row['segments'])} | {peak} | {text} |")
    shared = result["steps"].get("shared") or {}
    if "aggregate_over_one" in shared:
        lines.append(f"\n{shared['processes']} simpe simulate processes on one device: {shared['segments_per_s_aggregate']} "
                     f"segments/s in all against {shared['segments_per_s_alone']} alone ({shared['aggregate_over_one']}x)")
    for key, row in (result["steps"].get("group") or {}).items():
        if isinstance(row, dict) and "group_over_one" in row:
            lines.append(f"\nlockstep, {key}: {row['runs']} runs as one group {row['segments_per_s_group']} segments/s in all "
                         f"against {row['segments_per_s_alone']} for one run alone ({row['group_over_one']}x)")
    for key, row in (result["steps"].get("exact_topk") or {}).items():
        if isinstance(row, dict) and "s_per_sentence" in row:
            lines.append(f"\n{exact_text(key, row)}")
    for key, row in (result["steps"].get("graphs") or {}).items():
        if isinstance(row, dict) and "graphs_ms_per_step" in row:
            lines.append(f"\n{graphs_text(key, row)}")
    for step, row in result["steps"].items():
        if isinstance(row, dict) and "error" in row:
            lines.append(f"\n{step} failed: {row['error']}")
    cuda = result["steps"].get("cuda_tests") or {}
    lines.append(f"\nCUDA tests: {cuda.get('summary', '-')}")
    return "\n".join(lines) + "\n"


def record_result(result: dict[str, Any]) -> None:
    """The figures of a device-check.json as the ``device-check`` row of docs/benchmark-results.md, with its machine."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from record import record

    figures: dict[str, str] = {}
    for step in ("demo", "real_size"):
        for key, row in (result["steps"].get(step) or {}).items():
            if not isinstance(row, dict) or "s_per_segment" not in row:
                continue
            against = row.get("against_cpu")
            figures[f"{step} {key}"] = (f"{row['s_per_segment']:.3f} s/segment (translate {row['translate_s']:.3f} + update "
                                        f"{row['update_s']:.3f}), median of {row.get('timed_segments', row['segments'])} "
                                        f"segments after the warm-up"
                                        + (f", {row['repetitions']:.2f} update repetitions, {row['update_s_per_repetition']:.3f} s "
                                           "each" if row.get("update_s_per_repetition") else "")
                                        + (f", peak {row['peak_mib']:.0f} MiB" if row.get("peak_mib") is not None else "")
                                        + (f"; against the CPU records: {against['identical_hypotheses']:.0%} identical hypotheses, "
                                           f"BLEU {against['bleu_difference']:+.2f}, mean loss {against['mean_loss_difference']:.4f}"
                                           if against else ""))
    for key, row in (result["steps"].get("graphs") or {}).items():
        if isinstance(row, dict) and "graphs_ms_per_step" in row:
            figures[f"graphs {key}"] = graphs_text(key, row)
    for step, row in result["steps"].items():
        if isinstance(row, dict) and "error" in row:
            figures[f"{step} failed"] = row["error"]
    shared = result["steps"].get("shared") or {}
    if "aggregate_over_one" in shared:
        figures["shared device"] = (f"{shared['processes']} simulate processes: {shared['segments_per_s_aggregate']} segments/s "
                                    f"in all, {shared['aggregate_over_one']}x one run's {shared['segments_per_s_alone']}")
    for key, row in (result["steps"].get("group") or {}).items():
        if isinstance(row, dict) and "group_over_one" in row:
            figures[f"lockstep {key}"] = (f"{row['runs']} runs as one group: {row['segments_per_s_group']} segments/s in all, "
                                         f"{row['group_over_one']}x one run's {row['segments_per_s_alone']}")
    for key, row in (result["steps"].get("exact_topk") or {}).items():
        if isinstance(row, dict) and "s_per_sentence" in row:
            figures[f"exact top-10 {key}"] = exact_text(key, row)
    figures["CUDA tests"] = (result["steps"].get("cuda_tests") or {}).get("summary", "-")
    figures["wall time"] = f"{result['seconds']:.0f} s"
    m = result["machine"]
    machine = {"cpu": m.get("cpu") or "x86_64", "cores": m.get("cores") or "?", "kernels": "CUDA", "threads": "-",
               "torch": f"{m['torch']}, transformers {m['transformers']}, Python {m['python']}", "gpu": m["gpu"]}
    record("device-check", figures, machine=machine, command="scripts/device_check.sh --out OUT", load_average=None)


def _write(result: dict[str, Any], start: float, out: Path) -> None:
    result["seconds"] = time.perf_counter() - start
    (out / "device-check.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / "device-check.md").write_text(markdown(result), encoding="utf-8")


STEPS = ("cuda_tests", "demo", "group", "real_size", "shared", "exact_topk", "graphs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for device-check.json and device-check.md")
    parser.add_argument("--cpu", action="store_true", help="the same steps on tiny inputs on the CPU (the tests run this)")
    parser.add_argument("--segments", type=int, default=100, help="demo-model segments per run (default 100; --cpu: 2)")
    parser.add_argument("--make-reference", action="store_true", help="write the CPU records the GPU run is compared with")
    parser.add_argument("--record", type=Path, metavar="JSON", help="write a GPU run's device-check.json into docs/benchmark-results.md")
    parser.add_argument("--steps", default=",".join(STEPS), metavar="A,B",
                        help=f"the steps to run, in their order (default all: {','.join(STEPS)})")
    args = parser.parse_args(argv)
    chosen = [step.strip() for step in args.steps.split(",") if step.strip()]
    unknown = [step for step in chosen if step not in STEPS]
    if unknown or not chosen:
        parser.error(f"--steps {args.steps!r}: unknown step {unknown[0]!r}; known: {', '.join(STEPS)}" if unknown else
                     f"--steps is empty; known: {', '.join(STEPS)}")
    if args.record:
        record_result(json.loads(args.record.read_text(encoding="utf-8")))
        return 0
    if args.out is None:
        parser.error("--out is required (the folder for device-check.json and device-check.md)")
    import torch
    import transformers

    torch.set_num_threads(max(1, torch.get_num_threads()))
    if not args.cpu and not args.make_reference and not torch.cuda.is_available():
        print("device_check: torch sees no CUDA device; use --cpu for the CPU run of the same steps", file=sys.stderr)
        return 2
    device = "cpu" if args.cpu or args.make_reference else "cuda"
    segments = 2 if args.cpu else args.segments
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    result: dict[str, Any] = {"device": device, "steps": {}, "machine": {
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None, "torch": torch.__version__,
        "transformers": transformers.__version__, "python": platform.python_version(), "cpu": platform.processor(),
        "cores": os.cpu_count()}}
    with tempfile.TemporaryDirectory() as scratch:
        runs = Path(scratch)
        steps = [("cuda_tests", lambda: step_cuda_tests(args.cpu)),
                 ("demo", lambda: step_demo(device, segments, ["baseline", "full"] if args.cpu else PRESETS, runs, args.make_reference)),
                 ("group", lambda: step_group(device, args.cpu, 2 if args.cpu else 8, 2 if args.cpu else 20, runs)),
                 ("real_size", lambda: step_real_size(device, args.cpu, 2 if args.cpu else 11,
                                                      ["full"] if args.cpu else ["baseline", "full", "lora", "lasso"], runs)),
                 ("shared", lambda: step_shared(device, 2 if args.cpu else 4, 2 if args.cpu else 200, runs)),
                 ("exact_topk", lambda: step_exact_topk(device, args.cpu, 2 if args.cpu else 20, runs)),
                 ("graphs", lambda: step_graphs(device, args.cpu, 2 if args.cpu else 20, runs))]
        if args.make_reference:
            steps = [steps[1]]
        else:
            steps = [(name, run) for name, run in steps if name in chosen]
        for name, run in steps:
            began = time.perf_counter()
            try:
                result["steps"][name] = run()
            except Exception as err:  # a step that fails is recorded; the next one still runs
                result["steps"][name] = {"error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()[-2000:]}
            print(f"device_check: {name} {time.perf_counter() - began:.0f} s", file=sys.stderr)
            _write(result, start, args.out)  # after each step: a check cut off by the machine's time limit keeps what it did
    failed = [name for name, row in result["steps"].items() if isinstance(row, dict) and ("error" in row or row.get("ok") is False)]
    print(f"device_check: wrote {args.out / 'device-check.json'} and device-check.md" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
