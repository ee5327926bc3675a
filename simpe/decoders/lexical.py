"""Glossary terms as lexical constraints: the terms that apply to a segment, their target tokens, and the mask that keeps
a search on hypotheses that contain every one of them.

A *term* is a glossary entry whose source term occurs in the segment's source; its target side must appear in the
output as one of its *forms*, token sequences of the model's target vocabulary (``target_forms``):

* the word-initial form, the term as the model writes it after a space (SentencePiece's ``▁`` or byte-level BPE's
  ``Ġ`` on its first token): what a term mid-sentence is;
* the form at the text's start, where a tokenizer writes no space there (byte-level BPE: a chat answer's first word);
  it counts only as the hypothesis' first tokens (an *anchored* form; SentencePiece writes ``▁`` there too, so it is
  the word-initial form);
* with ``attached``, the forms after an opening quote or bracket (``„Zellen``: German help text quotes dialog names),
  written without a space;
* the case the position calls for (``target_forms``' ``cased``): a capitalised term also lowercase-initial, a
  lowercase one also capitalised as the text's first word.

A hypothesis *contains* a term when one of its forms occurs in it as consecutive tokens **and ends at a word
boundary**: the token after the form's last one starts a new word (its text starts with a space, SentencePiece's ``▁``
or byte-level BPE's ``Ġ``), is punctuation or a symbol other than the ASCII hyphen (Moses keeps a hyphenated
compound as one word), writes no text, or is the stop token; a form whose term ends
in punctuation (``Summe (x)``) ends a word by itself. Without the rule a forced "Zeile" could go on as "Zeile" +
"kopf" or "Zeile" + "-Tabelle", which the term metrics (whole Moses tokens) do not count. Which tokens *continue* a
word (their text starts with a letter, a digit, a mark or a hyphen, or with a byte that is no whole character) is read once per tokenizer
(``continuing``); a constraint built without them (``glue=None``) counts a form wherever it ends.

The state of a token prefix is the set of terms it contains (a form ended before the last token and a boundary
followed) and the node of an Aho-Corasick automaton over every form (Aho and Corasick 1975): the longest suffix of the
prefix that begins a form. The terms whose form ends at the last token (the node's outputs) are *held*: the next token
decides, and a stop token is a boundary, so a hypothesis may end once it holds every term. Overlapping terms, a term
inside another, and a form broken off and begun again are all read exactly. From a state, ``needed`` is the fewest
further tokens that make the prefix hold every term: exact (a breadth-first search over the states reachable from the
segment's start, while they number at most ``EXACT_STATES``), else an upper bound (the terms not yet held written one
after another, each behind one word-starting token where its form starts with a continuing one, the one under way
completed first), which is exact whenever no two terms overlap and every form starts a word.

The mask (``TermConstraint.mask``, what ``simpe.decoders.prefix.apply`` hands every decoder's rows, as it hands a typed
prefix) sets to -inf every token after which the remaining positions of the length limit (``Source.max_len``, the stop
token included) cannot hold the terms still missing (a continuing token after a held term's last one, where no room is
left to write the term again, among them), and the stop tokens until every term is held. Allowed tokens
keep their raw log-probabilities, so a hypothesis' score stays log P(y|x); every complete hypothesis a search finds
contains every term; and no live prefix is a dead end (with the exact ``needed``; with the bound, a prefix that could
still fit the terms only by overlapping them may be cut). The exact top-k search with this mask is therefore the exact
constrained search (the tests compare it with brute force on every family's tiny model).

``progress`` is Hu et al. (2019)'s count of constraint tokens met, which the dynamic beam allocation of
``constrained.py`` groups hypotheses by: the total cost less the bound above (a term's cost: its shortest form's
length, one more where that form starts with a continuing token), so each held term counts in full and the form under
way counts the tokens it has.

Which of a glossary's entries apply to a segment is ``simpe.terms.match``'s (``TermMatcher.to_constrain``). This module
does not search (``constrained.py``) and does not read glossary files.
"""
from __future__ import annotations

import unicodedata
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from simpe.decoders.incremental import NEG_INF
from simpe.decoders.prefix import Surfaces

BOS = -1  # a symbol before a hypothesis' first token: an anchored form begins with it (never a real token)
OTHER = -2  # any token in no term's form that does not continue a word: they all lead to the automaton's root
GLUED = -3  # any token in no term's form that continues a word (to the root too, but a held term is lost)
UNREACHABLE = 1 << 30  # ``needed`` of a state from which not every term can be contained
EXACT_STATES = 2048  # the states (terms contained x automaton node) the exact distances enumerate at most
WORD_PROBE = "a"  # a word before the term: the tokens after it are the word-initial form
ATTACHED_PROBES = ("„", "(", '"')  # what a term follows without a space where help text quotes or brackets it


@dataclass(frozen=True)
class Form:
    """One way a term's target side is written in tokens: ``tokens`` (target ids, no stop token); ``anchored``: it
    counts only as a hypothesis' first tokens; ``closed``: its text ends in a character that ends a word by itself
    (punctuation, a symbol), so no boundary need follow it."""

    tokens: tuple[int, ...]
    anchored: bool = False
    closed: bool = False


@dataclass(frozen=True)
class Term:
    """A glossary entry's target side as the model writes it: its forms (at least one not anchored)."""

    target: str
    forms: tuple[Form, ...]
    source: str = ""

    @property
    def length(self) -> int:
        """The fewest tokens an unanchored form takes (its cost anywhere in a hypothesis)."""
        return min(len(form.tokens) for form in self.forms if not form.anchored)

    def usable(self, special: Any) -> Term | None:
        """This term with the forms that hold no stop or never-generated token, or None when none is left (or no
        unanchored one)."""
        banned = set(special.stops) | set(special.forbidden)
        forms = tuple(f for f in self.forms if f.tokens and not banned & set(f.tokens))
        if not any(not f.anchored for f in forms):
            return None
        return Term(self.target, forms, self.source)


def _word_char(char: str) -> bool:
    """Whether a character belongs to a word: anything but spaces, punctuation (Unicode P*) and symbols (S*), except
    the ASCII hyphen, which belongs to the word it touches: the term metrics count Moses tokens, and Moses keeps a
    hyphenated compound ("Kategorie-Tabelle", "Zeilen-") as one token (sacremoses' default, no aggressive dash
    splits), so a term followed by a hyphen is not the term there."""
    return char == "-" or (not char.isspace() and unicodedata.category(char)[0] not in "PSZ")


def word_end(text: str) -> str:
    """``text`` up to its last word boundary: a word at its end that may still grow (no space or punctuation after
    it yet) left out. "Wählen Sie Zeile" -> "Wählen Sie ", "Wählen Sie Zeile " and "… Zeile." unchanged."""
    end = len(text)
    while end and _word_char(text[end - 1]):
        end -= 1
    return text[:end]


def continues_word(surface: bytes | None) -> bool:
    """Whether a token of this surface (``Surfaces.surface``) continues the word before it: its text starts with a word
    character, or with bytes that are no whole character (a byte-level piece of a letter such as "ä"). A token that
    writes no text (None, a special token) or nothing at all, or whose text starts with a space, punctuation or a
    symbol, starts a new word (or ends the one before)."""
    if not surface:
        return False
    for size in range(1, min(4, len(surface)) + 1):
        try:
            return _word_char(surface[:size].decode("utf-8")[0])
        except UnicodeDecodeError:
            continue
    return True


def continuing(tokenizer: Any) -> frozenset[int]:
    """The target tokens of ``tokenizer`` that continue a word (``continues_word``), read once per tokenizer (kept on
    it, as ``Surfaces.for_tokenizer`` keeps its table)."""
    cached = getattr(tokenizer, "_simpe_continuing", None)
    if cached is None:
        surfaces = Surfaces.for_tokenizer(tokenizer)
        cached = frozenset(t for t, surface in enumerate(surfaces.surface) if continues_word(surface))
        try:
            tokenizer._simpe_continuing = cached
        except AttributeError:  # a tokenizer that takes no attributes: read again next time
            pass
    return cached


def _spelled(surfaces: Surfaces, tokens: Sequence[int]) -> bytes | None:
    """The bytes ``tokens`` write (SentencePiece's ``▁`` as a space), None when one of them writes no text (a special)."""
    out = b""
    for token in tokens:
        surface = surfaces.surface[token] if 0 <= token < surfaces.size else None
        if surface is None:
            return None
        out += surface
    return out


def _after(surfaces: Surfaces, encode: Any, probe: str, text: str) -> tuple[int, ...] | None:
    """The tokens ``text`` takes where it follows ``probe`` in one string: those after the tokens that spell the probe
    (its leading spaces not compared), when they spell exactly ``text``; None when no token boundary falls there."""
    tokens = encode(probe + text)
    head = probe.encode("utf-8")
    for cut in range(1, len(tokens)):
        spelled = _spelled(surfaces, tokens[:cut])
        if spelled is None:
            return None
        if spelled.lstrip(b" ") == head:
            return tuple(tokens[cut:]) if _spelled(surfaces, tokens[cut:]) == text.encode("utf-8") else None
        if len(spelled.lstrip(b" ")) > len(head):
            return None
    return None


def target_forms(tokenizer: Any, family: Any, target: str, attached: bool = True, cased: bool = False) -> tuple[Form, ...]:
    """The forms of one target term (``_forms``); with ``cased``, also those of the case its position calls for: a
    capitalised term (a UI label, "Löschen") lowercase-initial anywhere (mid-sentence: "Tabelle löschen"; the model's
    probabilities choose), a lowercase term capitalised at the text's start (anchored). The term metrics ignore case."""
    forms = _forms(tokenizer, family, target, attached)
    flipped = target[:1].swapcase() + target[1:]
    if not cased or not forms or not target[:1].isalpha() or flipped == target or len(flipped) != len(target):
        return forms
    seen, upper = {form.tokens for form in forms}, target[:1].isupper()
    return forms + tuple(Form(f.tokens, f.anchored or not upper, f.closed)
                         for f in _forms(tokenizer, family, flipped, attached) if f.tokens not in seen)


def _forms(tokenizer: Any, family: Any, target: str, attached: bool = True) -> tuple[Form, ...]:
    """The forms of one target term in a model's target tokens (see the module docstring), found by tokenising the
    term after a probe word and checking, token by token, what the tokens write (``simpe.decoders.prefix.Surfaces``).
    Where no form can be checked (a tokenizer that normalises the text), the term's own tokens; () when they hold a
    token that writes nothing (an unknown character)."""
    surfaces = Surfaces.for_tokenizer(tokenizer)
    stops = set(family.special.stops)

    def encode(text: str) -> list[int]:
        return [t for t in family.encode_target(tokenizer, text)[0] if t not in stops]

    forms: dict[tuple[int, ...], bool] = {}  # tokens -> anchored (an unanchored one wins)
    initial = _after(surfaces, encode, WORD_PROBE, " " + target)
    if initial is not None and initial:
        forms[initial] = False
    if attached:
        for probe in ATTACHED_PROBES:
            found = _after(surfaces, encode, probe, target)
            if found:
                forms[found] = False
    own = tuple(encode(target))
    spelled = _spelled(surfaces, own)
    if own and spelled is not None and spelled.lstrip(b" ") == target.encode("utf-8"):
        forms.setdefault(own, True)  # the text's start (anchored unless a form above is the same tokens)
    if not any(not anchored for anchored in forms.values()):
        if not own or spelled is None:
            return ()
        forms = {own: False}  # nothing checks out: the term's own tokens, anywhere
    closed = bool(target) and not _word_char(target[-1])
    return tuple(Form(tokens, anchored, closed) for tokens, anchored in forms.items())


class Automaton:
    """Aho-Corasick over the terms' forms (token ids; an anchored form behind ``BOS``). Node 0 is the root."""

    def __init__(self, terms: Sequence[Term]) -> None:
        self.children: list[dict[int, int]] = [{}]
        self.fail = [0]
        self.out = [0]  # bitmask of the terms a form of which ends here (through the fail links too, once built)
        self.closed = [0]  # the same, of the forms that need no word boundary after them (``Form.closed``)
        # (term, tokens left to complete the form, the form's next token) per node
        self.through: list[list[tuple[int, int, int | None]]] = [[]]
        for index, term in enumerate(terms):
            for form in term.forms:
                path = ((BOS,) if form.anchored else ()) + form.tokens
                node = 0
                for depth, token in enumerate(path, 1):
                    child = self.children[node].get(token)
                    if child is None:
                        child = self.children[node][token] = len(self.children)
                        self.children.append({})
                        self.fail.append(0)
                        self.out.append(0)
                        self.closed.append(0)
                        self.through.append([])
                    node = child
                    if token != BOS:
                        self.through[node].append((index, len(path) - depth, path[depth] if depth < len(path) else None))
                self.out[node] |= 1 << index
                if form.closed:
                    self.closed[node] |= 1 << index
        queue = deque(self.children[0].values())
        while queue:  # breadth first: a node's fail link is shallower than it
            node = queue.popleft()
            for token, child in self.children[node].items():
                self.fail[child] = self._walk(self.fail[node], token)  # a shallower node: never child itself
                self.out[child] |= self.out[self.fail[child]]
                self.closed[child] |= self.closed[self.fail[child]]
                queue.append(child)
        self.alphabet = sorted({t for kids in self.children for t in kids if t != BOS})
        self._delta: dict[tuple[int, int], int] = {}

    def _walk(self, node: int, token: int) -> int:
        while True:
            child = self.children[node].get(token)
            if child is not None:
                return child
            if node == 0:
                return 0
            node = self.fail[node]

    def step(self, node: int, token: int) -> int:
        """The node after ``token`` (any token in no form: ``OTHER`` or ``GLUED``)."""
        if token in (OTHER, GLUED):
            return 0
        key = (node, token)
        found = self._delta.get(key)
        if found is None:
            found = self._delta[key] = self._walk(node, token)
        return found

    def chain(self, node: int) -> list[int]:
        """``node`` and the nodes its fail links reach, the root left out."""
        nodes = []
        while node:
            nodes.append(node)
            node = self.fail[node]
        return nodes


State = tuple[int, int]  # (bitmask of the terms contained, automaton node); the node's outputs are held besides


class TermConstraint:
    """The constraint of one segment's terms under a length limit: ``mask`` rows of log-probabilities given the rows'
    token prefixes (what ``simpe.decoders.prefix.apply`` calls), ``progress`` for the banks of dynamic beam allocation.

    Args:
        terms: the terms every complete hypothesis must contain (``Term.usable`` ones; see ``constrain_terms``).
        max_len: the hypotheses' length limit, the stop token included (``Source.max_len``).
        stops: the family's stop tokens.
        glue: the tokens that continue a word (``continuing``): a form counts only where none of them follows it.
            None: a form counts wherever it ends (every token starts a word).
    """

    def __init__(self, terms: Sequence[Term], max_len: int, stops: Sequence[int], glue: frozenset[int] | None = None) -> None:
        self.terms, self.max_len, self.stops = list(terms), max_len, tuple(stops)
        self.glue = frozenset(glue or ()) - set(self.stops)
        if self.glue:
            self.glue |= {GLUED}
        self.automaton = Automaton(self.terms)
        self.full = (1 << len(self.terms)) - 1
        self.costs = [min(len(f.tokens) + (f.tokens[0] in self.glue) for f in term.forms if not f.anchored)
                      for term in self.terms]
        self.lengths = [term.length for term in self.terms]
        self.total = sum(self.costs)
        node = self.automaton.step(0, BOS)
        self.start: State = (self.automaton.closed[node], node)
        self._states: dict[tuple[int, ...], State] = {(): self.start}
        self._bounds: dict[State, int] = {}
        self._rules: dict[tuple[State, int], tuple[str, torch.Tensor, torch.Tensor] | None] = {}
        self._advancing: dict[State, list[int]] = {}
        self._glue_rows: dict[tuple[int, Any], torch.Tensor] = {}
        self.distances = self._exact_distances()  # None: too many states, ``needed`` is the bound

    # ---------------------------------------------------------------- states
    def after(self, state: State, token: int) -> State:
        met, node = state
        if token not in self.glue:  # a word boundary: the forms that ended at the last token count
            met |= self.automaton.out[node]
        node = self.automaton.step(node, token)
        return met | self.automaton.closed[node], node

    def held(self, state: State) -> int:
        """The terms a prefix in ``state`` contains if a word boundary (or the stop) comes next."""
        return state[0] | self.automaton.out[state[1]]

    def state(self, tokens: tuple[int, ...]) -> State:
        """The state of a token prefix (memoised by prefix)."""
        found = self._states.get(tokens)
        if found is None:
            found = self._states[tokens] = self.after(self.state(tokens[:-1]), tokens[-1])
        return found

    def complete(self, tokens: tuple[int, ...]) -> bool:
        """Whether ``tokens`` followed by the stop token contain every term (each ending at a word boundary)."""
        return self.held(self.state(tokens)) == self.full

    def bound(self, state: State) -> int:
        """At most this many further tokens make a prefix in ``state`` hold every term: the missing terms' cheapest
        forms one after another (``costs``: a word-starting token first where a form starts with a continuing one), the
        form under way (on the node's fail chain) completed first where that is shorter, unless its next token would
        continue a word and lose a held term."""
        found = self._bounds.get(state)
        if found is None:
            node = state[1]
            held = self.held(state)
            pending = held & ~state[0]
            missing = sum(cost for i, cost in enumerate(self.costs) if not held >> i & 1)
            credit = 0
            for on in self.automaton.chain(node):
                for term, left, following in self.automaton.through[on]:
                    if not held >> term & 1 and not (pending and following in self.glue):
                        credit = max(credit, self.costs[term] - left)
            found = self._bounds[state] = missing - credit
        return found

    def needed(self, state: State) -> int:
        """The fewest further tokens (exact, or the bound; ``UNREACHABLE`` when none do) that make a prefix in
        ``state`` hold every term."""
        if self.distances is None:
            return self.bound(state)
        return self.distances.get(state, UNREACHABLE)

    def progress(self, tokens: tuple[int, ...]) -> int:
        """Constraint tokens met (Hu et al. 2019): in [0, ``total``], ``total`` once every term is held."""
        return self.total - self.bound(self.state(tokens))

    def _exact_distances(self) -> dict[State, int] | None:
        """``needed`` of every state reachable from the start, by breadth-first search backwards from the states that
        hold every term; None when more than ``EXACT_STATES`` are reachable."""
        if (1 << len(self.terms)) * len(self.automaton.children) > 16 * EXACT_STATES:
            return None  # far more terms than the enumeration takes: not worth starting it
        symbols = [*self.automaton.alphabet, OTHER] + ([GLUED] if self.glue else [])
        before: dict[State, list[State]] = {self.start: []}
        queue = deque([self.start])
        while queue:
            state = queue.popleft()
            for token in symbols:
                nxt = self.after(state, token)
                if nxt not in before:
                    if len(before) >= EXACT_STATES:
                        return None
                    before[nxt] = []
                    queue.append(nxt)
                before[nxt].append(state)
        distances = {state: 0 for state in before if self.held(state) == self.full}
        queue = deque(distances)
        while queue:
            state = queue.popleft()
            for earlier in before[state]:
                if earlier not in distances:
                    distances[earlier] = distances[state] + 1
                    queue.append(earlier)
        return distances

    # ---------------------------------------------------------------- the mask
    def _rule(self, state: State, left: int) -> tuple[str, torch.Tensor, torch.Tensor] | None:
        """What ``mask`` does to a row in ``state`` with ``left`` positions left (this one and the stop's included):
        None (nothing), ("drop", ids, _), ("keep", ids, _) or ("words", drop ids, keep ids): every continuing token
        dropped besides ``drop``, ``keep`` kept."""
        key = (state, left)
        if key in self._rules:
            return self._rules[key]
        room = left - 2  # after this token: the positions for further tokens, the stop's kept
        complete = self.held(state) == self.full
        fits = [t for t in self.automaton.alphabet if self.needed(self.after(state, t)) <= room]
        stops = list(self.stops) if complete else []
        none = torch.tensor([], dtype=torch.long)
        if self.needed(self.after(state, OTHER)) > room:
            rule = ("keep", torch.tensor(fits + stops, dtype=torch.long), none)
        else:
            drop = sorted(set(self.automaton.alphabet) - set(fits)) + ([] if complete else list(self.stops))
            if self.glue and self.needed(self.after(state, GLUED)) > room:  # a continuing token would cost a term
                rule = ("words", torch.tensor(drop, dtype=torch.long), torch.tensor(fits + stops, dtype=torch.long))
            else:
                rule = ("drop", torch.tensor(drop, dtype=torch.long), none) if drop else None
        self._rules[key] = rule
        return rule

    def _glue_row(self, vocab: int, device: Any) -> torch.Tensor:
        """(vocab,) True at the tokens that continue a word."""
        found = self._glue_rows.get((vocab, device))
        if found is None:
            found = torch.zeros(vocab, dtype=torch.bool)
            found[torch.tensor(sorted(t for t in self.glue if 0 <= t < vocab), dtype=torch.long)] = True
            found = self._glue_rows[(vocab, device)] = found.to(device)
        return found

    def mask(self, logp: torch.Tensor, prefixes: list[tuple[int, ...]]) -> None:
        """Set, in place, every token after which the terms still missing cannot fit the length limit to -inf (the stop
        tokens until every term is held), row by row.

        Args:
            logp: (rows, vocab) next-token log-probabilities of the rows whose tokens are ``prefixes``.
            prefixes: each row's target tokens so far (without the family's fixed prefix).
        """
        for row, tokens in enumerate(prefixes):
            key = (self.state(tokens), self.max_len - len(tokens))
            rule = self._rule(*key)
            if rule is None:
                continue
            what, ids, keep = rule
            if ids.device != logp.device:  # moved once per rule: the rows of a search are on one device
                ids, keep = ids.to(logp.device), keep.to(logp.device)
                self._rules[key] = (what, ids, keep)
            if what == "drop":
                logp[row, ids] = NEG_INF
            elif what == "keep":
                kept = logp[row, ids].clone()  # (kept,)
                logp[row] = NEG_INF
                logp[row, ids] = kept
            else:  # "words"
                kept = logp[row, keep].clone()  # (kept,)
                logp[row, self._glue_row(logp.shape[1], logp.device)] = NEG_INF
                logp[row, ids] = NEG_INF
                logp[row, keep] = kept

    def advancing(self, tokens: tuple[int, ...]) -> list[int]:
        """The tokens that raise ``progress`` after ``tokens`` (a term's next form token): dynamic beam allocation's
        candidates beside the best ones."""
        state = self.state(tokens)
        found = self._advancing.get(state)
        if found is None:
            here = self.total - self.bound(state)
            heads = {t for node in [*self.automaton.chain(state[1]), 0] for t in self.automaton.children[node] if t != BOS}
            found = self._advancing[state] = [t for t in sorted(heads)
                                              if self.total - self.bound(self.after(state, t)) > here]
        return found


class TypedAndTerms:
    """A typed prefix (``simpe.decoders.prefix.CharPrefix``) and a segment's terms (``TermConstraint``) as one
    constraint: each row gets both masks, so a hypothesis first agrees with what was typed and ends only once it holds
    every term; the terms' state reads the typed tokens too, so a term the prefix writes (ending at a word boundary)
    is met there. ``state`` is the typed prefix's (what the interactive protocol's reused rows are pruned by)."""

    def __init__(self, typed: Any, terms: TermConstraint) -> None:
        self.typed, self.terms = typed, terms

    def state(self, tokens: tuple[int, ...]) -> Any:
        return self.typed.state(tokens)

    def mask(self, logp: torch.Tensor, prefixes: list[tuple[int, ...]]) -> None:
        """Both masks in place (``CharPrefix.mask``, then ``TermConstraint.mask``: a token either forbids stays -inf)."""
        self.typed.mask(logp, prefixes)
        self.terms.mask(logp, prefixes)


def fit_terms(terms: Sequence[Term], max_len: int, special: Any, glue: frozenset[int] | None = None,
              after: tuple[int, ...] = (), spare: int = 0) -> tuple[TermConstraint | None, list[Term], list[Term]]:
    """The constraint of the terms that can be placed within ``max_len`` tokens (the stop token included), each term in
    turn kept when it still fits with those kept before it: (constraint, or None when none is kept; kept; dropped).
    A term none of whose forms the model can generate (``Term.usable``) is dropped too. ``glue``: the tokens that
    continue a word (``TermConstraint``). ``after``: tokens every hypothesis starts with (a typed prefix's own
    tokens): the terms must fit after them, from the state they leave (a term they hold needs no room); ``spare``:
    positions to keep free besides (the typed prefix's text that ``after`` does not cover yet)."""
    kept: list[Term] = []
    dropped: list[Term] = []
    constraint = None
    for term in terms:
        usable = term.usable(special)
        if usable is None:
            dropped.append(term)
            continue
        trial = TermConstraint([*kept, usable], max_len, special.stops, glue)
        if trial.needed(trial.state(tuple(after))) + 1 + len(after) + spare <= max_len:
            kept.append(usable)
            constraint = trial
        else:
            dropped.append(term)
    return constraint, kept, dropped
