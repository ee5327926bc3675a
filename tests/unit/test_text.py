"""The R-metric word pipeline (Moses tokeniser + truecaser, content words) and the stopword lists."""
from __future__ import annotations

from pathlib import Path

import pytest
from messages import raises_naming

from simpe.errors import ConfigError, DataError
from simpe.metrics.stopwords import STOPWORDS_DIR, is_stopword, known_languages, load_stopwords, stopwords_digest
from simpe.metrics.text import (
    ContentWords,
    TextPipeline,
    content_types,
    detokenize_pieces,
    is_content_token,
    is_digit_token,
    is_punct_token,
    split_tokens,
)

ROOT = Path(__file__).resolve().parents[2]
TRUECASER = ROOT / "models" / "demo-en-de" / "truecase.de.model"
needs_truecaser = pytest.mark.skipif(not TRUECASER.is_file(), reason="demo truecaser not on disk")


# ---------------------------------------------------------------- detokenisation
@pytest.mark.parametrize("pieces, text", [
    (["▁Die", "▁Funk", "tion", "▁SUMME", "."], "Die Funktion SUMME."),
    (["▁", "3", ",", "5"], "3,5"),
    ([], ""),
])
def test_detokenize_pieces(pieces, text):
    assert detokenize_pieces(pieces) == text


# ---------------------------------------------------------------- Moses tokenisation / truecasing
def test_moses_tokenisation_without_truecaser_keeps_case():
    # Moses splits the final period and brackets, keeps "z." "B." (German non-breaking
    # prefixes), hyphenated compounds and the decimal comma; escape=False keeps '"' as is.
    pipe = TextPipeline("de", truecaser=None)
    assert pipe.tokens('Die Funktion (z. B. SUMME) gibt "3,5" zurück.') == [
        "Die", "Funktion", "(", "z.", "B.", "SUMME", ")", "gibt", '"', "3,5", '"', "zurück", "."]
    assert pipe.tokenize("Wählen Sie Format - Zellen.") == "Wählen Sie Format - Zellen ."
    assert pipe.tokens("") == []


@needs_truecaser
def test_truecaser_lowercases_sentence_initial_function_words_only():
    # The demo model saw "weitere"/"der"/"wählen" mostly lowercase and the nouns capitalised:
    # the sentence-initial word takes its most frequent case, known words keep theirs.
    pipe = TextPipeline("de", truecaser=str(TRUECASER))
    assert pipe.tokens("Weitere Erklärungen finden Sie oben auf dieser Seite.") == [
        "weitere", "Erklärungen", "finden", "Sie", "oben", "auf", "dieser", "Seite", "."]
    assert pipe.tokenize("Der Hund beißt den Mann.") == "der Hund beißt den Mann ."
    assert pipe.tokenize("Wählen Sie Format - Zellen.") == "wählen Sie Format - Zellen ."


def test_missing_or_bad_truecaser_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="no-such.model"):
        TextPipeline("de", truecaser=str(tmp_path / "no-such.model"))
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"\xff\xfe not utf-8\n")
    with pytest.raises(DataError, match="bad.model"):
        TextPipeline("de", truecaser=str(bad))


# ---------------------------------------------------------------- content words
# The default rules are those of rk.rb by the authors of Simianer et al. (2019) (github.com/lilt/r01): stopwords matched as written
# (the shipped German list is lowercase), tokens dropped only when entirely punctuation or entirely digits.
@pytest.mark.parametrize("token, script, old", [
    ("Funktion", True, True),
    ("iso-8859-1", True, True),       # letters make it a word
    ("die", False, False),            # stopword as listed
    ("Die", True, False),             # not in the lowercase list: a content word for the script
    ("Sie", True, False), ("Weitere", True, False), ("Zeit", True, False), ("Ende", True, False),
    ("zeit", False, False),           # the list holds "zeit"; the truecased noun "Zeit" matches only case-insensitively
    ("SIE", True, False),
    (".", False, False), ("…", False, False), ("--", False, False), ("(", False, False), ("+", False, False),
    ("€", True, False), ("▸", True, False),  # symbols, not punctuation: words for the script
    ("127", False, False), ("٣", False, False),  # digits (any script: Unicode Nd)
    ("3.5", True, False), ("1.", True, False), ("01.01.99", True, False), ("79,9", True, False),  # digits with punctuation
    ("3,5", True, False), ("1.000", True, False), ("8-9", True, False),
    ("²", True, False),               # superscript two is No, not Nd
    ("", False, False),
])
def test_is_content_token(token, script, old):
    stop = load_stopwords("de")
    assert is_content_token(token, stop) is script
    assert is_content_token(token, stop, case="insensitive", token_filter="digits-punct-symbols") is old


def test_case_and_filter_rules_are_independent():
    stop = load_stopwords("de")
    assert is_content_token("Sie", stop, case="insensitive") is False and is_content_token("3.5", stop, case="insensitive")
    assert is_content_token("Sie", stop, token_filter="digits-punct-symbols") and not is_content_token(
        "3.5", stop, token_filter="digits-punct-symbols")
    with raises_naming(ConfigError, "metrics.stopword_case", "'upper'", "exact, insensitive"):
        ContentWords(stop, case="upper")
    with raises_naming(ConfigError, "metrics.token_filter", "'none'", "punct-or-digits, digits-punct-symbols"):
        ContentWords(stop, token_filter="none")


def test_ruby_punct_class_covers_ascii_symbols_and_brackets():
    # Onigmo's [[:punct:]] on UTF-8 strings: Unicode P* plus $+<=>^`|~ (not other symbols such as € or ©)
    assert all(is_punct_token(c) for c in "$+<=>^`|~!\"#%&'()*,-./:;?@[\\]_{}")
    assert is_punct_token("«»") and is_punct_token("...") and is_punct_token("–")
    assert not is_punct_token("€") and not is_punct_token("©") and not is_punct_token("a.")
    assert is_digit_token("2024") and is_digit_token("٣٤") and not is_digit_token("²") and not is_digit_token("1.")


def test_split_tokens_splits_on_ascii_whitespace_only_as_ruby():
    assert split_tokens("  a\tb  c\n") == ["a", "b", "c"]
    assert split_tokens("1\u00a0000 x") == ["1\u00a0000", "x"]  # a no-break space stays inside the token
    assert split_tokens("") == []


def test_content_types_are_unique_and_case_sensitive():
    stop = frozenset({"the", "The", "a"})  # the paper's Figure 1 list holds both cases
    tokens = "The Dog bites the dog , A dog 42 .".split()
    assert content_types(tokens, stop) == {"Dog", "dog", "bites", "A"}
    assert content_types(tokens, stop, case="insensitive") == {"Dog", "dog", "bites"}
    memo = ContentWords(stop)
    assert memo(tokens) == memo(tokens) == content_types(tokens, stop)


# ---------------------------------------------------------------- stopword lists
def test_shipped_lists_exist_sorted_one_word_per_line():
    assert {"de", "en"} <= set(known_languages())
    for lang in ("de", "en"):
        lines = (STOPWORDS_DIR / f"{lang}.txt").read_text(encoding="utf-8").splitlines()
        assert lines == sorted(set(lines)) and all(line == line.strip() and line for line in lines)
    de = load_stopwords("de")
    assert {"der", "die", "das", "und", "sie"} <= de and "funktion" not in de
    assert len(de) == 620  # stopwords-iso 0.7.1 German list
    assert stopwords_digest(de) == stopwords_digest(frozenset(sorted(de)))


def test_stopword_matching_is_exact_or_case_insensitive():
    en = load_stopwords("en")
    assert is_stopword("the", en) and not is_stopword("The", en) and not is_stopword("THE", en)
    assert is_stopword("The", en, case="insensitive") and is_stopword("THE", en, case="insensitive")
    assert not is_stopword("terrier", en)


def test_unknown_language_lists_the_known_ones():
    with pytest.raises(ConfigError, match="known:.*de.*en"):
        load_stopwords("xx")


def test_user_list_by_path(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("A\nthe\n\n The \n", encoding="utf-8")
    assert load_stopwords(str(path)) == {"A", "the", "The"}  # stripped, case kept
    with pytest.raises(DataError, match="missing.txt"):
        load_stopwords(str(tmp_path / "missing.txt"))


def test_make_stopwords_reproduces_the_shipped_lists(tmp_path):
    pytest.importorskip("stopwordsiso")
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_stopwords", ROOT / "scripts" / "make_stopwords.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_lists(["de", "en"], tmp_path)
    for lang in ("de", "en"):
        assert (tmp_path / f"{lang}.txt").read_bytes() == (STOPWORDS_DIR / f"{lang}.txt").read_bytes()
