"""R0, R1, R0+1 (Simianer et al. (2019), section 2.2), generalised to Rk and R0..k, streamed segment by segment.

Walk the references in stream order and count, per content-word type, in how many
references it has occurred so far (once per segment). Type t of reference i belongs to
Rk,i when this is its (k+1)-th occurrence, and to R0..k,i when it is at most its
(k+1)-th. With H_i the set of content-word types of hypothesis i:

- per segment: ``[|H_i ∩ R_i|, |R_i|]`` (value num/den, undefined when den = 0);
- corpus and cumulative over 1..i: sum of numerators / sum of denominators (no
  clipping, no alignment: the paper's set-level definition).

Names: ``r0``, ``r1``, ..., ``r{k}``, ``r0+1`` (always; = R0..1) and ``r0..j`` for
2 <= j <= k. Variants get a prefix: ``novel:`` counts only reference types that are rare in
a training vocabulary (absent, or seen at most ``rare_threshold`` times: the script's
``-v``/``-R``; ``load_vocab``/``build_vocab``); ``subword:`` uses subword units as the
"words" (``simpe.metrics.online`` says which).

This is the counting of the script of the authors of Simianer et al. (2019) (``rk.rb``, github.com/lilt/r01) line for
line: per reference, each counted type's occurrence count goes up by one; the type is in
the denominator of Rk when the count is exactly k+1 (of R0..k when it is at most k+1) and in
the numerator when the hypothesis holds it too. ``restart`` forgets the occurrence counts
(``metrics.scope: document`` calls it at each document boundary; the sums are kept).
``r_signature`` names every setting a figure depends on, in sacreBLEU's manner.

This module works on sets of types; turning text into content types is ``simpe.metrics.text``'s
job, and the online bookkeeping of every metric is ``simpe.metrics.online``'s.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from simpe.config.tree import R_MAX_K_LIMIT
from simpe.errors import ConfigError, DataError
from simpe.metrics.base import Metric
from simpe.textfile import read_lines


def r_names(max_k: int = 1, prefix: str = "") -> list[str]:
    """Metric names logged for ``max_k``: ``r0..r{max_k}``, ``r0+1``, then ``r0..j`` for j = 2..max_k."""
    if not isinstance(max_k, int) or isinstance(max_k, bool) or not 0 <= max_k <= R_MAX_K_LIMIT:
        raise ConfigError(f"r_max_k must be an integer in [0, {R_MAX_K_LIMIT}], got {max_k!r}")
    names = [f"r{k}" for k in range(max_k + 1)] + ["r0+1"] + [f"r0..{j}" for j in range(2, max_k + 1)]
    return [prefix + name for name in names]


def ratio(num: float, den: float) -> float | None:
    """num/den, or None when the denominator is 0 (an undefined R value)."""
    return num / den if den else None


class RecallMetric(Metric):
    """One R value (``r0``, ``r0+1``, ``novel:r1`` ...): statistics [matched types, reference types].

    The statistics of a segment depend on the references before it, so they come from a
    ``RecallCounter``; the score of summed statistics is their ratio (a fraction; tables
    show percent), undefined while no reference type has been counted.
    """

    percent = True
    stat_names = ("matched", "types")

    def __init__(self, name: str) -> None:
        self.name = name
        prefix, _, base = name.rpartition(":")
        self.label = (prefix + ":" if prefix else "") + base.upper()

    def score_from_stats(self, stats: Sequence[float]) -> float | None:
        return ratio(stats[0], stats[1])


class RecallCounter:
    """Streaming occurrence counts and R numerator/denominator sums for one variant.

    ``add`` scores one segment and advances the counts; ``observe`` advances the counts
    from a logged segment (resuming a run) without a hypothesis.
    """

    def __init__(self, max_k: int = 1, vocab: Mapping[str, int] | frozenset[str] | None = None, prefix: str = "",
                 rare_threshold: int = 0) -> None:
        """
        Args:
            max_k: highest k of Rk and R0..k to report (``r0+1`` is always reported).
            vocab: training vocabulary (word -> count, or a set of words); when given, only
                reference types that are rare in it count (the novel-word variant).
            prefix: name prefix (``"novel:"``, ``"subword:"``).
            rare_threshold: a vocabulary word still counts when its count is at most this
                (rk.rb's ``-R``; 0: only words absent from the vocabulary). Needs counts.
        """
        self.names = r_names(max_k, prefix)
        self.max_k = max_k
        if rare_threshold and vocab is not None and not isinstance(vocab, Mapping):
            raise ConfigError(f"metrics.rare_threshold={rare_threshold} needs a vocabulary with counts (lines '<count> <word>'), "
                              "but the vocabulary is a plain word list")
        self.frequent: frozenset[str] | None = None  # the vocabulary words that do not count
        if vocab is not None:
            self.frequent = (frozenset(w for w, c in vocab.items() if c > rare_threshold) if isinstance(vocab, Mapping)
                             else frozenset(vocab))
        self.rare_threshold = rare_threshold
        self.prefix = prefix
        self.occurrences: dict[str, int] = {}  # type -> number of references it occurred in so far
        self.totals: dict[str, list[int]] = {name: [0, 0] for name in self.names}
        # (name, lowest occurrence, highest occurrence) of each reported class, 1-based occurrences
        self._classes = [(prefix + f"r{k}", k + 1, k + 1) for k in range(max_k + 1)]
        self._classes += [(prefix + "r0+1", 1, 2)] + [(prefix + f"r0..{j}", 1, j + 1) for j in range(2, max_k + 1)]

    def _occurrence_list(self, ref_types: Iterable[str]) -> list[tuple[str, int]]:
        """Advance the counts by one reference; return (type, its occurrence number) for counted types."""
        counted = []
        occurrences = self.occurrences
        frequent = self.frequent
        for word in set(ref_types):
            if frequent is not None and word in frequent:
                continue
            occ = occurrences.get(word, 0) + 1
            occurrences[word] = occ
            counted.append((word, occ))
        return counted

    def add(self, hyp_types: Iterable[str], ref_types: Iterable[str]) -> dict[str, list[int]]:
        """Score one segment and advance the stream: ``{name: [numerator, denominator]}``.

        Args:
            hyp_types: the hypothesis' content-word types (H_i).
            ref_types: the reference's content-word types; duplicates count once.
        """
        hyp = hyp_types if isinstance(hyp_types, (set, frozenset)) else set(hyp_types)
        counted = self._occurrence_list(ref_types)
        result = {}
        for name, low, high in self._classes:
            den = num = 0
            for word, occ in counted:
                if low <= occ <= high:
                    den += 1
                    num += word in hyp
            result[name] = [num, den]
            total = self.totals[name]
            total[0] += num
            total[1] += den
        return result

    def observe(self, ref_types: Iterable[str], logged: dict[str, Sequence[int]]) -> None:
        """Advance the stream by a logged segment: its reference types and its ``[num, den]`` per name."""
        counted = self._occurrence_list(ref_types)
        for name, low, high in self._classes:
            if name not in logged:
                raise DataError(f"logged segment has no {name!r} value to resume from (has: {', '.join(sorted(logged))}); "
                                "resume with the metrics configuration the run was started with")
            num, den = (int(v) for v in logged[name])
            expected = sum(1 for _, occ in counted if low <= occ <= high)
            if den != expected:
                raise DataError(f"logged {name} denominator {den} does not match the reference's {expected} "
                                "(different stopwords, truecaser, vocabulary or segment order?)")
            self.totals[name][0] += num
            self.totals[name][1] += den

    def restart(self) -> None:
        """Forget every occurrence count (a document boundary under ``metrics.scope: document``); keep the sums."""
        self.occurrences.clear()

    def cumulative(self) -> dict[str, float | None]:
        """Sum of numerators / sum of denominators so far, per name (None while a denominator is 0)."""
        return {name: ratio(num, den) for name, (num, den) in self.totals.items()}


@dataclass
class RecallResult:
    """Per-segment ``[num, den]`` pairs and the corpus values of a whole stream."""

    segments: list[dict[str, list[int]]] = field(default_factory=list)
    corpus: dict[str, float | None] = field(default_factory=dict)
    totals: dict[str, list[int]] = field(default_factory=dict)


def recall_corpus(hyp_types: Sequence[Iterable[str]], ref_types: Sequence[Iterable[str]], max_k: int = 1,
                  vocab: Mapping[str, int] | frozenset[str] | None = None, prefix: str = "") -> RecallResult:
    """R metrics of a whole stream from per-segment type sets (hypotheses and references in stream order)."""
    if len(hyp_types) != len(ref_types):
        raise DataError(f"{len(hyp_types)} hypotheses but {len(ref_types)} references")
    counter = RecallCounter(max_k, vocab, prefix)
    segments = [counter.add(h, r) for h, r in zip(hyp_types, ref_types)]
    return RecallResult(segments, counter.cumulative(), {k: list(v) for k, v in counter.totals.items()})


def repeated_errors(hyp_types: Sequence[Iterable[str]], ref_types: Sequence[Iterable[str]]) -> list[tuple[int, int]]:
    """Per segment, (missed again, shown after a miss): the repeated-error rate's statistics.

    A content type of a reference that its hypothesis missed has been *shown* by that post-edit.
    At the type's next occurrence in a reference, counted in the second number, the first counts
    it when the hypothesis misses it again. The rate is the sum of the first over the sum of the
    second: of the words a post-edit had to correct, the share the system still gets wrong the next
    time (stream order, each type once per segment, as R counts them).
    """
    if len(hyp_types) != len(ref_types):
        raise DataError(f"{len(hyp_types)} hypotheses but {len(ref_types)} references")
    pending: set[str] = set()  # types missed at their last occurrence
    out = []
    for hyp, ref in zip(hyp_types, ref_types):
        hyp, ref = set(hyp), set(ref)
        shown = ref & pending
        out.append((len(shown - hyp), len(shown)))
        pending = (pending - ref) | (ref - hyp)
    return out


# ---------------------------------------------------------------- training vocabulary (novel words)
def build_vocab(lines: Iterable[str], pipeline) -> Counter[str]:
    """Every token type of ``lines`` after ``pipeline`` (a ``simpe.metrics.text.TextPipeline``) with its count.

    Build it from the model's training target text with the same pipeline (tokeniser,
    truecaser) the metrics use, so that types compare equal.
    """
    vocab: Counter[str] = Counter()
    for line in lines:
        vocab.update(pipeline.tokens(line.rstrip("\n")))
    return vocab


def write_vocab(vocab: Mapping[str, int], path: str | Path) -> None:
    """Write a vocabulary in rk.rb's ``-v`` format: ``<count> <word>`` per line, most frequent first, then by word."""
    rows = sorted(vocab.items(), key=lambda item: (-item[1], item[0]))
    Path(path).write_text("".join(f"{count} {word}\n" for word, count in rows), encoding="utf-8")


def load_vocab(path: str | Path) -> dict[str, int] | frozenset[str]:
    """Read a vocabulary: ``<count> <word>`` lines (rk.rb's format; returns word -> count), or a plain
    word list, one word per line (returns the set of words). Blank lines are ignored; case is kept."""
    lines = [(number, line.split()) for number, line in enumerate(read_lines(path, "vocabulary file"), 1) if line.split()]
    counted = bool(lines) and len(lines[0][1]) == 2 and lines[0][1][0].isdigit()  # the first line decides the format
    bad = next(((number, fields) for number, fields in lines
                if ((len(fields) != 2 or not fields[0].isdigit()) if counted else len(fields) != 1)), None)
    if bad is not None:
        expected = "'<count> <word>' as its first line" if counted else "one word as its first line"
        raise DataError(f"vocabulary file {str(path)!r}: line {bad[0]} is not {expected} (got {' '.join(bad[1])[:60]!r})")
    if counted:
        return {word: int(count) for _, (count, word) in lines}
    return frozenset(fields[0] for _, fields in lines)


def vocab_digest(vocab: Mapping[str, int] | frozenset[str]) -> str:
    """The first 8 hex digits of the SHA-256 of the vocabulary's sorted ``<count> <word>`` (or word) lines."""
    rows = sorted(f"{c} {w}" for w, c in vocab.items()) if isinstance(vocab, Mapping) else sorted(vocab)
    return hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()[:8]


def build_vocab_file(text_path: str | Path, out_path: str | Path, lang: str = "de",
                     truecaser: str | Path | None = None) -> int:
    """Build the training vocabulary of a plain-text file (one segment per line) and write it; return its size."""
    from simpe.metrics.text import TextPipeline

    try:
        with open(text_path, encoding="utf-8") as f:
            vocab = build_vocab(f, TextPipeline(lang, truecaser))
    except FileNotFoundError:
        raise DataError(f"training text {str(text_path)!r} does not exist") from None
    except UnicodeDecodeError as err:
        raise DataError(f"training text {str(text_path)!r} is not valid UTF-8 (byte {err.start})") from None
    write_vocab(vocab, out_path)
    return len(vocab)


# ---------------------------------------------------------------- signature
def r_signature(*, max_k: int, stopwords: str, case: str, token_filter: str, truecaser: str, tokenizer: str,
                scope: str, version: str, vocab: str | None = None, rare_threshold: int = 0,
                unit: str = "word") -> str:
    """The R metrics' settings in sacreBLEU's manner, e.g.
    ``k:1|unit:word|sw:de.1a2b3c4d|case:exact|filter:punct-or-digits|tok:moses.de|tc:truecase.de.model.5e6f7a8b|scope:stream|version:0.2.0``.

    Two R figures are comparable only when their signatures agree (the version aside).
    ``vocab``/``rare_threshold`` appear for the novel-word variant.
    """
    parts = [f"k:{max_k}", f"unit:{unit}", f"sw:{stopwords}", f"case:{case}", f"filter:{token_filter}",
             f"tok:{tokenizer}", f"tc:{truecaser}", f"scope:{scope}"]
    if vocab is not None:
        parts += [f"vocab:{vocab}", f"rare:{rare_threshold}"]
    return "|".join([*parts, f"version:{version}"])
