"""``simpe serve``: a translator in the loop. People post-edit in the browser; the model adapts on each post-edit
before the next segment is translated, with a project's method, and every translator's work is a run folder in the
run format (docs/serve.md).

``project`` (projects, translators, tokens), ``session`` (one translator's loop and records), ``keylog`` (what the
page may send), ``app`` (the Starlette app and its guards), ``server`` (bind rules, uvicorn). The page is under
``static/``: plain HTML, CSS and JavaScript, no build step, nothing fetched from elsewhere.
"""
