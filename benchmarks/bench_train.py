"""Training throughput of demo-model architectures (target tokens per second), side by side.

    python benchmarks/bench_train.py [--archs 256:3:3:1024 256:6:3:1024 ...] [--steps 40] [--threads N]

Each architecture (d_model:encoder_layers:decoder_layers:ffn_dim) trains ``--steps`` steps
(after 5 warm-up steps) on the same batches of the train split, tokenised with the demo
model's vocabulary, exactly as ``simpe train-demo-model`` steps (AdamW, label smoothing,
clipping).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace

import torch
from entry import run_main
from record import record
from transformers import MarianMTModel, MarianTokenizer

from simpe.config.files import defaults
from simpe.demo.data import collate, split_pairs, token_batches
from simpe.demo.train import make_optimizer, marian_config, train_step
from simpe.paths import DEFAULT_MODEL


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", nargs="+", default=["256:3:3:1024", "256:6:3:1024", "320:6:3:1280", "384:6:3:1536"])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = defaults("train")
    tok = MarianTokenizer(str(DEFAULT_MODEL / "source.spm"), str(DEFAULT_MODEL / "target.spm"), str(DEFAULT_MODEL / "vocab.json"))
    src, tgt = (side[:8000] for side in split_pairs(cfg, "train"))
    enc_src, enc_tgt = tok(src)["input_ids"], tok(text_target=tgt)["input_ids"]
    pairs = [(s, t) for s, t in zip(enc_src, enc_tgt) if len(s) <= cfg.max_len and len(t) <= cfg.max_len]
    batches = token_batches(pairs, cfg.batch_tokens, random.Random(0))[: args.steps + 5]
    print(f"{torch.get_num_threads()} torch threads, {cfg.batch_tokens} tokens per batch, {args.steps} steps")
    print("| d_model | layers | FFN | parameters | tgt tokens/s |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    figures = {}
    for arch in args.archs:
        d, enc, dec, ffn = (int(x) for x in arch.split(":"))
        arch_cfg = replace(cfg, d_model=d, encoder_layers=enc, decoder_layers=dec, ffn_dim=ffn)
        torch.manual_seed(0)
        model = MarianMTModel(marian_config(arch_cfg, tok))
        optimizer = make_optimizer(model, arch_cfg)
        model.train()
        tokens, start = 0, 0.0
        for i, batch in enumerate(batches):
            if i == 5:
                tokens, start = 0, time.perf_counter()
            input_ids, mask, labels = collate(pairs, batch, tok.pad_token_id, "cpu")
            train_step(model, optimizer, input_ids, mask, labels, arch_cfg.label_smoothing)
            tokens += int((labels != -100).sum())
        rate = tokens / (time.perf_counter() - start)
        params = sum(p.numel() for p in model.parameters())
        print(f"| {d} | {enc}+{dec} | {ffn} | {params / 1e6:.2f}M | {rate:.0f} |", flush=True)
        figures[arch] = f"{rate:.0f} target tokens/s ({params / 1e6:.2f}M parameters)"
    record("bench-train", figures)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
