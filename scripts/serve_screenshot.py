"""The workbench of ``simpe serve`` as a translator sees it, for docs/serve.md: a throwaway project on the demo model
(preset bias, the first 6 LibreOffice Calc help segments, the embedded glossary, two segments already post-edited so
the list, the context and a match show), served on a free port, photographed by headless Chromium (playwright
driving the system's browser).

    .venv/bin/python scripts/serve_screenshot.py [--out docs/img/serve-workbench.png] [--size 1366,768]

``make serve-screenshot`` runs it. Needs Chromium (`apt-get install chromium`). Writes nothing but the PNG (the project
and its runs go to a temporary folder). Tests never call it: they never write into docs/.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "serve-workbench.png")
    parser.add_argument("--size", default="1366,768", help="window width,height in pixels (default: 1366,768, a laptop)")
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        print("serve_screenshot: no Chromium on PATH; install it (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(REPO))
    from simpe.serve import project as projects
    from simpe.terms.glossary import DEFAULT_GLOSSARY

    width, height = (int(v) for v in args.size.split(","))
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        _, tokens = projects.create(Path(tmp) / "projects", "study", "bias",
                                    ["data.segments=6", f"runs_dir={Path(tmp) / 'runs'}", "device=cpu"], ["anna"],
                                    glossary=DEFAULT_GLOSSARY)
        env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
        server = subprocess.Popen([sys.executable, "-m", "simpe", "serve", "run", "study", "--projects-dir",
                                   str(Path(tmp) / "projects"), "--port", str(port)], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30).close()
                    break
                except (urllib.error.URLError, ConnectionError, TimeoutError):  # a busy machine answers late
                    if server.poll() is not None or time.monotonic() > deadline:
                        print("serve_screenshot: the server did not start", file=sys.stderr)
                        return 1
                    time.sleep(0.3)
            with sync_playwright() as p:
                chromium = p.chromium.launch(executable_path=browser, args=["--no-sandbox"])
                page = chromium.new_page(viewport={"width": width, "height": height})
                page.goto(f"http://127.0.0.1:{port}/#token={tokens['anna']}")
                page.wait_for_selector("#source:not(:empty)")
                for done in (1, 2):  # two segments post-edited: the list, the context and the memory have something
                    page.keyboard.press("End")
                    page.keyboard.type(" ")
                    page.keyboard.press("Backspace")
                    page.keyboard.press("Control+Enter")
                    page.wait_for_function("() => document.querySelector('#progress').textContent.startsWith('%d of') || "
                                           "document.querySelector('#status').textContent.startsWith('QA:')" % done)
                    if page.inner_text("#status").startswith("QA:"):  # submitted anyway
                        page.keyboard.press("Control+Enter")
                    page.wait_for_selector(f"#progress:text('{done} of 6 done')")
                page.keyboard.press("End")
                page.keyboard.type(" (Beispiel)")
                time.sleep(1.0)  # the glossary check answers
                page.screenshot(path=str(args.out.resolve()), full_page=False)
                chromium.close()
        finally:
            server.kill()
            server.wait(timeout=30)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
