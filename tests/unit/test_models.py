"""Every model family through the decoders and the methods, on tiny seeded checkpoints of the real classes.

Two kinds of tiny model (``tests/tiny_families.py``):

* token models (12-token vocabulary, no tokenizer) of mBART, M2M100, T5, Llama and Qwen2, whose
  whole hypothesis space up to 5 tokens (11,111 hypotheses) is scored here by plain
  full-sequence forward passes: exact top-k (batched best-first and the DFS of Algorithm 1)
  must return its best k, with the family's forced BOS or prompt in front and never in the
  hypothesis; sentences of different lengths searched in lockstep (left-padded prompts,
  T5's padding before the prefix, absolute positions carried by the input embedding) each
  get their own exact top-k;
* text models (mBART-50, M2M100, NLLB-200, T5/MADLAD, Llama with a plain prompt, Qwen2 with a
  ChatML template) with real tokenizers from SentencePiece / ``tokenizers`` models trained on
  the shipped dev text: forced BOS and prompt tokens, every decoder, every method (its frozen
  parameters bit-identical, its store applied to a fresh copy reproducing the adapted
  model), the causal LM's loss mask.
"""
from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path

import pytest
import torch
from messages import raises_naming
from test_topk import assert_exact
from tiny_families import FAMILY_OF, KINDS, PLAIN_TOKENS, SETTINGS, STOP, token_model

from simpe.config.files import defaults
from simpe.decoders import DECODERS
from simpe.decoders.beam import BeamDecoder
from simpe.decoders.heap_beam import HeapBeamDecoder
from simpe.decoders.topk import TopKDecoder
from simpe.decoders.topk_dfs import TopKDfsDecoder
from simpe.errors import ConfigError, ModelError
from simpe.loop.update import pair_loss, update
from simpe.methods import METHODS
from simpe.methods.base import base_parameters, embedding_names
from simpe.methods.bias import OUTPUT_BIAS
from simpe.model import load_model, model_family
from simpe.models import FAMILIES, family_of

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: see conftest.py

MAX_LEN = 5
LIMIT = dict(max_len_a=0.0, max_len_b=MAX_LEN, max_len_cap=MAX_LEN)
TOKEN_KINDS = ("mbart", "m2m100", "t5", "llama", "qwen2")
SOURCES = {"enc": torch.tensor([[3, 5, 7, 4, 2]]), "t5": torch.tensor([[3, 5, 7, 4, 1]]), "causal": torch.tensor([[1, 5, 7, 3]])}
_BRUTE: dict[tuple, list[tuple[float, tuple[int, ...]]]] = {}


def token_source(kind: str, ids: list[int] | None = None) -> torch.Tensor:
    if ids is not None:
        return torch.tensor([ids])
    return SOURCES["t5" if kind == "t5" else "causal" if FAMILY_OF[kind] == "causal" else "enc"]


def full_scores(model, source: torch.Tensor, seqs: list[tuple[int, ...]]) -> list[float]:
    """log P(seq | source) of each sequence by one plain forward pass each (no cache, no simpe code but the
    family's prefix): the target prefix (decoder start + forced BOS, or the prompt) is fed, never scored."""
    family = family_of(model)
    target = torch.tensor(seqs)  # (n, L)
    n, length = target.shape
    with torch.inference_mode():
        if family.encoder_decoder:
            prefix = torch.tensor([family.prefix]).expand(n, -1)  # (n, P)
            logits = model(input_ids=source.expand(n, -1), decoder_input_ids=torch.cat([prefix, target[:, :-1]], dim=1)).logits
        else:
            prefix = source.expand(n, -1)  # (n, P): the prompt
            logits = model(input_ids=torch.cat([prefix, target[:, :-1]], dim=1)).logits
        logp = torch.log_softmax(logits[:, prefix.shape[1] - 1:].float(), dim=-1)  # (n, L, vocab)
        return logp.gather(2, target.unsqueeze(2)).squeeze(2).double().sum(dim=1).tolist()


def brute_force(kind: str, model, key: tuple, source: torch.Tensor) -> list[tuple[float, tuple[int, ...]]]:
    """Every hypothesis of at most MAX_LEN tokens (ordinary tokens, then the stop token), best first."""
    if key not in _BRUTE:
        scored: list[tuple[float, tuple[int, ...]]] = []
        for length in range(1, MAX_LEN + 1):
            seqs = [body + (STOP[kind],) for body in itertools.product(PLAIN_TOKENS[kind], repeat=length - 1)]
            scored += list(zip(full_scores(model, source, seqs), seqs))
        assert len(scored) == 11111
        scored.sort(key=lambda item: -item[0])
        _BRUTE[key] = scored
    return _BRUTE[key]


# ---------------------------------------------------------------- token models: exactness
def test_token_models_have_the_family_prefixes_and_stops() -> None:
    """mBART / M2M100: decoder start </s> (2), then the forced BOS (config's forced_bos_token_id 11); T5: pad (0);
    a causal LM: no fixed prefix (its prompt is the prefix); pad never generated."""
    expected = {"mbart": ((2, 11), (1,)), "m2m100": ((2, 11), (1,)), "t5": ((0,), (0,)), "llama": ((), (0,)), "qwen2": ((), (0,))}
    for kind, (prefix, forbidden) in expected.items():
        family = family_of(token_model(kind, 0))
        assert family.prefix == prefix and family.special.forbidden == forbidden and family.special.stops == (STOP[kind],)


@pytest.mark.parametrize("kind", TOKEN_KINDS)
@pytest.mark.parametrize("seed, scale", [(0, 1.0), (1, 3.0)])
def test_exact_topk_equals_brute_force_on_every_family(kind: str, seed: int, scale: float) -> None:
    model = token_model(kind, seed, scale)
    source = token_source(kind)
    truth = brute_force(kind, model, (kind, seed, scale), source)
    for k in (1, 6):
        fast = TopKDecoder(k=k, batch_size=5, **LIMIT).decode(model, source)
        assert fast.exact is True
        assert_exact(fast.hypotheses, truth, k)
    dfs = TopKDfsDecoder(k=4, **LIMIT).decode(model, source)
    assert dfs.exact is True
    assert_exact(dfs.hypotheses, truth, 4)
    for width in (1, 3):  # beam scores are real scores, never above the exact best
        for decoder in (BeamDecoder(beam_size=width, **LIMIT), HeapBeamDecoder(beam_size=width, **LIMIT)):
            best = decoder.decode(model, source).hypotheses[0]
            table = dict((tokens, score) for score, tokens in truth)
            assert table[best.tokens] == pytest.approx(best.score, abs=1e-5) and best.score <= truth[0][0] + 1e-6


@pytest.mark.parametrize("kind", TOKEN_KINDS)
def test_sentences_of_different_lengths_are_searched_exactly_in_lockstep(kind: str) -> None:
    """Prompts / sources of different lengths share forward passes, and the search batches prefixes of different
    lengths: every sentence still gets its own exact top-k (brute force), whatever the batch."""
    model = token_model(kind, 4)
    if FAMILY_OF[kind] == "causal":
        sources = [token_source(kind, ids) for ids in ([1, 5, 7, 3], [1, 9], [1, 3, 4, 5, 6, 7, 8, 9, 10])]
    else:
        end = STOP[kind]
        sources = [token_source(kind, ids) for ids in ([3, 5, 7, end], [9, end], [3, 4, 5, 6, 7, 8, 9, end])]
    truths = [brute_force(kind, model, (kind, 4, "lockstep", j), src) for j, src in enumerate(sources)]
    for decoder in (TopKDecoder(k=6, batch_size=8, **LIMIT), TopKDecoder(k=6, batch_size=3, max_rows=4, **LIMIT)):
        for result, truth in zip(decoder.decode_batch(model, sources), truths):
            assert result.exact is True
            assert_exact(result.hypotheses, truth, 6)
    for results in (BeamDecoder(beam_size=3, **LIMIT).decode_batch(model, sources),
                    DECODERS.build("sampling", samples=6, **LIMIT).decode_batch(model, sources)):
        for result, truth in zip(results, truths):  # every hypothesis carries its true score
            table = dict((tokens, score) for score, tokens in truth)
            for hyp in result.hypotheses:
                assert table[hyp.tokens] == pytest.approx(hyp.score, abs=1e-5)


# ---------------------------------------------------------------- text models: loading, prefixes, prompts
@pytest.fixture(scope="module")
def loaded_kind(family_model):
    cache: dict[str, object] = {}

    def get(kind: str):
        if kind not in cache:
            folder = family_model(kind)
            cache[kind] = load_model(folder, "cpu", model_family(folder, "auto", SETTINGS[kind]))
        return cache[kind]

    return get


def fresh(family_model, kind: str):
    folder = family_model(kind)
    return load_model(folder, "cpu", model_family(folder, "auto", SETTINGS[kind]))


def test_forced_bos_source_codes_and_prompts(loaded_kind) -> None:
    source, reference = "Click OK.", "Klicken Sie auf OK."
    for kind in KINDS:
        loaded = loaded_kind(kind)
        family, tok = loaded.family, loaded.tokenizer
        assert family.name == FAMILY_OF[kind]
        ids = family.encode_source(tok, source, "cpu")[0][0].tolist()
        pair = family.encode_pair(tok, source, reference, "cpu")
        labels = pair.labels[0].tolist()
        content = tok(reference, add_special_tokens=False)["input_ids"]
        if kind == "mbart":
            assert family.prefix == (2, tok.convert_tokens_to_ids("de_DE"))
            assert ids[0] == tok.convert_tokens_to_ids("en_XX") and ids[-1] == tok.eos_token_id
        elif kind == "m2m100":
            assert family.prefix == (2, tok.get_lang_id("de")) and tok.convert_ids_to_tokens(family.prefix[1]) == "__de__"
            assert ids[0] == tok.get_lang_id("en") and ids[-1] == tok.eos_token_id
        elif kind == "nllb":
            assert family.prefix == (2, tok.convert_tokens_to_ids("deu_Latn"))
            assert ids[0] == tok.convert_tokens_to_ids("eng_Latn") and ids[-1] == tok.eos_token_id  # the non-legacy position
        elif kind == "t5":
            assert family.prefix == (0,) and tok.convert_tokens_to_ids("<2de>") in ids and ids[-1] == 1
        elif kind == "llama":  # the plain template, with BOS
            assert family.prefix == () and ids[0] == tok.bos_token_id
            prompt = "Translate the following text from English into German.\nEnglish: Click OK.\nGerman:"
            assert family.prompt_text(tok, source, []) == prompt and ids == tok(prompt)["input_ids"]
        else:  # qwen2: the chat template; the target ends in the end of turn
            assert tok.decode(ids) == ("<|im_start|>user\nTranslate the following text from English into German.\n"
                                       "English: Click OK.\nGerman:<|im_end|>\n<|im_start|>assistant\n")
            assert family.special.stops[0] == tok.convert_tokens_to_ids("<|im_end|>")
        assert labels == content + [family.special.eos]  # the content tokens and the stop token: never a prefix


def test_nllb_targets_do_not_follow_the_legacy_language_position(family_model, loaded_kind) -> None:
    """With legacy_behaviour the tokenizer puts the language code after </s>: the source follows the tokenizer
    (the checkpoint's convention), the target is the same content + </s> either way."""
    from transformers import NllbTokenizer

    loaded = loaded_kind("nllb")
    legacy = NllbTokenizer.from_pretrained(family_model("nllb"), legacy_behaviour=True)
    family = FAMILIES.build("m2m100", **SETTINGS["nllb"])
    family.check_languages(legacy)
    family.config = loaded.model.config
    family.special = loaded.family.special
    ids = family.encode_source(legacy, "Click OK.", "cpu")[0][0].tolist()
    assert ids[-2:] == [legacy.eos_token_id, legacy.convert_tokens_to_ids("eng_Latn")]
    assert family.encode_target(legacy, "Klicken Sie.") == loaded.family.encode_target(loaded.tokenizer, "Klicken Sie.")


def test_bad_language_codes_are_one_line(family_model) -> None:
    with raises_naming(ConfigError, "model.tgt_lang", "'de_XX'", "af_ZA, ar_AR, az_AZ"):
        load_model(family_model("mbart"), "cpu", FAMILIES.build("mbart", src_lang="en_XX", tgt_lang="de_XX"))
    with raises_naming(ConfigError, "model.tgt_lang", "'xx'", "<2xx>", "de, en"):
        load_model(family_model("t5"), "cpu", FAMILIES.build("t5", tgt_lang="xx"))
    with pytest.raises(ConfigError, match="is an mbart model: set model.tgt_lang"):
        model_family(family_model("mbart"), "auto", {})
    with pytest.raises(ConfigError, match="model.prompt_template must contain {source}"):
        FAMILIES.build("causal", prompt_template="Translate: {text}")


@pytest.mark.parametrize("kind", KINDS)
def test_every_decoder_on_every_family(kind: str, loaded_kind) -> None:
    """Each hypothesis ends in a stop token, holds no pad and no prefix token of its own, and its score is the
    model's log-probability of it after the prefix (a full forward pass)."""
    loaded = loaded_kind(kind)
    model, tok, family = loaded.model, loaded.tokenizer, loaded.family
    ids = family.encode_source(tok, "Select the cell range.", "cpu")[0]
    small = {"beam": {"beam_size": 3}, "heap_beam": {"beam_size": 3}, "sampling": {"samples": 4}, "mbr": {"samples": 4},
             "topk": {"k": 3}, "topk_dfs": {"k": 2}}
    for name in DECODERS.names():
        length = 2 if name.startswith("topk") else 4  # an exact search of a flat random model visits up to vocab^(length - 1) prefixes
        limit = dict(max_len_a=0.0, max_len_b=length, max_len_cap=length)
        decoder = DECODERS.build(name, **small.get(name, {}), **limit).bind(tok)
        with torch.inference_mode():
            result = decoder.decode(model, ids, index=0, source="Select the cell range.")
        for hyp in result.hypotheses:
            assert hyp.tokens[-1] in family.special.stops and len(hyp.tokens) <= 4, (name, hyp)
            assert not set(hyp.tokens) & set(family.special.forbidden), (name, hyp)
        best = result.hypotheses[0]
        assert full_scores(model, ids, [best.tokens])[0] == pytest.approx(best.score, abs=1e-4), name


# ---------------------------------------------------------------- text models: methods and stores
HOT = defaults("update", lr=0.5, ppl_threshold=1.0, max_repeats=2)  # never satisfied: always two steps
PAIRS = [("Click OK to close the dialog.", "Klicken Sie auf OK, um den Dialog zu schließen."),
         ("Select the cell range.", "Wählen Sie den Zellbereich aus.")]
MT_OUTPUT = "Klicken Sie OK."  # a segment's MT output, for the methods that prefer the post-edit to it (prefer)


def _compositions() -> list[str]:
    """The compositions the presets make (``adapters/<name>.yaml`` with ``method.modifiers``), as ``method+modifier``."""
    from simpe.config.files import known_presets, load_config

    made = {"+".join([cfg.method.name, *(m["name"] for m in cfg.method.modifiers)])
            for cfg in map(load_config, known_presets()) if cfg.method.modifiers}
    return sorted(made)


# every registered method, then every composition a preset makes: a new method's file is tested here with no edit
METHOD_NAMES = (*METHODS.names(), *_compositions())
# the modifiers' parameters made small: replay of one pair, a Fisher of two (others take their defaults)
MODIFIERS = {"replay": {"k": 1}, "ewc": {"sentences": 2}}


def build(name: str, params: dict):
    """A method of METHOD_NAMES: ``method+modifier`` composed as a preset composes it (simpe.methods.compose)."""
    from simpe.methods.compose import build_method

    method, *modifiers = name.split("+")
    return build_method(method, params, [{"name": m, "params": MODIFIERS.get(m, {})} for m in modifiers])


def context(loaded):
    """What the loop lends a method (simpe.methods.base.Context), on the tiny model: PAIRS stand for the train split."""
    from simpe.loop.update import Tuner
    from simpe.methods.base import Context

    return Context(encode=lambda s, r: loaded.family.encode_pair(loaded.tokenizer, s, r, "cpu"),
                   sentences=lambda split, n: PAIRS[:n], tune=Tuner(loaded.model, HOT).tune, lr=HOT.lr,
                   read_pairs=lambda path: [])


@pytest.fixture(scope="module")
def selections(family_model, tmp_path_factory):
    """A ``fixed`` selection per family, made by select-fixed on two dev segments."""
    from simpe.loop.select_fixed import select_fixed

    root, made = tmp_path_factory.mktemp("selections"), {}

    def get(kind: str) -> Path:
        if kind not in made:
            made[kind] = root / f"{kind}.json"
            select_fixed(str(family_model(kind)), "libreoffice", "dev", 0.025, 2, "cpu", out=made[kind], progress=False,
                         model_cfg=defaults("model", **SETTINGS[kind]))
        return made[kind]

    return get


def _decode(loaded, method=None) -> list[tuple[int, ...]]:
    decoder = BeamDecoder(beam_size=2, max_len_a=0.0, max_len_b=5, max_len_cap=5)
    out = []
    with torch.inference_mode():
        for source, _ in PAIRS:
            examples = method.examples(source) if method is not None else []
            ids = loaded.family.encode_source(loaded.tokenizer, source, "cpu", examples)[0]
            with method.translating(source) if method is not None else contextlib.nullcontext():
                out.append(decoder.decode(loaded.model, ids).hypotheses[0].tokens)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_every_method_on_every_family(kind: str, family_model, selections) -> None:
    """Every method runs two segments (the MT output beside each, for prefer): parameters outside its trainable set stay bit-identical, and its store,
    applied to a fresh copy of the base model, reproduces the adapted model's translations."""
    for name in METHOD_NAMES:
        loaded = fresh(family_model, kind)
        params = {"selection": str(selections(kind))} if name == "fixed" else {"rank": 2} if name == "lora" else {}
        method = build(name, params)
        try:
            method.check_family(loaded.family)
        except ConfigError as err:  # a method may refuse a family before the model loads, in one line
            assert "\n" not in str(err), (name, err)
            assert name != "icl" or loaded.family.encoder_decoder, err  # icl: causal LMs only
            continue
        assert name != "icl" or not loaded.family.encoder_decoder, "icl must refuse an encoder-decoder"
        method.attach(loaded.model, None, HOT)
        method.prepare(context(loaded))
        before = {n: p.detach().clone() for n, p in loaded.model.named_parameters()}
        for source, reference in PAIRS:
            examples = method.examples(source)
            pair = loaded.family.encode_pair(loaded.tokenizer, source, reference, "cpu", examples)
            record = update(loaded.model, method, pair, HOT, hypothesis=MT_OUTPUT)  # the MT output the post-edit corrects
            method.after_segment(pair)  # as the loop does
            assert record["skipped"] is None, (name, record)
            assert ("preference_loss" in record) == ("prefer" in name.split("+")), (name, record)
        trainable = set(method.trainable())
        moved = {n for n, p in loaded.model.named_parameters() if n in before and not torch.equal(before[n], p.detach())}
        assert moved <= trainable, (name, sorted(moved - trainable)[:3])
        if METHODS.get(name.split("+")[0]).parametric:
            assert moved, name
        else:
            assert not moved and method.adapted_parameters() == 0, name
        assert method.store_bytes() == sum(t.numel() * t.element_size() for t in method.export_store().values()), name
        adapted_state = {n: p.detach().clone() for n, p in loaded.model.named_parameters()}
        adapted = _decode(loaded, method)
        # tune-retrieve tunes a copy for each translation and returns to the state before it, bit for bit
        assert all(torch.equal(adapted_state[n], p.detach()) for n, p in loaded.model.named_parameters()), name
        other = fresh(family_model, kind)
        applied = build(name, params)
        applied.load_store(other.model, {k: v.clone() for k, v in method.export_store().items()})
        applied.prepare(context(other), resume=True)  # a store applied: tune-retrieve gets its tuner, nothing is estimated
        assert _decode(other, applied) == adapted, name


@pytest.mark.parametrize("kind", ["nllb", "qwen2", "t5"])
def test_tied_embeddings_are_one_tensor_counted_and_stored_once(kind: str, family_model) -> None:
    """NLLB ties both sides' embeddings and the output projection, Qwen2 (here) its embedding and lm_head: one
    tensor, so full steps it once and lasso keeps rows of it once; T5 here is untied (MADLAD): two matrices."""
    loaded = fresh(family_model, kind)
    model = loaded.model
    names = embedding_names(model)
    weights = family_of(model).embedding_weights(model)
    assert len(names) == len(weights) == (2 if kind == "t5" else 1)
    total = sum(p.numel() for p in base_parameters(model).values())
    assert total == sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())  # tied counted once
    method = METHODS.build("lasso", budget_embedding=0.5)
    method.attach(model, None, HOT)
    update(model, method, loaded.family.encode_pair(loaded.tokenizer, *PAIRS[0], "cpu"), HOT)
    store = method.export_store()
    assert sorted(k for k in store if k.endswith(":rows")) == sorted(f"{n}:rows" for n in names if len(method.kept_rows[n]))
    assert method.store_bytes() == sum(t.numel() * t.element_size() for t in store.values())


def test_bias_adds_an_output_bias_where_the_family_has_none(family_model) -> None:
    for kind in ("m2m100", "t5", "llama"):
        loaded = fresh(family_model, kind)
        assert not any("bias" in n for n, _ in loaded.family.output_projection(loaded.model).named_parameters())
        method = METHODS.build("bias")
        method.attach(loaded.model, None, HOT)
        assert set(method.trainable()) == {OUTPUT_BIAS}
        assert method.trainable()[OUTPUT_BIAS].shape == (loaded.family.output_projection(loaded.model).out_features,)


def test_top_is_the_top_encoder_and_decoder_layer_or_the_top_block(loaded_kind) -> None:
    expected = {"mbart": ("model.encoder.layers.0.", "model.decoder.layers.0."), "m2m100": ("model.encoder.layers.0.", "model.decoder.layers.0."),
                "t5": ("encoder.block.0.", "decoder.block.0."), "llama": ("model.layers.1.",), "qwen2": ("model.layers.1.",)}
    for kind, prefixes in expected.items():
        model = loaded_kind(kind).model
        assert family_of(model).top_layer_prefixes(model) == prefixes


# ---------------------------------------------------------------- the causal LM's loss mask
@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_causal_loss_counts_the_target_tokens_only(kind: str, loaded_kind) -> None:
    """simpe's loss equals Hugging Face's own causal-LM loss with the prompt's labels masked (-100); giving the
    prompt's positions their tokens as labels changes HF's loss but has no way into simpe's, whose logits are the
    target positions' alone; the prompt's length changes nothing but the conditioning."""
    loaded = loaded_kind(kind)
    model, family = loaded.model, loaded.family
    pair = family.encode_pair(loaded.tokenizer, *PAIRS[0], "cpu")
    prompt, target = pair.input_ids, pair.labels  # (1, P), (1, T)
    sequence = torch.cat([prompt, target], dim=1)  # (1, P + T)
    masked = torch.cat([torch.full_like(prompt, -100), target], dim=1)  # (1, P + T): the prompt's labels masked
    with torch.no_grad():
        ours = pair_loss(model, pair)[1]
        theirs = float(model(input_ids=sequence, labels=masked).loss)
        unmasked = float(model(input_ids=sequence, labels=sequence).loss)
    assert ours == pytest.approx(theirs, rel=1e-5)
    assert abs(unmasked - theirs) > 1e-3  # the prompt's labels would matter, had they been labels
    from simpe.model import teacher_forced_logits

    logits = teacher_forced_logits(model, prompt, target)  # (1, T, vocab): one row per target token
    assert logits.shape[:2] == target.shape


def test_icl_retrieves_the_most_similar_earlier_post_edits_closest_last() -> None:
    from simpe.methods.icl import chrf, overlap
    from simpe.model import Pair

    assert chrf("Click OK.", "Click OK.") == pytest.approx(1.0) and chrf("abc", "xyz") == 0.0
    assert overlap("Click the OK button", "click ok") == pytest.approx(2 / 4)
    method = METHODS.build("icl", k=2)
    for source, target in [("Open the file.", "Öffnen Sie die Datei."), ("Click OK to close.", "Klicken Sie auf OK."),
                           ("Press Enter.", "Drücken Sie die Eingabetaste."), ("Click OK to close.", "Klicken Sie OK.")]:
        method.after_segment(Pair(None, None, source=source, reference=target))
    examples = method.examples("Click OK to close the dialog.")
    # the two equal matches, the later post-edit last (closest to the query)
    assert examples == [("Click OK to close.", "Klicken Sie auf OK."), ("Click OK to close.", "Klicken Sie OK.")]
    method.k = 3
    assert method.examples("Click OK to close the dialog.")[1:] == examples
    method.k = 1
    assert method.examples("Press Enter now.") == [("Press Enter.", "Drücken Sie die Eingabetaste.")]
    method.k = 2
    assert METHODS.build("icl", min_similarity=0.99).examples("unrelated") == []
    state = method.state_dict()
    again = METHODS.build("icl", k=2)
    again.load_state_dict(state)
    assert again.examples("Click OK to close the dialog.") == examples
    assert method.store_bytes() == len(json.dumps(method.memory, ensure_ascii=False).encode("utf-8"))


def test_icl_examples_are_in_the_prompt(loaded_kind) -> None:
    for kind in ("llama", "qwen2"):
        loaded = loaded_kind(kind)
        tok, family = loaded.tokenizer, loaded.family
        examples = [("Open the file.", "Öffnen Sie die Datei.")]
        text = tok.decode(family.encode_source(tok, "Click OK.", "cpu", examples)[0][0].tolist())
        assert text.index("Öffnen Sie die Datei.") < text.index("Click OK.")
        if kind == "qwen2":
            assert "<|im_start|>assistant\nÖffnen Sie die Datei.<|im_end|>" in text


def test_a_store_on_another_base_is_refused(family_model, tmp_path: Path) -> None:
    """A store names its family and the hash of its base's config: another family, or another architecture under
    the same folder name, is refused in one line."""
    import shutil

    from safetensors.torch import save_file

    from simpe.store.user import apply_store

    loaded = fresh(family_model, "mbart")
    method = METHODS.build("bias")
    method.attach(loaded.model, None, HOT)
    metadata = {"format": "simpe-store/1", "method": "bias", "method_params": "{}", "base_model": "tiny-mbart",
                **loaded.family.store_metadata()}
    save_file(method.export_store(), str(tmp_path / "bias.safetensors"), metadata=metadata)
    assert metadata["model_family"] == "mbart" and len(metadata["model_config_sha256"]) == 16
    apply_store(fresh(family_model, "mbart").model, "tiny-mbart", tmp_path / "bias.safetensors")  # the same base: applies
    with pytest.raises(ModelError, match=r"was made for base model 'tiny-mbart' \(mbart, config [0-9a-f]{16}\), not for "
                                         r"'tiny-mbart' \(m2m100, config [0-9a-f]{16}\): another family"):
        apply_store(fresh(family_model, "m2m100").model, "tiny-mbart", tmp_path / "bias.safetensors")
    other = tmp_path / "other" / "tiny-mbart"  # the same name, another architecture (two decoder layers)
    shutil.copytree(family_model("mbart"), other)
    config = json.loads((other / "config.json").read_text())
    config["decoder_layers"] = 2
    (other / "config.json").write_text(json.dumps(config))
    import transformers

    transformers.MBartForConditionalGeneration(transformers.MBartConfig(**{k: v for k, v in config.items()
                                                                            if k not in ("architectures", "transformers_version")})
                                               ).save_pretrained(other)
    with pytest.raises(ModelError, match=r"made for base model 'tiny-mbart' \(mbart, config (\w{16})\), not for 'tiny-mbart' "
                                         r"\(mbart, config (?!\1)\w{16}\): another architecture or vocabulary"):
        apply_store(load_model(other, "cpu", FAMILIES.build("mbart", **SETTINGS["mbart"])).model, "tiny-mbart",
                    tmp_path / "bias.safetensors")


def test_marian_multi_target_prefix_and_the_demo_models_refusal(demo_model) -> None:
    """A multi-target Marian model takes a >>id<< source prefix (model.tgt_lang); the demo model is single-target."""
    family = FAMILIES.build("marian", tgt_lang="deu")
    assert family.source_text("Click OK.") == ">>deu<< Click OK."
    with raises_naming(ConfigError, ">>deu<<", "known: none"):
        family.check_languages(demo_model.tokenizer)
    assert FAMILIES.build("marian").source_text("Click OK.") == "Click OK."


def test_a_bfloat16_causal_lm_decodes_and_updates(family_model) -> None:
    """model.dtype=bfloat16 (a large LLM on a GPU): the weights load in bfloat16; scores are float32 log-softmax rows."""
    folder = family_model("llama")
    loaded = load_model(folder, "cpu", model_family(folder), dtype="bfloat16")
    assert next(loaded.model.parameters()).dtype == torch.bfloat16
    pair = loaded.family.encode_pair(loaded.tokenizer, *PAIRS[0], "cpu")
    best = BeamDecoder(beam_size=2, max_len_a=0.0, max_len_b=4, max_len_cap=4).decode(loaded.model, pair.input_ids).hypotheses[0]
    assert best.tokens[-1] in loaded.family.special.stops and best.score < 0
    method = METHODS.build("bias")
    method.attach(loaded.model, None, HOT)
    record = update(loaded.model, method, pair, HOT)
    assert record["repetitions"] == 2 and record["skipped"] is None


def _sinusoidal_table(positions: int, dim: int) -> torch.Tensor:
    """(positions, dim) the table a fresh ``MarianSinusoidalPositionalEmbedding`` initialises itself to: transformers 5's
    ``create_weight`` returns it, transformers 4's ``_init_weight`` sets it as the weight."""
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding as Table

    table = Table(positions, dim)
    if hasattr(table, "create_weight"):
        return table.create_weight()
    table._init_weight()
    return table.weight


@pytest.mark.parametrize("positions, dim", [(512, 256), (1024, 512), (64, 17), (7, 1)])
def test_marians_vectorised_position_table_is_transformers_own_bit_for_bit(positions: int, dim: int) -> None:
    """simpe builds Marian's unsaved sinusoidal table with array operations while a model loads (it was 0.8 s of each
    load of the demo model); the table is transformers' own, bit for bit, for even and odd widths."""
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding as Table

    from simpe.models.marian import _position_table, _position_values, _vectorised_position_table

    theirs = _sinusoidal_table(positions, dim)
    with _vectorised_position_table():
        ours = _sinusoidal_table(positions, dim)
    assert torch.equal(theirs, ours) and not ours.requires_grad
    # transformers' method is back once the load is over
    assert getattr(Table, "create_weight", None) is not _position_values and getattr(Table, "_init_weight", None) is not _position_table


def test_the_demo_models_position_table_as_loaded_is_transformers_own() -> None:
    loaded = load_model(None, "cpu")
    theirs = _sinusoidal_table(*loaded.model.model.encoder.embed_positions.weight.shape)
    assert torch.equal(loaded.model.model.encoder.embed_positions.weight, theirs)


def test_forced_bos_saved_in_the_generation_config_counts_as_set(tmp_path) -> None:
    """transformers 5 saves an mBART/M2M100 checkpoint's forced_bos_token_id in generation_config.json only: the
    check before loading reads it there, so such a folder needs no model.tgt_lang."""
    import json

    from simpe.model import _read_config
    from simpe.models.mbart import MBartFamily

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mbart"}), encoding="utf-8")
    assert _read_config(str(tmp_path)).get("forced_bos_token_id") is None
    (tmp_path / "generation_config.json").write_text(json.dumps({"forced_bos_token_id": 250003}), encoding="utf-8")
    config = _read_config(str(tmp_path))
    assert config["forced_bos_token_id"] == 250003
    MBartFamily().check_config(config, "here")  # no "set model.tgt_lang" refusal


def test_a_causal_prompt_says_glossary_terms_before_the_source(loaded_kind) -> None:
    """data.glossary_prompt: the terms as one line before the query's source line, in the plain template and in the
    chat template's user turn; without terms the prompt is unchanged; another family refuses terms."""
    terms = [("Cells", "Zellen"), ("Sheet", "Tabelle")]
    llama = loaded_kind("llama")
    assert llama.family.prompt_text(llama.tokenizer, "Click OK.", [], terms) == (
        "Translate the following text from English into German.\nUse these term translations: Cells = Zellen; "
        "Sheet = Tabelle.\nEnglish: Click OK.\nGerman:")
    assert llama.family.takes_terms() and not FAMILIES.build("causal", prompt_template="Q: {source}").takes_terms()
    assert FAMILIES.build("causal", prompt_template="{terms}Q: {source}").takes_terms()
    qwen = loaded_kind("qwen2")
    ids = qwen.family.encode_source(qwen.tokenizer, "Click OK.", "cpu", terms=terms[:1])[0][0].tolist()
    assert qwen.tokenizer.decode(ids) == ("<|im_start|>user\nTranslate the following text from English into German.\n"
                                          "Use these term translations: Cells = Zellen.\nEnglish: Click OK.\nGerman:"
                                          "<|im_end|>\n<|im_start|>assistant\n")
    mbart = loaded_kind("mbart")
    assert not mbart.family.takes_terms()
    with pytest.raises(ConfigError, match="the mbart family has no prompt to say glossary terms in"):
        mbart.family.encode_pair(mbart.tokenizer, "Click OK.", "Klicken Sie auf OK.", "cpu", terms=terms)
