"""The LibreOffice help extraction and alignment, on small hand-written pages."""
from __future__ import annotations

from pathlib import Path

from simpe.build_data.help import extract_segments

EN_PAGE = """<html><head><title>Fill</title><script>var x = 1;</script></head><body>
<h1 id="hd_id1" dir="auto">Fill   Series</h1>
<p id="par_id2" class="paragraph">You can also press <span id="sw1" class="switchinline"><span hidden="true" id="MACx_1" class="MAC">Command</span><span hidden="true" id="defaultx_1">Ctrl</span></span>+Page Up.</p>
<p id="par_id3" class="paragraph">Choose <span id="sw2" class="switchinline"><span hidden="true" id="MACx_2" class="MAC"><span class="emph">LibreOffice - Preferences</span>
</span><span hidden="true" id="defaultx_2"><span class="emph">Tools - Options</span></span></span><span class="emph"> - Calc</span>.</p>
<p id="par_id4"><img src="a.png" alt="Icon">Icon&nbsp;text<br>second line</p>
<span id="sw3" class="switch"><span hidden="true" id="CALCtext_3" class="CALC"><p id="par_id5">Only in Calc.</p></span><span hidden="true" id="WRITERtext_3" class="WRITER"><p id="par_id6">Only in Writer.</p></span></span>
<p id="par_id7">First occurrence.</p>
<p id="par_id7">Repeated id, dropped.</p>
<div id="par_id8"><p>Outer text</p><p id="par_id9">inner paragraph</p></div>
<p>no id: not a segment</p>
<p id="par_id10">   </p>
</body></html>"""

DE_PAGE = """<html><body>
<h1 id="hd_id1">Reihe füllen</h1>
<p id="par_id2">Sie können auch <span class="switchinline"><span hidden="true" id="MACy" class="MAC">Befehl</span><span hidden="true" id="defaulty">Strg</span></span>+Bild-auf drücken.</p>
<p id="par_id4">Symboltext</p>
<span class="switch"><span hidden="true" id="CALCt" class="CALC"><p id="par_id5">Nur in Calc.</p></span></span>
<p id="par_id7">Erstes Vorkommen.</p>
<p id="par_id99">only German</p>
</body></html>"""


def test_extract_segments_renders_what_a_non_mac_calc_user_sees():
    segs = extract_segments(EN_PAGE, "scalc")
    assert segs == [
        ("hd_id1", "Fill Series"),
        ("par_id2", "You can also press Ctrl+Page Up."),  # system switch: the default, not "CommandCtrl"
        ("par_id3", "Choose Tools - Options - Calc."),
        ("par_id4", "Icon text second line"),  # image dropped, nbsp and <br> become spaces
        ("par_id5", "Only in Calc."),  # application switch: the page's own application
        ("par_id7", "First occurrence."),  # a repeated id keeps its first occurrence
        ("par_id8", "Outer text"),  # the nested paragraph is its own segment
        ("par_id9", "inner paragraph"),
    ]


def test_application_switch_falls_back_to_default_outside_its_module():
    page = ('<span class="switch"><span hidden="true" id="CALCa" class="CALC"><p id="par_id1">calc</p></span>'
            '<span hidden="true" id="defaulta"><p id="par_id2">default</p></span></span>')
    assert extract_segments(page, "swriter") == [("par_id2", "default")]
    assert extract_segments(page, "scalc") == [("par_id1", "calc")]


def _write_help(root: Path, module: str, name: str, en: str, de: str) -> None:
    for lang, html in (("en-US", en), ("de", de)):
        page = root / lang / "text" / module / name
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(html, encoding="utf-8")


