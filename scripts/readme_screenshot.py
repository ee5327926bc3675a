"""The README's first screen as a newcomer sees it: README.md rendered to HTML (python-markdown, the
renderer mkdocs uses, with GitHub-like tables and code), then photographed by headless Chromium.

    .venv/bin/python scripts/readme_screenshot.py [--out docs/img/readme-first-screen.png] [--size 1100,1000]

Needs Chromium (`apt-get install chromium`). Writes nothing but the PNG (the HTML goes to a temporary folder).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import markdown

REPO = Path(__file__).resolve().parents[1]
STYLE = """body{font-family:Helvetica,Arial,sans-serif;max-width:900px;margin:30px 100px;color:#1f2328;line-height:1.5}
code,pre{font-family:monospace;background:#f0f0f0;font-size:90%}pre{padding:10px}table{border-collapse:collapse}
td,th{border:1px solid #d0d7de;padding:4px 6px}img{max-width:100%}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "readme-first-screen.png")
    parser.add_argument("--size", default="1100,1000", help="window width,height in pixels (default: 1100,1000)")
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        print("readme_screenshot: no Chromium on PATH; install it (apt-get install chromium)", file=sys.stderr)
        return 2
    body = markdown.markdown((REPO / "README.md").read_text(encoding="utf-8"), extensions=["tables", "fenced_code"])
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "README.html"
        # relative image paths resolve against the repository, as on the forge
        page.write_text(f'<!doctype html><meta charset="utf-8"><base href="{REPO.as_uri()}/"><style>{STYLE}</style>{body}',
                        encoding="utf-8")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--window-size={args.size}", f"--screenshot={args.out.resolve()}", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
