"""Tagged text of an XLIFF segment (simpe.datasets.xliff): placeholders, the escaped bracket, and the reader's
structure rules on small hand-written files (issue 70)."""
from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from simpe.datasets.xliff import check_tags, escape, fill, is_tagged, placeholders, plain, read_xliff
from simpe.errors import DataError

NS1 = "urn:oasis:names:tc:xliff:document:1.2"


@pytest.mark.parametrize("text, tagged, plain_text, tags", [
    ("Press ⟨1⟩ to open.", "Press ⟨⟨1⟩ to open.", "Press ⟨1⟩ to open.", []),
    ("a ⟨ b ⟩ c", "a ⟨⟨ b ⟩ c", "a ⟨ b ⟩ c", []),
    ("⟨⟨2/⟩", "⟨⟨⟨⟨2/⟩", "⟨⟨2/⟩", []),
    ("no bracket", "no bracket", "no bracket", []),
])
def test_a_literal_bracket_is_escaped_and_given_back(text: str, tagged: str, plain_text: str, tags: list[str]):
    assert escape(text) == tagged and plain(tagged) == plain_text and placeholders(tagged) == tags
    assert is_tagged(tagged) == ("⟨" in text)


def test_escaped_brackets_beside_real_placeholders():
    # ⟨⟨ is a bracket of the text; the ⟨1⟩ after it is a tag; ⟨⟨⟨2/⟩: a bracket, then the tag ⟨2/⟩
    tagged = "Press ⟨⟨1⟩ or ⟨1⟩OK⟨/1⟩, then ⟨⟨⟨2/⟩."
    assert placeholders(tagged) == ["⟨1⟩", "⟨/1⟩", "⟨2/⟩"]
    assert plain(tagged) == "Press ⟨1⟩ or OK, then ⟨."
    check_tags(tagged, "⟨1⟩OK⟨/1⟩ ⟨⟨1⟩ ⟨2/⟩")
    with pytest.raises(DataError, match="holds the tag ⟨3⟩ that its source lacks .a bracket of the text is written "
                                        "twice: ⟨⟨3⟩"):
        check_tags(tagged, "⟨1⟩OK⟨/1⟩ ⟨2/⟩ ⟨3⟩")


def test_fill_restores_tags_and_writes_an_escaped_bracket_once():
    source = etree.fromstring(f'<source xmlns="{NS1}">Press <g id="7">OK</g><x id="8"/></source>')
    inline = {1: source[0], 2: source[1]}
    target = etree.Element(f"{{{NS1}}}target", nsmap={None: NS1})
    fill(target, "Drücken ⟨⟨1⟩ ⟨1⟩OK⟨/1⟩⟨2/⟩ ⟨", inline)
    text = etree.tostring(target, encoding="unicode")
    assert text == f'<target xmlns="{NS1}">Drücken ⟨1⟩ <g id="7">OK</g><x id="8"/> ⟨</target>'


def _file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "f.xlf"
    path.write_text(f'<?xml version="1.0"?>\n<xliff version="1.2" xmlns="{NS1}">{body}</xliff>\n', encoding="utf-8")
    return path


def test_ids_that_repeat_keep_their_own_place(tmp_path: Path):
    # the same id in two <file>s (allowed by XLIFF 1.2) and twice in one (not): each segment has its position
    unit = '<trans-unit id="u1"><source>{}</source></trans-unit>'
    path = _file(tmp_path, f'<file original="a" source-language="en" target-language="de"><body>{unit.format("One.")}'
                           f'{unit.format("Two.")}</body></file><file original="b" source-language="en" '
                           f'target-language="de"><body>{unit.format("Three.")}</body></file>')
    segments = read_xliff(path)[3]
    assert [(s.doc, s.id, s.source, s.position) for s in segments] == [("a", "u1", "One.", 0), ("a", "u1", "Two.", 1),
                                                                        ("b", "u1", "Three.", 2)]


def test_empty_units_are_left_out_and_a_2x_segment_needs_a_source(tmp_path: Path):
    path = _file(tmp_path, '<file original="a" source-language="en" target-language="de"><body>'
                           '<trans-unit id="e"><source> <x id="1"/> </source></trans-unit>'
                           '<trans-unit id="u"><source>Text.</source></trans-unit></body></file>')
    assert [(s.id, s.position) for s in read_xliff(path)[3]] == [("u", 0)]
    two = tmp_path / "two.xlf"
    two.write_text('<?xml version="1.0"?>\n<xliff version="2.0" xmlns="urn:oasis:names:tc:xliff:document:2.0" '
                   'srcLang="en" trgLang="de"><file id="f"><unit id="u1"><segment><target>Nur.</target></segment>'
                   '</unit></file></xliff>\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"two.xlf line 2: segment 'u1' has no <source>"):
        read_xliff(two)
