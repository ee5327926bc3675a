"""Where a glossary term occurs in a text: the one matching rule of the term metrics, the glossary builder and
constrained decoding.

A term occurs in a text when its tokens occur there contiguously, in order, as whole tokens. Tokens are the R
metrics' (``simpe.metrics.text.TextPipeline``: Moses tokenisation of the detokenised text, ``escape=False``); a
term is tokenised the same way, on its own. The rule, decided here once:

- **Source side: case exact.** A UI name is quoted in the UI's case ("choose **Sheet** - Insert Cells"); the word in
  running text ("the sheet") is not the term. The source is Moses-tokenised, never truecased.
- **Target side: case ignored** (``str.casefold``). The R pipeline's truecaser may change a sentence's first token,
  and German capitalises a sentence-initial verb ("Einfügen Sie" is as wrong as "einfügen" is right mid-sentence):
  whether a hypothesis holds the term is not decided by case. Truecased or not, target tokens match alike.
- **Whole tokens only.** A term inside a compound does not occur: the target term "Zelle" is not in "Zellbereich"
  nor in "Zell-Bereich" (one Moses token), the source term "Cell" not in "Cells". Inflected forms are other words
  ("Zellen" is not "Zelle"): the glossary gives the form it wants.
- A term occurring twice in a text occurs; how often is not counted (the metrics count a term once per segment, as
  the R metrics count a word type). Overlapping terms are found independently: "Cell Protection" and "Cell" both
  occur in "Edit - Cell Protection".

Which terms a constrained decoder must place (``TermMatcher.to_constrain``) follows the same source rule, less the
occurrences inside a longer term's: it has no reference to say which applies.

This module finds terms; it does not read glossary files (``simpe.terms.glossary``) or count metrics
(``simpe.terms.score``).
"""
from __future__ import annotations

from collections.abc import Sequence

from simpe.errors import DataError
from simpe.metrics.text import TextPipeline

SOURCE_CASE = "exact"
TARGET_CASE = "insensitive"


def fold(tokens: Sequence[str]) -> tuple[str, ...]:
    """The target side's comparison form of tokens: each casefolded."""
    return tuple(token.casefold() for token in tokens)


def find_all(tokens: Sequence[str], terms: Sequence[tuple[str, ...]]) -> list[int]:
    """Indices of the ``terms`` (token tuples, compared exactly) that occur contiguously in ``tokens``, ascending."""
    by_first: dict[str, list[int]] = {}
    for index, term in enumerate(terms):
        if term:
            by_first.setdefault(term[0], []).append(index)
    found: set[int] = set()
    for position, token in enumerate(tokens):
        for index in by_first.get(token, ()):
            term = terms[index]
            if index not in found and tuple(tokens[position:position + len(term)]) == term:
                found.add(index)
    return sorted(found)


def find_spans(tokens: Sequence[str], terms: Sequence[tuple[str, ...]]) -> list[tuple[int, int, int]]:
    """Every occurrence of the ``terms`` (token tuples, compared exactly) in ``tokens``: (start, end, term index), by
    start, then term index."""
    by_first: dict[str, list[int]] = {}
    for index, term in enumerate(terms):
        if term:
            by_first.setdefault(term[0], []).append(index)
    spans = []
    for position, token in enumerate(tokens):
        for index in by_first.get(token, ()):
            term = terms[index]
            if tuple(tokens[position:position + len(term)]) == term:
                spans.append((position, position + len(term), index))
    return spans


class TermMatcher:
    """A glossary's terms as token tuples, and where they occur in a source or a target text.

    Entries are numbered in the glossary's order; ``in_source`` and ``in_target`` return entry numbers.
    """

    def __init__(self, pairs: Sequence[tuple[str, str]], source_lang: str = "en", target_lang: str = "de") -> None:
        """
        Args:
            pairs: (source term, target term) per entry (``Glossary.pairs()``).
            source_lang, target_lang: the Moses tokenisers' languages (the stream's).
        """
        self.pairs = list(pairs)
        self.source_pipeline = TextPipeline(source_lang, None)
        self.target_pipeline = TextPipeline(target_lang, None)
        self.source_terms = [tuple(self.source_pipeline.tokens(source)) for source, _ in self.pairs]
        self.target_terms = [fold(self.target_pipeline.tokens(target)) for _, target in self.pairs]
        for (source, target), source_term, target_term in zip(self.pairs, self.source_terms, self.target_terms):
            if not source_term or not target_term:  # the loader refuses empty sides; control characters tokenise to nothing
                raise DataError(f"glossary entry {source!r} -> {target!r} has no {'source' if not source_term else 'target'} "
                                "token after Moses tokenisation (only control characters?); give a printable term")

    def __len__(self) -> int:
        return len(self.pairs)

    def source_tokens(self, text: str) -> list[str]:
        """Moses tokens of a source text (no truecasing)."""
        return self.source_pipeline.tokens(text)

    def target_tokens(self, text: str) -> list[str]:
        """Moses tokens of a target text (no truecasing; the R pipeline's truecased tokens match alike)."""
        return self.target_pipeline.tokens(text)

    def in_source(self, tokens: Sequence[str]) -> list[int]:
        """Entries whose source term occurs in the source ``tokens`` (case exact), ascending."""
        return find_all(tokens, self.source_terms)

    def in_target(self, tokens: Sequence[str]) -> list[int]:
        """Entries whose target term occurs in the target ``tokens`` (case ignored), ascending."""
        return find_all(fold(tokens), self.target_terms)

    def to_constrain(self, tokens: Sequence[str]) -> list[int]:
        """The entries a constrained decoder puts into the output of the source ``tokens``: those whose source term
        occurs (``in_source``) other than only inside the occurrence of a longer source term ("Cells" inside "Format
        Cells" asks for no "Zellen" of its own), in the order of their first such occurrence (equal positions: glossary
        order), each target term once (its first entry)."""
        spans = find_spans(tokens, self.source_terms)
        spans.sort(key=lambda span: (span[0] - span[1], span[0], span[2]))  # the longest first
        claimed: list[tuple[int, int]] = []
        first: dict[int, int] = {}
        for start, end, index in spans:
            if any(start < e and s < end and e - s > end - start for s, e in claimed):
                continue
            claimed.append((start, end))
            first[index] = min(first.get(index, start), start)
        chosen, targets = [], set()
        for index in sorted(first, key=lambda i: (first[i], i)):
            if self.pairs[index][1] not in targets:
                targets.add(self.pairs[index][1])
                chosen.append(index)
        return chosen

    def targets_in(self, tokens: Sequence[str], targets: Sequence[str]) -> list[str]:
        """Of the target terms ``targets`` (texts), those that occur in the target ``tokens`` (case ignored)."""
        terms = [fold(self.target_pipeline.tokens(target)) for target in targets]
        found = set(find_all(fold(tokens), terms))
        return [target for index, target in enumerate(targets) if index in found]

    def target_words(self) -> frozenset[str]:
        """Every token of every target term, casefolded (the words the ``nonterm:`` R values leave out)."""
        return frozenset(token for term in self.target_terms for token in term)
