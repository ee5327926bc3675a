"""Padding a pair to a length bucket does not change what the model computes (issue 67, static shapes): the source
right-padded with the pad id under an attention mask, the labels right-padded with -100, through the family's own
``pair_logits`` (``simpe.model.teacher_forced_logits``) and the update's loss, give the unpadded pair's logits, loss and
gradients, for every family (a causal LM's prompt is not padded: padding it on the left would move the rotary
positions of the tokens after it; its bucket is the target's padding, after every real token, which a causal mask
keeps out of every real position). Within float32 rounding, not bit for bit: the padded matrices are longer, and the
CPU's kernels block them otherwise."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from simpe.model import teacher_forced_logits
from simpe.models import family_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tiny_families import KINDS, PLAIN_TOKENS, STOP, token_model  # noqa: E402

BUCKET = 16  # the padded length of the source and of the labels


def _pair(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A (1, 5) source (a causal LM's prompt) and (1, 4) labels ending in the family's stop token."""
    plain = PLAIN_TOKENS[kind]
    source = torch.tensor([[plain[1], plain[4], plain[2], plain[7], STOP[kind]]])  # (1, 5)
    labels = torch.tensor([[plain[3], plain[5], plain[6], STOP[kind]]])  # (1, 4)
    return source, labels


def _loss_and_grads(model, source, labels, mask) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """(the logits at the labels' positions, the mean token NLL over the labels that are not -100, its gradients)."""
    params = [p for p in model.parameters() if p.requires_grad]
    logits = teacher_forced_logits(model, source, labels, attention_mask=mask)  # (1, labels, vocab)
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.view(-1))  # ignores -100
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return logits.detach(), loss.detach(), [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_pair_padded_to_a_bucket_gives_the_unpadded_logits_loss_and_gradients(kind: str) -> None:
    model = token_model(kind, 0)
    source, labels = _pair(kind)
    causal = not family_of(model).encoder_decoder
    logits, loss, grads = _loss_and_grads(model, source, labels, None)
    pad = model.config.pad_token_id
    if causal:  # the prompt as it is, with a mask of ones (the family extends it over the target)
        padded_source, mask = source, torch.ones_like(source)
    else:
        padded_source = torch.full((1, BUCKET), pad, dtype=torch.long)  # (1, BUCKET)
        padded_source[:, : source.shape[1]] = source
        mask = (torch.arange(BUCKET) < source.shape[1]).long().unsqueeze(0)  # (1, BUCKET)
    padded_labels = torch.full((1, BUCKET), -100, dtype=torch.long)  # (1, BUCKET)
    padded_labels[:, : labels.shape[1]] = labels
    padded_logits, padded_loss, padded_grads = _loss_and_grads(model, padded_source, padded_labels, mask)
    assert padded_logits.shape[1] == BUCKET
    torch.testing.assert_close(padded_logits[:, : labels.shape[1]], logits, rtol=0, atol=2e-6)
    torch.testing.assert_close(padded_loss, loss, rtol=1e-6, atol=0)
    for (name, _), got, want in zip(model.named_parameters(), padded_grads, grads):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=f"{kind}: {name}")


def test_the_padding_has_to_be_masked(kind: str = "m2m100") -> None:
    """The same padded source without its mask: the encoder attends to the pad positions and the logits move (the
    test above is not passing for want of an effect)."""
    model = token_model(kind, 0)
    source, labels = _pair(kind)
    padded = torch.full((1, BUCKET), model.config.pad_token_id, dtype=torch.long)  # (1, BUCKET)
    padded[:, : source.shape[1]] = source
    with torch.no_grad():
        plain = teacher_forced_logits(model, source, labels)
        unmasked = teacher_forced_logits(model, padded, labels)
    assert float((plain - unmasked).abs().max()) > 1e-3
