"""Train the embedded demo model: joint SentencePiece, a small MarianMTModel, a truecaser.

``make demo-model`` runs this on the LibreOffice train split with early stopping on dev
(``--dataset NAME`` takes the train, dev and stream splits of another registered dataset
instead, e.g. ``autodesk``: its train split holds no document of the stream) and saves everything ``load_model`` needs with ``save_pretrained``, plus the Moses
truecaser for the target language and a model card with the scores. It does not adapt
or simulate anything; the model it writes is loaded exactly like a hub Marian model. Its data is
``simpe.demo.data``'s, its folder and model card ``simpe.demo.card``'s; this module holds the training loop.
"""
from __future__ import annotations

import logging
import math
import random
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from simpe.config.tree import TrainConfig
from simpe.demo.card import finalize, load_state, translate
from simpe.demo.data import collate, split_pairs, token_batches, train_sentencepiece, train_truecaser
from simpe.errors import ConfigError

logger = logging.getLogger(__name__)


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


def save_atomic(obj: Any, path: Path) -> None:
    import torch

    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    tmp.replace(path)


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
        batches = token_batches(pairs, cfg.batch_tokens, random.Random(cfg.seed + state["epoch"]))
        while state["batch"] < len(batches) and not stop:
            model.train()
            input_ids, mask, labels = collate(pairs, batches[state["batch"]], pad_id, device)
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


