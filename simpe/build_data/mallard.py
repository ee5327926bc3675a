"""Align the paragraphs of GNOME Mallard help pages (``help/C`` and ``help/de``) by position.

GNOME help is written in Mallard (``.page`` XML) under ``usr/share/help/C/<doc>/``;
itstool writes each translation (``usr/share/help/de/<doc>/``) from the English page and
a ``.po`` file, so a translated page keeps the English page's element structure and its
text blocks pair up by their position in the page. This module turns one page into its
ordered text blocks and pairs two pages; it does not fetch packages or split corpora
(see ``libreoffice.py``).

Text blocks (one segment each): ``p``, ``title`` (not ``type="sort"``, not a ``role``), ``subtitle``,
``desc``, ``cite``, plus any other element with text of its own (a ``td`` or ``item``
holding bare text). Inline markup is flattened to the text a reader sees, whitespace
normalised (``help.normalise``):

* ``<keyseq>`` joins its keys with ``+`` (``Ctrl+Z``), ``<guiseq>`` with `` ▸ `` as
  yelp renders them; ``<link xref="…"/>`` without text shows the target's link title (the
  page's ``info/title[@type='link']``, else its ``title``; a section's ``title``), looked
  up in the same document and language; an empty ``<link href="…"/>`` shows its address.
* ``info`` contributes only its ``desc`` and displayed ``title`` elements (no credits,
  revisions or licence); ``comment`` (editorial notes), ``media`` (its content is a
  fallback for the image) and ITS/XInclude elements contribute nothing.
* Inline ``if:choose`` keeps its ``if:else`` branch (else its first ``if:when``); at block
  level every branch is walked: both languages carry the same branches.

Decisions (counted in ``PageStats``):

* **Mismatched pages are skipped whole.** A page pair is aligned only when both pages
  have the same sequence of text blocks, compared by element path (``section/steps/item/p``
  …); otherwise none of its blocks is used. Position alignment has no anchor to recover
  from an extra or missing block, and a shifted pairing would teach wrong translations.
  Measured on Debian bookworm: no page of the packages in ``extras.py`` differs (890
  pages). Counting raw ``<p>`` tags, 52 of gnome-help's 293 pages do differ: their
  editorial ``<comment>`` paragraphs, which itstool leaves out of translations and this
  module skips in both languages.
* **Code blocks are dropped:** block-level ``code`` and ``screen`` (commands, file
  contents) take part in the structure check but yield no pair.
* **Untranslated blocks are dropped:** when the German text equals the English one
  (itstool leaves untranslated messages in English), the pair is not kept.
* A block whose link title cannot be resolved (a link into another document) is dropped.
"""
from __future__ import annotations

import logging
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from simpe.build_data.help import normalise

logger = logging.getLogger(__name__)

MALLARD_NS = "http://projectmallard.org/1.0/"
IF_NS = "http://projectmallard.org/if/1.0/"
ITS_NS = "http://www.w3.org/2005/11/its"
TEXT_BLOCKS = frozenset({"p", "title", "subtitle", "desc", "cite", "code", "screen"})
CODE_BLOCKS = frozenset({"code", "screen"})
NO_TEXT = frozenset({"comment", "media", "credit", "revision", "license", "include", "rules"})
GUISEQ_JOIN = " \u25b8 "


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _ns(tag: object) -> str:
    return tag[1:].split("}", 1)[0] if isinstance(tag, str) and tag.startswith("{") else ""


class _Unresolved(Exception):
    """An empty link whose title is not in this document."""


@dataclass(frozen=True)
class Block:
    path: str   # element path from the page root, e.g. "section/steps/item/p"
    text: str | None   # None: a link title could not be resolved
    code: bool


@dataclass
class PageStats:
    """What the alignment kept and dropped, summed over pages."""

    pages_aligned: int = 0
    pages_skipped: int = 0
    pairs: int = 0
    dropped: Counter = field(default_factory=Counter)

    def add(self, other: "PageStats") -> None:
        self.pages_aligned += other.pages_aligned
        self.pages_skipped += other.pages_skipped
        self.pairs += other.pairs
        self.dropped.update(other.dropped)


def parse_page(xml_text: str) -> ET.Element:
    """Parse a Mallard page (raises ``ET.ParseError`` when it is not well formed)."""
    return ET.fromstring(xml_text)


def _is_displayed_title(elem: ET.Element) -> bool:
    return elem.get("type") != "sort" and elem.get("role") is None


def link_titles(pages: dict[str, ET.Element]) -> dict[str, ET.Element]:
    """Map ``page`` and ``page#section`` ids of one document to the title element a link shows."""
    titles: dict[str, ET.Element] = {}
    for root in pages.values():
        page_id = root.get("id")
        if not page_id:
            continue
        info = next((c for c in root if _local(c.tag) == "info"), None)
        link_title = None
        if info is not None:
            link_title = next((c for c in info if _local(c.tag) == "title" and c.get("type") == "link"
                               and c.get("role") is None), None)
        main_title = next((c for c in root if _local(c.tag) == "title"), None)
        shown = link_title if link_title is not None else main_title
        if shown is not None:
            titles[page_id] = shown
        for section in root.iter(f"{{{MALLARD_NS}}}section"):
            title = next((c for c in section if _local(c.tag) == "title"), None)
            if section.get("id") and title is not None:
                titles[f"{page_id}#{section.get('id')}"] = title
    return titles


def _flatten(elem: ET.Element, titles: dict[str, ET.Element], page_id: str, out: list[str], depth: int = 0) -> None:
    if elem.text:
        out.append(elem.text)
    for child in elem:
        name = _local(child.tag)
        if name in NO_TEXT or _ns(child.tag) == ITS_NS:
            pass
        elif name == "keyseq":
            out.append(child.get("join", " " if child.get("type") == "sequence" else "+").join(
                _flat_text(k, titles, page_id, depth) for k in child if _local(k.tag) not in NO_TEXT))
        elif name == "guiseq":
            out.append(GUISEQ_JOIN.join(_flat_text(g, titles, page_id, depth) for g in child if _local(g.tag) not in NO_TEXT))
        elif name == "link" and not (child.text or "").strip() and len(child) == 0:
            out.append(_link_title(child, titles, page_id, depth))
        elif name == "choose" and _ns(child.tag) == IF_NS:
            branches = [c for c in child if _ns(c.tag) == IF_NS]
            chosen = next((c for c in branches if _local(c.tag) == "else"), branches[0] if branches else None)
            if chosen is not None:
                _flatten(chosen, titles, page_id, out, depth)
        else:
            _flatten(child, titles, page_id, out, depth)
        if child.tail:
            out.append(child.tail)


def _flat_text(elem: ET.Element, titles: dict[str, ET.Element], page_id: str, depth: int) -> str:
    parts: list[str] = []
    _flatten(elem, titles, page_id, parts, depth)
    return normalise("".join(parts))


def _link_title(link: ET.Element, titles: dict[str, ET.Element], page_id: str, depth: int) -> str:
    xref = link.get("xref")
    if xref is None:
        href = link.get("href")
        if href and not href.startswith(("help:", "ghelp:")):
            return href
        raise _Unresolved(href)
    if xref.startswith("#"):
        xref = page_id + xref
    title = titles.get(xref)
    if title is None or depth > 3:
        raise _Unresolved(xref)
    return _flat_text(title, titles, xref.split("#")[0], depth + 1)


def _has_own_text(elem: ET.Element) -> bool:
    return bool((elem.text or "").strip()) or any((c.tail or "").strip() for c in elem)


def page_blocks(root: ET.Element, titles: dict[str, ET.Element]) -> list[Block]:
    """The ordered text blocks of one parsed page (see the module docstring)."""
    page_id = root.get("id", "")
    blocks: list[Block] = []

    def unit(elem: ET.Element, path: str) -> None:
        try:
            text: str | None = _flat_text(elem, titles, page_id, 0)
        except _Unresolved:
            text = None
        blocks.append(Block(path, text, _local(elem.tag) in CODE_BLOCKS))

    def walk(node: ET.Element, prefix: str) -> None:
        for child in node:
            name = _local(child.tag)
            path = f"{prefix}{name}"
            if name in NO_TEXT or _ns(child.tag) == ITS_NS:
                continue
            if name == "info":
                for item in child:
                    item_name = _local(item.tag)
                    if item_name == "desc" or (item_name == "title" and _is_displayed_title(item)):
                        unit(item, f"{path}/{item_name}")
                continue
            if name in TEXT_BLOCKS or _has_own_text(child):
                unit(child, path)
            else:
                walk(child, path + "/")

    walk(root, "")
    return blocks


def align_page(en_blocks: list[Block], de_blocks: list[Block]) -> tuple[list[tuple[int, str, str]], PageStats]:
    """Pair the blocks of an English page and its German translation by position.

    Returns the kept ``(position, source, target)`` triples (position: the block's index in
    the page, from 0) and the page's counts; a page whose block paths differ is skipped.
    """
    stats = PageStats()
    if [b.path for b in en_blocks] != [b.path for b in de_blocks]:
        stats.pages_skipped = 1
        stats.dropped["blocks on skipped pages"] += len(en_blocks)
        return [], stats
    stats.pages_aligned = 1
    pairs = []
    for position, (en, de) in enumerate(zip(en_blocks, de_blocks)):
        if en.code:
            stats.dropped["code block"] += 1
        elif en.text is None or de.text is None:
            stats.dropped["unresolved link title"] += 1
        elif not en.text or not de.text:
            stats.dropped["empty"] += 1
        elif en.text == de.text:
            stats.dropped["untranslated (de = en)"] += 1
        else:
            pairs.append((position, en.text, de.text))
    stats.pairs = len(pairs)
    return pairs, stats


def _read_doc(doc_dir: Path) -> dict[str, ET.Element]:
    pages = {}
    for path in sorted(doc_dir.glob("*.page")):
        try:
            pages[path.stem] = parse_page(path.read_text(encoding="utf-8"))
        except (ET.ParseError, UnicodeDecodeError) as err:
            logger.warning("%s: not readable Mallard (%s); skipped", path, err)
    return pages


def doc_pairs(en_dir: Path, de_dir: Path) -> tuple[list[tuple[str, list[tuple[int, str, str]]]], PageStats]:
    """Align every page of one help document (``help/C/<doc>``, ``help/de/<doc>``).

    Returns ``[(page name, [(position, source, target)])]`` in sorted page order, and the counts.
    """
    en_pages, de_pages = _read_doc(en_dir), _read_doc(de_dir)
    en_titles, de_titles = link_titles(en_pages), link_titles(de_pages)
    stats = PageStats()
    out = []
    for name in sorted(en_pages):
        if name not in de_pages:
            stats.pages_skipped += 1
            stats.dropped["page not translated"] += 1
            continue
        pairs, page_stats = align_page(page_blocks(en_pages[name], en_titles), page_blocks(de_pages[name], de_titles))
        stats.add(page_stats)
        if pairs:
            out.append((name, pairs))
    return out, stats
