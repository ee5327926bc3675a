"""``simpe sensitivity``: the MBR-based sensitivity analysis of Amrhein and Sennrich (2022), for any utility.

For each sentence, the support is ``samples`` ancestral samples of the model (seeded, as the
``mbr`` decoder draws them), and a candidate's MBR score is its mean utility against the
support. The candidates are the reference and targeted changes of it (Amrhein and Sennrich (2022), section 6):

* numbers: ``numadd`` / ``numdel`` / ``numsub`` add, remove or substitute one digit of one
  number at a random position; ``numwhole`` puts another number of the test set in its place;
* named entities and nouns: ``NEadd`` … ``NEwhole`` and ``nounadd`` … ``nounwhole``, the same
  with one letter (never the first, so the word keeps its capital) or the whole word, taken
  from the named entities or nouns of the test set;
* controls: ``copy`` (the source itself), ``hallucination`` (the reference of another sentence
  of the test set) and ``alternative``. Amrhein and Sennrich (2022) used a second human translation as the
  alternative; the data here has one reference, so the alternative is the model's beam
  output, and the page says so.

Reported: per change, the mean over the sentences that have such a word of (MBR score of the
changed reference − MBR score of the reference), in the utility's points (BLEU/chrF: 0-100;
COMET: its own scale). Every random choice comes from one ``random.Random(seed)`` per sentence.

How words are found, offline and without a tagger (tokens are the reference's words):

* a **number** is a run of digits, with inner ``.`` or ``,`` separators (``3.5``, ``1,000``);
* a **named entity** is a capitalised word that is not the first word of the reference and
  that the source contains at a position other than its first, written the same (product and
  menu names, people, places: what crosses a language boundary unchanged). In LibreOffice's
  help that is ``LibreOffice``, ``Calc``, ``Basic``, ``Excel``…;
* a **noun**: in German, a capitalised word of at least 3 letters that is not the first word,
  not a named entity and not a stopword (German capitalises every noun); in English, a
  lowercase word of at least 3 letters, not a stopword, right after a determiner
  (``the``/``a``/``this``…) and followed by punctuation, a stopword or the end (``the cell,``,
  ``a formula in``): no adjective between. Both are heuristics; a word list or a tagger would
  find more, and the counts per change are reported so a reader can judge the support.
"""
from __future__ import annotations

import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simpe.errors import ConfigError

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
DETERMINERS = frozenset("the a an this that these those each every any no your its their our my his her".split())
CHANGES = ["numadd", "numdel", "numsub", "numwhole", "NEadd", "NEdel", "NEsub", "NEwhole",
           "nounadd", "noundel", "nounsub", "nounwhole"]
CONTROLS = ["alternative", "copy", "hallucination"]
LETTERS = {"de": "abcdefghijklmnopqrstuvwxyzäöüß", "en": "abcdefghijklmnopqrstuvwxyz"}


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str


def numbers(text: str) -> list[Span]:
    return [Span(m.start(), m.end(), m.group()) for m in NUMBER.finditer(text)]


def _digits_only(text: str) -> str:
    return re.sub(r"[.,]", "", text)


def number_counts(text: str, source: str) -> list[int]:
    """[numbers of ``text`` that match one of ``source``, numbers in ``text``, numbers in ``source``], multisets of
    ``NUMBER`` matches with their separators removed (English 1,000.5 and German 1.000,5 are the same number):
    Amrhein and Sennrich (2022)'s number overlap with the source (Section 5; their regular expressions are not in the
    paper, so these are simpe's, with the false positives the paper's footnote 8 describes)."""
    from collections import Counter

    found = Counter(_digits_only(s.text) for s in numbers(text))
    wanted = Counter(_digits_only(s.text) for s in numbers(source))
    return [sum((found & wanted).values()), sum(found.values()), sum(wanted.values())]


def number_f1(counts: Sequence[Sequence[int]]) -> float | None:
    """Corpus F1 (%) of number matches from ``number_counts`` rows: 2·matched / (in the outputs + in the sources)."""
    matched, out, src = (sum(row[i] for row in counts) for i in range(3))
    return 100.0 * 2 * matched / (out + src) if out + src else None


def _words(text: str) -> list[Span]:
    return [Span(m.start(), m.end(), m.group()) for m in WORD.finditer(text)]


def named_entities(reference: str, source: str) -> list[Span]:
    """Capitalised words, not the first, that the source has too (not as its first word), written the same."""
    in_source = {w.text for w in _words(source)[1:] if w.text[:1].isupper()}
    return [w for w in _words(reference)[1:] if w.text[:1].isupper() and len(w.text) >= 2 and w.text in in_source]


def nouns(reference: str, source: str, lang: str, stopwords: frozenset[str]) -> list[Span]:
    """Nouns by the language's heuristic (module docstring); named entities excluded."""
    entities = {(e.start, e.end) for e in named_entities(reference, source)}
    words = _words(reference)
    if lang == "de":
        return [w for w in words[1:] if w.text[:1].isupper() and len(w.text) >= 3 and (w.start, w.end) not in entities
                and w.text not in stopwords and w.text.lower() not in stopwords]
    if lang == "en":
        found = []
        for i, w in enumerate(words):
            if i == 0 or words[i - 1].text.lower() not in DETERMINERS:
                continue
            if not w.text.islower() or len(w.text) < 3 or w.text in stopwords or w.text.endswith(("ly", "ed", "ing")):
                continue
            rest = reference[w.end:].lstrip(" ")
            nxt = words[i + 1] if i + 1 < len(words) else None
            ends = not rest or not rest[0].isalnum()  # punctuation or the end right after it
            if ends or (nxt is not None and nxt.text.lower() in stopwords and not reference[w.end:nxt.start].strip()):
                found.append(w)
        return found
    raise ConfigError(f"sensitivity: no noun rule for language {lang!r}; known: de, en")


def _replace(text: str, span: Span, new: str) -> str:
    return text[: span.start] + new + text[span.end:]


def _digits(span: Span) -> list[int]:
    return [i for i, ch in enumerate(span.text) if ch.isdigit()]


def change(kind: str, reference: str, spans: list[Span], pool: Sequence[str], rng: random.Random, letters: str) -> str | None:
    """The reference with one targeted change of ``kind`` to one of ``spans`` (None when none applies)."""
    if not spans:
        return None
    span = rng.choice(spans)
    text = span.text
    if kind.startswith("num"):
        digits = _digits(span)
        if kind == "numadd":
            at = rng.randint(0, len(text))
            return _replace(reference, span, text[:at] + rng.choice("0123456789") + text[at:])
        if kind == "numdel":
            if len(digits) < 2:
                return None
            at = rng.choice(digits)
            return _replace(reference, span, (text[:at] + text[at + 1:]).strip(".,"))  # no separator left dangling
        if kind == "numsub":
            at = rng.choice(digits)
            return _replace(reference, span, text[:at] + rng.choice([d for d in "0123456789" if d != text[at]]) + text[at + 1:])
    else:
        if kind.endswith("add"):
            at = rng.randint(1, len(text))
            return _replace(reference, span, text[:at] + rng.choice(letters) + text[at:])
        if kind.endswith("del"):
            if len(text) < 3:
                return None
            at = rng.randint(1, len(text) - 1)
            return _replace(reference, span, text[:at] + text[at + 1:])
        if kind.endswith("sub"):
            at = rng.randint(1, len(text) - 1) if len(text) > 1 else 0
            return _replace(reference, span, text[:at] + rng.choice([c for c in letters if c != text[at].lower()]) + text[at + 1:])
    others = [p for p in pool if p != text]  # whole: another of its kind from the test set
    return _replace(reference, span, rng.choice(others)) if others else None


def candidates(source: str, reference: str, pools: dict[str, list[str]], lang: str, stopwords: frozenset[str],
               rng: random.Random, hallucination: str, alternative: str | None) -> dict[str, str]:
    """Every change that applies to this reference, and the controls: {kind: candidate text}."""
    spans = {"num": numbers(reference), "NE": named_entities(reference, source),
             "noun": nouns(reference, source, lang, stopwords)}
    out: dict[str, str] = {}
    for kind in CHANGES:
        family = "num" if kind.startswith("num") else "NE" if kind.startswith("NE") else "noun"
        made = change(kind, reference, spans[family], pools[family], rng, LETTERS[lang])
        if made is not None and made != reference:
            out[kind] = made
    out["copy"] = source
    out["hallucination"] = hallucination
    if alternative is not None:
        out["alternative"] = alternative
    return out


def analyse(model: Any, tokenizer: Any, sources: Sequence[str], references: Sequence[str], utility_name: str = "chrf++",
            samples: int = 100, seed: int = 0, lang: str = "de", comet: Any = None, stopwords: str | None = None,
            progress: bool = False) -> dict[str, Any]:
    """The sensitivity table: {change: {"mean": mean difference to the reference's MBR score, "sentences": n, "values":
    each sentence's difference, "sentence": the index of the source sentence of each value}}; beside it
    ``references_support``: the same for changes of the beam output scored against the reference as the support (Amrhein
    and Sennrich (2022)'s "references as support", with the data's one reference in place of their two)."""
    import torch

    from simpe.decoders.beam import BeamDecoder
    from simpe.decoders.sampling import SamplingDecoder
    from simpe.metrics.stopwords import load_stopwords
    from simpe.metrics.utility import COMET, build_utility, check_utility
    from simpe.models.base import family_of
    from simpe.ties import rank

    check_utility(utility_name, comet)
    if len(sources) != len(references) or len(sources) < 2:
        raise ConfigError(f"sensitivity needs at least 2 (source, reference) pairs of equal count, got {len(sources)} and {len(references)}")
    words = load_stopwords(stopwords or lang)
    utility = build_utility(utility_name, comet)
    scale = 1.0 if utility_name == COMET else 100.0
    pools = {"num": sorted({s.text for r in references for s in numbers(r)}),
             "NE": sorted({s.text for src, r in zip(sources, references) for s in named_entities(r, src)}),
             "noun": sorted({s.text for src, r in zip(sources, references) for s in nouns(r, src, lang, words)})}
    sampler, beam = SamplingDecoder(samples=samples, seed=seed), BeamDecoder(beam_size=5)
    device = next(model.parameters()).device
    diffs: dict[str, list[float]] = {kind: [] for kind in [*CHANGES, *CONTROLS]}
    where: dict[str, list[int]] = {kind: [] for kind in diffs}  # the source sentence of each value (a cluster of its changes)
    # references as support: the candidates are the beam output and its changes, the support the reference
    ref_diffs: dict[str, list[float]] = {kind: [] for kind in [*CHANGES, "copy", "hallucination"]}
    ref_where: dict[str, list[int]] = {kind: [] for kind in ref_diffs}
    # Table 2's number F1 against the source: the reference, beam search and the MBR output (the sample with the highest
    # mean utility against the samples, ties to the earlier sample), per sentence
    counts: dict[str, list[list[int]]] = {"reference": [], "beam": [], "mbr": []}
    t0 = time.perf_counter()
    iterator: Any = range(len(sources))
    if progress:
        from tqdm import tqdm

        iterator = tqdm(iterator, desc="sensitivity", unit="sent")
    with torch.inference_mode():
        for i in iterator:
            source, reference = sources[i], references[i]
            ids = family_of(model).encode_source(tokenizer, source, device)[0]
            drawn = sampler.decode(model, ids, index=i).hypotheses
            support = tokenizer.batch_decode([list(h.tokens) for h in drawn], skip_special_tokens=True)
            alternative = tokenizer.decode(list(beam.decode(model, ids).hypotheses[0].tokens), skip_special_tokens=True)
            rng = random.Random(seed * 1_000_003 + i)
            other = rng.choice([j for j in range(len(references)) if references[j] != reference] or [i])
            pool = candidates(source, reference, pools, lang, words, rng, references[other], alternative)
            texts = [reference, *pool.values()]
            scores = utility.matrix(texts, support, source).mean(axis=1) * scale  # (candidates,) mean over the support
            for kind, value in zip(pool, scores[1:]):
                diffs[kind].append(float(value - scores[0]))
                where[kind].append(i)
            # its own random stream, so the samples-as-support changes above stay those of earlier calls
            beam_pool = candidates(source, alternative, pools, lang, words, random.Random(seed * 1_000_003 + i + 500_000_003),
                                   references[other], None)
            beam_texts = [alternative, *beam_pool.values()]
            beam_scores = utility.matrix(beam_texts, [reference], source).mean(axis=1) * scale  # (candidates,)
            for kind, value in zip(beam_pool, beam_scores[1:]):
                ref_diffs[kind].append(float(value - beam_scores[0]))
                ref_where[kind].append(i)
            expected = utility.matrix(support, support, source).mean(axis=1)
            mbr = support[rank([float(x) for x in expected])[0]]
            for name, text in (("reference", reference), ("beam", alternative), ("mbr", mbr)):
                counts[name].append(number_counts(text, source))
    # values: each sentence's difference, for the replication's intervals
    def table_of(found: dict[str, list[float]], at: dict[str, list[int]]) -> dict[str, dict[str, Any]]:
        return {kind: {"mean": sum(v) / len(v) if v else None, "sentences": len(v), "values": [round(x, 6) for x in v],
                       "sentence": at[kind]} for kind, v in found.items()}

    return {"utility": utility_name, "samples": samples, "seed": seed, "sentences": len(sources), "lang": lang,
            "signature": utility.signature(), "changes": table_of(diffs, where),
            "references_support": table_of(ref_diffs, ref_where),
            "pools": {family: len(values) for family, values in pools.items()},
            "number_f1": {name: {"f1": number_f1(rows), "counts": rows} for name, rows in counts.items()},
            "seconds": time.perf_counter() - t0}


def summarise(result: dict[str, Any]) -> dict[str, float | None]:
    """Mean over the four changes of each family (numbers, NEs, nouns), as the 'average' row of Amrhein and Sennrich (2022)."""
    out: dict[str, float | None] = {}
    for family, prefix in (("numbers", "num"), ("named entities", "NE"), ("nouns", "noun")):
        values = [row["mean"] for kind, row in result["changes"].items() if kind.startswith(prefix) and row["mean"] is not None]
        out[family] = sum(values) / len(values) if values else None
    return out


def format_table(result: dict[str, Any]) -> str:
    lines = [f"MBR sensitivity of {result['utility']} ({result['samples']} samples as support, {result['sentences']} "
             f"sentences, seed {result['seed']}): mean difference to the reference's MBR score",
             f"{'change':<14}{'mean':>10}{'sentences':>11}"]
    for kind, row in result["changes"].items():
        mean = "–" if row["mean"] is None else f"{row['mean']:.3f}"
        lines.append(f"{kind:<14}{mean:>10}{row['sentences']:>11}")
    for family, value in summarise(result).items():
        lines.append(f"average {family}: {'–' if value is None else f'{value:.3f}'}")
    for name, row in (result.get("number_f1") or {}).items():
        f1 = row["f1"]
        lines.append(f"number F1 against the source, {name}: {'–' if f1 is None else f'{f1:.2f}'}")
    lines.append("alternative = the model's beam output (the data has one reference); hallucination = another sentence's reference")
    return "\n".join(lines)
