"""Train the embedded demo model: joint SentencePiece, a small MarianMTModel, a truecaser.

``make demo-model`` runs this on the LibreOffice train split with early stopping on dev
(``--dataset NAME`` takes the train, dev and stream splits of another registered dataset
instead, e.g. ``autodesk``: its train split holds no document of the stream) and saves everything ``load_model`` needs with ``save_pretrained``, plus the Moses
truecaser for the target language and a model card with the scores. It does not adapt
or simulate anything; the model it writes is loaded exactly like a hub Marian model.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import platform
import random
import shlex
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from simpe.config import TrainConfig
from simpe.configfile import defaults
from simpe.errors import ConfigError, DataError
from simpe.textfile import read_lines

logger = logging.getLogger(__name__)

SPECIALS = ("</s>", "<unk>")  # ids 0 and 1, as in the OPUS-MT vocabularies; <pad> is last


# Settings that may change when a run is resumed: where it runs and how long it may go on.
# max_steps and decay_steps may change only while the steps already taken had the same learning
# rates under both settings (check_resumable).
RESUMABLE_CHANGES = ("max_minutes", "max_steps", "decay_steps", "patience", "out_dir", "device", "threads")


def learning_rate(cfg: TrainConfig, step: int) -> float:
    """The learning rate of update ``step`` (0-based): linear warmup, then the inverse square root
    of the step; with ``decay_steps``, the last ``decay_steps`` of ``max_steps`` fall linearly from
    the value at the start of the decay to 0 (the last update gets 1/decay_steps of it)."""
    def rsqrt(s: int) -> float:
        return cfg.lr * min((s + 1) / cfg.warmup_steps, math.sqrt(cfg.warmup_steps / (s + 1)))

    start = decay_start(cfg.max_steps, cfg.decay_steps)
    if step >= start:
        return rsqrt(start) * (cfg.max_steps - step) / cfg.decay_steps
    return rsqrt(step)


def decay_start(max_steps: int, decay_steps: int) -> float:
    """The first step whose learning rate decays linearly (infinite without ``decay_steps``)."""
    return max_steps - decay_steps if decay_steps else math.inf


def check_config(cfg: TrainConfig) -> None:
    if cfg.decay_steps and not 0 < cfg.decay_steps <= cfg.max_steps:
        raise ConfigError(f"decay_steps={cfg.decay_steps}: must be 0 or between 1 and max_steps ({cfg.max_steps}); "
                          "the decay ends at max_steps, so it needs --max-steps")


def check_resumable(saved: dict[str, Any], cfg: TrainConfig, step: int = 0) -> None:
    """Refuse to resume a checkpoint trained with other settings (only RESUMABLE_CHANGES may differ,
    and max_steps / decay_steps only while the ``step`` updates taken so far had the same learning rates)."""
    from simpe.errors import ConfigError

    current = asdict(cfg)
    saved = {"decay_steps": 0, **saved}  # checkpoints from before decay_steps had none
    differ = sorted(k for k in current if k not in RESUMABLE_CHANGES and saved.get(k) != current[k])
    if differ:
        raise ConfigError("cannot --resume: the checkpoint was trained with other settings ("
                          + ", ".join(f"{k}={saved.get(k)!r}, now {current[k]!r}" for k in differ)
                          + f"); resumable changes are {', '.join(RESUMABLE_CHANGES)}")
    old, new = decay_start(saved["max_steps"], saved["decay_steps"]), decay_start(cfg.max_steps, cfg.decay_steps)
    if old != new and step > min(old, new):
        raise ConfigError(f"cannot --resume: the checkpoint is at step {step}, past the start of the learning-rate decay "
                          f"(step {min(old, new):.0f}); max_steps={saved['max_steps']}, decay_steps={saved['decay_steps']} "
                          f"would now be max_steps={cfg.max_steps}, decay_steps={cfg.decay_steps}")


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


def save_atomic(obj: Any, path: Path) -> None:
    import torch

    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    tmp.replace(path)


def _read_lines(path: Path) -> list[str]:
    if not path.exists():
        raise DataError(f"missing {path}; run `make corpus` first")
    return read_lines(path, "corpus file")


def split_pairs(cfg: TrainConfig, split: str) -> tuple[list[str], list[str]]:
    """(sources, targets) of a split: ``data_dir/<split>.en|.de`` for libreoffice, else the dataset's split (empty pairs skipped)."""
    if cfg.dataset == "libreoffice":
        data = Path(cfg.data_dir)
        return _read_lines(data / f"{split}.en"), _read_lines(data / f"{split}.de")
    from simpe.datasets import DATASETS

    segments = DATASETS.build(cfg.dataset).load(split, skip_empty=True)
    return [s.source for s in segments], [s.reference for s in segments]


def _sha256(lines: list[str]) -> str:
    return hashlib.sha256("".join(line + "\n" for line in lines).encode("utf-8")).hexdigest()


def train_sentencepiece(cfg: TrainConfig, texts: list[str], out: Path) -> None:
    """Train the joint unigram SentencePiece model and write source/target.spm + vocab.json."""
    import sentencepiece as spm

    out.mkdir(parents=True, exist_ok=True)
    corpus = out / "spm_input.txt"
    corpus.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    prefix = out / "spm"
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(prefix), vocab_size=cfg.vocab_size - 3 + 1,  # +<unk> -> -3 specials +1
        model_type="unigram", character_coverage=1.0, unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1,
        shuffle_input_sentence=False, num_threads=1, minloglevel=2,
    )
    corpus.unlink()
    processor = spm.SentencePieceProcessor(model_file=str(prefix) + ".model")
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size()) if i != processor.unk_id()]
    vocab = {tok: i for i, tok in enumerate(SPECIALS)}
    for piece in pieces:
        vocab.setdefault(piece, len(vocab))
    vocab["<pad>"] = len(vocab)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False, indent=0), encoding="utf-8")
    data = (str(prefix) + ".model")
    for name in ("source.spm", "target.spm"):
        (out / name).write_bytes(Path(data).read_bytes())
    Path(data).unlink()
    Path(str(prefix) + ".vocab").unlink()


def train_truecaser(lines: list[str], lang: str, path: Path) -> None:
    """Train the Moses truecaser on Moses-tokenised target-side text and save it."""
    from sacremoses import MosesTokenizer, MosesTruecaser

    tok = MosesTokenizer(lang=lang)
    docs = [tok.tokenize(line, escape=False) for line in lines]
    MosesTruecaser().train(docs, save_to=str(path))


def _batches(pairs: list[tuple[list[int], list[int]]], batch_tokens: int, rng: random.Random) -> list[list[int]]:
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][1]), len(pairs[i][0]), i))
    batches, current, longest = [], [], 0
    for i in order:
        longest_new = max(longest, len(pairs[i][0]), len(pairs[i][1]))
        if current and longest_new * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest_new = [], max(len(pairs[i][0]), len(pairs[i][1]))
        current.append(i)
        longest = longest_new
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def _collate(pairs, idx, pad_id, device):
    import torch

    src = [pairs[i][0] for i in idx]
    tgt = [pairs[i][1] for i in idx]
    s_len, t_len = max(map(len, src)), max(map(len, tgt))
    input_ids = torch.full((len(idx), s_len), pad_id, dtype=torch.long)  # (batch, src_len)
    labels = torch.full((len(idx), t_len), -100, dtype=torch.long)  # (batch, tgt_len)
    for row, (s, t) in enumerate(zip(src, tgt)):
        input_ids[row, : len(s)] = torch.tensor(s)
        labels[row, : len(t)] = torch.tensor(t)
    return input_ids.to(device), (input_ids != pad_id).to(device), labels.to(device)


def marian_config(cfg: TrainConfig, tokenizer: Any) -> Any:
    """The ``MarianConfig`` of the demo model's architecture (``cfg``) for ``tokenizer``'s vocabulary."""
    from transformers import MarianConfig

    pad_id = tokenizer.pad_token_id
    return MarianConfig(
        vocab_size=len(tokenizer.encoder), d_model=cfg.d_model, encoder_layers=cfg.encoder_layers,
        decoder_layers=cfg.decoder_layers, encoder_attention_heads=cfg.heads, decoder_attention_heads=cfg.heads,
        encoder_ffn_dim=cfg.ffn_dim, decoder_ffn_dim=cfg.ffn_dim, max_position_embeddings=512, dropout=cfg.dropout,
        attention_dropout=0.0, activation_dropout=0.0, activation_function="swish", pad_token_id=pad_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=pad_id, forced_eos_token_id=tokenizer.eos_token_id,
        scale_embedding=True, share_encoder_decoder_embeddings=True,
    )


def make_optimizer(model: Any, cfg: TrainConfig) -> Any:
    import torch

    return torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.0)


def train_step(model: Any, optimizer: Any, input_ids: Any, mask: Any, labels: Any, label_smoothing: float) -> float:
    """One step: label-smoothed cross-entropy, gradients clipped to norm 1, the optimiser's step; returns the loss."""
    import torch

    from simpe.model import teacher_forced_logits

    logits = teacher_forced_logits(model, input_ids, labels, attention_mask=mask)  # (batch, tgt_len, vocab)
    loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1),
                                             ignore_index=-100, label_smoothing=label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


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


def _tokenizer_and_model(cfg: TrainConfig, out: Path, train_src: list[str], train_tgt: list[str], resume: bool,
                         device: Any) -> tuple[Any, Any]:
    """The tokenizer (SentencePiece trained on the train split, with the truecaser, unless a resumed run has them)
    and a fresh MarianMTModel of ``cfg``'s shape on ``device``."""
    from transformers import GenerationConfig, MarianMTModel, MarianTokenizer

    if not (resume and (out / "vocab.json").exists()):
        logger.info("training SentencePiece (%d pieces) on %d train pairs", cfg.vocab_size, len(train_src))
        train_sentencepiece(cfg, train_src + train_tgt, out)
        logger.info("training the German truecaser")
        train_truecaser(train_tgt, "de", out / "truecase.de.model")
    tokenizer = MarianTokenizer(str(out / "source.spm"), str(out / "target.spm"), str(out / "vocab.json"),
                                source_lang="en", target_lang="de", model_max_length=512)
    pad_id = tokenizer.pad_token_id
    model = MarianMTModel(marian_config(cfg, tokenizer)).to(device)
    model.generation_config = GenerationConfig(
        num_beams=5, max_length=256, bad_words_ids=[[pad_id]], pad_token_id=pad_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=pad_id, forced_eos_token_id=tokenizer.eos_token_id)
    n_params = sum(p.numel() for p in model.parameters())
    logger.info("model: %d parameters (%.2fM), vocabulary %d, device %s", n_params, n_params / 1e6, len(tokenizer.encoder),
                device)
    return tokenizer, model


def _evaluate(cfg: TrainConfig, model: Any, tokenizer: Any, dev: tuple[list[str], list[str]], state: dict[str, Any],
              ckpt_dir: Path, dev_bleu: Any, window: float, train_loss: float, tokens_seen: int) -> bool:
    """One evaluation: dev greedy BLEU into ``state["history"]``, the best and the last ``cfg.average`` checkpoints
    kept; whether training stops here (patience, time budget or steps reached)."""
    import torch

    hyps = translate(model, tokenizer, dev[0], beam_size=1)
    bleu = dev_bleu.corpus_score(hyps, dev[1])
    state["history"].append({"step": state["step"], "epoch": state["epoch"], "dev_greedy_bleu": round(bleu, 2),
                             "minutes": round(state["train_seconds"] / 60, 1), "train_loss": round(train_loss, 3),
                             "tgt_tokens_per_s": round(tokens_seen / max(window, 1e-9))})
    if bleu > state["best_bleu"]:
        state.update(best_bleu=bleu, best_step=state["step"], bad_evals=0)
        torch.save(model.state_dict(), ckpt_dir / "best.pt")
    else:
        state["bad_evals"] += 1
    torch.save(model.state_dict(), ckpt_dir / f"step-{state['step']}.pt")
    state["eval_steps"].append(state["step"])
    for old in state["eval_steps"][:-max(cfg.average, 1)]:
        (ckpt_dir / f"step-{old}.pt").unlink(missing_ok=True)
    state["eval_steps"] = state["eval_steps"][-max(cfg.average, 1):]
    logger.info("eval step %d: dev greedy BLEU %.2f (best %.2f at %d), %.1f min trained", state["step"], bleu,
                state["best_bleu"], state["best_step"], state["train_seconds"] / 60)
    if state["bad_evals"] >= cfg.patience:
        logger.info("early stopping: no dev improvement in %d evaluations", cfg.patience)
        return True
    if 0 < cfg.max_minutes <= state["train_seconds"] / 60:
        logger.info("time budget of %.0f minutes reached", cfg.max_minutes)
        return True
    if 0 < cfg.max_steps <= state["step"]:
        logger.info("%d steps reached", cfg.max_steps)
        return True
    return False


def train(cfg: TrainConfig, resume: bool = False) -> dict[str, Any]:
    """Train the demo model end to end (see the module docstring); returns the model card dict."""
    import torch

    from simpe.model import resolve_device

    check_config(cfg)
    started = time.time()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)
    random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    out = Path(cfg.out_dir)
    ckpt_dir = out / "checkpoints"
    train_src, train_tgt = split_pairs(cfg, "train")
    dev_src, dev_tgt = split_pairs(cfg, "dev")

    tokenizer, model = _tokenizer_and_model(cfg, out, train_src, train_tgt, resume, device)
    pad_id = tokenizer.pad_token_id
    n_params = sum(p.numel() for p in model.parameters())

    enc_src = tokenizer(train_src, truncation=False)["input_ids"]
    enc_tgt = tokenizer(text_target=train_tgt, truncation=False)["input_ids"]
    pairs = [(s, t) for s, t in zip(enc_src, enc_tgt) if len(s) <= cfg.max_len and len(t) <= cfg.max_len]
    logger.info("training pairs: %d of %d (max %d tokens per side)", len(pairs), len(enc_src), cfg.max_len)

    optimizer = make_optimizer(model, cfg)

    state = _resumed(cfg, ckpt_dir, model, optimizer, device) if resume and (ckpt_dir / "last.pt").exists() else {
        "step": 0, "epoch": 0, "batch": 0, "best_bleu": -1.0, "best_step": 0, "bad_evals": 0, "train_seconds": 0.0,
        "history": [], "eval_steps": []}
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    eval_idx = list(range(min(cfg.eval_segments, len(dev_src))))
    dev = ([dev_src[i] for i in eval_idx], [dev_tgt[i] for i in eval_idx])  # the evaluations' sources and references
    tokens_seen, loss_sum, loss_steps, window_start = 0, 0.0, 0, time.time()
    stop = (0 < cfg.max_minutes <= state["train_seconds"] / 60 or state["bad_evals"] >= cfg.patience
            or 0 < cfg.max_steps <= state["step"])
    from simpe.metrics import METRICS

    dev_bleu = METRICS.build("bleu")

    while not stop:
        # One epoch's batches depend only on (seed, epoch), and the position in it is saved with every
        # checkpoint, so a resumed run sees exactly the batches an uninterrupted one would.
        batches = _batches(pairs, cfg.batch_tokens, random.Random(cfg.seed + state["epoch"]))
        while state["batch"] < len(batches) and not stop:
            model.train()
            input_ids, mask, labels = _collate(pairs, batches[state["batch"]], pad_id, device)
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(cfg, state["step"])
            loss = train_step(model, optimizer, input_ids, mask, labels, cfg.label_smoothing)
            state["step"] += 1
            state["batch"] += 1
            tokens_seen += int((labels != -100).sum())
            loss_sum, loss_steps = loss_sum + loss, loss_steps + 1
            if state["step"] % 50 == 0:
                elapsed = time.time() - window_start
                logger.info("step %d epoch %d loss %.3f lr %.2e %.0f tgt tok/s", state["step"], state["epoch"], loss,
                            learning_rate(cfg, state["step"]), tokens_seen / max(elapsed, 1e-9))
            if state["step"] % cfg.eval_every == 0:
                window = time.time() - window_start
                state["train_seconds"] += window
                stop = _evaluate(cfg, model, tokenizer, dev, state, ckpt_dir, dev_bleu, window, loss_sum / max(loss_steps, 1),
                                 tokens_seen)
                save_atomic({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "state": state,
                             "rng": torch.get_rng_state(), "config": asdict(cfg)}, ckpt_dir / "last.pt")
                tokens_seen, loss_sum, loss_steps, window_start = 0, 0.0, 0, time.time()
        if not stop and state["batch"] >= len(batches):
            state["epoch"], state["batch"] = state["epoch"] + 1, 0

    return finalize(cfg, model, tokenizer, state, n_params, len(pairs), started, device)


def _resumed(cfg: TrainConfig, ckpt_dir: Path, model: Any, optimizer: Any, device: Any) -> dict[str, Any]:
    """The training state of the last checkpoint, loaded into ``model`` and ``optimizer`` with torch's RNG state,
    once ``check_resumable`` has found ``cfg`` the same in every setting that changes the model."""
    import torch

    saved = load_state(ckpt_dir / "last.pt", device)
    check_resumable(saved.get("config", {}), cfg, saved["state"]["step"])
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    torch.set_rng_state(saved["rng"])
    state = saved["state"]
    logger.info("resumed at step %d (epoch %d, batch %d; best dev BLEU %.2f at step %d, %.1f min trained)",
                state["step"], state["epoch"], state["batch"], state["best_bleu"], state["best_step"],
                state["train_seconds"] / 60)
    return state


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
                 {"train.en": _sha256(train_src), "train.de": _sha256(train_tgt), "dev.en": _sha256(dev_src), "dev.de": _sha256(dev_tgt)}),
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
