"""Prefix-constrained decoding (``simpe.decoders.prefix``) on every family's tiny model and the demo model.

* Consistency: every completing decoder (greedy, beam, min-heap beam, exact top-k and its DFS) returns a hypothesis
  whose detokenised text (the tokenizer's own ``decode``, as the loop detokenises) starts with the typed prefix,
  for prefixes that end inside a word, after a space, and span several subwords.
* Exactness, against brute force: the constrained exact search's best hypothesis is the most probable complete
  hypothesis (at most ``max_len`` tokens) whose text starts with the prefix. The brute force is independent of the
  constraint's surface table and of the decoders' incremental cache: it walks token prefixes whose decoded text
  (trailing U+FFFD of a cut multi-byte character dropped) agrees with the typed text, and scores every node by a
  full teacher-forced forward pass (``simpe.model.teacher_forced_logits``).
"""
from __future__ import annotations

import pytest
import torch
from tiny_families import SETTINGS

from simpe.decoders import DECODERS
from simpe.decoders.incremental import NEG_INF, decoding, encode
from simpe.decoders.prefix import CharPrefix, Surfaces, constrain
from simpe.model import load_model, teacher_forced_logits

pytestmark = pytest.mark.usefixtures("one_torch_thread")
KINDS = ("mbart", "m2m100", "nllb", "t5", "llama", "qwen2")
COMPLETING = {"greedy": {}, "beam": {"beam_size": 3}, "heap_beam": {"beam_size": 3}, "topk": {"k": 2, "max_expansions": 400},
              "topk_dfs": {"k": 1, "max_expansions": 400}}
SOURCE = "Choose Format - Cells."
TYPED = ["W", "Wäh", "Wählen Sie ", "die Zellen", "Zorglub Blub"]  # a letter, inside a word (ä: two bytes), after a space ...


def _loaded(family_model, kind: str):
    folder = family_model(kind)
    return load_model(folder, "cpu", settings=SETTINGS[kind])


def _input_ids(loaded, text: str = SOURCE):
    return loaded.family.encode_source(loaded.tokenizer, text, loaded.device)[0]


def _text(tokenizer, tokens) -> str:
    """The text a translator sees: leading spaces dropped (fast tokenizers' decode keeps the first ▁ as one)."""
    return tokenizer.decode(list(tokens), skip_special_tokens=True).lstrip(" ")


@pytest.mark.parametrize("kind", KINDS)
def test_every_decoders_completion_starts_with_the_typed_prefix(kind: str, family_model) -> None:
    loaded = _loaded(family_model, kind)
    ids = _input_ids(loaded)
    for name, params in COMPLETING.items():
        decoder = DECODERS.build(name, max_len_a=0.0, max_len_b=8, max_len_cap=8, **params)
        with decoding(loaded.model):
            base = encode(loaded.model, ids, decoder.limit)
        for typed in TYPED:
            result = decoder.decode_source(loaded.model, constrain(base, loaded.tokenizer, typed))
            best = result.hypotheses[0]
            assert best.score > NEG_INF, (kind, name, typed)
            assert _text(loaded.tokenizer, best.tokens).startswith(typed), (kind, name, typed, _text(loaded.tokenizer, best.tokens))
            assert best.tokens[-1] in base.special.stops


def _agrees(text: str, typed: str) -> bool:
    if not typed.isascii():
        text = text.rstrip("\ufffd")  # a byte-level token that cuts a character: its bytes so far, not a wrong character
    return typed.startswith(text) or text.startswith(typed)


def brute_force_best(loaded, ids, typed: str, max_len: int) -> tuple[float, tuple[int, ...]]:
    """The best complete hypothesis of at most ``max_len`` tokens whose text starts with ``typed``, exhaustively.

    The space is the protocol's: until the text covers ``typed`` no special token (language codes, EOS ...) and
    at most one leading token that writes nothing (SentencePiece's lone ▁ before a piece without one)."""
    model, tokenizer = loaded.model, loaded.tokenizer
    stops = set(loaded.family.special.stops)
    vocab = model.get_output_embeddings().weight.shape[0]
    forbidden = set(loaded.family.special.forbidden)
    special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    blank = {t for t in range(vocab) if t not in special and _text(tokenizer, [t]) == ""}

    def rows(prefixes: list[tuple[int, ...]]) -> torch.Tensor:
        """(len(prefixes), vocab) log P(next | prefix): one full forward of each prefix + a placeholder token."""
        out = []
        for start in range(0, len(prefixes), 128):
            chunk = prefixes[start:start + 128]
            labels = torch.tensor([list(p) + [0] for p in chunk], dtype=torch.long)  # (n, len + 1)
            with torch.inference_mode():
                logits = teacher_forced_logits(model, ids.expand(len(chunk), -1), labels)  # (n, len + 1, vocab)
            out.append(torch.log_softmax(logits[:, -1].double(), dim=-1))  # (n, vocab)
        return torch.cat(out)

    best = (NEG_INF, ())
    frontier: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
    while frontier:
        prefixes = [p for p, _ in frontier]
        logp = rows(prefixes)
        nxt = []
        for (prefix, score), row in zip(frontier, logp):
            text = _text(tokenizer, prefix)
            covered = text.startswith(typed)
            for stop in stops:
                if covered and score + float(row[stop]) > best[0]:
                    best = (score + float(row[stop]), prefix + (stop,))
            if len(prefix) + 1 >= max_len:
                continue
            for token in range(vocab):
                if token in stops or token in forbidden or float(row[token]) == NEG_INF:
                    continue
                child = prefix + (token,)
                if covered:
                    nxt.append((child, score + float(row[token])))
                elif token not in special and not (token in blank and (prefix or not text == "")) and \
                        (token in blank or _agrees(_text(tokenizer, child), typed)):
                    nxt.append((child, score + float(row[token])))
        frontier = nxt
    return best


# the brute force takes 20 s (t5) to 75 s (nllb) on 2 cores: t5 in make test, every family in make test-slow
@pytest.mark.parametrize("kind", [k if k == "t5" else pytest.param(k, marks=pytest.mark.slow) for k in KINDS])
def test_exact_constrained_search_equals_brute_force(kind: str, family_model) -> None:
    loaded = _loaded(family_model, kind)
    ids = _input_ids(loaded, "Cells.")
    tokenizer = loaded.tokenizer
    # byte-level BPE (qwen2): a cut character decodes to U+FFFD, which agrees with anything here, so its brute force
    # would walk every byte token; "ä" (two bytes) is covered there by the consistency test above
    for typed in (("Zel",) if kind == "qwen2" else ("Zel", "ä")):
        forced = len(tokenizer(typed, add_special_tokens=False)["input_ids"])
        max_len = forced + 2  # the tokens of the typed text, one free token, the stop: brute force stays small
        for name in ("topk", "topk_dfs"):
            decoder = DECODERS.build(name, k=1, max_len_a=0.0, max_len_b=max_len, max_len_cap=max_len, max_expansions=None)
            with decoding(loaded.model):
                base = encode(loaded.model, ids, decoder.limit)
            result = decoder.decode_source(loaded.model, constrain(base, tokenizer, typed, extra_tokens=0))
            truth = brute_force_best(loaded, ids, typed, max_len)
            assert result.exact is True
            assert result.hypotheses[0].score == pytest.approx(truth[0], abs=1e-4), (kind, name, typed, truth)
            assert _text(tokenizer, result.hypotheses[0].tokens).startswith(typed)


def test_the_constraint_reads_surfaces_of_sentencepiece_and_byte_level_tokens(family_model) -> None:
    """Hand-checked pieces: SentencePiece's ▁ is a space (dropped at the text's start); byte-level BPE's Ġ is one."""
    sp = _loaded(family_model, "mbart").tokenizer
    surfaces = Surfaces(sp)
    piece = min(p for p in sp.get_vocab() if p.startswith("▁") and len(p) > 2 and p[1:].isalpha())  # e.g. "▁Sie"
    wid = sp.convert_tokens_to_ids(piece)
    assert surfaces.surface[wid] == (" " + piece[1:]).encode() and surfaces.surface[sp.eos_token_id] is None
    constraint = CharPrefix(surfaces, piece[1:2])
    assert constraint.state((wid,)) == -1  # covers its first letter once the text's leading space is dropped
    assert CharPrefix(surfaces, piece[1:] + "x").state((wid,)) == len(piece) - 1  # all but the x matched
    bpe = _loaded(family_model, "qwen2").tokenizer
    surfaces = Surfaces(bpe)
    # the lowest id of a space-led piece of whole characters (get_vocab's order varies between processes, and a piece
    # that ends inside a character decodes to U+FFFD)
    token = min(i for piece, i in bpe.get_vocab().items() if piece.startswith("Ġ") and len(piece) > 2
                and "\ufffd" not in bpe.decode([i]))
    assert surfaces.surface[token] == bpe.decode([token]).encode("utf-8") and surfaces.surface[token].startswith(b" ")


def test_the_demo_model_completes_what_the_translator_typed() -> None:
    loaded = load_model(None, "cpu")
    ids = _input_ids(loaded, "Choose Format - Cells and click the Numbers tab.")
    decoder = DECODERS.build("beam", beam_size=5)
    with decoding(loaded.model):
        base = encode(loaded.model, ids, decoder.limit)
    free = _text(loaded.tokenizer, decoder.decode_source(loaded.model, base).hypotheses[0].tokens)
    assert free == _text(loaded.tokenizer, decoder.decode(loaded.model, ids).hypotheses[0].tokens)  # no constraint: as decode
    assert free.startswith("Wählen Sie Format")
    for typed in ("Wählen Sie Fo", "Klicken", "Wählen Sie Zorglub "):
        text = _text(loaded.tokenizer, decoder.decode_source(loaded.model, constrain(base, loaded.tokenizer, typed)).hypotheses[0].tokens)
        assert text.startswith(typed)
    # a typed word the model never saw leaves the rest of its translation as it was
    assert _text(loaded.tokenizer, decoder.decode_source(loaded.model, constrain(base, loaded.tokenizer, "Wählen Sie Zorglub ")
                                                         ).hypotheses[0].tokens).endswith(free[len("Wählen Sie Format"):])
