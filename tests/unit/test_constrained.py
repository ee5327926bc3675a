"""Glossary-constrained decoding (``simpe.decoders.lexical``, ``simpe.decoders.constrained``).

* The term state and the mask, worked by hand on two overlapping terms and on a term inside another.
* Exactness, against brute force on every family's tiny model (Marian, mBART, M2M100, T5, and the causal LMs Llama and
  Qwen2; vocabulary 12, at most 5 tokens: every one of the 11,111 hypotheses scored by plain full-sequence forward
  passes, the constrained best read off the hypotheses that contain every term): the exact top-1 search under the mask
  and dynamic beam allocation with an exhaustive beam find it; at beams 1 and 5 every hypothesis contains every term,
  carries its own true score, and none scores above the brute-force best.
* The terms of real tokenizers (SentencePiece and byte-level BPE), the length-limit rule (one warning per segment, the
  terms that fit kept), plain beam search when there is no term, and the demo model placing every term.
"""
from __future__ import annotations

import dataclasses
import logging

import pytest
import torch
from test_models import brute_force as family_brute_force
from test_models import full_scores, token_source
from test_topk import brute_force as marian_brute_force
from test_topk import model_for
from tiny_families import SETTINGS, token_model

from simpe.decoders import DECODERS, lexical
from simpe.decoders.beam import BeamDecoder
from simpe.decoders.constrained import ConstrainedBeamDecoder, constrain_terms
from simpe.decoders.incremental import LengthLimit, decoding, encode
from simpe.decoders.lexical import Form, Term, TermConstraint, fit_terms, target_forms
from simpe.decoders.prefix import constrain
from simpe.decoders.topk import TopKDecoder
from simpe.errors import ConfigError
from simpe.loop.interactive import Completer
from simpe.model import load_model
from simpe.models.base import Special
from simpe.ties import SCORE_ATOL, margin

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MAX_LEN = 5
LIMIT = dict(max_len_a=0.0, max_len_b=MAX_LEN, max_len_cap=MAX_LEN)
EXHAUSTIVE = 10_000  # more rows than the 10^4 prefixes of 4 tokens: the beam drops nothing
STOPS = (0,)


def term(*forms: tuple[int, ...], anchored: tuple[int, ...] = ()) -> Term:
    """A term of token forms (and anchored forms, which count only as the hypothesis' first tokens)."""
    return Term(str(forms), tuple(Form(f) for f in forms) + tuple(Form(a, anchored=True) for a in (anchored,) if a))


def holds(tokens: tuple[int, ...], terms: list[Term]) -> bool:
    """Whether a complete hypothesis contains every term: one form as consecutive tokens (an anchored one at the start),
    read off the tokens directly (no automaton)."""
    body = tokens[:-1]

    def has(form: Form) -> bool:
        n = len(form.tokens)
        if form.anchored:
            return body[:n] == form.tokens
        return any(body[i:i + n] == form.tokens for i in range(len(body) - n + 1))

    return all(any(has(form) for form in t.forms) for t in terms)


# ---------------------------------------------------------------- the term state and the mask, by hand
def test_overlapping_terms_need_fewer_tokens_than_their_sum() -> None:
    """A = 5 7 and B = 7 9 fit in three tokens (5 7 9): the exact distance sees it, the bound (A then B) says four."""
    a, b = term((5, 7)), term((7, 9))
    constraint = TermConstraint([a, b], 10, STOPS)
    assert constraint.needed(constraint.start) == 3 and constraint.bound(constraint.start) == 4
    assert constraint.needed(constraint.state((5,))) == 2  # then 7 9
    assert constraint.needed(constraint.state((7,))) == 3  # 7 then 9 5 7 (or 5 7 9)
    assert constraint.needed(constraint.state((5, 7))) == 1 and constraint.bound(constraint.state((5, 7))) == 1  # A met, B under way
    assert constraint.complete((5, 7, 9)) and not constraint.complete((5, 7, 3, 9))
    assert constraint.complete((3, 7, 9, 8, 5, 7))  # in any order, anywhere
    # progress = total (2 + 2) minus the bound: constraint tokens met (Hu et al. 2019)
    assert [constraint.progress(p) for p in [(), (5,), (7,), (5, 7), (5, 7, 9), (5, 3)]] == [0, 1, 1, 3, 4, 0]
    assert constraint.advancing(()) == [5, 7] and constraint.advancing((5, 7)) == [9]


def test_the_mask_keeps_only_tokens_after_which_the_terms_still_fit() -> None:
    """max_len 4 (3 tokens and the stop): only 5 can start a hypothesis holding both A and B (5 7 9 stop)."""
    constraint = TermConstraint([term((5, 7)), term((7, 9))], 4, STOPS)
    logp = torch.log_softmax(torch.arange(12, dtype=torch.float32).flip(0), dim=0).repeat(4, 1)  # (4, 12)
    before = logp.clone()
    constraint.mask(logp, [(), (5,), (5, 7), (5, 7, 9)])
    allowed = [torch.isfinite(row).nonzero().flatten().tolist() for row in logp]
    assert allowed == [[5], [7], [9], [0]]  # at the last position only the stop, once both are held
    assert torch.equal(logp[torch.isfinite(logp)], before[torch.isfinite(logp)])  # raw values kept
    roomy = TermConstraint([term((5, 7)), term((7, 9))], 10, STOPS)
    logp = before[:2].clone()
    roomy.mask(logp, [(), (5, 7, 9)])
    assert torch.isinf(logp[0, 0]) and torch.isfinite(logp[0, 1:]).all()  # room for both: only the stop waits
    assert torch.isfinite(logp[1]).all()


def test_a_term_inside_another_is_held_by_it() -> None:
    constraint = TermConstraint([term((4, 5, 6)), term((5,))], 10, STOPS)
    assert constraint.needed(constraint.start) == 3 and constraint.bound(constraint.start) == 4
    assert constraint.complete((4, 5, 6)) and not constraint.complete((4, 5))


def test_a_term_broken_off_and_begun_again_is_read_exactly() -> None:
    """5 5 7 holds 5 7 (a form's start seen again inside it), 4 4 5 holds 4 5."""
    assert TermConstraint([term((5, 7))], 10, STOPS).complete((5, 5, 7))
    assert TermConstraint([term((4, 4, 5))], 10, STOPS).complete((4, 4, 4, 5))


def test_alternative_and_anchored_forms() -> None:
    """A term of two forms is held by either; an anchored form only as the first tokens."""
    either = TermConstraint([term((8,), (3, 6))], 10, STOPS)
    assert either.complete((1, 8)) and either.complete((3, 6, 1)) and not either.complete((3, 1, 6))
    assert either.needed(either.start) == 1
    start = TermConstraint([term((9, 6, 3), anchored=(6, 3))], 10, STOPS)
    assert start.complete((6, 3, 1)) and not start.complete((1, 6, 3)) and start.complete((1, 9, 6, 3))
    assert start.lengths == [3]  # the cost anywhere: the unanchored form's 3 tokens
    assert start.progress((6,)) == 2  # the anchored form under way, one token left: 3 - 1 met


def test_without_the_exact_distances_the_bound_keeps_the_guarantee(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past EXACT_STATES the bound (terms one after another) decides what fits: a hypothesis the overlap would allow
    is cut, never a dead end kept. Here A = 5 7, B = 7 9 need 3 tokens (5 7 9), the bound says 4: under max_len 4, B
    is left out where the exact distances keep both."""
    special = Special(eos=0, start=11, forbidden=(11,))
    constraint, kept, dropped = fit_terms([term((5, 7)), term((7, 9))], 4, special)
    assert constraint is not None and constraint.distances is not None and len(kept) == 2 and not dropped
    monkeypatch.setattr(lexical, "EXACT_STATES", 1)
    constraint, kept, dropped = fit_terms([term((5, 7)), term((7, 9))], 4, special)
    assert constraint is not None and constraint.distances is None
    assert [t.forms[0].tokens for t in kept] == [(5, 7)] and [t.forms[0].tokens for t in dropped] == [(7, 9)]


def test_terms_that_cannot_fit_are_left_out_in_order() -> None:
    """max_len 5: 5 7 (2) and 4 6 8 (3) need 5 tokens and the stop; the first kept, the second dropped, the third
    (one token) still fits."""
    special = Special(eos=0, start=11, forbidden=(11,))
    constraint, kept, dropped = fit_terms([term((5, 7)), term((4, 6, 8)), term((9,))], 5, special)
    assert [t.forms[0].tokens for t in kept] == [(5, 7), (9,)] and [t.forms[0].tokens for t in dropped] == [(4, 6, 8)]
    assert constraint.needed(constraint.start) == 3
    # a term whose only form holds the stop or a never-generated token cannot be written at all
    _, kept, dropped = fit_terms([term((3, 0)), term((11,)), term((2,))], 5, special)
    assert [t.forms[0].tokens for t in kept] == [(2,)] and len(dropped) == 2


# ---------------------------------------------------------------- which glossary entries apply
def _applicable(pairs, source):
    return ConstrainedBeamDecoder().use_glossary(pairs).applicable(source)


def test_applicable_pairs_are_whole_words_in_source_order() -> None:
    """Which entries apply is the term metrics' source rule (simpe.terms.match: whole Moses tokens, case exact), less
    the occurrences inside a longer term's."""
    pairs = [("Cells", "Zellen"), ("Format Cells", "Zellen formatieren"), ("OK", "OK"), ("Cell", "Zelle"), ("tab", "Register")]
    # "Cells" stands inside "Format Cells" (the longer term's), "Cell" inside "Cells" (not a whole word)
    assert _applicable(pairs, "Choose Format Cells, then click OK in the Numbers tab.") == [
        ("Format Cells", "Zellen formatieren"), ("OK", "OK"), ("tab", "Register")]
    assert _applicable(pairs, "Cells and Format Cells") == [("Cells", "Zellen"), ("Format Cells", "Zellen formatieren")]
    assert _applicable(pairs, "format cells in a table") == []  # case counts
    assert _applicable([("Numbers", "Zahlen"), ("numbers", "Zahlen")], "numbers and Numbers") == [("numbers", "Zahlen")]
    assert _applicable([("%", "Prozent"), ("Sum (x)", "Summe (x)")], "Type % or Sum (x).") == [("%", "Prozent"), ("Sum (x)", "Summe (x)")]
    # a Moses token: "Sheet-Insert" is one token, so "Sheet" is not in it (the metrics would not count it either)
    assert _applicable([("Sheet", "Tabelle")], "Choose Sheet-Insert.") == []
    assert _applicable(pairs, "") == [] and ConstrainedBeamDecoder().applicable("Cells") == []


# ---------------------------------------------------------------- exactness on every family, against brute force
TERM_SETS = {
    "one": [term((5, 7))],
    "two": [term((4,)), term((9, 3))],
    "overlapping": [term((5, 7)), term((7, 9))],
    "inside": [term((4, 5, 6)), term((5,))],
    "alternatives": [term((8,), (3, 6)), term((6, 3), anchored=(4, 4))],
}
FAMILY_KINDS = ("marian", "mbart", "m2m100", "t5", "llama", "qwen2")


def _model_and_truth(kind: str):
    if kind == "marian":  # a tiny MarianMTModel: eos 0, pad 11 = decoder start, tokens 1-10
        model = model_for(0, "normal")
        source = torch.tensor([[3, 5, 7, 2, 0]])
        return model, source, marian_brute_force(model, (0, "normal"), source)
    model = token_model(kind, 0)
    source = token_source(kind)
    return model, source, family_brute_force(kind, model, (kind, 0, 1.0), source)


def _assert_best(hyp, truth_score: float, table: dict, terms: list[Term], what: str) -> None:
    tol = 1e-5 + 2 * margin(truth_score, SCORE_ATOL)
    assert holds(hyp.tokens, terms), what
    assert table[hyp.tokens] == pytest.approx(hyp.score, abs=1e-5), what  # its own true score
    assert hyp.score == pytest.approx(truth_score, abs=tol), what


@pytest.mark.parametrize("kind", FAMILY_KINDS)
def test_exact_and_exhaustive_constrained_search_equal_brute_force(kind: str) -> None:
    model, ids, truth = _model_and_truth(kind)
    table = dict((tokens, score) for score, tokens in truth)
    for name, terms in TERM_SETS.items():
        best_score, best_tokens = next((s, t) for s, t in truth if holds(t, terms))
        with decoding(model):
            source, kept, dropped = constrain_terms(encode(model, ids, LengthLimit(0.0, MAX_LEN, MAX_LEN)), terms)
        assert len(kept) == len(terms) and not dropped, (kind, name)
        exact = TopKDecoder(k=1, **LIMIT).decode_source(model, source)
        assert exact.exact is True
        _assert_best(exact.hypotheses[0], best_score, table, terms, f"{kind} {name} exact")
        wide = ConstrainedBeamDecoder(beam_size=EXHAUSTIVE, **LIMIT).decode_source(model, source)
        _assert_best(wide.hypotheses[0], best_score, table, terms, f"{kind} {name} exhaustive")
        untied = [s for s, t in truth if holds(t, terms) and t != best_tokens][:1]
        if untied and abs(untied[0] - best_score) > 1e-4:  # no tie: the very hypothesis
            assert exact.hypotheses[0].tokens == wide.hypotheses[0].tokens == best_tokens, (kind, name)
        for width in (1, 5):  # every term present, true scores, none above the constrained best
            found = ConstrainedBeamDecoder(beam_size=width, **LIMIT).decode_source(model, source).hypotheses
            assert found, (kind, name, width)
            for hyp in found:
                assert holds(hyp.tokens, terms), (kind, name, width, hyp)
                assert table[hyp.tokens] == pytest.approx(hyp.score, abs=1e-5)
                assert hyp.score <= best_score + 1e-5 + 2 * margin(best_score, SCORE_ATOL)
        for plain in ("greedy", "beam", "heap_beam"):  # the mask alone: any decoder's outputs hold every term
            params = {} if plain == "greedy" else {"beam_size": 3}
            hyp = DECODERS.build(plain, **params, **LIMIT).decode_source(model, source).hypotheses[0]
            assert holds(hyp.tokens, terms) and hyp.score <= best_score + 1e-5, (kind, name, plain)


@pytest.mark.parametrize("kind", ["marian", "t5", "qwen2"])
def test_without_terms_it_is_plain_beam_search(kind: str) -> None:
    model, ids, _ = _model_and_truth(kind)
    for width in (1, 3, 5):
        ours = ConstrainedBeamDecoder(beam_size=width, **LIMIT).decode(model, ids)
        plain = BeamDecoder(beam_size=width, **LIMIT).decode(model, ids)
        assert [(h.tokens, h.score) for h in ours.hypotheses] == [(h.tokens, h.score) for h in plain.hypotheses]
        assert ours.info["terms"] == [] and ours.info["dropped"] == []


# ---------------------------------------------------------------- real tokenizers
KINDS = ("mbart", "m2m100", "nllb", "t5", "llama", "qwen2")


@pytest.mark.parametrize("kind", KINDS)
def test_a_term_is_written_as_the_model_writes_it_mid_sentence(kind: str, family_model) -> None:
    """The word-initial form spells " Zellen" (SentencePiece's ▁, byte-level BPE's Ġ); a tokenizer that writes no space
    at the text's start (byte-level BPE) also has the anchored form there; each form decodes to the term."""
    loaded = load_model(family_model(kind), "cpu", settings=SETTINGS[kind])
    tok, family = loaded.tokenizer, loaded.family
    forms = target_forms(tok, family, "Zellen formatieren")
    surfaces = lexical.Surfaces.for_tokenizer(tok)
    spelled = {form: lexical._spelled(surfaces, form.tokens) for form in forms}
    assert any(not f.anchored and s == b" Zellen formatieren" for f, s in spelled.items()), (kind, spelled)
    for form in forms:
        assert tok.decode(list(form.tokens), skip_special_tokens=True).strip() == "Zellen formatieren", (kind, form)
    bare = target_forms(tok, family, "Zellen formatieren", attached=False)
    if kind == "qwen2":  # the text's start: no space; after "(" too, so with attached forms that one counts anywhere
        assert [lexical._spelled(surfaces, f.tokens) for f in bare if f.anchored] == [b"Zellen formatieren"]
        assert any(not f.anchored and s == b"Zellen formatieren" for f, s in spelled.items())
    else:  # SentencePiece writes ▁ at the start too: the word-initial form serves there
        assert [f for f in forms if f.anchored] == [] and [f.anchored for f in bare] == [False]


def test_the_demo_models_term_forms() -> None:
    loaded = load_model(None, "cpu")
    tok, family = loaded.tokenizer, loaded.family
    pieces = [(tok.convert_ids_to_tokens(list(f.tokens)), f.anchored) for f in target_forms(tok, family, "Zellen")]
    assert pieces[0] == (["▁Zellen"], False)
    assert (["Z", "ell", "en"], False) in pieces  # after „ (help text quotes dialog names): no space
    assert [(tok.convert_ids_to_tokens(list(f.tokens)), f.anchored) for f in target_forms(tok, family, "Zellen", attached=False)] == [
        (["▁Zellen"], False)]


# ---------------------------------------------------------------- the decoder
@pytest.fixture(scope="module")
def demo():
    return load_model(None, "cpu")


def _text(loaded, hyp) -> str:
    return loaded.tokenizer.decode(list(hyp.tokens), skip_special_tokens=True)


def test_the_demo_model_places_every_applicable_term(demo) -> None:
    source = "Choose Format - Cells and click the Numbers tab."
    ids = demo.family.encode_source(demo.tokenizer, source, "cpu")[0]
    glossary = [("Cells", "Zellbereich"), ("Numbers", "Ziffern"), ("Sheet", "Tabelle")]
    decoder = DECODERS.build("constrained_beam", beam_size=5).bind(demo.tokenizer).use_glossary(glossary)
    free = BeamDecoder(beam_size=5).decode(demo.model, ids).hypotheses[0]
    assert "Zellbereich" not in _text(demo, free) and "Ziffern" not in _text(demo, free)  # the model says neither
    result = decoder.decode(demo.model, ids, index=3, source=source)
    best = result.hypotheses[0]
    assert result.info["terms"] == ["Zellbereich", "Ziffern"] and result.info["dropped"] == []  # "Sheet" is not in the source
    text = _text(demo, best)
    assert "Zellbereich" in text and "Ziffern" in text and text.startswith("Wählen Sie Format")
    assert full_scores(demo.model, ids, [best.tokens])[0] == pytest.approx(best.score, abs=1e-4)
    assert best.score < free.score  # the constraint costs probability: never above the free best


def test_a_term_that_cannot_fit_warns_once_and_the_rest_is_kept(demo, caplog: pytest.LogCaptureFixture) -> None:
    """max_len 2 (one token and the stop): "Zellen" (▁Zellen) fits, "Zellen formatieren" (two tokens) does not; one
    warning for the segment names it. Alone, the term that cannot fit leaves plain beam search's output."""
    ids = demo.family.encode_source(demo.tokenizer, "Format Cells", "cpu")[0]
    tiny = dict(max_len_a=0.0, max_len_b=2, max_len_cap=2)
    decoder = ConstrainedBeamDecoder(beam_size=5, **tiny).bind(demo.tokenizer)
    with caplog.at_level(logging.WARNING, logger="simpe.decoders.constrained"):
        result = decoder.decode_terms(demo.model, ids, [("Cells", "Zellen"), ("Format Cells", "Zellen formatieren")], index=7)
    warnings = [r for r in caplog.records if r.name == "simpe.decoders.constrained"]
    assert len(warnings) == 1 and "segment 7" in warnings[0].getMessage() and "'Zellen formatieren'" in warnings[0].getMessage()
    assert result.info["terms"] == ["Zellen"] and result.info["dropped"] == ["Zellen formatieren"]
    assert _text(demo, result.hypotheses[0]).strip() == "Zellen"
    caplog.clear()
    alone = decoder.decode_terms(demo.model, ids, [("Format Cells", "Zellen formatieren")], index=8)
    plain = BeamDecoder(beam_size=5, **tiny).decode(demo.model, ids)
    assert [h.tokens for h in alone.hypotheses] == [h.tokens for h in plain.hypotheses]
    # with room for three tokens both fit in two: "Zellen formatieren" holds "Zellen"
    roomy = ConstrainedBeamDecoder(beam_size=5, max_len_a=0.0, max_len_b=3, max_len_cap=3).bind(demo.tokenizer)
    both = roomy.decode_terms(demo.model, ids, [("Cells", "Zellen"), ("Format Cells", "Zellen formatieren")])
    assert both.info["dropped"] == [] and _text(demo, both.hypotheses[0]).strip() == "Zellen formatieren"


def test_parameters_and_glossary_entries_are_checked() -> None:
    with pytest.raises(ConfigError, match="beam_size"):
        DECODERS.build("constrained_beam", beam_size=0)
    with pytest.raises(ConfigError, match="attached_forms"):
        DECODERS.build("constrained_beam", attached_forms="often")
    decoder = DECODERS.build("constrained_beam")
    assert decoder.params() == {"beam_size": 5, "attached_forms": True, "max_len_a": 2.0, "max_len_b": 10, "max_len_cap": 256}
    with pytest.raises(ConfigError, match="'Cells', ''"):
        decoder.use_glossary([("Cells", "")])
    # the loop gives a glossary only to a decoder that takes one; any other refuses it, naming the one that does
    assert [name for name in DECODERS.names() if DECODERS.build(name).takes_glossary] == ["constrained_beam"]
    with pytest.raises(ConfigError, match="'beam' takes no glossary; constrained_beam"):
        DECODERS.build("beam").use_glossary([("Cells", "Zellen")])


def test_a_typed_prefix_and_terms_are_one_search(demo) -> None:
    """The interactive protocol's completions under constrained_beam: the typed prefix first, then the terms still
    missing, each a whole word; a term the typed text holds (a word boundary after it) is met and not written again; a
    word still being typed is not settled; a term the translator typed otherwise is placed after the prefix.
    Word-initial forms only (attached_forms false): an attached form ("Ansicht" right after "„") has no rule for the
    word before it, and the demo model writes "Kopfzeilen.Ansicht", one Moses token, with it."""
    source = "Choose View - Column & Row Headers."
    glossary = [("View", "Ansicht"), ("Column", "Spalte"), ("Row", "Zeile"), ("Headers", "Kopfzeilen")]
    ids = demo.family.encode_source(demo.tokenizer, source, "cpu")[0]
    decoder = ConstrainedBeamDecoder(beam_size=5, attached_forms=False).bind(demo.tokenizer).use_glossary(glossary)
    pairs = decoder.applicable(source)
    assert [t for _, t in pairs] == ["Ansicht", "Spalte", "Zeile", "Kopfzeilen"]
    plain = Completer(demo.model, demo.tokenizer, BeamDecoder(beam_size=5).bind(demo.tokenizer), ids)
    ours = Completer(demo.model, demo.tokenizer, decoder, ids, text=source)
    matcher = decoder.matcher
    with decoding(demo.model):
        encoded = encode(demo.model, ids, decoder.limit)
    for typed, kept in [("Wählen Sie Ansicht – ", ["Spalte", "Zeile", "Kopfzeilen"]),  # Ansicht typed: met
                        ("Wählen Sie Ansicht", ["Ansicht", "Spalte", "Zeile", "Kopfzeilen"]),  # a word still being typed
                        ("Wählen Sie Sicht", ["Ansicht", "Spalte", "Zeile", "Kopfzeilen"])]:  # the translator's own word
        with decoding(demo.model):
            constrained, given, dropped = decoder.with_terms(demo.model, constrain(encoded, demo.tokenizer, typed), pairs, typed)
        assert [t.target for t in given] == kept and dropped == [], typed
        assert isinstance(constrained.constraint, lexical.TypedAndTerms)
        best = decoder.decode_source(demo.model, constrained).hypotheses[0]
        text = _text(demo, best).lstrip(" ")
        assert text.startswith(typed) and text == ours(typed), typed
        assert matcher.targets_in(matcher.target_tokens(text), [t for _, t in pairs]) == [t for _, t in pairs], (typed, text)
        assert full_scores(demo.model, ids, [best.tokens])[0] == pytest.approx(best.score, abs=1e-4)
    assert ours("Wählen Sie Ansicht – ").count("Ansicht") == 1  # met in the prefix: not placed again
    assert plain("Wählen Sie Sicht") == "Wählen Sie Sichtbar – Spalten und Zeilenköpfe."  # the prefix alone
    assert ours("Wählen Sie Sicht") == "Wählen Sie Sichtbar – Spalte und Zeile Kopfzeilen Ansicht."  # Ansicht after it
    # the prefix ends in a term still open: the prefix alone glues it ("Zeilenköpfe"), with the terms it ends a word
    typed = "Wählen Sie Ansicht – Spalte & Zeile"
    assert plain(typed) == "Wählen Sie Ansicht – Spalte & Zeilenköpfe."
    assert ours(typed) == "Wählen Sie Ansicht – Spalte & Zeile Kopfzeilen."
    # nothing typed: the segment's constrained translation
    assert ours("") == _text(demo, decoder.decode(demo.model, ids, source=source).hypotheses[0]).lstrip(" ")


def test_a_typed_prefix_and_terms_fit_together_or_terms_are_dropped(demo) -> None:
    """The terms must fit after the typed prefix's tokens (from the state they leave): with room for the prefix and one
    more token (max_len_b 1; the typed prefix adds its own tokens and one), the one-token term fits and the two-token
    one is dropped; the combined mask leaves a hypothesis."""
    ids = demo.family.encode_source(demo.tokenizer, "Format Cells", "cpu")[0]
    decoder = ConstrainedBeamDecoder(beam_size=5, max_len_a=0.0, max_len_b=1, max_len_cap=1).bind(demo.tokenizer)
    decoder.use_glossary([("Cells", "Zellen"), ("Format Cells", "Zellen formatieren")])
    typed = "Bitte"
    with decoding(demo.model):
        source = constrain(encode(demo.model, ids, decoder.limit), demo.tokenizer, typed)
        room = source.max_len - len(decoder.typed_tokens(demo.model, typed)) - 1  # tokens left for terms
        constrained, kept, dropped = decoder.with_terms(demo.model, source, [("Cells", "Zellen"), ("Format Cells", "Zellen formatieren")], typed)
    assert room == 1 and [t.target for t in kept] == ["Zellen"] and [t.target for t in dropped] == ["Zellen formatieren"]
    best = decoder.decode_source(demo.model, constrained).hypotheses[0]
    assert _text(demo, best).lstrip(" ").startswith("Bitte") and "Zellen" in _text(demo, best)
    with pytest.raises(ConfigError, match="typed prefix only, not with TermConstraint"):
        constrain_terms(dataclasses.replace(constrained, constraint=constrained.constraint.terms), [term((5,))])


# ---------------------------------------------------------------- the word-boundary rule
GLUE = frozenset({3, 6})  # the tokens that continue a word in the hand-worked cases below


def holds_at_words(tokens: tuple[int, ...], terms: list[Term], glue: frozenset[int]) -> bool:
    """Whether a complete hypothesis contains every term with a word boundary after it: one form as consecutive tokens
    followed by the stop or by a token not in ``glue`` (a closed form by anything), read off the tokens directly."""
    body = tokens[:-1]

    def has(form: Form) -> bool:
        n = len(form.tokens)
        starts = [0] if form.anchored else range(len(body) - n + 1)
        return any(body[i:i + n] == form.tokens and (i + n == len(body) or form.closed or body[i + n] not in glue)
                   for i in starts)

    return all(any(has(form) for form in t.forms) for t in terms)


def test_a_term_counts_only_where_a_word_boundary_follows() -> None:
    """A = 5 7 with 3 and 6 continuing a word: 5 7 3 glues A to a subword, 5 7 4, 5 7 5 and 5 7 (stop) do not."""
    constraint = TermConstraint([term((5, 7))], 10, STOPS, GLUE)
    assert constraint.complete((5, 7)) and constraint.complete((5, 7, 4)) and constraint.complete((1, 5, 7, 5))
    assert not constraint.complete((5, 7, 3)) and not constraint.complete((5, 7, 6, 6))
    assert constraint.complete((5, 7, 3, 5, 7))  # written again, ending a word
    assert constraint.needed(constraint.state((5, 7))) == 0 and constraint.needed(constraint.state((5, 7, 3))) == 2
    assert [constraint.progress(p) for p in [(), (5,), (5, 7), (5, 7, 3), (5, 7, 4)]] == [0, 1, 2, 0, 2]
    # without the glue (every token starts a word) the old rule: anywhere
    assert TermConstraint([term((5, 7))], 10, STOPS).complete((5, 7, 3))
    # a form ending in punctuation needs no boundary after it ("Summe (x)")
    closed = Term("x)", (Form((5, 7), closed=True),))
    assert TermConstraint([closed], 10, STOPS, GLUE).complete((5, 7, 3))
    # a form that starts with a continuing token costs one token more in the bound (a word-starting token before it)
    starting = TermConstraint([term((3, 8))], 10, STOPS, GLUE)
    assert starting.costs == [3] and starting.bound(starting.start) == 3 and starting.needed(starting.start) == 2


def test_the_mask_drops_continuing_tokens_where_a_held_term_has_no_room_to_come_again() -> None:
    """max_len 4, A = 5 7: after 5 7 with two positions left (a token and the stop) a continuing token (3, 6) would
    lose A with no room to write it again; any other token or the stop keeps it. With room to spare nothing is cut."""
    constraint = TermConstraint([term((5, 7))], 4, STOPS, GLUE)
    logp = torch.log_softmax(torch.arange(12, dtype=torch.float32).flip(0), dim=0).repeat(3, 1)  # (3, 12)
    before = logp.clone()
    constraint.mask(logp, [(1, 5, 7), (5, 7), (1, 5)])
    allowed = [torch.isfinite(row).nonzero().flatten().tolist() for row in logp]
    assert allowed[0] == [0]  # the last position: only the stop
    assert allowed[1] == [0, 1, 2, 4, 5, 7, 8, 9, 10, 11]  # not 3 or 6
    assert allowed[2] == [7]  # 7, then the stop: the only way left
    assert torch.equal(logp[torch.isfinite(logp)], before[torch.isfinite(logp)])  # raw values kept
    roomy = TermConstraint([term((5, 7))], 10, STOPS, GLUE)
    logp = before[:1].clone()
    roomy.mask(logp, [(5, 7)])
    assert torch.isfinite(logp).all()


def test_continuing_tokens_of_a_real_tokenizer() -> None:
    """The demo model's SentencePiece pieces: a piece after ▁ starts a word, punctuation ends one, a bare subword
    continues one; bytes that are no whole character continue one too, and so does an ASCII hyphen (Moses keeps
    "Kategorie-Tabelle" one word), not an en dash or a hyphen after a space."""
    assert [lexical.continues_word(s) for s in (b" Zeile", b"kopf", b".", b"\xe2\x80\x93", b"3", b"\xc3", b"", None, b"-",
                                                b"-/", b" -")] == [
        False, True, False, False, True, True, False, False, True, True, False]
    assert lexical.word_end("Wählen Sie Zeilen-") == lexical.word_end("Wählen Sie Zeilen") == "Wählen Sie "
    tok = load_model(None, "cpu").tokenizer
    glue = lexical.continuing(tok)
    pieces = {piece: tok.convert_tokens_to_ids(piece)
              for piece in ("▁Zeile", "kopf", "en", ".", ":", "▁–", "...", "▁", "-", "-/", "▁-")}
    assert {p for p, t in pieces.items() if t in glue} == {"kopf", "en", "-", "-/"}
    assert lexical.continuing(tok) is glue  # read once per tokenizer


@pytest.mark.parametrize("kind", FAMILY_KINDS)
def test_word_boundaries_exact_and_exhaustive_search_equal_brute_force(kind: str) -> None:
    """With 3, 4 and 8 continuing a word, the exact search under the mask and an exhaustive beam find the brute-force
    best of the hypotheses whose terms each end at a word boundary; beams 1 and 5 only ever output such hypotheses.
    (In 9 of these 24 cases that best differs from the best without the rule: the rule bites on the tiny models.)"""
    model, ids, truth = _model_and_truth(kind)
    table = dict((tokens, score) for score, tokens in truth)
    glue = frozenset({3, 4, 8})
    for name in ("one", "two", "overlapping", "alternatives"):
        terms = TERM_SETS[name]
        best_score = next(s for s, t in truth if holds_at_words(t, terms, glue))
        with decoding(model):
            source, kept, dropped = constrain_terms(encode(model, ids, LengthLimit(0.0, MAX_LEN, MAX_LEN)), terms, glue)
        assert len(kept) == len(terms) and not dropped, (kind, name)
        exact = TopKDecoder(k=1, **LIMIT).decode_source(model, source).hypotheses[0]
        wide = ConstrainedBeamDecoder(beam_size=EXHAUSTIVE, **LIMIT).decode_source(model, source).hypotheses[0]
        for what, hyp in (("exact", exact), ("exhaustive", wide)):
            tol = 1e-5 + 2 * margin(best_score, SCORE_ATOL)
            assert holds_at_words(hyp.tokens, terms, glue), (kind, name, what, hyp)
            assert table[hyp.tokens] == pytest.approx(hyp.score, abs=1e-5) and hyp.score == pytest.approx(best_score, abs=tol)
        for width in (1, 5):
            for hyp in ConstrainedBeamDecoder(beam_size=width, **LIMIT).decode_source(model, source).hypotheses:
                assert holds_at_words(hyp.tokens, terms, glue), (kind, name, width, hyp)
                assert hyp.score <= best_score + 1e-5 + 2 * margin(best_score, SCORE_ATOL)


def test_the_demo_model_no_longer_glues_a_term_to_a_subword(demo) -> None:
    """Segment 22 of the scalc stream: under the terms alone the demo model writes "Zeile" + "kopf" ("Zeilekopf", which
    the term metrics do not count as "Zeile"); with the word-boundary rule "Zeile" ends a word."""
    source = "Choose View - Column & Row Headers."
    glossary = [("View", "Ansicht"), ("Column", "Spalte"), ("Row", "Zeile")]
    ids = demo.family.encode_source(demo.tokenizer, source, "cpu")[0]
    decoder = ConstrainedBeamDecoder(beam_size=5).bind(demo.tokenizer).use_glossary(glossary)
    terms = decoder.terms(demo.model, decoder.applicable(source))
    with decoding(demo.model):
        anywhere, _, _ = constrain_terms(encode(demo.model, ids, decoder.limit), terms)  # the rule without boundaries
        glued = decoder.decode_sources(demo.model, [anywhere])[0].hypotheses[0]
    assert _text(demo, glued) == "Wählen Sie Ansicht – Spalte und Zeilekopf."
    result = decoder.decode(demo.model, ids, source=source)
    best = result.hypotheses[0]
    assert result.info["terms"] == ["Ansicht", "Spalte", "Zeile"]
    assert _text(demo, best) == "Wählen Sie Ansicht – Spalte und Zeile"
    matcher = decoder.matcher
    assert matcher.targets_in(matcher.target_tokens(_text(demo, best)), ["Ansicht", "Spalte", "Zeile"]) == ["Ansicht", "Spalte", "Zeile"]
    assert full_scores(demo.model, ids, [best.tokens])[0] == pytest.approx(best.score, abs=1e-4)
    assert best.score <= glued.score + 1e-4  # a stricter constraint: never above the looser one's best


def test_the_demo_model_no_longer_hyphenates_a_term_into_a_compound(demo) -> None:
    """Segment 119 of the scalc stream: under the word-boundary rule without the hyphen the demo model wrote
    "Fenster-Menü", one Moses token, which the term metrics do not count as "Fenster"; a hyphen now continues a word."""
    source = "Window Menu"
    decoder = ConstrainedBeamDecoder(beam_size=5).bind(demo.tokenizer).use_glossary([("Window", "Fenster")])
    ids = demo.family.encode_source(demo.tokenizer, source, "cpu")[0]
    terms = decoder.terms(demo.model, decoder.applicable(source))
    without = frozenset(t for t in lexical.continuing(demo.tokenizer)  # the rule before: a hyphen ended a word
                        if not demo.tokenizer.convert_ids_to_tokens(t).startswith("-"))
    with decoding(demo.model):
        old, _, _ = constrain_terms(encode(demo.model, ids, decoder.limit), terms, without)
        hyphenated = decoder.decode_sources(demo.model, [old])[0].hypotheses[0]
    assert _text(demo, hyphenated) == "Fenster-Menü"
    best = decoder.decode(demo.model, ids, source=source).hypotheses[0]
    assert _text(demo, best) == "Fenster"
    matcher = decoder.matcher
    assert matcher.targets_in(matcher.target_tokens(_text(demo, hyphenated)), ["Fenster"]) == []
    assert matcher.targets_in(matcher.target_tokens(_text(demo, best)), ["Fenster"]) == ["Fenster"]


def test_a_term_the_vocabulary_cannot_write_gets_its_own_warning(demo, caplog: pytest.LogCaptureFixture) -> None:
    """"表格" has characters the demo model's SentencePiece vocabulary lacks (no form writes it): its own warning,
    not the length limit's; "Zellen" is placed."""
    source = "Format Cells"
    ids = demo.family.encode_source(demo.tokenizer, source, "cpu")[0]
    decoder = ConstrainedBeamDecoder(beam_size=3).bind(demo.tokenizer)
    with caplog.at_level(logging.WARNING, logger="simpe.decoders.constrained"):
        result = decoder.decode_terms(demo.model, ids, [("Format", "表格"), ("Cells", "Zellen")], index=7)
    assert (result.info["terms"], result.info["dropped"], result.info["unwritable"]) == (["Zellen"], ["表格"], ["表格"])
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["segment 7: 1 glossary term(s) cannot be written with the model's target vocabulary ('表格': a "
                        "character its tokens do not have); decoded without them"]


def test_the_constraint_keeps_the_case_the_position_calls_for(demo) -> None:
    """"Delete" -> "Löschen" is a UI label's case; mid-sentence the verb is "löschen". With the cased forms
    (``cased_forms: true``) the constrained output is the free one (which holds both terms, case ignored as the term
    metrics read them); without them (the default) the capital is forced into the sentence."""
    source = "Choose Sheet - Delete Sheet."
    ids = demo.family.encode_source(demo.tokenizer, source, "cpu")[0]
    glossary = [("Sheet", "Tabelle"), ("Delete", "Löschen")]
    free = _text(demo, BeamDecoder(beam_size=5).decode(demo.model, ids).hypotheses[0])
    cased = DECODERS.build("constrained_beam", beam_size=5, cased_forms=True).bind(demo.tokenizer).use_glossary(glossary)
    forced = DECODERS.build("constrained_beam", beam_size=5).bind(demo.tokenizer).use_glossary(glossary)  # the default
    assert free == "Wählen Sie Tabelle – Tabelle löschen."
    assert _text(demo, cased.decode(demo.model, ids, source=source).hypotheses[0]) == free
    assert "Löschen" in _text(demo, forced.decode(demo.model, ids, source=source).hypotheses[0])
    # the forms: the capitalised term's own first, then its lowercase-initial ones (anywhere); a lowercase term gets
    # its capitalised forms at the text's start only (anchored)
    tok, family = demo.tokenizer, demo.family
    pieces = [(tok.convert_ids_to_tokens(list(f.tokens)), f.anchored) for f in target_forms(tok, family, "Zellen", attached=False,
                                                                                     cased=True)]
    assert pieces[0] == (["▁Zellen"], False) and all(not anchored for _, anchored in pieces)
    assert "".join(pieces[-1][0]).replace("▁", "") == "zellen"
    lower = target_forms(tok, family, "löschen", attached=False, cased=True)
    assert [f.anchored for f in lower][0] is False and all(f.anchored for f in lower[1:]) and len(lower) > 1
    assert tok.convert_ids_to_tokens(list(lower[1].tokens))[0].startswith("▁L")
