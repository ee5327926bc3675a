"""The demo model's folder once trained: the weights chosen (the best checkpoint or the mean of the last ones), saved
with ``save_pretrained``, scored on dev and the stream's first 1,000 segments (beam 5, sacreBLEU), and the model card
(``model_card.json`` and README.md) with the command that reproduces it."""
from __future__ import annotations

import hashlib
import json
import logging
import platform
import shlex
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from simpe.config.files import defaults
from simpe.config.tree import TrainConfig
from simpe.demo.data import sha256_lines, split_pairs
from simpe.errors import ConfigError

logger = logging.getLogger(__name__)


def reproduce_command(cfg: TrainConfig, steps: int | None = None) -> str:
    """The one command that trains this model again: ``simpe train-demo-model`` with every non-default setting.

    With ``steps`` (where training stopped) the time budget becomes that step count: minutes
    depend on the machine, steps do not, so the command gives the same weights anywhere
    (up to the last bits of floats on another CPU or thread count).
    """
    if steps is not None:
        # a decay that had not begun when training stopped (time or patience) took no part: off, so steps suffice
        decay = 0 if cfg.decay_steps and cfg.max_steps - cfg.decay_steps >= steps else cfg.decay_steps
        cfg = replace(cfg, max_steps=steps, max_minutes=0.0, decay_steps=decay)
    default = asdict(defaults("train"))
    args = [f"--{'train-seed' if k == 'seed' else k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in asdict(cfg).items()
            if v != default[k] and k not in ("out_dir", "device", "threads")]
    return " ".join(["python -m simpe train-demo-model", *args])


def translate(model: Any, tokenizer: Any, sources: list[str], beam_size: int, batch_size: int = 32, max_new_tokens: int = 256) -> list[str]:
    """Batch-translate with ``generate`` (used for the model card and early stopping)."""
    import torch

    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    out: list[str] = [""] * len(sources)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            enc = tokenizer([sources[i] for i in idx], return_tensors="pt", padding=True, truncation=True).to(model.device)
            gen = model.generate(**enc, num_beams=beam_size, max_new_tokens=max_new_tokens, do_sample=False)
            for i, text in zip(idx, tokenizer.batch_decode(gen, skip_special_tokens=True)):
                out[i] = text
    return out


def score_card(hyps: list[str], refs: list[str]) -> dict[str, Any]:
    """Corpus BLEU, chrF and TER (the metric stack, i.e. sacreBLEU) with their signatures."""
    from simpe.metrics import METRICS

    result = {}
    for name in ("bleu", "chrf", "ter"):
        metric = METRICS.build(name)
        result[name] = {"score": round(metric.corpus_score(hyps, refs), 2), "signature": metric.signature()}
    return result


def machine_description(device: Any) -> str:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA), host CPU {cpu}"
    return f"{cpu}, {torch.get_num_threads()} torch threads"


def finalize(cfg: TrainConfig, model: Any, tokenizer: Any, state: dict[str, Any], n_params: int, n_pairs: int,
             started: float, device: Any) -> dict[str, Any]:
    """Choose the weights (best checkpoint or the mean of the last ``average``), save them with
    ``save_pretrained``, score them, write the model card."""
    import torch

    out = Path(cfg.out_dir)
    ckpt_dir = out / "checkpoints"
    dev_src, dev_tgt = split_pairs(cfg, "dev")
    eval_src, eval_tgt = dev_src[:cfg.eval_segments], dev_tgt[:cfg.eval_segments]
    chosen = {"weights": f"best checkpoint (step {state['best_step']})", "dev_greedy_bleu": round(state["best_bleu"], 2)}
    kept = [ckpt_dir / f"step-{step}.pt" for step in state.get("eval_steps", [])]
    kept = [path for path in kept if path.exists()]
    if cfg.average > 1 and len(kept) >= 2:
        states = [load_state(path, device) for path in kept]
        mean = {k: (sum(sd[k].float() for sd in states) / len(states)).to(states[0][k].dtype)
                if states[0][k].is_floating_point() else states[0][k] for k in states[0]}
        model.load_state_dict(mean)
        from simpe.metrics import METRICS

        bleu = METRICS.build("bleu").corpus_score(translate(model, tokenizer, eval_src, beam_size=1), eval_tgt)
        averaged = f"mean of the last {len(kept)} evaluation checkpoints (steps {', '.join(p.stem[5:] for p in kept)})"
        logger.info("%s: dev greedy BLEU %.2f against %.2f for the best checkpoint", averaged, bleu, state["best_bleu"])
        chosen["average"] = {"weights": averaged, "dev_greedy_bleu": round(bleu, 2)}
        if bleu > state["best_bleu"]:
            chosen.update(weights=averaged, dev_greedy_bleu=round(bleu, 2))
    if not chosen["weights"].startswith("mean"):
        model.load_state_dict(load_state(ckpt_dir / "best.pt", device))
    model.eval()
    model.config.dropout = 0.0
    from simpe.models.base import quiet_progress

    with quiet_progress():  # safetensors is the default of transformers 4 and 5 (5 has no safe_serialization switch)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
    train_src, train_tgt = split_pairs(cfg, "train")
    stream_src, stream_tgt = (side[:1000] for side in split_pairs(cfg, "stream"))
    logger.info("scoring dev and the first %d stream segments with beam 5", len(stream_src))
    t0 = time.time()
    scores = {
        "dev": score_card(translate(model, tokenizer, dev_src, beam_size=5), dev_tgt),
        "stream_first_1000": score_card(translate(model, tokenizer, stream_src, beam_size=5), stream_tgt),
    }
    card = {
        "command": reproduce_command(cfg, steps=state["step"]),
        "config": asdict(cfg),
        "data": ({name: hashlib.sha256((Path(cfg.data_dir) / name).read_bytes()).hexdigest() for name in ("train.en", "train.de", "dev.en", "dev.de")}
                 if cfg.dataset == "libreoffice" else  # the dataset's splits as loaded, one segment per line
                 {"train.en": sha256_lines(train_src), "train.de": sha256_lines(train_tgt), "dev.en": sha256_lines(dev_src), "dev.de": sha256_lines(dev_tgt)}),
        "train_pairs": n_pairs,
        "parameters": n_params,
        "best_step": state["best_step"],
        "best_dev_greedy_bleu": round(state["best_bleu"], 2),
        "weights": chosen,
        "training_minutes": round(state["train_seconds"] / 60, 1),
        "total_minutes": round((time.time() - started) / 60, 1),
        "eval_seconds": round(time.time() - t0, 1),
        "machine": machine_description(device),
        "torch": torch.__version__,
        "scores_beam5": scores,
        "history": state["history"],
    }
    (out / "model_card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    write_model_card(out, card)
    return card


def load_state(path: Path, device: Any) -> Any:
    """A training checkpoint, read with ``weights_only=True`` (tensors, numbers, strings, containers; never code)."""
    import torch

    try:
        return torch.load(path, map_location=device, weights_only=True)
    except Exception as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"{path} is not a training checkpoint simpe can read safely ({detail[:160]}); "
                          "train again without --resume") from None


def write_model_card(out: Path, card: dict[str, Any]) -> None:
    """Render ``model_card.json`` as the model folder's README.md."""
    cfg = card["config"]
    data = cfg["data_dir"] if cfg.get("dataset", "libreoffice") == "libreoffice" else f"dataset {cfg['dataset']}"
    lines = [
        "# simpe demo model: Marian en->de on LibreOffice 7.4 help and UI, and GNOME help and software catalogs",
        "",
        "A small `MarianMTModel` with a joint SentencePiece vocabulary, trained by simpe so that",
        "the harness runs offline. Load it like any Marian checkpoint:",
        "`MarianMTModel.from_pretrained('models/demo-en-de')`.",
        "",
        f"- command: `{card['command']}` (the steps this model trained for, whatever the time budget was; "
        "writes to `-o/--out`, default `models/demo-en-de`; an interrupted run goes on with `--resume`)",
        f"- data: `{data}` train split ({card['train_pairs']} pairs up to {cfg['max_len']} tokens); "
        f"sha256 train.en `{card['data']['train.en'][:16]}…`, train.de `{card['data']['train.de'][:16]}…`",
        f"- seed: {cfg['seed']}",
        f"- architecture: d_model {cfg['d_model']}, {cfg['encoder_layers']} encoder + {cfg['decoder_layers']} decoder layers, {cfg['heads']} heads, "
        f"FFN {cfg['ffn_dim']}, joint unigram SentencePiece {cfg['vocab_size']}, tied embeddings",
        f"- parameters: {card['parameters']:,}",
        f"- training: {card['training_minutes']} minutes of training ({card['total_minutes']} in the last process), "
        f"{card['history'][-1]['step'] if card['history'] else 0} steps, best step {card['best_step']} "
        f"(dev greedy BLEU {card['best_dev_greedy_bleu']} on the first {cfg['eval_segments']} dev segments), "
        f"AdamW lr {cfg['lr']}, warmup {cfg['warmup_steps']}, "
        + (f"inverse square root, then linearly to 0 over the last {cfg['decay_steps']} steps, "
           if cfg.get("decay_steps") else "inverse square root, ")
        + f"{cfg['batch_tokens']} tokens per batch, "
        f"dropout {cfg['dropout']}, label smoothing {cfg['label_smoothing']}",
        f"- weights: {card.get('weights', {}).get('weights', 'best checkpoint')}"
        + (f" (dev greedy BLEU {card['weights']['average']['dev_greedy_bleu']} for the mean of the last checkpoints)"
           if "average" in card.get("weights", {}) else ""),
        f"- machine: {card['machine']}, torch {card['torch']}",
        "- truecaser: `truecase.de.model` (sacremoses MosesTruecaser on the Moses-tokenised German train side)",
        "",
        "## Scores (beam 5, sacreBLEU)",
        "",
        "| set | BLEU | chrF | TER |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, s in card["scores_beam5"].items():
        lines.append(f"| {name} | {s['bleu']['score']} | {s['chrf']['score']} | {s['ter']['score']} |")
    lines += ["", "Signatures:", ""]
    any_scores = next(iter(card["scores_beam5"].values()))
    for metric in ("bleu", "chrf", "ter"):
        lines.append(f"- {metric}: `{any_scores[metric]['signature']}`")
    if card["history"]:
        lines += ["", "## Dev BLEU against training time (greedy, first "
                  f"{cfg['eval_segments']} dev segments)", "",
                  "| step | epoch | minutes | train loss | tgt tokens/s | dev BLEU |", "| ---: | ---: | ---: | ---: | ---: | ---: |"]
        for h in card["history"]:
            lines.append(f"| {h['step']} | {h.get('epoch', '')} | {h['minutes']} | {h.get('train_loss', '')} | "
                         f"{h.get('tgt_tokens_per_s', '')} | {h['dev_greedy_bleu']} |")
    if card.get("notes"):  # written by hand into model_card.json for this model (a retrained model starts without)
        lines += ["", "## Notes", ""] + [f"- {note}" for note in card["notes"]]
    lines += ["", "The sources of the data, what each adds and their licences: `data/libreoffice/NOTICE` and "
              "`data/libreoffice/manifest.json`.", ""]
    (out / "README.md").write_text("\n".join(lines))
