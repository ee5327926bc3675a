"""Extract the id-carrying paragraphs of one LibreOffice help page as a user reads them.

LibreOffice 7.4 ships its help as HTML pages converted from ``.xhp``. Every paragraph and
heading carries an id (``par_id…``, ``hd_id…``) that is the same in every language, so
(file, id) aligns the en-US and de pages. This module turns one page into an ordered
list of ``(id, text)`` (``extract_segments``), and lists the UI strings each paragraph quotes
(``extract_quotes``: the ``menuitem`` and ``emph`` spans, read by ``glossary.py``); it does not align languages
(see ``libreoffice.py``).

Rendering decisions (what the user of the non-macOS Calc/Writer/... sees):

* ``switchinline`` / ``switch`` spans hold alternatives, each a hidden child span. For a
  system switch (children ``MAC``, ``WIN``, ``UNIX``) the ``default…`` child is kept, so
  "Command/Ctrl" comes out as "Ctrl". For an application switch (``CALC``, ``WRITER``…)
  the child of the page's own application is kept when there is one, else the default.
* Images, scripts and styles contribute no text; ``<br>`` is a space; whitespace runs
  collapse to one space (no-break spaces included).
* A paragraph nested inside another id-carrying element is its own segment and is left
  out of the outer one.
* When an id repeats inside one file, the first occurrence is kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

SEGMENT_ID = re.compile(r"^(par|hd)_id")
VOID_TAGS = frozenset("area base br col embed hr img input link meta source track wbr".split())
SKIP_TAGS = frozenset({"script", "style", "img", "head", "title"})
SWITCH_CLASSES = frozenset({"switch", "switchinline"})
# help module -> the application class name used by its switches
MODULE_APP = {
    "scalc": "CALC",
    "swriter": "WRITER",
    "simpress": "IMPRESS",
    "sdraw": "DRAW",
    "smath": "MATH",
    "schart": "CHART",
    "sdatabase": "BASE",
    "sbasic": "BASIC",
}
WHITESPACE = re.compile(r"\s+")


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list["Node | str"] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()


class _TreeBuilder(HTMLParser):
    """A forgiving HTML -> Node tree parser (the help pages are well formed, mostly)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack: list[Node] = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID_TAGS:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: (v or "") for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return
        # a stray end tag: ignore it

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html(html: str) -> Node:
    """Parse an HTML page into a ``Node`` tree."""
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def _choose_variant(switch: Node, app: str | None) -> Node | None:
    variants = [c for c in switch.children if isinstance(c, Node)]
    if app is not None:
        for child in variants:
            if app in child.classes:
                return child
    for child in variants:
        if child.attrs.get("id", "").startswith("default"):
            return child
    return None


def _text(node: Node, app: str | None, out: list[str]) -> None:
    for child in node.children:
        if isinstance(child, str):
            out.append(child)
            continue
        if child.tag in SKIP_TAGS:
            continue
        if child.tag == "br":
            out.append(" ")
            continue
        if SEGMENT_ID.match(child.attrs.get("id", "")):
            continue  # a nested segment of its own
        if SWITCH_CLASSES.intersection(child.classes):
            chosen = _choose_variant(child, app)
            if chosen is not None:
                _text(chosen, app, out)
            continue
        if "hidden" in child.attrs:
            continue
        _text(child, app, out)


def normalise(text: str) -> str:
    """Collapse whitespace (no-break spaces included) and strip."""
    return WHITESPACE.sub(" ", text.replace("\xa0", " ")).strip()


def _segment_nodes(root: Node, app: str | None) -> list[tuple[str, Node]]:
    """The element of every segment id (its first occurrence), in document order, switches resolved for ``app``."""
    nodes: list[tuple[str, Node]] = []
    seen: set[str] = set()

    def walk(node: Node) -> None:
        for child in node.children:
            if isinstance(child, str) or child.tag in SKIP_TAGS:
                continue
            seg_id = child.attrs.get("id", "")
            if SWITCH_CLASSES.intersection(child.classes):
                chosen = _choose_variant(child, app)
                if chosen is not None:
                    walk(chosen)
                continue
            if SEGMENT_ID.match(seg_id) and seg_id not in seen:
                seen.add(seg_id)
                nodes.append((seg_id, child))
            walk(child)

    walk(root)
    return nodes


def extract_segments(html: str, module: str | None = None) -> list[tuple[str, str]]:
    """Return the ordered ``(segment id, text)`` pairs of one help page.

    Args:
        html: the page's HTML.
        module: the help module the page belongs to (``scalc``, ``shared``…); picks the
            variant of application switches. ``None`` keeps the default variants.
    """
    app = MODULE_APP.get(module or "")
    segments: list[tuple[str, str]] = []
    for seg_id, node in _segment_nodes(parse_html(html), app):
        parts: list[str] = []
        _text(node, app, parts)
        text = normalise("".join(parts))
        if text:
            segments.append((seg_id, text))
    return segments


QUOTE_CLASSES = frozenset({"menuitem", "emph"})  # the spans in which the help quotes UI strings


def _quotes(node: Node, app: str | None, classes: frozenset[str], out: list[str]) -> None:
    for child in node.children:
        if isinstance(child, str) or child.tag in SKIP_TAGS or child.tag == "br":
            continue
        if SEGMENT_ID.match(child.attrs.get("id", "")) or "hidden" in child.attrs:
            continue  # a nested segment of its own, or hidden text
        if SWITCH_CLASSES.intersection(child.classes):
            chosen = _choose_variant(child, app)
            if chosen is not None:
                _quotes(chosen, app, classes, out)
            continue
        if classes.intersection(child.classes):
            parts: list[str] = []
            _text(child, app, parts)
            text = normalise("".join(parts))
            if text:
                out.append(text)
            continue  # a quote inside a quote is part of the outer one
        _quotes(child, app, classes, out)


def extract_quotes(html: str, module: str | None = None,
                   classes: frozenset[str] = QUOTE_CLASSES) -> list[tuple[str, list[str]]]:
    """Return the ordered ``(segment id, quoted texts)`` of one help page: the text of every span of ``classes``
    (``menuitem``, ``emph``: menu paths, dialog, field and command names) in each segment's text as
    ``extract_segments`` renders it, outermost spans only; segments with no quote are left out."""
    app = MODULE_APP.get(module or "")
    out: list[tuple[str, list[str]]] = []
    for seg_id, node in _segment_nodes(parse_html(html), app):
        quotes: list[str] = []
        _quotes(node, app, classes, quotes)
        if quotes:
            out.append((seg_id, quotes))
    return out
