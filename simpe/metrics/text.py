"""The word pipeline of the R metrics: detokenised text -> Moses tokens -> truecased tokens -> content types.

Simianer et al. (2019), section 4.2: outputs are "converted to full-form words using sentencepiece,
then tokenized and truecased with the tokenizer and truecaser distributed with the Moses
toolkit". simpe does the same with sacremoses:

- ``detokenize_pieces`` joins SentencePiece pieces back into text (the loop normally
  hands over the decoded string already);
- ``TextPipeline`` Moses-tokenises (``MosesTokenizer(lang).tokenize(text, escape=False)``)
  and, when a truecaser model is given, truecases with ``MosesTruecaser`` using
  ``use_known=True``, which is what Moses' ``truecase.perl`` does (a word keeps its case
  when that case was seen in training; the sentence-initial word takes its most frequent
  case). ``truecaser=None`` skips truecasing;
- ``ContentWords`` keeps the unique tokens that are content words. By default it applies
  the rules of the authors' own R0/R1 script (``rk.rb`` in github.com/lilt/r01, by
  the first author of Simianer et al. (2019)): a token is dropped when it is a stopword, matched **exactly**
  (case included, on the truecased token: a lowercase list leaves "Sie" and "Zeit" content
  words), or when it is made **entirely of punctuation** (Ruby's ``[[:punct:]]`` plus
  brackets) or **entirely of digits** (``[[:digit:]]``). "3.5", "1.", "01.01.99", "€" and
  "▸" are content words under these rules. The earlier simpe rules are named options:
  ``stopword_case: insensitive`` and ``token_filter: digits-punct-symbols`` (drop any token
  made only of digits, punctuation and symbols). Types are compared case-sensitively.
- ``split_tokens`` splits a token line as the script does (Ruby's ``String#split``: on runs
  of ASCII whitespace only).

It does not compute any metric (``simpe.metrics.recall`` does) and does not train
truecasers (the baseline training does, with sacremoses).
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from simpe.config.tree import STOPWORD_CASES, TOKEN_FILTERS, TRUECASER_OF_MODEL, MetricsConfig
from simpe.errors import ConfigError, DataError
from simpe.metrics.stopwords import lowered

SPM_SPACE = "\u2581"  # SentencePiece's word-boundary marker "▁"


def detokenize_pieces(pieces: Sequence[str]) -> str:
    """Join SentencePiece pieces into text: ``["▁Die", "▁Funk", "tion"]`` -> ``"Die Funktion"``."""
    return "".join(pieces).replace(SPM_SPACE, " ").strip()


def truecaser_path(cfg: MetricsConfig, model_dir: Path | None, missing_ok: bool = False) -> str | None:
    """The truecaser file of ``metrics.truecaser``: the path it gives, or for ``model`` the model folder's
    ``truecase.<lang>.model`` (the config holds the setting; resolving it against a model folder is the metrics').

    missing_ok: for ``model``, None when the model ships no truecaser (else a ConfigError).
    """
    if cfg.truecaser != TRUECASER_OF_MODEL:
        return cfg.truecaser
    path = None if model_dir is None else Path(model_dir) / f"truecase.{cfg.lang}.model"
    if path is None or not path.is_file():
        if missing_ok:
            return None
        raise ConfigError(f"metrics.truecaser=model but the model ships no truecase.{cfg.lang}.model (a hub model "
                          "does not); pass --truecaser none (R figures on tokens as cased) or --truecaser PATH "
                          "(a sacremoses truecaser, e.g. the demo model's models/demo-en-de/truecase.de.model)")
    return str(path)


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


# Ruby's (Onigmo's) [[:punct:]] on a UTF-8 string: Unicode general category P*, plus the nine
# ASCII symbols Onigmo >= 6 counts as punctuation; rk.rb adds the brackets <>[]{}() (all but
# <> already P*). Checked against ruby 3.1 over every code point (scripts/check_r01.py).
_RUBY_ASCII_PUNCT_SYMBOLS = frozenset("$+<=>^`|~")
_ASCII_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")

# TOKEN_FILTERS (config): ``punct-or-digits`` (default, rk.rb) drops tokens entirely of
# punctuation or entirely of digits; ``digits-punct-symbols`` (simpe 0.1) drops tokens made
# only of digits, punctuation and symbols in any mix ("3.5", "€").
# STOPWORD_CASES (config): ``exact`` (default, rk.rb) matches a token when the list holds it
# as written; ``insensitive`` when the list holds its lowercase form.


def _is_ruby_punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "P" or ch in _RUBY_ASCII_PUNCT_SYMBOLS


@lru_cache(maxsize=65536)
def is_punct_token(token: str) -> bool:
    """rk.rb's ``is_punct``: the token is non-empty and every character is punctuation."""
    return bool(token) and all(_is_ruby_punct(ch) for ch in token)


@lru_cache(maxsize=65536)
def is_digit_token(token: str) -> bool:
    """rk.rb's ``is_num``: the token is non-empty and every character is a decimal digit (Unicode Nd)."""
    return bool(token) and token.isdecimal()


@lru_cache(maxsize=65536)
def _only_digits_punct_symbols(token: str) -> bool:
    return all(ch.isdigit() or unicodedata.category(ch)[0] in "PS" for ch in token)


def is_filtered_token(token: str, token_filter: str = "punct-or-digits") -> bool:
    """True when ``token_filter`` drops ``token`` whatever the stopword list (see ``TOKEN_FILTERS``)."""
    if not token:
        return True
    if token_filter == "punct-or-digits":
        return is_punct_token(token) or is_digit_token(token)
    if token_filter == "digits-punct-symbols":
        return _only_digits_punct_symbols(token)
    raise ConfigError(f"unknown metrics.token_filter {token_filter!r}; known: {', '.join(TOKEN_FILTERS)}")


def split_tokens(line: str) -> list[str]:
    """The tokens of a space-joined token line, split as rk.rb splits them (runs of ASCII whitespace)."""
    return [t for t in _ASCII_WHITESPACE.split(line) if t]


def is_content_token(token: str, stopwords: frozenset[str], case: str = "exact",
                     token_filter: str = "punct-or-digits") -> bool:
    """True when ``token`` is neither filtered (``token_filter``) nor a stopword (matched per ``case``).

    Args:
        token: one Moses token (truecased).
        stopwords: a list from ``simpe.metrics.stopwords.load_stopwords`` (words as written).
        case: ``exact`` or ``insensitive`` (see ``STOPWORD_CASES``).
        token_filter: see ``TOKEN_FILTERS``.
    """
    if is_filtered_token(token, token_filter):
        return False
    if case == "exact":
        return token not in stopwords
    if case == "insensitive":
        return token.lower() not in lowered(stopwords)
    raise ConfigError(f"unknown metrics.stopword_case {case!r}; known: {', '.join(STOPWORD_CASES)}")


def content_types(tokens: Iterable[str], stopwords: frozenset[str], case: str = "exact",
                  token_filter: str = "punct-or-digits") -> frozenset[str]:
    """The set of unique content-word types among ``tokens`` (case-sensitive types)."""
    return frozenset(t for t in set(tokens) if is_content_token(t, stopwords, case, token_filter))


class ContentWords:
    """``content_types`` for one stopword list and rule set, remembering each token's verdict
    (a stream's vocabulary is small)."""

    def __init__(self, stopwords: frozenset[str], case: str = "exact", token_filter: str = "punct-or-digits") -> None:
        if case not in STOPWORD_CASES:
            raise ConfigError(f"unknown metrics.stopword_case {case!r}; known: {', '.join(STOPWORD_CASES)}")
        if token_filter not in TOKEN_FILTERS:
            raise ConfigError(f"unknown metrics.token_filter {token_filter!r}; known: {', '.join(TOKEN_FILTERS)}")
        self.stopwords, self.case, self.token_filter = stopwords, case, token_filter
        self._verdicts: dict[str, bool] = {}

    def is_content(self, token: str) -> bool:
        verdict = self._verdicts.get(token)
        if verdict is None:
            verdict = self._verdicts[token] = is_content_token(token, self.stopwords, self.case, self.token_filter)
        return verdict

    def __call__(self, tokens: Iterable[str]) -> frozenset[str]:
        """The set of unique content-word types among ``tokens``."""
        return frozenset(t for t in set(tokens) if self.is_content(t))
