"""The workbench's lookups for a segment: fuzzy translation-memory matches and glossary hits.

**Matches.** A project's memory is its warm-start memory (``warm_start.path``: the translator's memory the model was
adapted on before the stream) and the translator's own earlier post-edits (their final versions, revisions
included; never another translator's). A match's score is how CAT tools score fuzzy matches: the character
Levenshtein similarity of the two sources, ``100 * (1 - distance / max(len))`` (rapidfuzz's
``Levenshtein.normalized_similarity``), rounded down to a whole percent, so only an identical source scores 100.
Matches from ``MIN_SCORE`` up are offered, at most ``MAX_MATCHES``, best first; at equal scores a post-edit before
a memory entry and a later post-edit before an earlier one (the translator's latest wording wins). A pair already
offered (same source and target) is offered once.

**Glossary hits.** The project's glossary (``simpe serve init --glossary FILE``), read by
``simpe.terms.glossary.load_glossary``, the one loader; a term occurs by ``simpe.terms.match``'s one rule (whole
Moses tokens, source case exact, target case ignored). The page highlights each hit's source term where it stands
in the source (``spans``: character offsets; a term found by its tokens whose characters differ from the text's,
for example around an apostrophe, is listed without a span) and says which target terms a post-edit leaves out
(``missing``).

This module knows nothing of HTTP or of the loop; it reads no run folder.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpe.terms.glossary import Glossary, load_glossary
from simpe.terms.match import TermMatcher

MIN_SCORE = 50  # percent: below it, CAT tools offer no fuzzy match either (most default to 70-75; a study may want more)
MAX_MATCHES = 3  # the page inserts match 1-3 with one keystroke each
MEMORY, POST_EDIT = "memory", "post-edit"  # a match's origin


@dataclass(frozen=True)
class Match:
    """One fuzzy match: its rank (1-based), score (percent), the memory's source and target, where it comes from
    (``memory`` or ``post-edit``) and, for a post-edit, the segment's index."""

    rank: int
    score: int
    source: str
    target: str
    origin: str
    index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "score": self.score, "source": self.source, "target": self.target,
                "origin": self.origin, "index": self.index}


def fuzzy_score(a: str, b: str) -> int:
    """The fuzzy-match score of two sources, in whole percent (module docstring)."""
    from rapidfuzz.distance import Levenshtein

    return int(100 * Levenshtein.normalized_similarity(a, b) + 1e-9)


def find_matches(source: str, memory: list[tuple[str, str]], post_edits: list[tuple[int, str, str]],
                 limit: int = MAX_MATCHES, min_score: int = MIN_SCORE) -> list[Match]:
    """The best fuzzy matches of ``source`` (module docstring).

    Args:
        memory: (source, target) pairs of the warm-start memory, in file order.
        post_edits: (segment index, source, final post-edit) of the translator's recorded segments.
    """
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    candidates = [(s, t, MEMORY, None) for s, t in memory] + [(s, t, POST_EDIT, i) for i, s, t in post_edits]
    if not candidates or limit < 1:
        return []
    found = process.extract(source, [c[0] for c in candidates], scorer=Levenshtein.normalized_similarity,
                            score_cutoff=min_score / 100, limit=None)
    ranked = sorted(((int(100 * score + 1e-9), position) for _, score, position in found),
                    key=lambda sp: (-sp[0], candidates[sp[1]][2] != POST_EDIT, -(candidates[sp[1]][3] or 0), sp[1]))
    out: list[Match] = []
    seen: set[tuple[str, str]] = set()
    for score, position in ranked:
        src, tgt, origin, index = candidates[position]
        if score < min_score or (src, tgt) in seen:
            continue
        seen.add((src, tgt))
        out.append(Match(len(out) + 1, score, src, tgt, origin, index))
        if len(out) == limit:
            break
    return out


class Terms:
    """A project's glossary and its matcher: the hits in a source and the target terms a post-edit leaves out."""

    def __init__(self, path: str | Path, source_lang: str, target_lang: str) -> None:
        self.glossary: Glossary = load_glossary(path, source_lang, target_lang)
        self.matcher = TermMatcher(self.glossary.pairs(), source_lang, target_lang)

    def hits(self, source: str) -> list[dict[str, Any]]:
        """The glossary entries whose source term occurs in ``source``: ``source``, ``target``, ``spans`` (character
        offsets ``[start, end)`` of the term in ``source``), in glossary order."""
        out = []
        for entry in self.matcher.in_source(self.matcher.source_tokens(source)):
            term, target = self.matcher.pairs[entry]
            spans = [[m.start(), m.end()] for m in re.finditer(rf"(?<!\w){re.escape(term)}(?!\w)", source)]
            out.append({"entry": entry, "source": term, "target": target, "spans": spans})
        return out

    def missing(self, hits: list[dict[str, Any]], post_edit: str) -> list[dict[str, str]]:
        """The hits whose target term ``post_edit`` does not hold (``source``, ``target``)."""
        if not hits:
            return []
        present = set(self.matcher.in_target(self.matcher.target_tokens(post_edit)))
        return [{"source": h["source"], "target": h["target"]} for h in hits if h["entry"] not in present]
