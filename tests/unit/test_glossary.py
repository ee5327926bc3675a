"""The glossary loader (simpe.terms.glossary): TSV and TBX files, their languages, and the one-line refusals."""
from __future__ import annotations

from pathlib import Path

import pytest

from simpe.errors import DataError
from simpe.paths import REPO_ROOT
from simpe.terms.glossary import Entry, glossary_format, glossary_label, load_glossary, primary_language

TBX_HEAD = """<?xml version="1.0" encoding="UTF-8"?>
<martif type="TBX" xml:lang="en">
<martifHeader><fileDesc><sourceDesc><p>simpe test</p></sourceDesc></fileDesc></martifHeader>
<text><body>
"""
TBX_TAIL = "</body></text></martif>\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_tsv_entries_comments_and_languages(tmp_path: Path) -> None:
    path = write(tmp_path, "g.tsv", "# a comment\n#langs en-US de_DE\n\nSort Ascending\tAufsteigend sortieren\n"
                                    "  Cell \t Zelle \n# another comment\nTools\tExtras\n")
    glossary = load_glossary(path, "en", "de")
    assert glossary.format == "tsv" and (glossary.source_lang, glossary.target_lang) == ("en", "de")
    assert glossary.entries == (Entry("Sort Ascending", "Aufsteigend sortieren", 4), Entry("Cell", "Zelle", 5),
                                Entry("Tools", "Extras", 7))
    assert glossary.pairs() == [("Sort Ascending", "Aufsteigend sortieren"), ("Cell", "Zelle"), ("Tools", "Extras")]
    assert len(glossary) == 3


def test_tsv_without_languages_line_takes_the_streams(tmp_path: Path) -> None:
    glossary = load_glossary(write(tmp_path, "g.txt", "Cell\tCellule\n"), "en-GB", "FR")
    assert (glossary.source_lang, glossary.target_lang, glossary.pairs()) == ("en", "fr", [("Cell", "Cellule")])


@pytest.mark.parametrize("text, line, expected", [
    ("Cell\tZelle\nTools Extras\n", 2, "expected 'source<TAB>target', got 1 field"),
    ("Cell\tZelle\tZellen\n", 1, "got 3 fields"),
    ("Cell\t  \n", 1, "the target term is empty"),
    ("\tZelle\n", 1, "the source term is empty"),
    ("Cell\tZelle\n#langs en de\n", 2, "must stand before the first entry"),
    ("#lang en de\nCell\tZelle\n", 1, "malformed languages line"),
    ("Cell\tZelle\nTools\tExtras\nCell\tZellen\n", 3, "source term 'Cell' is given again (first on line 1)"),
    ("Cell\t" + "Z" * 201 + "\n", 1, "the target term has 201 characters"),
])
def test_tsv_malformed_entry_names_file_and_line(tmp_path: Path, text: str, line: int, expected: str) -> None:
    path = write(tmp_path, "g.tsv", text)
    with pytest.raises(DataError) as err:
        load_glossary(path, "en", "de")
    assert f"glossary '{path}' line {line}: " in one_line(err) and expected in one_line(err)


def test_tsv_languages_other_than_the_streams(tmp_path: Path) -> None:
    path = write(tmp_path, "g.tsv", "#langs en fr\nCell\tCellule\n")
    with pytest.raises(DataError) as err:
        load_glossary(path, "en", "de")
    assert one_line(err) == (f"glossary '{path}' line 1 ('#langs') is en->fr, but the stream is en->de; "
                             "give a en->de glossary")


@pytest.mark.parametrize("text", ["", "# only a comment\n#langs en de\n\n"])
def test_empty_glossary(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, "g.tsv", text)
    with pytest.raises(DataError) as err:
        load_glossary(path, "en", "de")
    assert one_line(err) == f"glossary '{path}' holds no en->de entry; give at least one 'source<TAB>target' line"


def test_missing_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="glossary .*missing.tsv' does not exist"):
        load_glossary(tmp_path / "missing.tsv", "en", "de")
    (tmp_path / "latin1.tsv").write_bytes("Cell\tZelle\nSize\tGr\xf6\xdfe\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"is not valid UTF-8 \(line 2"):
        load_glossary(tmp_path / "latin1.tsv", "en", "de")


def test_tbx_entries_languages_and_skipped_entries(tmp_path: Path) -> None:
    path = write(tmp_path, "g.tbx", TBX_HEAD + """
<termEntry id="t1">
  <langSet xml:lang="en-US"><tig><term>Sort Ascending</term></tig></langSet>
  <langSet xml:lang="de-DE"><tig><term>Aufsteigend sortieren</term></tig></langSet>
</termEntry>
<termEntry id="t2">
  <langSet><tig><term>Cell</term></tig></langSet>
  <langSet xml:lang="fr"><tig><term>Cellule</term></tig></langSet>
  <langSet xml:lang="de"><tig><term>Zellchen</term><termNote type="administrativeStatus">deprecatedTerm-admn-sts</termNote></tig>
    <tig><term>Zelle</term></tig><tig><term>Zellen</term></tig></langSet>
</termEntry>
<termEntry id="t3">
  <langSet xml:lang="en"><tig><term>Only English</term></tig></langSet>
</termEntry>
""" + TBX_TAIL)
    glossary = load_glossary(path, "en", "de")
    # t2's English langSet takes the root's xml:lang; its first non-deprecated German term; t3 has no German: skipped
    assert glossary.format == "tbx"
    assert glossary.entries == (Entry("Sort Ascending", "Aufsteigend sortieren", 6), Entry("Cell", "Zelle", 10))
    assert load_glossary(path, "en", "fr").pairs() == [("Cell", "Cellule")]


def test_tbx_refusals(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.tbx", TBX_HEAD + "<termEntry>\n<langSet xml:lang='en'>\n</termEntry>\n" + TBX_TAIL)
    with pytest.raises(DataError) as err:
        load_glossary(broken, "en", "de")
    assert one_line(err).startswith(f"glossary '{broken}' line 7: not well-formed XML (")
    other = write(tmp_path, "other.tbx", "<?xml version='1.0'?>\n<tbx><text><body/></text></tbx>\n")
    with pytest.raises(DataError, match="line 1: not a TBX file"):
        load_glossary(other, "en", "de")
    empty_term = write(tmp_path, "empty.tbx", TBX_HEAD + "<termEntry>\n<langSet xml:lang='en'><tig><term>Cell</term></tig></langSet>\n"
                                                        "<langSet xml:lang='de'><tig><term> </term></tig></langSet>\n</termEntry>\n" + TBX_TAIL)
    with pytest.raises(DataError) as err:
        load_glossary(empty_term, "en", "de")
    assert one_line(err) == f"glossary '{empty_term}' line 7: the de langSet holds no term"
    french = write(tmp_path, "fr.tbx", TBX_HEAD + "<termEntry>\n<langSet xml:lang='en'><tig><term>Cell</term></tig></langSet>\n"
                                                 "<langSet xml:lang='fr'><tig><term>Cellule</term></tig></langSet>\n</termEntry>\n" + TBX_TAIL)
    with pytest.raises(DataError) as err:
        load_glossary(french, "en", "de")
    assert one_line(err) == (f"glossary '{french}' holds the languages en, fr, but the stream is en->de; "
                             "give a glossary with en and de terms")
    nothing = write(tmp_path, "nothing.tbx", TBX_HEAD + TBX_TAIL)
    with pytest.raises(DataError) as err:
        load_glossary(nothing, "en", "de")
    assert one_line(err) == f"glossary '{nothing}' holds no en->de entry; give at least one termEntry with both languages"


def test_language_codes_and_formats() -> None:
    assert [primary_language(c) for c in ("en-US", "de_DE", "DE", " pt-BR ")] == ["en", "de", "de", "pt"]
    assert [glossary_format(p) for p in ("a.TBX", "a.tsv", "a.txt", "glossary")] == ["tbx", "tsv", "tsv", "tsv"]


def test_a_glossary_is_named_without_this_machines_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """summary.json's terms.glossary: inside the repository its path relative to the repository (however it was
    given: absolute, or relative to another working folder), else the dataset's name or the file's name."""
    shipped = REPO_ROOT / "data" / "libreoffice" / "glossary.tsv"
    assert glossary_label(shipped, "dataset", "libreoffice") == "data/libreoffice/glossary.tsv"
    assert glossary_label(shipped, str(shipped), "libreoffice") == "data/libreoffice/glossary.tsv"
    monkeypatch.chdir(REPO_ROOT / "data")
    assert glossary_label(Path("libreoffice/glossary.tsv"), "libreoffice/glossary.tsv", "text") == "data/libreoffice/glossary.tsv"
    outside = tmp_path / "job" / "terms.tsv"
    assert glossary_label(outside, str(outside), "text") == "terms.tsv"
    assert glossary_label(outside, "dataset", "tmx") == "dataset:tmx"


def test_a_glossary_holds_at_most_100000_entries(tmp_path: Path) -> None:
    from simpe.terms.glossary import MAX_ENTRIES

    path = tmp_path / "big.tsv"
    lines = ["#langs en de", *(f"term{i}\tZiel{i}" for i in range(MAX_ENTRIES))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(load_glossary(path, "en", "de")) == 100_000  # the limit itself is taken
    path.write_text("\n".join([*lines, "one\tmore"]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 100002: more than 100,000 entries; simpe takes glossaries of at most 100,000"):
        load_glossary(path, "en", "de")
