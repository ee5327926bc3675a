"""The HTML report is inert in a real browser: hostile segment text and a hostile run name never become live DOM.

Two real runs (baseline and bias, three segments) translate sources that carry script, event-handler
and script-breaking payloads; a colleague's tampered summary.json names one run with another. The
report is then loaded in headless Chromium, which runs the page's own JavaScript (the segment browser
builds its rows with innerHTML), and the DOM it dumps is parsed: no element carries the attribute a
payload would set, no element is one a payload would add, the only scripts are the report's own, and
the payload text is there as text (so the check is not vacuous).

Chromium: ``apt-get install -y chromium`` (.ci/run installs it where it can). Without it the test skips.
"""
from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

MARK = "data-pwned"
PAYLOADS = [
    f'<script>document.documentElement.setAttribute("{MARK}","script")</script>',
    f'<img src=x onerror="document.documentElement.setAttribute(\'{MARK}\',\'img\')">',
    f'<svg onload="document.documentElement.setAttribute(\'{MARK}\',\'svg\')"></svg>',
    f'</script><script>document.documentElement.setAttribute("{MARK}","break")</script>',
    f'"><iframe srcdoc="<b {MARK}=1>"></iframe>',
]
# every placeholder of the page (simpe/report/page.py): a value that carries one must stay text, never be filled
PLACEHOLDERS = "%TITLE%%COVERAGE%%MISMATCH%%TABLE%%FIGURE2%%SNAPSHOTS%%DATA%%SCRIPT%"
SOURCES = [f"Click OK {p} now." for p in PAYLOADS[:2]] + [f"Click {PLACEHOLDERS} OK {PAYLOADS[2]} now."]
REFERENCES = [f"Klicken Sie auf OK {p} jetzt." for p in PAYLOADS[2:]]
HOSTILE_NAME = f'<img src=x onerror="document.documentElement.setAttribute(\'{MARK}\',\'name\')">'
HOSTILE_FOLDER = f'{PLACEHOLDERS}<img src=x onerror="document.documentElement.setAttribute(\'{MARK}\',\'folder\')">'


def _browser() -> str | None:
    return next((b for b in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if b), None)


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@pytest.mark.skipif(_browser() is None, reason="no Chromium (apt-get install -y chromium)")
def test_hostile_text_and_run_names_stay_text_in_chromium(tmp_path: Path, one_torch_thread):
    import json

    from simpe.config.files import load_config
    from simpe.loop.run import Loop
    from simpe.report.html import write_report
    from simpe.rundir.reader import load_group

    (tmp_path / "src.en").write_text("".join(s + "\n" for s in SOURCES), encoding="utf-8")
    (tmp_path / "ref.de").write_text("".join(r + "\n" for r in REFERENCES), encoding="utf-8")
    paths = []
    for method in ("baseline", "bias"):
        loop = Loop(load_config(method, [f"runs_dir={tmp_path / 'runs'}", "data.name=text", "device=cpu",
                                         f"data.params.source={tmp_path / 'src.en'}", f"data.params.reference={tmp_path / 'ref.de'}",
                                         ]), progress=False)
        loop.run()
        loop.timer.remove()
        paths.append(loop.path)
    summary_file = paths[1] / "summary.json"
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    summary["adapter"] = PLACEHOLDERS + HOSTILE_NAME  # a tampered run folder received from someone else
    summary_file.write_text(json.dumps(summary), encoding="utf-8")
    # a run group received under a hostile folder name, carrying every placeholder of the page before its payload
    group = paths[0].parent.rename(paths[0].parent.with_name(HOSTILE_FOLDER))
    paths = [group / path.name for path in paths]

    page = write_report(load_group(paths), tmp_path / "report")
    dom = subprocess.run([_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                          "--virtual-time-budget=5000", "--dump-dom", Path(page).resolve().as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    parsed = Elements()
    parsed.feed(dom)
    tags = [tag for tag, _ in parsed.elements]
    assert "html" in tags and len(parsed.elements) > 50, dom[:500]  # the page rendered
    assert not [(t, a) for t, a in parsed.elements if MARK in a], "a payload ran"
    assert "iframe" not in tags and not [a for t, a in parsed.elements if t == "img" and a.get("src") == "x"], \
        "a payload became an element"  # the report has figures (svg, img) of its own, none with src=x
    assert not [(t, a) for t, a in parsed.elements if any(k.startswith("on") for k in a)], "an event handler is live"
    scripts = [a for t, a in parsed.elements if t == "script"]
    assert [s.get("id") for s in scripts] == ["data", None]  # the report's data block and its one program
    text = "".join(parsed.text)
    for source in SOURCES:  # the segment browser shows every hostile source, as text
        assert source in text
    assert PLACEHOLDERS + HOSTILE_NAME in text  # the tampered name, as text
    assert HOSTILE_FOLDER in text  # the folder's name, placeholders and all, as text (the title and the heading)
