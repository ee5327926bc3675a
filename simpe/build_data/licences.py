"""Name the licence of text taken from a Debian package, for the corpus NOTICE.

Two statements are read:

* a Debian ``copyright`` file (``usr/share/doc/<package>/copyright``). In the
  machine-readable format (DEP-5) the licence of a source path is the ``License`` of the
  last ``Files`` paragraph whose pattern matches it (the format's rule; help pages are
  looked up as ``help/C/index.page``, catalogs as ``po/de.po``). A free-form file is
  read in three tries: a table row for the path (``po/de.po | GPLv2h | …``); else the
  first grant ("under the terms of the GNU … License … version N [or any later
  version]"), for help paths the first grant whose preceding lines mention help or
  documentation when there is one; else ``unknown``;
* a Mallard help's own ``<license href="…">`` (usually in ``legal.xml``), turned into a
  short name (``CC-BY-SA-3.0``).

This module names licences; it does not decide which statement wins (``extras.py``).
"""
from __future__ import annotations

import re
from fnmatch import fnmatchcase

UNKNOWN = "unknown"
_GNU = re.compile(
    r"GNU\s+(?P<kind>Lesser\s+General|Library\s+General|General|Free\s+Documentation)\s+(?:Public\s+)?License"
    r"(?=(?P<tail>.{0,240}))", re.S)
_VERSION = re.compile(r"[Vv]ersion\s+(?P<num>\d(?:\.\d)?)")
_LATER = re.compile(r"any\s+later\s+version|or\s+later", re.S)
_CC_URL = re.compile(r"creativecommons\.org/licenses/(?P<kind>[a-z-]+)/(?P<num>\d\.\d)(?:/(?P<juris>[a-z]{2}))?")
_GNU_URL = re.compile(r"gnu\.org/licenses/(?P<kind>fdl|gpl|lgpl|agpl)-?(?P<num>\d\.\d)")
_GNU_SHORT = {"General": "GPL", "Lesser General": "LGPL", "Library General": "LGPL", "Free Documentation": "GFDL"}


def _paragraphs(text: str) -> list[dict[str, str]]:
    """The paragraphs of a DEP-5 file as field -> value (continuation lines joined by newlines)."""
    out: list[dict[str, str]] = []
    current: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.strip():
            if current:
                out.append(current)
            current, key = {}, None
        elif line[0] in " \t":
            if key is not None:
                current[key] += "\n" + line.strip()
        elif ":" in line:
            key, _, value = line.partition(":")
            key = key.strip()
            current[key] = value.strip()
    if current:
        out.append(current)
    return out


def is_machine_readable(text: str) -> bool:
    """Whether a copyright file is in Debian's machine-readable format (DEP-5)."""
    return text.lstrip().startswith("Format:")


def copyright_licence(text: str, source_path: str) -> str:
    """The licence a Debian copyright file gives to ``source_path`` (a path in the source tree).

    Returns a short name (``GPL-2+``, ``CC-BY-SA-3.0``, ``GPL-2 or GPL-3``) or ``"unknown"``.
    """
    if is_machine_readable(text):
        licence = UNKNOWN
        for para in _paragraphs(text):
            patterns = para.get("Files", "").split()
            if patterns and any(fnmatchcase(source_path, p) for p in patterns):
                licence = para.get("License", "").split("\n")[0].strip() or UNKNOWN
        return licence
    row = re.search(rf"^{re.escape(source_path)}\s*\|\s*(?P<cell>[^|\s]+)\s*\|", text, re.M)
    if row is not None:
        return _table_licence(row.group("cell"))
    return granted_licence(text, about_docs=source_path.startswith("help/"))


def _table_licence(cell: str) -> str:
    """``GPLv2h`` -> ``GPL-2+`` (``h``: "or higher"), ``GFDL1.1`` -> ``GFDL-1.1``; other cells as written."""
    match = re.fullmatch(r"(?P<kind>L?GPL|GFDL)v?(?P<num>\d(?:\.\d)?)(?P<later>h|\+)?", cell)
    if match is None:
        return cell
    return f"{match.group('kind')}-{match.group('num')}{'+' if match.group('later') else ''}"


def granted_licence(text: str, about_docs: bool = False) -> str:
    """The licence of the first grant in a free-form text, as a short name, or ``"unknown"``.

    about_docs: prefer the first grant whose preceding 300 characters mention help or documentation
            (not "except docs").
    """
    grants: list[tuple[str, str]] = []   # (preceding text, short name)
    for match in _GNU.finditer(text):
        before = text[max(0, match.start() - 300):match.start()]
        if not re.search(r"(terms\s+of|under)\s+the\s+$", before):
            continue
        version = _VERSION.search(match.group("tail"))
        if version is None:
            continue
        later = bool(_LATER.search(match.group("tail")[version.end():version.end() + 120]))
        kind = _GNU_SHORT[" ".join(match.group("kind").split())]
        grants.append((before, f"{kind}-{version.group('num')}{'+' if later else ''}"))
    if about_docs:
        for before, name in grants:
            if re.search(r"(?<!except )\b(help|doc(ument(ation)?|s)?)\b", before, re.I):
                return name
    return grants[0][1] if grants else UNKNOWN


def licence_from_url(url: str) -> str:
    """A short name for a licence URL (Mallard ``<license href>``); the URL itself when unknown."""
    cc = _CC_URL.search(url)
    if cc is not None:
        name = f"CC-{cc.group('kind').upper()}-{cc.group('num')}"
        return name + (f"-{cc.group('juris').upper()}" if cc.group("juris") else "")
    gnu = _GNU_URL.search(url)
    if gnu is not None:
        kind = "GFDL" if gnu.group("kind") == "fdl" else gnu.group("kind").upper()
        return f"{kind}-{gnu.group('num')}"
    return url
