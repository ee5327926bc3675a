"""Where an update repetition and a decoding step spend their time on a shape-true model (issue 55's GPU goals).

    python benchmarks/profile_update.py [--shape nllb-600m] [--device cuda] [--dtype bfloat16] [--segments 4]
                                        [--variants default,no-masters] [--tiny] [--out FILE.json]

The model is one of ``simpe.models.shapes`` (random weights, built on the device, as the device check's
``real_size`` step builds it); the run is the ``full`` preset through the loop's own ``Loop.translate`` and
``simpe.loop.update.update`` on the first ``--segments`` stream segments, decoded to the source's length. For each
variant (``default``: the settings as they are; ``no-masters``: ``update.master_copies=false``; ``no-clip``:
``update.clip_norm=0``; ``cudnn-sdp``: cuDNN's attention, which ``simpe.model.configure_cuda`` turns off, back on)
it prints, after one warm-up segment: the seconds per update repetition, per backward pass,
per beam step (the decoder's forward passes of one translation; each the median over the segments, one of which ran
its update, and another its translation, under the profiler), and the torch profiler's top operators of one
update (self device time on CUDA, self CPU time on the CPU), with the number of kernel launches and host
synchronisations (``cudaStreamSynchronize``, ``cudaMemcpyAsync`` device to host, ``.item()``) in it. ``--tiny``: one
narrow layer per stack, for a check of the script on the CPU (``make test`` does not run it).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from entry import run_main

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SETTINGS = {"nllb-600m": ["model.src_lang=eng_Latn", "model.tgt_lang=deu_Latn"], "llama3.2-1b": []}
TINY = {"nllb-600m": dict(encoder_layers=1, decoder_layers=1, d_model=64, encoder_ffn_dim=128, decoder_ffn_dim=128,
                          encoder_attention_heads=2, decoder_attention_heads=2),
        "llama3.2-1b": dict(num_hidden_layers=1, hidden_size=64, intermediate_size=128, num_attention_heads=2,
                            num_key_value_heads=1, head_dim=32)}
VARIANTS = {"default": [], "no-masters": ["update.master_copies=false"], "no-clip": ["update.clip_norm=0"],
            "cudnn-sdp": []}  # cudnn-sdp: cuDNN's attention back on (simpe.model.configure_cuda turns it off)
LENGTH = ["decoder.params.max_len_a=1.0", "decoder.params.max_len_b=1"]  # the device check's TRANSLATION_LENGTH


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def _profile_table(prof: Any, device: str, rows: int = 18) -> dict[str, Any]:
    """The profiler's top operators by self time, and the counts of launches and host waits."""
    events = prof.key_averages()
    key = "self_device_time_total" if device == "cuda" else "self_cpu_time_total"
    top = sorted(events, key=lambda e: getattr(e, key, 0) or 0, reverse=True)[:rows]
    counts: dict[str, int] = {}
    for e in events:
        for name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaStreamSynchronize",
                     "cudaDeviceSynchronize", "cudaMemcpyAsync", "aten::item", "aten::_local_scalar_dense"):
            if e.key == name:
                counts[name] = counts.get(name, 0) + e.count
    return {"top": [{"op": e.key, "calls": e.count, "self_ms": round((getattr(e, key, 0) or 0) / 1000.0, 3),
                     "cpu_ms": round(e.self_cpu_time_total / 1000.0, 3)} for e in top],
            "counts": counts}


def run_variant(args: argparse.Namespace, folder: Path, variant: str, runs: Path) -> dict[str, Any]:
    """One variant: the loop on ``--segments`` + 1 segments (the first a warm-up), the second's update and the third's
    translation under the torch profiler."""
    import contextlib

    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from simpe.config.files import load_config
    from simpe.loop.run import Loop
    from simpe.loop.update import update

    dtype = args.dtype
    cfg = load_config("full", [f"runs_dir={runs}", "snapshots.every=0", f"model.path={folder}", f"device={args.device}",
                               f"model.dtype={dtype}", f"data.segments={args.segments + 1}", "metrics.truecaser=null",
                               "update.ppl_threshold=1.0", *LENGTH, *SETTINGS[args.shape], *VARIANTS[variant]])
    loop = Loop(cfg, progress=False)
    loop.load()
    if variant == "cudnn-sdp":
        torch.backends.cuda.enable_cudnn_sdp(True)
    segments = loop.segments[: args.segments + 1]
    decoder_forwards = {"n": 0}
    family_decoder = loop.model.get_decoder() if hasattr(loop.model, "get_decoder") else loop.model
    family_decoder.register_forward_pre_hook(lambda *a: decoder_forwards.__setitem__("n", decoder_forwards["n"] + 1))
    reps, backward, per_rep, steps, step_ms = [], [], [], [], []
    prof_table = translate_table = None
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
    for i, seg in enumerate(segments):
        with (torch_profile(activities=activities) if i == 2 else contextlib.nullcontext()) as tprof:
            _sync(args.device)
            decoder_forwards["n"] = 0
            t0 = time.perf_counter()
            draft = loop.translate(i, seg)
            _sync(args.device)
            translate_s = time.perf_counter() - t0
        n_steps = decoder_forwards["n"]
        if i == 2:
            translate_table = _profile_table(tprof, args.device, rows=10)
        profile = i == 1
        with (torch_profile(activities=activities) if profile else contextlib.nullcontext()) as prof:
            _sync(args.device)
            t0 = time.perf_counter()
            record = update(loop.model, loop.method, draft.pair, cfg.update)
            _sync(args.device)
            seconds = time.perf_counter() - t0
        draft.tuning.close()
        if profile:
            prof_table = _profile_table(prof, args.device)
        if i == 0:
            continue  # warm-up
        reps.append(record["repetitions"])
        backward.append(record["seconds_backward"] / max(record["repetitions"], 1))
        per_rep.append(seconds / max(record["repetitions"], 1))
        steps.append(n_steps)
        step_ms.append(1000.0 * translate_s / max(n_steps, 1))
    loop.timer.remove()
    del loop
    if args.device == "cuda":
        torch.cuda.empty_cache()
    return {"repetitions": statistics.mean(reps), "update_s_per_repetition": statistics.median(per_rep),
            "backward_s_per_repetition": statistics.median(backward), "decoder_steps": statistics.mean(steps),
            "translate_ms_per_step": statistics.median(step_ms), "profile": prof_table,
            "translate_profile": translate_table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="nllb-600m", choices=sorted(SETTINGS))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--segments", type=int, default=4)
    parser.add_argument("--variants", default="default,no-masters")
    parser.add_argument("--tiny", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    variants = args.variants.split(",")
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        from simpe.errors import ConfigError

        raise ConfigError(f"--variants: {', '.join(bad)} unknown; valid: {', '.join(VARIANTS)}")
    from simpe.models import shapes

    out: dict[str, Any] = {"shape": args.shape, "device": args.device, "dtype": args.dtype}
    with tempfile.TemporaryDirectory() as tmp:
        folder = shapes.write(args.shape, Path(tmp) / "model", **(TINY[args.shape] if args.tiny else {}))
        for variant in variants:
            result = run_variant(args, folder, variant, Path(tmp) / "runs")
            out[variant] = result
            print(f"== {args.shape} {args.dtype} {args.device} {variant}: {result['repetitions']:.2f} repetitions, "
                  f"{1000 * result['update_s_per_repetition']:.1f} ms per repetition "
                  f"(backward {1000 * result['backward_s_per_repetition']:.1f} ms), "
                  f"{result['decoder_steps']:.1f} decoder steps at {result['translate_ms_per_step']:.2f} ms", flush=True)
            for what in ("profile", "translate_profile"):
                table = result[what]
                if table:
                    print(f"   {what} counts:", json.dumps(table["counts"]))
                    for row in table["top"]:
                        print(f"   {row['self_ms']:9.3f} ms  {row['cpu_ms']:9.3f} cpu ms  {row['calls']:6d}  {row['op'][:90]}")
    if args.out:
        args.out.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
