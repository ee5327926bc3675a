"""Decoders on tiny seeded Marian models: beam equals Hugging Face's beam search, beam size 1 equals
greedy, min-heap beam never scores below beam, scores are raw log P(y|x), pad is never produced,
seeded sampling repeats and follows the model's distribution, MBR picks the expected-utility argmax.

Also the helpers the ranking and rank-CLI tests share: a tiny Marian model with the demo model's
real SentencePiece vocabulary, trained for a few dozen steps on four sentence pairs so that its top
hypotheses are real, varied translations.
"""
from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest
import torch
from messages import raises_naming
from transformers.modeling_outputs import BaseModelOutput

from simpe.decoders import DECODERS
from simpe.decoders.beam import BeamDecoder
from simpe.decoders.greedy import GreedyDecoder
from simpe.decoders.heap_beam import HeapBeamDecoder
from simpe.decoders.incremental import LengthLimit
from simpe.decoders.mbr import MbrDecoder
from simpe.decoders.sampling import SamplingDecoder
from simpe.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "models" / "demo-en-de"
SOURCES = ["Click OK to close the dialog.", "Select the cell range.", "The function returns zero.", "Press Enter."]
REFERENCES = ["Klicken Sie auf OK, um den Dialog zu schließen.", "Wählen Sie den Zellbereich aus.",
              "Die Funktion gibt null zurück.", "Drücken Sie die Eingabetaste."]
_TEXT_MODELS: dict[tuple[int, int], object] = {}
TEXT_STEPS = (30, 55, 80)


def text_tokenizer():
    """The demo model's MarianTokenizer, built from its SentencePiece files (no trained model needed)."""
    from transformers import MarianTokenizer

    return MarianTokenizer(str(DEMO / "source.spm"), str(DEMO / "target.spm"), str(DEMO / "vocab.json"),
                           source_lang="en", target_lang="de")


def make_text_model(seed: int = 0, steps: int = 80):
    """A tiny MarianMTModel over the real 8k vocabulary, trained ``steps`` Adam steps on SOURCES/REFERENCES.

    One training run per seed, with copies kept after each of TEXT_STEPS, cached for the session;
    callers must not change the parameters of what they get.
    """
    import copy

    from transformers import MarianConfig, MarianMTModel

    assert steps in TEXT_STEPS, steps
    if (seed, steps) not in _TEXT_MODELS:
        tok = text_tokenizer()
        pad = tok.pad_token_id
        torch.manual_seed(seed)
        cfg = MarianConfig(vocab_size=len(tok.encoder), d_model=16, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                           max_position_embeddings=128, pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad,
                           dropout=0.0, share_encoder_decoder_embeddings=True)
        model = MarianMTModel(cfg)
        batch = tok(SOURCES, text_target=REFERENCES, padding=True, return_tensors="pt")
        labels = batch["labels"].masked_fill(batch["labels"] == pad, -100)  # (4, tgt_len)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        for step in range(1, max(TEXT_STEPS) + 1):
            loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step in TEXT_STEPS:
                _TEXT_MODELS[(seed, step)] = copy.deepcopy(model).eval()
    return _TEXT_MODELS[(seed, steps)]


def peaky_tiny(seed: int, vocab: int = 30, scale: float = 3.0, eos_bias: float = 2.0):
    """A tiny random Marian (pad = vocab - 1 = decoder start, eos = 0) whose outputs end within a few tokens."""
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(seed)
    cfg = MarianConfig(vocab_size=vocab, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
                       pad_token_id=vocab - 1, eos_token_id=0, decoder_start_token_id=vocab - 1, forced_eos_token_id=None,
                       dropout=0.0)
    model = MarianMTModel(cfg).eval()
    with torch.no_grad():
        model.model.shared.weight.mul_(scale)
        model.final_logits_bias[0, 0] = eos_bias
    return model


def teacher_forced_score(model, input_ids, tokens) -> float:
    """log P(tokens | source) by one full forward pass (no cache), summed in float64."""
    pad = model.config.decoder_start_token_id
    with torch.inference_mode():
        enc = model.get_encoder()(input_ids=input_ids).last_hidden_state  # (1, src_len, d_model)
        target = torch.tensor([list(tokens)])  # (1, tgt_len)
        dec_in = torch.cat([torch.tensor([[pad]]), target[:, :-1]], dim=1)  # (1, tgt_len)
        logits = model(decoder_input_ids=dec_in, encoder_outputs=BaseModelOutput(last_hidden_state=enc)).logits  # (1, tgt_len, vocab)
        logp = torch.log_softmax(logits.float(), dim=-1)  # (1, tgt_len, vocab)
        return float(logp.gather(2, target.unsqueeze(2)).double().sum())


def source(seed: int, vocab: int = 30, length: int = 5) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    body = torch.randint(1, vocab - 1, (1, length), generator=gen)  # (1, length)
    return torch.cat([body, torch.zeros(1, 1, dtype=torch.long)], dim=1)  # (1, length + 1), ends in EOS


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: see conftest.py


LIMIT = dict(max_len_a=0.0, max_len_b=20, max_len_cap=20)


# ---------------------------------------------------------------- beam, greedy, heap beam
@pytest.mark.parametrize("seed", range(6))
def test_beam_equals_hugging_face_beam_search(seed: int) -> None:
    """Same hypotheses, order and scores as generate(num_beams=B, length_penalty=0, early_stopping=False)."""
    model = peaky_tiny(seed, scale=1.0 + seed % 3, eos_bias=2.0 + seed % 2)
    checked = 0
    for s in range(2):
        ids = source(seed * 10 + s)
        for beam_size in (1, 3, 5):
            ours = BeamDecoder(beam_size=beam_size, **LIMIT).decode(model, ids).hypotheses
            out = model.generate(ids, num_beams=beam_size, num_return_sequences=beam_size, length_penalty=0.0,
                                 early_stopping=False, max_length=40, bad_words_ids=[[29]], do_sample=False,
                                 output_scores=True, return_dict_in_generate=True, forced_eos_token_id=None)
            hf = []
            for row in out.sequences.tolist():
                row = row[1:]
                while row and row[-1] == 29:
                    row = row[:-1]
                hf.append(tuple(row))
            assert all(len(h.tokens) < 20 for h in ours) and all(len(t) < 20 for t in hf)  # the length limit plays no part
            assert [h.tokens for h in ours] == hf
            if beam_size > 1:
                assert [h.score for h in ours] == pytest.approx(out.sequences_scores.tolist(), abs=1e-4)
            checked += 1
    assert checked == 6


@pytest.mark.parametrize("seed", range(5))
def test_beam_one_is_greedy_and_heap_beam_is_never_worse(seed: int) -> None:
    model = peaky_tiny(seed, scale=1.5, eos_bias=1.0)
    for s in range(3):
        ids = source(100 + seed * 10 + s)
        greedy = GreedyDecoder(**LIMIT).decode(model, ids).hypotheses
        beam1 = BeamDecoder(beam_size=1, **LIMIT).decode(model, ids).hypotheses
        assert [h.tokens for h in greedy] == [h.tokens for h in beam1]  # same tokens, same score up to float noise
        assert [h.score for h in greedy] == pytest.approx([h.score for h in beam1], abs=1e-6)
        for width in (1, 2, 4, 8):
            beam = BeamDecoder(beam_size=width, **LIMIT).decode(model, ids).hypotheses
            heap = HeapBeamDecoder(beam_size=width, **LIMIT).decode(model, ids).hypotheses
            assert heap[0].score >= beam[0].score - 1e-6
            assert len(heap) <= width and len(beam) <= width
            # the heap holds every finished hypothesis of plain beam that scores above the heap's minimum
            heap_tokens = {h.tokens for h in heap}
            assert all(h.tokens in heap_tokens for h in beam if h.score > heap[-1].score + 1e-9)
            for hyps in (beam, heap):
                assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
                assert all(h.tokens[-1] == 0 and 0 not in h.tokens[:-1] for h in hyps)


def test_scores_are_raw_log_probabilities_and_pad_is_never_produced() -> None:
    model = peaky_tiny(3, scale=1.0, eos_bias=0.0)
    with torch.no_grad():
        model.final_logits_bias[0, 29] = 6.0  # the pad / decoder-start token is the model's favourite
    ids = source(7)
    for decoder in (GreedyDecoder(**LIMIT), BeamDecoder(beam_size=4, **LIMIT), HeapBeamDecoder(beam_size=4, **LIMIT),
                    SamplingDecoder(samples=20, seed=1, **LIMIT)):
        for hyp in decoder.decode(model, ids).hypotheses:
            assert 29 not in hyp.tokens and hyp.tokens[-1] == 0
            # not renormalised over the allowed tokens: the pad's probability mass stays lost
            assert hyp.score == pytest.approx(teacher_forced_score(model, ids, hyp.tokens), abs=1e-5)


def test_length_limit_and_forced_final_eos() -> None:
    model = peaky_tiny(1, scale=1.0, eos_bias=-8.0)  # EOS almost never chosen
    ids = source(3)  # 6 source tokens: max_len = floor(0.5 * 6 + 1) = 4
    limit = dict(max_len_a=0.5, max_len_b=1, max_len_cap=10)
    assert LengthLimit(0.5, 1, 10)(6) == 4 and LengthLimit(2.0, 10, 12)(6) == 12
    for decoder in (GreedyDecoder(**limit), BeamDecoder(beam_size=3, **limit), SamplingDecoder(samples=5, **limit)):
        for hyp in decoder.decode(model, ids).hypotheses:
            assert len(hyp.tokens) == 4 and hyp.tokens[-1] == 0
            assert hyp.score == pytest.approx(teacher_forced_score(model, ids, hyp.tokens), abs=1e-5)


def test_decoding_restores_train_mode_and_ignores_dropout() -> None:
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    cfg = MarianConfig(vocab_size=30, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
                       pad_token_id=29, eos_token_id=0, decoder_start_token_id=29, dropout=0.5)
    model = MarianMTModel(cfg)
    ids = source(1)
    model.eval()
    expected = BeamDecoder(beam_size=3, **LIMIT).decode(model, ids).hypotheses
    model.train()
    model.model.encoder.layers[0].eval()  # a submodule deliberately in eval mode stays so
    assert BeamDecoder(beam_size=3, **LIMIT).decode(model, ids).hypotheses == expected
    assert model.training and not model.model.encoder.layers[0].training and model.model.decoder.training


def test_decode_batch_and_registry_errors() -> None:
    model = peaky_tiny(2)
    batch = [source(1), source(2)]
    decoder = DECODERS.build("beam", beam_size=2, **LIMIT)
    # batched and one at a time: the same hypotheses, scores equal up to float noise (beam.py's promise)
    for together, alone in zip(decoder.decode_batch(model, batch), (decoder.decode(model, b) for b in batch)):
        assert [h.tokens for h in together.hypotheses] == [h.tokens for h in alone.hypotheses]
        assert [h.score for h in together.hypotheses] == pytest.approx([h.score for h in alone.hypotheses], abs=1e-5)
    assert set(DECODERS.names()) >= {"greedy", "beam", "heap_beam", "sampling", "topk", "topk_dfs", "mbr"}
    with pytest.raises(ConfigError, match="known:"):
        DECODERS.build("bean")
    with raises_naming(ConfigError, "'beam'", "beam_size, max_len_a"):
        DECODERS.build("beam", beam=5)
    with raises_naming(ConfigError, "'beam'", "beam_size", "integer", "'five'"):
        DECODERS.build("beam", beam_size="five")
    with pytest.raises(ConfigError, match=r"beam_size must be an integer in \[1, 10,000\]"):
        DECODERS.build("heap_beam", beam_size=0)
    with raises_naming(ConfigError, "'bleurt'", "bleu, chrf, chrf++, sbleu, ter, comet"):
        DECODERS.build("mbr", utility="bleurt")
    with pytest.raises(ConfigError, match="'comet' needs a COMET model"):  # refused when built, before any model loads
        DECODERS.build("mbr", utility="comet")
    with pytest.raises(ConfigError, match="max_len_a"):
        DECODERS.build("greedy", max_len_a=-1)
    assert DECODERS.build("topk", k=3).params()["k"] == 3


# ---------------------------------------------------------------- sampling
def test_sampling_is_seeded_and_leaves_global_rng_alone() -> None:
    model = peaky_tiny(4, scale=1.0, eos_bias=0.5)
    ids = source(9)
    torch.manual_seed(77)
    state = torch.get_rng_state()
    a = SamplingDecoder(samples=30, seed=5, **LIMIT).decode(model, ids)
    assert torch.equal(state, torch.get_rng_state())
    b = SamplingDecoder(samples=30, seed=5, **LIMIT).decode(model, ids)
    c = SamplingDecoder(samples=30, seed=6, **LIMIT).decode(model, ids)
    assert a.hypotheses == b.hypotheses and a.info == b.info
    assert [h.tokens for h in a.hypotheses] != [h.tokens for h in c.hypotheses]
    assert len(a.hypotheses) == 30 and [h.score for h in a.hypotheses] == sorted((h.score for h in a.hypotheses), reverse=True)
    assert sorted(a.info["draw_order"]) == list(range(30))
    for hyp in a.hypotheses[:5]:
        assert hyp.score == pytest.approx(teacher_forced_score(model, ids, hyp.tokens), abs=1e-5)
    unique = SamplingDecoder(samples=30, seed=5, unique=True, **LIMIT).decode(model, ids)
    assert len(unique.hypotheses) == a.info["unique"] == len({h.tokens for h in a.hypotheses})
    # the sentence at stream position 1 draws with seed + 1
    assert SamplingDecoder(samples=30, seed=5, **LIMIT).decode(model, ids, index=1).hypotheses == c.hypotheses


def test_sampling_follows_the_model_distribution() -> None:
    """With max_len 2 a sample is (token, EOS) or (EOS,): the first token's frequencies over 4000 samples
    match P(token | source) renormalised without the pad token, within 4 standard errors."""
    model = peaky_tiny(5, vocab=8, scale=1.0, eos_bias=0.0)
    ids = source(2, vocab=8)
    draws = SamplingDecoder(samples=4000, seed=0, max_len_a=0.0, max_len_b=2, max_len_cap=2).decode(model, ids).hypotheses
    counts = collections.Counter(h.tokens[0] for h in draws)
    with torch.inference_mode():
        enc = model.get_encoder()(input_ids=ids).last_hidden_state  # (1, src_len, d_model)
        logits = model(decoder_input_ids=torch.tensor([[7]]), encoder_outputs=BaseModelOutput(last_hidden_state=enc)).logits[0, -1]  # (vocab,)
    probs = torch.softmax(logits[:7].double(), dim=0)  # (7,) without the pad token (id 7)
    assert counts[7] == 0
    for token in range(7):
        p = float(probs[token])
        assert abs(counts[token] / 4000 - p) < 4 * (p * (1 - p) / 4000) ** 0.5 + 1e-3, (token, counts[token], p)


def _sequence_probabilities(model, ids, max_len: int) -> dict[tuple[int, ...], float]:
    """Every EOS-ending sequence of at most ``max_len`` tokens with its sampling probability: the product of
    per-step probabilities renormalised without the pad token, EOS forced at the last position."""
    pad = model.config.decoder_start_token_id
    out: dict[tuple[int, ...], float] = {}
    with torch.inference_mode():
        enc = model.get_encoder()(input_ids=ids).last_hidden_state  # (1, src_len, d_model)

        def walk(prefix: tuple[int, ...], prob: float) -> None:
            if len(prefix) == max_len - 1:
                out[(*prefix, 0)] = prob
                return
            dec_in = torch.tensor([[pad, *prefix]])  # (1, len + 1)
            logits = model(decoder_input_ids=dec_in, encoder_outputs=BaseModelOutput(last_hidden_state=enc)).logits[0, -1]
            probs = torch.softmax(logits[:pad].double(), dim=0)  # (vocab - 1,) without the pad token
            for token in range(pad):
                if token == 0:
                    out[(*prefix, 0)] = prob * float(probs[0])
                else:
                    walk((*prefix, token), prob * float(probs[token]))

        walk((), 1.0)
    return out


def test_sampled_sequences_follow_the_model_distribution_and_batching_changes_nothing() -> None:
    """Whole sequences (max_len 3, vocabulary of 6): each sequence's frequency over 3000 samples matches its
    probability under ancestral sampling within 4 standard errors (shared prefix rows draw exactly as
    independent samples would); the samples of a source drawn in a batch with others equal those drawn alone."""
    model = peaky_tiny(6, vocab=6, scale=1.0, eos_bias=0.0)
    ids = source(3, vocab=6)
    limit = dict(max_len_a=0.0, max_len_b=3, max_len_cap=3)
    decoder = SamplingDecoder(samples=3000, seed=11, **limit)
    draws = decoder.decode(model, ids).hypotheses
    expected = _sequence_probabilities(model, ids, 3)
    assert sum(expected.values()) == pytest.approx(1.0)
    counts = collections.Counter(h.tokens for h in draws)
    assert set(counts) <= set(expected) and len(counts) > 10
    for tokens, p in expected.items():
        assert abs(counts[tokens] / 3000 - p) < 4 * (p * (1 - p) / 3000) ** 0.5 + 1e-3, (tokens, counts[tokens], p)
    for hyp in draws[:: 300]:
        assert hyp.score == pytest.approx(teacher_forced_score(model, ids, hyp.tokens), abs=1e-5)
    others = [source(4, vocab=6, length=3), source(5, vocab=6, length=8)]
    small = SamplingDecoder(samples=40, seed=11, **limit)
    together = small.decode_batch(model, [others[0], ids, others[1]], start=6)
    alone = small.decode(model, ids, index=7)
    assert [h.tokens for h in together[1].hypotheses] == [h.tokens for h in alone.hypotheses]
    assert [h.score for h in together[1].hypotheses] == pytest.approx([h.score for h in alone.hypotheses], abs=1e-5)


# ---------------------------------------------------------------- MBR
def test_mbr_over_one_candidate_returns_it() -> None:
    model, tok = make_text_model(), text_tokenizer()
    ids = tok(SOURCES[0], return_tensors="pt")["input_ids"]
    sample = SamplingDecoder(samples=1, seed=3).decode(model, ids).hypotheses[0]
    result = MbrDecoder(samples=1, seed=3).bind(tok).decode(model, ids)
    assert result.hypotheses == [sample] and result.info["candidates"] == 1
    with pytest.raises(ConfigError, match="bind"):
        MbrDecoder(samples=2).decode(model, ids)


@pytest.mark.parametrize("utility", ["chrf", "sbleu"])
def test_mbr_picks_the_expected_utility_argmax(utility: str) -> None:
    import sacrebleu

    sys.path.insert(0, str(Path(__file__).parent))
    from test_sacre import independent_bleu_plus_one  # sbleu is Nakov BLEU+1, written independently there

    model, tok = make_text_model(), text_tokenizer()
    ids = tok(SOURCES[1], return_tensors="pt")["input_ids"]
    samples = SamplingDecoder(samples=12, seed=4).decode(model, ids).hypotheses
    support = tok.batch_decode([list(h.tokens) for h in samples], skip_special_tokens=True)
    candidates = list(dict.fromkeys(support))
    score = (lambda h, r: sacrebleu.sentence_chrf(h, [r]).score) if utility == "chrf" else independent_bleu_plus_one
    expected = {c: sum(score(c, s) for s in support) / (100 * len(support)) for c in candidates}
    result = MbrDecoder(samples=12, seed=4, utility=utility).bind(tok).decode(model, ids)
    assert len(candidates) > 1 and result.info["candidates"] == len(candidates)
    assert result.info["texts"][0] == max(candidates, key=lambda c: expected[c]) or \
        expected[result.info["texts"][0]] == pytest.approx(max(expected.values()))
    for text, value in zip(result.info["texts"], result.info["utilities"]):
        assert value == pytest.approx(expected[text], abs=1e-9)


def test_mbr_with_comet_scores_pairs_from_cached_embeddings(tiny_comet) -> None:
    """COMET utility: the expected utilities equal CometScorer.score (COMET's own predict path) over every
    (candidate, support sample) pair, with the source as COMET's source."""
    from simpe.metrics.comet import CometScorer

    model, tok = make_text_model(), text_tokenizer()
    scorer = CometScorer(str(tiny_comet), batch_size=8)
    ids = tok(SOURCES[3], return_tensors="pt")["input_ids"]
    samples = SamplingDecoder(samples=6, seed=2).decode(model, ids).hypotheses
    support = tok.batch_decode([list(h.tokens) for h in samples], skip_special_tokens=True)
    candidates = list(dict.fromkeys(support))
    pairs = [(c, s) for c in candidates for s in support]
    flat = scorer.score([SOURCES[3]] * len(pairs), [c for c, _ in pairs], [s for _, s in pairs])
    expected = {c: sum(flat[i * len(support):(i + 1) * len(support)]) / len(support) for i, c in enumerate(candidates)}
    result = MbrDecoder(samples=6, seed=2, utility="comet", comet_model=scorer).bind(tok).decode(model, ids)
    assert len(candidates) > 1
    for text, value in zip(result.info["texts"], result.info["utilities"]):
        assert value == pytest.approx(expected[text], abs=1e-5)
    assert expected[result.info["texts"][0]] == pytest.approx(max(expected.values()), abs=1e-5)
    # without source the source is detokenised from the input ids with the source SentencePiece model
    assert MbrDecoder(samples=6, seed=2, utility="comet", comet_model=scorer).bind(tok).decode(
        model, ids, source=SOURCES[3]).info["utilities"] == pytest.approx(result.info["utilities"], abs=1e-6)


def test_beam_decode_batch_equals_one_by_one() -> None:
    model, tok = make_text_model(), text_tokenizer()
    batch = [tok(src, return_tensors="pt")["input_ids"] for src in SOURCES]
    for decoder in (BeamDecoder(beam_size=3), HeapBeamDecoder(beam_size=4)):
        together = decoder.decode_batch(model, batch)
        for result, ids in zip(together, batch):
            alone = decoder.decode(model, ids)
            assert [h.tokens for h in result.hypotheses] == [h.tokens for h in alone.hypotheses]
            assert [h.score for h in result.hypotheses] == pytest.approx([h.score for h in alone.hypotheses], abs=1e-5)
            assert result.expansions == alone.expansions


def test_step_scores_masks_a_copy_unless_told_to_overwrite():
    from simpe.decoders.incremental import Special, step_scores

    special = Special(eos=0, start=4, forbidden=(3, 4))
    logp = torch.log_softmax(torch.tensor([[0.5, 1.0, 2.0, 3.0, 4.0], [1.0, 0.0, 0.0, 0.0, 0.0]]), dim=-1)  # (2, 5)
    before = logp.clone()
    masked = step_scores(logp, special, last=False)
    assert torch.equal(logp, before) and masked.data_ptr() != logp.data_ptr()  # the caller's rows are untouched
    assert torch.equal(masked[:, :3], before[:, :3]) and bool((masked[:, 3:] == float("-inf")).all())
    in_place = step_scores(logp, special, last=False, overwrite=True)
    assert in_place is logp and torch.equal(in_place, masked)
    last = step_scores(before, special, last=True)  # only EOS, with its own log-probability
    assert torch.equal(last[:, 0], before[:, 0]) and bool((last[:, 1:] == float("-inf")).all())
