"""Extra train-only text from other Debian packages: GNOME Mallard help and German gettext catalogs.

``EXTRA_PACKAGES`` names the packages (Debian bookworm). From each unpacked package this
takes

* every Mallard help document with both ``usr/share/help/C/<doc>/`` and
  ``usr/share/help/de/<doc>/`` (``mallard.py`` aligns them; doc id
  ``gnome/<package>/<doc>/<page>``, segment id = the block's position in the page);
* every German catalog ``usr/share/locale/de/LC_MESSAGES/*.mo`` (``gettext.read_catalog``;
  doc id ``mo/<package>/<domain>``, segment id = the pair's index).

Packages are visited in sorted order, help before catalogs, so the output is
deterministic. Each part records its licence: a help document's own Mallard
``<license href>`` when it states one, else the package's Debian copyright file
(``licences.py``; help as ``help/C/…`` and ``help/de/…``, catalogs as ``po/de.po``).
This module does not split or clean the pairs (``libreoffice.split_corpus`` does).

Left out on purpose: DocBook help (aisleriot, glade, gucharmap, rhythmbox: another
format), games (off-domain), AbiWord (its translations are not gettext catalogs).
"""
from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from simpe.build_data.gettext import read_catalog
from simpe.build_data.licences import UNKNOWN, copyright_licence, is_machine_readable, licence_from_url
from simpe.build_data.mallard import MALLARD_NS, PageStats, doc_pairs
from simpe.build_data.segment import Segment

logger = logging.getLogger(__name__)

RELEASE = "Debian bookworm"
# every package the extra text comes from, sorted; all have German catalogs except gnome-user-docs, and all have
# Mallard help in C and de except the catalog-only gnome-builder, gnome-calendar, gnome-contacts, gnome-disk-utility,
# gnome-font-viewer, gnome-maps, gnumeric-common (spreadsheet functions, like the Calc stream), gucharmap,
# nautilus-data, rhythmbox-data and yelp
EXTRA_PACKAGES = (
    "accerciser", "baobab", "brasero-common", "cheese-common", "eog", "evince-common", "file-roller", "gedit-common",
    "gnome-boxes", "gnome-builder", "gnome-calculator", "gnome-calendar", "gnome-clocks", "gnome-contacts",
    "gnome-dictionary", "gnome-disk-utility", "gnome-font-viewer", "gnome-logs", "gnome-maps", "gnome-music",
    "gnome-photos", "gnome-system-monitor", "gnome-terminal-data", "gnome-user-docs", "gnote", "gnumeric-common",
    "gthumb-data", "gucharmap", "nautilus-data", "polari", "rhythmbox-data", "seahorse", "shotwell-common",
    "simple-scan", "totem-common", "yelp",
)
HELP_SUBDIR = Path("usr/share/help")
CATALOG_SUBDIR = Path("usr/share/locale/de/LC_MESSAGES")
SRC_HELP, TGT_HELP = "C", "de"
# the files read from each package (the rest, mostly help figures, is not unpacked)
KEEP = re.compile(r"usr/share/help/(C|de)/[^/]+/[^/]+\.(page|xml)|usr/share/locale/de/LC_MESSAGES/[^/]+\.mo"
                  r"|usr/share/doc/[^/]+/copyright")


@dataclass(frozen=True)
class Taken:
    """One part of a package that went into the corpus, with its licence."""

    package: str
    part: str       # "help gnome-help (293 pages)", "catalog gnumeric-1.12.55"
    licence: str    # short name: "CC-BY-SA-3.0", "GPL-2+"
    basis: str      # where the licence was read: "the help's <license>", "copyright file", "free-form copyright file"


@dataclass
class ExtraCorpus:
    """The extra pairs in output order, per-package figures (for the manifest) and what was taken."""

    segments: list[Segment] = field(default_factory=list)
    figures: dict[str, dict] = field(default_factory=dict)
    taken: list[Taken] = field(default_factory=list)


def _words(pairs: list[tuple[str, str]] | list[Segment]) -> int:
    return sum(len((p.source if isinstance(p, Segment) else p[0]).split()) for p in pairs)


def help_licence_urls(doc_dir: Path) -> list[str]:
    """The ``href`` of every Mallard ``<license>`` in a help document's pages and ``legal.xml`` (sorted)."""
    urls = set()
    for path in sorted([*doc_dir.glob("*.page"), *doc_dir.glob("*.xml")]):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            continue
        urls.update(lic.get("href") for lic in root.iter(f"{{{MALLARD_NS}}}license") if lic.get("href"))
    return sorted(u for u in urls if u)


def _copyright(root: Path, package: str) -> tuple[str, str]:
    """The text of a package's copyright file and how it is read (for ``Taken.basis``)."""
    path = root / "usr/share/doc" / package / "copyright"
    if not path.is_file():
        return "", "no copyright file"
    text = path.read_text(encoding="utf-8", errors="replace")
    return text, "copyright file" if is_machine_readable(text) else "free-form copyright file"


def _copyright_licence(text: str, paths: tuple[str, ...]) -> str:
    if not text:
        return UNKNOWN
    names = []
    for path in paths:
        name = copyright_licence(text, path)
        if name not in names:
            names.append(name)
    return " / ".join(names)


def help_docs(root: Path) -> list[tuple[str, Path, Path]]:
    """``(doc, C folder, de folder)`` of every Mallard document with a German translation, sorted by doc."""
    base = root / HELP_SUBDIR / SRC_HELP
    if not base.is_dir():
        return []
    out = []
    for en_dir in sorted(base.iterdir()):
        de_dir = root / HELP_SUBDIR / TGT_HELP / en_dir.name
        if en_dir.is_dir() and any(en_dir.glob("*.page")):
            if de_dir.is_dir():
                out.append((en_dir.name, en_dir, de_dir))
            else:
                logger.info("%s: Mallard help %s has no German translation; skipped", root.name, en_dir.name)
    return out


def extra_corpus(roots: dict[str, Path], versions: dict[str, str] | None = None) -> ExtraCorpus:
    """Extract the extra pairs from unpacked packages.

    roots: package name -> the folder it is unpacked in (``dpkg-deb -x``).
    versions: package name -> version, copied into the figures.
    """
    extra = ExtraCorpus()
    help_segments: list[Segment] = []
    catalog_segments: list[Segment] = []
    for package in sorted(roots):
        root = roots[package]
        copyright_text, copyright_basis = _copyright(root, package)
        figures: dict = {"version": (versions or {}).get(package)}
        docs = help_docs(root)
        if docs:
            stats, segs = PageStats(), []
            licences = []
            for doc, en_dir, de_dir in docs:
                pages, doc_stats = doc_pairs(en_dir, de_dir)
                stats.add(doc_stats)
                for page, triples in pages:
                    segs.extend(Segment(f"gnome/{package}/{doc}/{page}", str(pos), src, tgt) for pos, src, tgt in triples)
                urls = help_licence_urls(en_dir)
                if urls:
                    licence, basis = " / ".join(dict.fromkeys(licence_from_url(u) for u in urls)), "the help's <license>"
                else:
                    licence = _copyright_licence(copyright_text, (f"help/{SRC_HELP}/index.page", f"help/{TGT_HELP}/{TGT_HELP}.po"))
                    basis = copyright_basis
                licences.append(licence)
                extra.taken.append(Taken(package, f"help {doc} ({doc_stats.pages_aligned} pages aligned)", licence, basis))
            help_segments.extend(segs)
            figures["help"] = {"docs": [d for d, _, _ in docs], "pages_aligned": stats.pages_aligned,
                               "pages_skipped": stats.pages_skipped, "pairs": len(segs), "source_words": _words(segs),
                               "dropped": dict(sorted(stats.dropped.items())), "licence": " / ".join(dict.fromkeys(licences))}
        catalogs = sorted((root / CATALOG_SUBDIR).glob("*.mo")) if (root / CATALOG_SUBDIR).is_dir() else []
        if catalogs:
            segs = []
            for mo in catalogs:
                segs.extend(Segment(f"mo/{package}/{mo.stem}", str(i), src, tgt) for i, (src, tgt) in enumerate(read_catalog(mo)))
            catalog_segments.extend(segs)
            licence = _copyright_licence(copyright_text, ("po/de.po",))
            figures["catalogs"] = {"domains": [mo.stem for mo in catalogs], "pairs": len(segs), "source_words": _words(segs),
                                   "licence": licence}
            for mo in catalogs:
                extra.taken.append(Taken(package, f"catalog {mo.stem}", licence, copyright_basis))
        if not docs and not catalogs:
            logger.warning("%s: no Mallard help with a German translation and no German catalog", package)
        extra.figures[package] = figures
    extra.segments = help_segments + catalog_segments
    return extra


NOTICE_HEAD = """\
Extra text in the train split only (and so in its shipped draw, train-sample; never in
dev, stream or reserved), from {release} packages, grouped by licence. A help document's
licence is the one its own Mallard <license> element states, else the package's Debian
copyright file (usr/share/doc/<package>/copyright, in the .deb): the Files paragraph that
covers help/C and help/de, or po/de.po for the catalogs. A free-form copyright file (marked
*) is summarised by the first licence it names; read it for the details. simpe extracted
plain-text paragraphs and catalog strings, aligned them by position in the page or by
msgid, and otherwise changed only whitespace, inline markup and UI mnemonics.
"""


def licence_notice(taken: list[Taken], versions: dict[str, str]) -> str:
    """The NOTICE section of the extra text: per licence, the packages (with versions) and what was taken."""
    by_licence: dict[str, dict[str, list[str]]] = {}
    for item in taken:
        mark = " *" if item.basis == "free-form copyright file" else ""
        by_licence.setdefault(item.licence, {}).setdefault(item.package, []).append(item.part + mark)
    lines = [NOTICE_HEAD.format(release=RELEASE)]
    for licence in sorted(by_licence):
        lines.append(f"{licence}:")
        for package, parts in sorted(by_licence[licence].items()):
            version = versions.get(package)
            lines.append(f"  {package}{' ' + version if version else ''}: {'; '.join(parts)}")
        lines.append("")
    return "\n".join(lines)
