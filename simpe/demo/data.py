"""The demo model's training data: the dataset's splits as (English, German) lines, the joint SentencePiece model and
the Moses truecaser trained on them, and the token-budget batches a training step takes."""
from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from simpe.config.tree import TrainConfig
from simpe.errors import DataError
from simpe.textfile import read_lines

SPECIALS = ("</s>", "<unk>")  # ids 0 and 1, as in the OPUS-MT vocabularies; <pad> is last


def read_pair_lines(path: Path) -> list[str]:
    if not path.exists():
        raise DataError(f"missing {path}; run `make corpus` first")
    return read_lines(path, "corpus file")


def split_pairs(cfg: TrainConfig, split: str) -> tuple[list[str], list[str]]:
    """(sources, targets) of a split: ``data_dir/<split>.en|.de`` for libreoffice, else the dataset's split (empty pairs skipped)."""
    if cfg.dataset == "libreoffice":
        data = Path(cfg.data_dir)
        return read_pair_lines(data / f"{split}.en"), read_pair_lines(data / f"{split}.de")
    from simpe.datasets import DATASETS

    segments = DATASETS.build(cfg.dataset).load(split, skip_empty=True)
    return [s.source for s in segments], [s.reference for s in segments]


def sha256_lines(lines: list[str]) -> str:
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


def token_batches(pairs: list[tuple[list[int], list[int]]], batch_tokens: int, rng: random.Random) -> list[list[int]]:
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


def collate(pairs, idx, pad_id, device):
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
