"""What the method tests of tests/unit share: a tiny teacher-forced pair, an update that always steps, and two views of a model."""
from __future__ import annotations

import torch

from simpe.config.files import defaults
from simpe.model import Pair

PAIR = Pair(torch.tensor([[5, 6, 7, 8, 0]]), torch.tensor([[9, 10, 11, 0]]))  # (1, src_len), (1, tgt_len)
HOT = defaults("update", lr=0.5, ppl_threshold=1.0, max_repeats=3)  # never satisfied: always three steps


def snapshot(model) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def logits(model, pair: Pair = PAIR) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=pair.input_ids, labels=pair.labels).logits  # (1, tgt_len, vocab)
