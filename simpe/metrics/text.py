"""The word pipeline of the R metrics: detokenised text -> Moses tokens -> truecased tokens -> content types.

Seed 002 (section 4.2): outputs are "converted to full-form words using sentencepiece,
then tokenized and truecased with the tokenizer and truecaser distributed with the Moses
toolkit". simpe does the same with sacremoses:

- ``detokenize_pieces`` joins SentencePiece pieces back into text (the loop normally
  hands over the decoded string already);
- ``TextPipeline`` Moses-tokenises (``MosesTokenizer(lang).tokenize(text, escape=False)``)
  and, when a truecaser model is given, truecases with ``MosesTruecaser`` using
  ``use_known=True``, which is what Moses' ``truecase.perl`` does (a word keeps its case
  when that case was seen in training; the sentence-initial word takes its most frequent
  case). ``truecaser=None`` skips truecasing;
- ``content_types`` keeps the unique tokens that are neither stopwords (matched
  case-insensitively, see ``simpe.metrics.stopwords``) nor made only of punctuation/symbols and
  digits. "Only digits and punctuation" covers pure punctuation (``.``, ``…``, ``--``),
  pure digits (``127``) and numbers with separators (``3.5``, ``1,000``, ``8-9``): none of
  them is vocabulary a system has to learn. Types are compared case-sensitively after
  truecasing.

It does not compute any metric (``simpe.metrics.recall`` does) and does not train
truecasers (the baseline training does, with sacremoses).
"""
from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from simpe.errors import DataError

SPM_SPACE = "\u2581"  # SentencePiece's word-boundary marker "▁"


def detokenize_pieces(pieces: Sequence[str]) -> str:
    """Join SentencePiece pieces into text: ``["▁Die", "▁Funk", "tion"]`` -> ``"Die Funktion"``."""
    return "".join(pieces).replace(SPM_SPACE, " ").strip()


@lru_cache(maxsize=8)
def _load_truecaser(path: str):  # -> sacremoses.MosesTruecaser
    from sacremoses import MosesTruecaser

    if not Path(path).is_file():
        raise DataError(f"truecaser model {path!r} does not exist (give a MosesTruecaser model file, or 'none' to skip truecasing)")
    try:
        return MosesTruecaser(load_from=path)
    except UnicodeDecodeError as err:
        raise DataError(f"truecaser model {path!r} is not valid UTF-8 (byte {err.start})") from None
    except Exception as err:  # sacremoses raises bare errors on malformed lines
        raise DataError(f"truecaser model {path!r} is not a MosesTruecaser model ({type(err).__name__}: {err})") from None


@lru_cache(maxsize=8)
def _load_tokenizer(lang: str):  # -> sacremoses.MosesTokenizer
    from sacremoses import MosesTokenizer

    # sacremoses falls back to English non-breaking prefixes for languages it has none for.
    return MosesTokenizer(lang=lang)


class TextPipeline:
    """Moses tokenisation plus optional Moses truecasing of one detokenised line at a time."""

    def __init__(self, lang: str = "de", truecaser: str | Path | None = None) -> None:
        """
        Args:
            lang: target language code for the Moses tokenizer's non-breaking prefixes.
            truecaser: path to a ``MosesTruecaser`` model file (``truecase.<lang>.model``), or
                None to skip truecasing.
        """
        self.lang = lang
        self.truecaser_path = None if truecaser is None else str(truecaser)
        self._tokenizer = _load_tokenizer(lang)
        self._truecaser = None if truecaser is None else _load_truecaser(str(truecaser))

    def tokens(self, text: str) -> list[str]:
        """Moses tokens of ``text``, truecased when a truecaser was given."""
        tokens = self._tokenizer.tokenize(text, escape=False)
        if self._truecaser is None or not tokens:
            return tokens
        return self._truecaser.truecase(" ".join(tokens), use_known=True)

    def tokenize(self, text: str) -> str:
        """``tokens(text)`` joined with single spaces (what ``hyp_tokens``/``ref_tokens`` hold)."""
        return " ".join(self.tokens(text))

    def __repr__(self) -> str:
        return f"TextPipeline(lang={self.lang!r}, truecaser={self.truecaser_path!r})"


@lru_cache(maxsize=65536)
def _only_digits_or_punct(token: str) -> bool:
    return all(ch.isdigit() or unicodedata.category(ch)[0] in "PS" for ch in token)


def is_content_token(token: str, stopwords: frozenset[str]) -> bool:
    """True when ``token`` is not a stopword (case-insensitive) and not only digits/punctuation/symbols.

    Args:
        token: one Moses token.
        stopwords: a lowercased list from ``simpe.metrics.stopwords.load_stopwords``.
    """
    if not token or _only_digits_or_punct(token):
        return False
    return token.lower() not in stopwords


def content_types(tokens: Iterable[str], stopwords: frozenset[str]) -> frozenset[str]:
    """The set of unique content-word types among ``tokens`` (case-sensitive types)."""
    return frozenset(t for t in set(tokens) if is_content_token(t, stopwords))


class ContentWords:
    """``content_types`` for one stopword list, remembering each token's verdict (a stream's vocabulary is small)."""

    def __init__(self, stopwords: frozenset[str]) -> None:
        self.stopwords = stopwords
        self._verdicts: dict[str, bool] = {}

    def __call__(self, tokens: Iterable[str]) -> frozenset[str]:
        """The set of unique content-word types among ``tokens``."""
        verdicts, types = self._verdicts, []
        for token in set(tokens):
            verdict = verdicts.get(token)
            if verdict is None:
                verdict = verdicts[token] = is_content_token(token, self.stopwords)
            if verdict:
                types.append(token)
        return frozenset(types)
