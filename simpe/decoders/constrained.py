"""Glossary-constrained beam search: dynamic beam allocation (Post and Vilar 2018) in its vectorised form (Hu et al. 2019).

Every glossary term whose source term occurs in the segment's source must appear in the output (``simpe.terms.match``:
which terms apply; ``lexical.py``: their target forms, the mask that keeps every hypothesis able to contain them all
within the length limit).

Why dynamic beam allocation and not grid beam search (Hokamp and Liu 2017): grid beam search keeps a beam per number of
constraint tokens met, so its cost grows with the terms (C + 1 beams of width k for C constraint tokens); dynamic beam
allocation keeps one beam of width k whatever the terms and divides it among the same groups ("banks"), so a segment
with terms costs about what a segment without them costs: the one forward pass of k rows per step that plain beam
search runs. Hu et al. (2019) made the allocation a few array operations; here the few candidates are ranked in Python
as ``beam.py`` ranks its own.

One step, per source:

1. the candidates: the 2k best continuations of the live rows (as plain beam search ranks them), each row's best
   token, and each row's tokens that advance a term (``TermConstraint.advancing``); tokens the mask forbids never are;
2. each candidate's bank: the constraint tokens it has met (``TermConstraint.progress``);
3. the allocation: each bank ranked by score, then the banks taken in turn, the one with most tokens met first, one
   candidate each (the first of every bank, then the second of every bank ...): a bank with fewer candidates than its
   share leaves its slots to the others;
4. as in plain beam search: a stop candidate among the first k of that order is a finished hypothesis, the first k
   other candidates are the next live rows; the search ends when k hypotheses are finished and no live row scores
   above the worst of them, or at the length limit.

The mask lets a hypothesis end only once it contains every term, each ending at a word boundary (the decoder reads
the tokens that continue a word from its tokenizer, ``lexical.continuing``), and cuts every prefix that could no longer
fit the terms still missing in the positions left, so every finished hypothesis contains every term as whole words. A term that cannot fit
the length limit at all (with the terms before it) is left out of the segment's constraint, with one warning for the
segment naming it: the output is then the best hypothesis found under the terms that fit (partly constrained; with
none left, plain beam search's). With no term, the search is plain beam search (``beam.py``'s own step), hypothesis
for hypothesis.

Scores are raw log P(y|x) (the mask sets tokens to -inf and renormalises nothing); ties follow ``simpe.ties``.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import Any

import torch

from simpe.decoders.base import DECODERS, DecodeResult, Hypothesis
from simpe.decoders.beam import _beam_step, _best, _keep_best, _may_tie
from simpe.decoders.incremental import NEG_INF, LengthLimit, Lockstep, LockstepDecoder, Source, check_int, decoding, encode, step_scores
from simpe.decoders.lexical import Term, TermConstraint, TypedAndTerms, continuing, fit_terms, target_forms, word_end
from simpe.decoders.prefix import DONE, CharPrefix, Surfaces
from simpe.decoders.prefix import apply as apply_constraint
from simpe.errors import ConfigError
from simpe.models import family_of
from simpe.terms.match import TermMatcher
from simpe.ties import SCORE_ATOL, margin, rank, top

logger = logging.getLogger(__name__)


def _row_best(allowed: torch.Tensor) -> list[int]:
    """Each row's best token (tokens tied to rounding noise: the lowest id, ``simpe.ties.top``)."""
    vocab = allowed.shape[1]
    values, tokens = torch.topk(allowed, min(2, vocab), dim=1)  # (rows, 2)
    best = tokens[:, 0].tolist()
    if vocab > 1:
        for row, (first, second) in enumerate(values.tolist()):
            if _may_tie(first, second):
                best[row] = int(top(allowed[row], 1, atol=SCORE_ATOL)[0])
    return best


def _allocate(constraint: TermConstraint, logp: torch.Tensor, seqs: list[tuple[int, ...]], scores: list[float],
              finished: list[tuple[float, tuple[int, ...]]], beam_size: int, special: Any,
              last: bool) -> tuple[list[tuple[int, int, float]], bool]:
    """One step of one sentence's beam with dynamic beam allocation: updates ``finished``; returns (live (row, token,
    score), done). ``logp`` (rows, vocab), masked already by the constraint, is masked further in place."""
    allowed = step_scores(logp, special, last=last, overwrite=True)  # (rows, vocab)
    found: dict[tuple[int, int], float] = {}
    for value, row, token in zip(*_best(allowed, scores, 2 * beam_size)):
        if value == NEG_INF:
            break
        found[(row, token)] = value
    rows = list(range(len(seqs)))
    tokens = _row_best(allowed)
    for row, prefix in enumerate(seqs):
        advancing = constraint.advancing(prefix)
        if constraint.complete(prefix):  # a row holding every term may end here
            advancing = [*advancing, *special.stops]
        rows += [row] * len(advancing)
        tokens += advancing
    values = allowed[torch.tensor(rows, device=allowed.device), torch.tensor(tokens, device=allowed.device)].tolist()
    for row, token, value in zip(rows, tokens, values):
        if value > NEG_INF:
            found.setdefault((row, token), scores[row] + value)  # the float64 sum, as _best takes it
    banks: dict[int, list[tuple[float, int, int]]] = {}
    for (row, token), value in found.items():
        prefix = seqs[row] if token in special.stops else seqs[row] + (token,)
        banks.setdefault(constraint.progress(prefix), []).append((value, row, token))
    ranked = []
    for bank in sorted(banks, reverse=True):  # the most constraint tokens met first
        items = banks[bank]
        ranked.append([items[i] for i in rank([v for v, _, _ in items], key=[(r, t) for _, r, t in items], atol=SCORE_ATOL)])
    order = [group[i] for i in range(max(map(len, ranked), default=0)) for group in ranked if i < len(group)]
    live: list[tuple[int, int, float]] = []
    for position, (value, row, token) in enumerate(order):
        if token in special.stops:
            if position < beam_size:
                finished.append((value, seqs[row] + (token,)))
        elif len(live) < beam_size:
            live.append((row, token, value))
        if position + 1 >= beam_size and len(live) >= beam_size:
            break
    _keep_best(finished, beam_size)
    full = len(finished) >= beam_size
    worst = finished[-1][0] if full else NEG_INF
    best_live = max((value for _, _, value in live), default=NEG_INF)
    done = not live or (full and best_live < worst - margin(worst, SCORE_ATOL))
    return live, done


def constrained_search_many(model: Any, sources: list[Source], beam_size: int) -> list[tuple[list[Hypothesis], int, int]]:
    """Beam search with dynamic beam allocation on several encoded sources in lockstep (rows grouped by source, one
    forward pass for all, as ``beam.beam_search_many``). A source whose constraint is a ``TermConstraint`` with terms
    is searched with the allocation; any other (none, a typed prefix) with plain beam search's step.

    Returns:
        per source: (hypotheses best first, expansions = decoder rows run, steps).
    """
    n = len(sources)
    special = sources[0].special
    device = sources[0].device
    rows_of = Lockstep(model, sources)
    row_source = list(range(n))
    tokens_in = None  # step 0 feeds the target prefixes
    seqs: list[list[tuple[int, ...]]] = [[()] for _ in range(n)]
    scores: list[list[float]] = [[0.0] for _ in range(n)]
    finished: list[list[tuple[float, tuple[int, ...]]]] = [[] for _ in range(n)]
    expansions, steps = [0] * n, [0] * n
    for position in range(max(s.max_len for s in sources)):
        logp = rows_of.step(tokens_in)  # (rows, vocab)
        keep: list[int] = []
        next_tokens: list[int] = []
        next_source: list[int] = []
        first = 0
        while first < len(row_source):
            i = row_source[first]
            end = first
            while end + 1 < len(row_source) and row_source[end + 1] == i:
                end += 1
            block = slice(first, end + 1)
            source = sources[i]
            apply_constraint(source, logp[block], seqs[i])
            expansions[i] += end + 1 - first
            steps[i] += 1
            last = position == source.max_len - 1
            terms = source.constraint.terms if isinstance(source.constraint, TypedAndTerms) else source.constraint
            terms = terms if isinstance(terms, TermConstraint) and terms.terms else None
            if terms is None:
                live, done = _beam_step(logp[block], seqs[i], scores[i], finished[i], beam_size, False, special, last, overwrite=True)
            else:
                live, done = _allocate(terms, logp[block], seqs[i], scores[i], finished[i], beam_size, special, last)
            if not done:
                keep += [first + row for row, _, _ in live]
                next_tokens += [tok for _, tok, _ in live]
                next_source += [i] * len(live)
                seqs[i] = [seqs[i][row] + (tok,) for row, tok, _ in live]
                scores[i] = [value for _, _, value in live]
            first = end + 1
        if not keep:
            break
        rows_of.select(keep, next_source)
        tokens_in = torch.tensor(next_tokens, dtype=torch.long, device=device)  # (live rows,)
        row_source = next_source
    results = []
    for i in range(n):
        if not finished[i]:  # no complete hypothesis has probability > 0 (as beam.py: the best prefix, ended, at -inf)
            finished[i] = [(NEG_INF, seqs[i][0] + (special.eos,))]
        results.append(([Hypothesis(tokens, score) for score, tokens in finished[i]], expansions[i], steps[i]))
    return results


def constrain_terms(source: Source, terms: Sequence[Term], glue: frozenset[int] | None = None,
                    typed_tokens: Sequence[int] = ()) -> tuple[Source, list[Term], list[Term]]:
    """``source`` with the constraint of the ``terms`` that fit its length limit (``lexical.fit_terms``): (the source,
    the terms kept, the terms dropped). ``glue``: the target tokens that continue a word (``lexical.continuing``): a
    term counts only where none follows it; None: wherever it ends.

    A source constrained to a typed prefix (``prefix.constrain``) keeps it, and gets the terms beside it
    (``lexical.TypedAndTerms``): the prefix first, then the terms. ``typed_tokens``: one tokenisation of the typed text
    that agrees with it (``ConstrainedBeamDecoder.typed_tokens``); the terms must fit after those tokens, from the
    state they leave, so the hypothesis that writes them and then the terms is never cut (any other tokenisation is
    held to the same limit). Any other constraint is refused."""
    typed = source.constraint
    if typed is not None and not isinstance(typed, CharPrefix):
        raise ConfigError(f"glossary terms combine with a typed prefix only, not with {type(typed).__name__}")
    after, spare = tuple(typed_tokens), 0
    if typed is not None and typed.state(after) != DONE:  # the tokens do not cover the typed text: room for one more
        spare = 1
    constraint, kept, dropped = fit_terms(terms, source.max_len, source.special, glue, after if typed else (), spare)
    if typed is not None:
        constraint = typed if constraint is None else TypedAndTerms(typed, constraint)
    return dataclasses.replace(source, constraint=constraint), kept, dropped


@DECODERS.add("constrained_beam")
class ConstrainedBeamDecoder(LockstepDecoder):
    """Beam search that puts every applicable glossary term into its output: dynamic beam allocation (Post and Vilar
    2018; Hu et al. 2019), see the module docstring.

    Params: beam_size; attached_forms (a term also counts written right after an opening quote or bracket, without a
    space: ``simpe.decoders.lexical``); cased_forms (a term also counts in the case its position calls for: a
    capitalised UI label lowercase mid-sentence, a lowercase term capitalised first; ``lexical.target_forms``; off by
    default: it changes constrained runs, whose published figures were made without it);
    max_len_a/b/cap. The glossary is given once built (``use_glossary``: its
    (source term, target term) pairs; the loop gives ``data.glossary``'s and refuses the decoder without one);
    ``decode`` then takes the terms whose source term occurs in ``source`` (``simpe.terms.match``: whole Moses tokens,
    case exact; ``TermMatcher.to_constrain``). Without a glossary it is plain beam search.
    """

    takes_glossary = True

    def __init__(self, beam_size: int = 5, attached_forms: bool = True, max_len_a: float = 2.0, max_len_b: int = 10,
                 max_len_cap: int = 256, cased_forms: bool = False) -> None:
        check_int("beam_size", beam_size, 1)
        if not isinstance(cased_forms, bool):
            raise ConfigError(f"decoder.params.cased_forms must be true or false, got {cased_forms!r}")
        self.beam_size, self.attached_forms, self.cased_forms = beam_size, attached_forms, cased_forms
        self.limit = LengthLimit(max_len_a, max_len_b, max_len_cap)
        self.glossary: list[tuple[str, str]] = []
        self.matcher: TermMatcher | None = None  # the glossary's source terms, as the term metrics find them
        self._terms: dict[str, Term] = {}  # target term -> its forms, for the bound tokenizer

    def use_glossary(self, pairs: Sequence[tuple[str, str]], source_lang: str = "en",
                     target_lang: str = "de") -> ConstrainedBeamDecoder:
        """The run's glossary: (source term, target term) pairs, neither side empty, in the stream's languages (the
        source side is Moses-tokenised in ``source_lang``). Returns self."""
        for pair in pairs:
            if len(pair) != 2 or not all(isinstance(side, str) and side.strip() for side in pair):
                raise ConfigError(f"a glossary entry is a (source term, target term) pair of non-empty texts, got {pair!r}")
        self.glossary = [(src, tgt) for src, tgt in pairs]
        self.matcher = TermMatcher(self.glossary, source_lang, target_lang) if self.glossary else None
        return self

    def applicable(self, source: str) -> list[tuple[str, str]]:
        """The glossary's (source term, target term) pairs to place in the translation of ``source``
        (``TermMatcher.to_constrain``): in the order of their first occurrence, each target term once."""
        if self.matcher is None or not source:
            return []
        return [self.glossary[i] for i in self.matcher.to_constrain(self.matcher.source_tokens(source))]

    def bind(self, tokenizer: Any) -> ConstrainedBeamDecoder:
        self._terms = {}
        super().bind(tokenizer)
        return self

    def terms(self, model: Any, pairs: Sequence[tuple[str, str]]) -> list[Term]:
        """The pairs' target terms in ``model``'s target tokens (with the bound tokenizer), tokenised once each."""
        if pairs and self.tokenizer is None:
            raise ConfigError("the constrained_beam decoder needs the model's tokenizer for its terms: call bind(tokenizer) first")
        family = family_of(model)
        out = []
        for src, tgt in pairs:
            term = self._terms.get(tgt)
            if term is None:
                term = self._terms[tgt] = Term(tgt, target_forms(self.tokenizer, family, tgt, self.attached_forms,
                                                                  self.cased_forms))
            out.append(dataclasses.replace(term, source=src))
        return out

    def typed_tokens(self, model: Any, typed: str) -> tuple[int, ...]:
        """The typed text in the model's target tokens as the tokenizer writes it (stop tokens left out), followed, where
        those do not cover the text (a trailing space the tokenizer drops), by one token that writes the rest."""
        family = family_of(model)
        stops = set(family.special.stops)
        tokens = tuple(t for t in family.encode_target(self.tokenizer, typed)[0] if t not in stops)
        prefix = CharPrefix(Surfaces.for_tokenizer(self.tokenizer), typed)
        state = prefix.state(tokens)
        if state is not None and state != DONE:
            found = prefix.surfaces.by_surface[0].get(prefix.target[state:]) if state > 0 else None
            if found:
                tokens += (found[0],)
        return tokens

    def with_terms(self, model: Any, source: Source, pairs: Sequence[tuple[str, str]], typed: str = "") -> tuple[Source, list[Term], list[Term]]:
        """``source``, perhaps constrained to the typed prefix ``typed`` already (``prefix.constrain``), with the terms
        of ``pairs`` (``applicable``) beside it (``constrain_terms``): (the source, the terms kept, those dropped). A
        term the typed text already holds as whole words (the term metrics' rule, up to the typed text's last word
        boundary: a word still being typed may grow) is met and left out. Call inside ``decoding(model)``."""
        if typed and pairs and self.matcher is not None:
            settled = word_end(typed)
            held = set(self.matcher.targets_in(self.matcher.target_tokens(settled), [t for _, t in pairs])) if settled else set()
            pairs = [pair for pair in pairs if pair[1] not in held]
        if not pairs:
            return source, [], []
        tokens = self.typed_tokens(model, typed) if typed and source.constraint is not None else ()
        return constrain_terms(source, self.terms(model, pairs), continuing(self.tokenizer), tokens)

    def decode(self, model: Any, input_ids: Any, *, index: int = 0, source: str | None = None) -> DecodeResult:
        """Decode one source under the glossary's terms that occur in ``source`` (none without text or glossary)."""
        pairs = self.applicable(source) if source else []
        return self.decode_terms(model, input_ids, pairs, index=index)

    def decode_terms(self, model: Any, input_ids: Any, pairs: Sequence[tuple[str, str]], *, index: int = 0) -> DecodeResult:
        """Decode one source under the given (source term, target term) pairs, all applicable (``applicable``).

        ``info``: ``terms`` (the target terms constrained), ``dropped`` (those that cannot fit the length limit, or
        that the model's tokens cannot write), ``unwritable`` (the latter): one warning for the segment names those
        that do not fit, and one of its own those the vocabulary cannot write."""
        t0 = time.perf_counter()
        with decoding(model):
            encoded = encode(model, input_ids, self.limit)
            glue = continuing(self.tokenizer) if pairs else None
            constrained, kept, dropped = constrain_terms(encoded, self.terms(model, pairs), glue)
            unwritable = [t for t in dropped if t.usable(encoded.special) is None]  # not the length limit's fault
            too_long = [t for t in dropped if all(t is not u for u in unwritable)]
            if unwritable:
                logger.warning("segment %d: %d glossary term(s) cannot be written with the model's target vocabulary "
                               "(%s: a character its tokens do not have); decoded without them", index, len(unwritable),
                               ", ".join(repr(t.target) for t in unwritable))
            if too_long:
                logger.warning("segment %d: %d glossary term(s) cannot be placed within the length limit of %d tokens "
                               "(%s); decoded with the %d that fit", index, len(too_long), encoded.max_len,
                               ", ".join(repr(t.target) for t in too_long), len(kept))
            result = self.decode_sources(model, [constrained], start=index, t0=t0)[0]
        result.info = {**(result.info or {}), "terms": [t.target for t in kept], "dropped": [t.target for t in dropped],
                       "unwritable": [t.target for t in unwritable]}
        return result

    def decode_sources(self, model: Any, sources: list[Source], *, start: int = 0, t0: float | None = None) -> list[DecodeResult]:
        """Sources encoded already, each under the constraint it carries (``constrain_terms``; none: plain beam
        search). Call inside ``decoding(model)``; ``t0``: when the call's clock started (default: now)."""
        if not sources:
            return []
        t0 = time.perf_counter() if t0 is None else t0
        found = constrained_search_many(model, sources, self.beam_size)
        seconds = (time.perf_counter() - t0) / len(sources)
        return [DecodeResult(hyps, exact=None, expansions=expansions, seconds=seconds,
                             info={"steps": steps, "max_len": source.max_len})
                for (hyps, expansions, steps), source in zip(found, sources)]

    def params(self) -> dict[str, Any]:
        cased = {"cased_forms": True} if self.cased_forms else {}  # off: the parameters as they were before it
        return {"beam_size": self.beam_size, "attached_forms": self.attached_forms, **cased, **self.limit.params()}
