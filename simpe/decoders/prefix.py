"""Prefix-constrained decoding: the most probable completion whose text starts with the characters a translator typed.

The interactive-predictive protocol (Knowles & Koehn 2016; Peris, Domingo & Casacuberta 2017) asks, after each
correction, for the best translation that begins with the validated prefix. The prefix is characters, not
tokens: it may end inside a word, inside a subword, or span several subwords, and several tokenisations of it
may exist. So the constraint is on the detokenised text: a hypothesis is allowed while its text and the prefix
agree (one is a prefix of the other), and it may end only once its text covers the prefix.

How the text of a hypothesis grows is read from the tokenizer once (``Surfaces``): each token's *surface*, the
bytes it appends to the text: SentencePiece pieces with ``▁`` as a space (byte-fallback pieces ``<0xNN>`` as
that byte), byte-level BPE pieces through the GPT-2 byte table. Special tokens have none and are never allowed
while the prefix is not yet covered. A text's leading spaces are not compared (SentencePiece's slow decode drops
the first ``▁``, the fast decoders keep it, a translator sees neither): the first surface is compared without
them, and one token of spaces only may come first (``▁`` then ``W`` where the vocabulary has no ``▁W``); the
caller compares ``text.lstrip(" ")`` with what was typed. Comparing bytes, not characters, lets a byte-level
token end inside a multi-byte character.

The constraint is a mask: at each step every decoder (greedy, beam, min-heap beam, exact top-k and its DFS)
hands it the rows' log-probabilities and the rows' token prefixes, and it sets the tokens that would leave the
typed prefix to -inf in place. Allowed tokens keep their raw log-probabilities (no renormalisation), so a
hypothesis' score stays log P(y|x), and the exact search's best hypothesis is the most probable one consistent
with the prefix among all hypotheses within the length limit (tests: brute force on every family's tiny model).
"""
from __future__ import annotations

import bisect
import dataclasses
import re
from typing import Any

import torch

from simpe.decoders.incremental import NEG_INF, Source

SP_SPACE = "\u2581"  # SentencePiece's word-boundary mark
_BYTE_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
DONE = -1  # the state of a prefix whose text covers the typed characters: no constraint from there on
BLANK = -2  # nothing matched yet, but a token of spaces only was taken: no second one (a flat model would loop on it)
AGREEING_KEPT = 50_000  # allowed-token lists a tokenizer's Surfaces keeps (about 50 MB at most), then starts again


def _byte_level_table() -> dict[str, int]:
    """GPT-2's byte -> printable character table, inverted (byte-level BPE pieces are strings of those characters).

    transformers' own ``bytes_to_unicode`` moved between versions (models/gpt2 in 4.x, convert_slow_tokenizer in
    5.x); these ten lines are the table itself, so simpe reads it the same on both."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def _is_byte_level(tokenizer: Any) -> bool:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    decoder = getattr(backend, "decoder", None) if backend is not None else None
    return hasattr(tokenizer, "byte_decoder") or (decoder is not None and "ByteLevel" in type(decoder).__name__)


class Surfaces:
    """Each token's surface (the bytes it appends to the detokenised text), indexed by first byte.

    Built once per tokenizer (``for_tokenizer`` caches it on the tokenizer object): one pass over the vocabulary.
    """

    def __init__(self, tokenizer: Any) -> None:
        size = max(len(tokenizer), max(tokenizer.get_vocab().values()) + 1)
        special = set(tokenizer.all_special_ids)
        byte_level = _is_byte_level(tokenizer)
        table = _byte_level_table() if byte_level else {}
        pieces = tokenizer.convert_ids_to_tokens(list(range(size)))
        self.size = size
        # A text's leading spaces are never compared: SentencePiece's slow decode drops the first "▁", the fast
        # Metaspace and byte-level decoders keep it (" Wählen"), and a translator sees neither. The caller compares
        # text.lstrip(" ") with what was typed (simpe.loop.interactive.Completer).
        self.strip_start = True
        self.surface: list[bytes | None] = []
        for token, piece in enumerate(pieces):
            if token in special or piece is None:
                self.surface.append(None)
            elif byte_level:
                self.surface.append(bytes(table[c] for c in piece) if all(c in table for c in piece) else piece.encode("utf-8"))
            else:
                match = _BYTE_PIECE.match(piece)
                self.surface.append(bytes([int(match.group(1), 16)]) if match else piece.replace(SP_SPACE, " ").encode("utf-8"))
        # tokens by surface: as it is, and with its leading spaces dropped (the text's start)
        plain: dict[bytes, list[int]] = {}
        stripped_tokens: dict[bytes, list[int]] = {}
        self.blank: list[int] = []  # surfaces of spaces only: at the text's start they add nothing
        for token, surface in enumerate(self.surface):
            if not surface:
                continue
            plain.setdefault(surface, []).append(token)
            stripped = surface.lstrip(b" ")
            if not self.strip_start:
                continue
            if stripped:
                stripped_tokens.setdefault(stripped, []).append(token)
            else:
                self.blank.append(token)
        self.by_surface = (plain, stripped_tokens)
        self.sorted_surfaces = (sorted(plain), sorted(stripped_tokens))  # for the surfaces that extend a text: bisect
        self.longest = max((len(s) for s in plain), default=0)
        self._agreeing: dict[tuple[bool, bool, bytes], torch.Tensor] = {}

    def agreeing(self, rest: bytes, start: bool, first: bool) -> torch.Tensor:
        """(allowed,) sorted ids of the tokens whose surface agrees with ``rest`` (one is a prefix of the other).

        Args:
            rest: the typed bytes not matched yet (not empty).
            start: at the text's start: surfaces compared without their leading spaces.
            first: nothing taken yet: the tokens of spaces only are allowed too (once).
        Kept per (start, first, the first ``longest`` bytes of ``rest``), which is all the answer depends on: the
        completions of one segment ask the same ones again as the typed prefix grows."""
        key = (start, first, rest[: self.longest])
        found = self._agreeing.get(key)
        if found is None:
            by_surface, ordered = self.by_surface[start], self.sorted_surfaces[start]
            ids = [t for n in range(1, min(len(rest), self.longest + 1)) for t in by_surface.get(rest[:n], ())]  # shorter
            at = bisect.bisect_left(ordered, rest)
            while at < len(ordered) and ordered[at].startswith(rest):  # as long or longer
                ids += by_surface[ordered[at]]
                at += 1
            if first:
                ids += self.blank
            if len(self._agreeing) >= AGREEING_KEPT:
                self._agreeing.clear()
            found = self._agreeing[key] = torch.tensor(sorted(ids), dtype=torch.long)
        return found

    @classmethod
    def for_tokenizer(cls, tokenizer: Any) -> Surfaces:
        cached = getattr(tokenizer, "_simpe_surfaces", None)
        if cached is None:
            cached = cls(tokenizer)
            try:
                tokenizer._simpe_surfaces = cached
            except AttributeError:  # a tokenizer that takes no attributes: built again next time
                pass
        return cached


class CharPrefix:
    """The constraint of one typed prefix: ``mask`` rows of log-probabilities given the rows' token prefixes.

    A state is how many bytes of the typed prefix a hypothesis' text has matched (``DONE`` once it covers them);
    states are memoised by token prefix, the allowed tokens of a state once per state.
    """

    def __init__(self, surfaces: Surfaces, typed: str) -> None:
        self.surfaces = surfaces
        self.target = (typed.lstrip(" ") if surfaces.strip_start else typed).encode("utf-8")
        self._states: dict[tuple[int, ...], int] = {(): 0 if self.target else DONE}
        self._allowed: dict[int, torch.Tensor] = {}

    @property
    def active(self) -> bool:
        return bool(self.target)

    def state(self, tokens: tuple[int, ...]) -> int:
        """Bytes of the typed prefix matched by ``tokens``' text, ``DONE`` when covered; None when they left it."""
        found = self._states.get(tokens)
        if found is not None or tokens in self._states:
            return found
        before = self.state(tokens[:-1])
        if before is None or before == DONE:
            self._states[tokens] = before
            return before
        surface = self.surfaces.surface[tokens[-1]] if tokens[-1] < self.surfaces.size else None
        start = before in (0, BLANK) and self.surfaces.strip_start
        if surface is None:
            after = None
        elif start and not surface.strip(b" "):  # spaces at the text's start: dropped, once (SentencePiece's "▁ X")
            after = BLANK if before == 0 else None
        else:
            if start:
                surface = surface.lstrip(b" ")
                before = 0
            rest = self.target[before:]
            if rest.startswith(surface):
                after = before + len(surface) if len(surface) < len(rest) else DONE
            else:
                after = DONE if surface.startswith(rest) else None
        self._states[tokens] = after
        return after

    def allowed(self, state: int) -> torch.Tensor:
        """(allowed,) the token ids a hypothesis in ``state`` (not DONE) may take next."""
        found = self._allowed.get(state)
        if found is None:
            start = state in (0, BLANK) and self.surfaces.strip_start
            rest = self.target[0 if start else state:]
            # spaces at the text's start change nothing (once): tokens of spaces only are allowed first
            found = self._allowed[state] = self.surfaces.agreeing(rest, start, state == 0 and start)
        return found

    def mask(self, logp: torch.Tensor, prefixes: list[tuple[int, ...]]) -> None:
        """Set, in place, every token that would leave the typed prefix to -inf, row by row.

        Args:
            logp: (rows, vocab) next-token log-probabilities of the rows whose tokens are ``prefixes``.
            prefixes: each row's target tokens so far (without the family's fixed prefix).
        """
        for row, tokens in enumerate(prefixes):
            state = self.state(tokens)
            if state == DONE:
                continue
            if state is None:
                logp[row] = NEG_INF
                continue
            allowed = self.allowed(state).to(logp.device)
            kept = logp[row, allowed].clone()  # (allowed,)
            logp[row] = NEG_INF
            logp[row, allowed] = kept


def constrain(source: Source, tokenizer: Any, typed: str, extra_tokens: int | None = None) -> Source:
    """``source`` with the constraint of ``typed`` (the encoder output shared, not recomputed) and room for it:
    the length limit grows by the typed text's own length in tokens, within the model's position table."""
    constraint = CharPrefix(Surfaces.for_tokenizer(tokenizer), typed)
    if not constraint.active:
        return dataclasses.replace(source, constraint=None)
    if extra_tokens is None:
        extra_tokens = len(tokenizer(typed, add_special_tokens=False)["input_ids"]) + 1
    longest = source.max_len + extra_tokens if source.room is None else min(source.max_len + extra_tokens, source.room)
    return dataclasses.replace(source, constraint=constraint, max_len=max(source.max_len, longest))


def apply(source: Source, logp: torch.Tensor, prefixes: list[tuple[int, ...]]) -> None:
    """``source``'s constraint on ``logp`` (rows, vocab), in place; nothing when it has none."""
    if source.constraint is not None:
        source.constraint.mask(logp, prefixes)
