"""XLIFF, the file every CAT tool reads and writes: its segments as a stream (``--dataset xliff``), and its targets
written back (``fill_targets``; ``simpe serve export --xliff``).

Read with translate-toolkit (``translate.storage``: ``Xliff1File`` for XLIFF 1.2, ``Xliff2File`` for 2.x, the
version taken from the file), which gives the files, units, segments, ids, languages and states; the inline content
of a source or target is read from the unit's own XML element (translate-toolkit's plain text drops inline tags).

**Segments.** A 1.2 ``trans-unit`` is one segment, or one per ``<mrk mtype="seg">`` of its ``seg-source``; a 2.x
``unit`` has one per ``<segment>``. A segment's id is its unit's id, with ``::`` and the segment's id when the unit
has several (``u3::2``: translate-toolkit's own naming for 2.x). The document (``doc_id``) is the ``file``'s
``original``. Units marked ``translate="no"`` are left out.

**Inline tags** become placeholders the translator sees and keeps: numbered in order of appearance in the segment's
source, ``⟨1⟩ … ⟨/1⟩`` for a tag with content (1.2 ``g``, 2.x ``pc``, ``mrk``) and ``⟨2/⟩`` for a standalone one
(1.2 ``x``, ``ph``, ``bx``, ``ex``, ``bpt``, ``ept``, ``it``; 2.x ``ph``, ``sc``, ``ec``, ``cp``: their native
code is kept). The model reads and learns the text without them (``plain``: placeholders removed, spaces
collapsed); ``simpe serve`` shows the tagged source, refuses a post-edit that loses, repeats or misnests a
placeholder, and ``fill_targets`` restores each placeholder as its original element. A target already in the
file is read the same way, with the placeholders of its source's tags.
A bracket the user wrote is never taken for a placeholder: in tagged text a literal ``⟨`` is written twice
(``escape``: "Press ⟨1⟩" reads as ``Press ⟨⟨1⟩``), and ``plain`` and ``fill_targets`` give it back as one, so the
model reads "Press ⟨1⟩ to open the file." and the exported target holds what the translator wrote.

**What is refused** (``DataError``, one line naming the file): a file over ``MAX_BYTES`` (64 MiB) or nested deeper
than the XML reader's 256 levels, a root element not in its version's namespace or an element of the other XLIFF
version's namespace, a unit or segment without ``<source>``, a file with no segment holding source text (units
whose source is empty or tags only are left out, counted in the log). Ids need not be unique: every segment has an
internal key, its position in the file (``XliffSegment.position``, the records' ``info.position``), and the export
writes each post-edit to the segment at its position.

**Targets.** ``--dataset xliff`` takes the filled targets as the references (a segment without one is refused, or
skipped with ``--skip-empty``; a file without any target: one line, exit 2). ``simpe serve init --xliff`` takes
files without targets too: a filled target is the translator's starting point in the editor (instead of the MT),
and only a file whose every segment has a target gives the stream's references the person's run is also scored
against.
"""
from __future__ import annotations

import copy
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simpe.datasets.base import DATASETS, Dataset, Segment
from simpe.datasets.parallel import need_path
from simpe.errors import DataError

logger = logging.getLogger(__name__)

NS1, NS2 = "urn:oasis:names:tc:xliff:document:1.2", "urn:oasis:names:tc:xliff:document:2.0"
PAIRED = {"g", "pc", "mrk"}  # inline tags with content: ⟨k⟩ … ⟨/k⟩
STANDALONE = {"x", "ph", "bx", "ex", "bpt", "ept", "it", "sc", "ec", "cp", "sub"}  # ⟨k/⟩ (their content kept)
PLACEHOLDER = re.compile(r"⟨⟨|⟨(/?)(\d+)(/?)⟩")  # a placeholder, or an escaped literal ⟨ (group 2 None)
ESCAPED = "⟨⟨"
MAX_BYTES = 64 * 1024**2  # an XLIFF file read whole (translate-toolkit's tree takes several times its size)
MAX_DEPTH = 256  # lxml's own limit on element nesting (without XML_PARSE_HUGE), said in the error
SEPARATOR = "::"
_WARNED: set[tuple[str, int]] = set()  # (file, size) whose warnings were logged by this process
STATE_DONE = {"1.2": "translated", "2": "translated"}  # the state a post-edited target gets


def local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def escape(text: str) -> str:
    """``text`` as tagged text: each literal ``⟨`` written twice, so none is read as a placeholder."""
    return text.replace("⟨", ESCAPED)


def plain(tagged: str) -> str:
    """The text of a tagged segment without its placeholders, escaped brackets given back as written, spaces
    collapsed (what the model reads and learns)."""
    return " ".join(PLACEHOLDER.sub(lambda m: "" if m.group(2) else "⟨", tagged).split())


def placeholders(tagged: str) -> list[str]:
    """The placeholders of a tagged text, in order (escaped brackets are text, not placeholders)."""
    return [m.group(0) for m in PLACEHOLDER.finditer(tagged) if m.group(2)]


def is_tagged(text: str) -> bool:
    """Whether ``text`` holds a placeholder or an escaped bracket: tagged text that ``plain`` changes."""
    return PLACEHOLDER.search(text) is not None


@dataclass
class XliffSegment:
    """One segment of an XLIFF file: where it stands, its tagged source, its tagged target (None: empty), the inline
    elements its placeholders stand for (number -> element), and the element that holds its target."""

    doc: str
    unit: str
    segment: str | None
    source: str
    target: str | None
    state: str | None
    inline: dict[int, Any]
    holder: Any  # 1.2: the trans-unit (or its seg mrk's id); 2.x: the segment element
    mid: str | None = None  # 1.2 seg-source: the mrk's mid
    position: int = 0  # the internal key: its place among the file's segments (ids may repeat)

    @property
    def id(self) -> str:
        return self.unit if self.segment is None else f"{self.unit}{SEPARATOR}{self.segment}"


def _tagged(element: Any, inline: dict[int, Any], numbering: dict[int, int] | None = None) -> str:
    """The text of ``element`` with its inline children as placeholders; ``inline`` collects number -> element
    (source side). ``numbering`` (target side): the source's element ids' numbers, to number a target's tags alike."""
    out = [escape(element.text or "")]
    for child in element:
        name = local(child.tag)
        if name in PAIRED | STANDALONE:
            number = _number(child, inline, numbering)
            if name in PAIRED:
                out.append(f"⟨{number}⟩{_tagged(child, inline, numbering)}⟨/{number}⟩")
            else:
                out.append(f"⟨{number}/⟩")
        elif name:  # an unknown element: its text only
            out.append(escape("".join(child.itertext())))
        out.append(escape(child.tail or ""))
    return "".join(out)


def _number(child: Any, inline: dict[int, Any], numbering: dict[int, int] | None) -> int:
    if numbering is None:
        number = len(inline) + 1
        inline[number] = child
        return number
    key = _key(child)
    for number, element in inline.items():
        if _key(element) == key:
            return number
    raise DataError(f"a target's inline tag <{local(child.tag)} id={child.get('id')!r}> is not in its source")


def _key(element: Any) -> tuple[str, str | None]:
    return local(element.tag), element.get("id")


def read_xliff(path: str | Path) -> tuple[str, str, str | None, list[XliffSegment], Any]:
    """(version "1.2" or "2", source language, target language, the segments in file order, the translate-toolkit
    store) of an XLIFF file; DataError naming the file when it does not read as XLIFF 1.2 or 2.x, or breaks a rule of
    the module docstring's "What is refused"."""
    from translate.storage import xliff, xliff2

    from simpe.textfile import read_bytes

    path = Path(path)
    data = read_bytes(path, "XLIFF file", limit=MAX_BYTES)  # a folder, a device, a pipe or a file over the limit: one line
    version = "2" if re.search(rb"<xliff[^>]*version=[\"']2", data[:2000]) else "1.2"
    try:
        store = (xliff2.Xliff2File if version == "2" else xliff.xlifffile).parsestring(data)
    except Exception as err:  # noqa: BLE001 (translate-toolkit raises ValueError, lxml's errors, ...)
        if "Excessive depth" in str(err):
            raise DataError(f"{path} nests elements deeper than {MAX_DEPTH} levels (the XML reader's limit); no XLIFF "
                            "file needs that many") from None
        raise DataError(f"{path} does not read as XLIFF {version} ({str(err)[:200]})") from None
    _check_namespaces(path, version, store.document.getroot())
    segments: list[XliffSegment] = []
    seen_units: set[int] = set()
    for unit in store.units:
        if unit.isheader():
            continue
        if version == "2":
            element = unit.xmlelement  # the <segment>
            owner = unit.getunitelement()
            if owner.get("translate") == "no" or id(element) in seen_units:
                continue
            seen_units.add(id(element))
            siblings = [s for s in owner if local(s.tag) == "segment"]
            doc = _original(owner)
            source, target = _source(path, element, owner), _child(element, "target")
            inline: dict[int, Any] = {}
            tagged = _tagged(source, inline)
            segments.append(XliffSegment(doc, owner.get("id") or "", element.get("id") if len(siblings) > 1 else None,
                                         tagged, _target_text(target, inline), element.get("state"), inline, element))
            continue
        element = unit.xmlelement  # the <trans-unit>
        if element.get("translate") == "no":
            continue
        doc = _original(element)
        source = _source(path, element, element)
        seg_source, target = _child(element, "seg-source"), _child(element, "target")
        marks = [m for m in seg_source.iter(f"{{{NS1}}}mrk") if m.get("mtype") == "seg"] if seg_source is not None else []
        state = target.get("state") if target is not None else None
        if not marks:
            inline = {}
            tagged = _tagged(source, inline)
            segments.append(XliffSegment(doc, element.get("id") or "", None, tagged, _target_text(target, inline), state,
                                         inline, element))
            continue
        target_marks = {m.get("mid"): m for m in target.iter(f"{{{NS1}}}mrk") if m.get("mtype") == "seg"} \
            if target is not None else {}
        for mark in marks:
            inline = {}
            tagged = _tagged(mark, inline)
            segments.append(XliffSegment(doc, element.get("id") or "", mark.get("mid"), tagged,
                                         _target_text(target_marks.get(mark.get("mid")), inline), state, inline, element,
                                         mid=mark.get("mid")))
    empty = [s for s in segments if not plain(s.source)]
    segments = [s for s in segments if plain(s.source)]
    if not segments:
        raise DataError(f"{path} holds no translatable segment" + (
            f": its {len(empty)} segment{'s' if len(empty) != 1 else ''} hold{'s' if len(empty) == 1 else ''} no source "
            "text" if empty else ""))
    said = (str(path.resolve()), len(data)) in _WARNED  # the same file read again (serve init reads it twice): said once
    _WARNED.add((str(path.resolve()), len(data)))
    if empty and not said:
        logger.warning("%s: %d segments without source text (empty, or tags only) left out: %s", path, len(empty),
                       ", ".join(s.id or "(no id)" for s in empty[:5]) + (" ..." if len(empty) > 5 else ""))
    for position, segment in enumerate(segments):
        segment.position = position
    repeated = len(segments) - len({s.id for s in segments})
    if repeated and not said:
        logger.warning("%s: %d segment ids repeat; each segment keeps its own place (the export writes by position)",
                       path, repeated)
    source_lang = store.getsourcelanguage() or "en"
    target_lang = store.gettargetlanguage() or None
    return version, source_lang, target_lang, segments, store


def _check_namespaces(path: Path, version: str, root: Any) -> None:
    """Refuse a root that is not its version's ``<xliff>``, or any element in the other version's namespace."""
    wanted, other = (NS2, NS1) if version == "2" else (NS1, NS2)
    if root.tag != f"{{{wanted}}}xliff":
        raise DataError(f"{path}: the root element is {root.tag!r}; an XLIFF {version} file's is <xliff> in the "
                        f"namespace {wanted}")
    stray = next((e for e in root.iter() if isinstance(e.tag, str) and e.tag.startswith(f"{{{other}}}")), None)
    if stray is not None:
        raise DataError(f"{path} line {stray.sourceline}: <{local(stray.tag)}> is in the XLIFF namespace {other}, but "
                        f"the file is XLIFF {version} ({wanted}); one file, one namespace")


def _source(path: Path, element: Any, unit: Any) -> Any:
    """The ``<source>`` of a 1.2 trans-unit or a 2.x segment; DataError naming the unit when there is none."""
    source = _child(element, "source")
    if source is None:
        raise DataError(f"{path} line {element.sourceline}: {local(element.tag)} {unit.get('id') or '(no id)'!r} has no "
                        "<source>; every unit to translate needs one")
    return source


def _child(element: Any, name: str) -> Any:
    return next((c for c in element if local(c.tag) == name), None)


def _original(element: Any) -> str:
    node = element
    while node is not None and local(node.tag) != "file":
        node = node.getparent()
    return (node.get("original") or node.get("id") or "file") if node is not None else "file"


def _target_text(target: Any, inline: dict[int, Any]) -> str | None:
    if target is None:
        return None
    text = _tagged(target, inline, numbering={})
    return text if text.strip() else None


def check_tags(source: str, post_edit: str) -> None:
    """Refuse (DataError) a post-edit whose placeholders are not exactly its source's, each once, paired ones opened
    before they close and properly nested."""
    wanted, got = placeholders(source), placeholders(post_edit)
    missing = [p for p in wanted if got.count(p) < 1]
    if missing:
        raise DataError(f"the post-edit lacks the tag {missing[0]} of its source; every tag of the source stays "
                        f"(tags: {' '.join(wanted)})")
    extra = [p for p in got if got.count(p) > 1 or p not in wanted]
    if extra:
        raise DataError(f"the post-edit holds the tag {extra[0]} " + ("twice" if extra[0] in wanted else
                        f"that its source lacks (a bracket of the text is written twice: {ESCAPED}{extra[0][1:]})"))
    stack: list[str] = []
    for match in PLACEHOLDER.finditer(post_edit):
        closing, number, alone = match.groups()
        if number is None or alone:  # an escaped bracket, a standalone tag
            continue
        if not closing:
            stack.append(number)
        elif not stack or stack.pop() != number:
            raise DataError(f"the tag ⟨/{number}⟩ closes before ⟨{number}⟩ opens, or across another tag; keep each pair "
                            "in order and nested")


def fill(element: Any, tagged: str, inline: dict[int, Any]) -> None:
    """Set ``element``'s content to ``tagged``, each placeholder restored as its original inline element."""
    for child in list(element):
        element.remove(child)
    element.text = ""
    stack = [element]
    last: Any = None  # the node whose tail (or the container's text) the next text goes to

    def put(text: str) -> None:
        if last is None:
            stack[-1].text = (stack[-1].text or "") + text
        else:
            last.tail = (last.tail or "") + text

    position = 0
    for match in PLACEHOLDER.finditer(tagged):
        put(tagged[position:match.start()])
        position = match.end()
        closing, number, alone = match.groups()
        if number is None:  # an escaped bracket: the text's own
            put("⟨")
            continue
        original = inline[int(number)]
        if alone:
            node = copy.deepcopy(original)
            node.tail = None
            stack[-1].append(node)
            last = node
        elif not closing:
            node = original.makeelement(original.tag, dict(original.attrib), nsmap=None)
            stack[-1].append(node)
            stack.append(node)
            last = None
        else:
            last = stack.pop()
    put(tagged[position:])


def fill_targets(store: Any, version: str, segments: list[XliffSegment], targets: dict[int, str]) -> int:
    """Set the ``targets`` (segment position -> tagged text) of ``segments`` in ``store`` (``bytes(store)`` is the
    file); each target set gets the state ``translated``. Returns how many were set. The segments must come from
    ``read_xliff`` of the same store (``simpe.serve.export`` writes the file)."""
    written = 0
    for segment in segments:
        if segment.position not in targets:
            continue
        text = targets[segment.position]
        check_tags(segment.source, text)
        holder = segment.holder
        if version == "2":
            target = _child(holder, "target")
            if target is None:
                source = _child(holder, "source")
                target = source.makeelement(f"{{{NS2}}}target", {})
                source.addnext(target)
                target.tail = source.tail
            fill(target, text, segment.inline)
            holder.set("state", STATE_DONE["2"])
        else:
            target = _child(holder, "target")
            if target is None:
                anchor = _child(holder, "seg-source")
                anchor = _child(holder, "source") if anchor is None else anchor
                target = anchor.makeelement(f"{{{NS1}}}target", {})
                anchor.addnext(target)
                target.tail = anchor.tail
            if segment.mid is None:
                fill(target, text, segment.inline)
            else:
                marks = {m.get("mid"): m for m in target.iter(f"{{{NS1}}}mrk") if m.get("mtype") == "seg"}
                mark = marks.get(segment.mid)
                if mark is None:
                    mark = target.makeelement(f"{{{NS1}}}mrk", {"mtype": "seg", "mid": segment.mid})
                    if len(target):
                        target[-1].tail = (target[-1].tail or "") + " "
                    target.append(mark)
                fill(mark, text, segment.inline)
            target.set("state", STATE_DONE["1.2"])
        written += 1
    return written


@DATASETS.add("xliff")
class XliffDataset(Dataset):
    """The segments of an XLIFF 1.2 or 2.x file as one ``stream`` split (module docstring).

    ``targets``: ``reference`` (``--dataset xliff``: the filled targets are the references) or ``optional``
    (``simpe serve init --xliff``: a segment without a target has no reference; its ``reference`` is its source, and
    ``references`` is False).
    """

    TARGETS = ("reference", "optional")

    def __init__(self, path: str | None = None, src_lang: str | None = None, tgt_lang: str | None = None,
                 targets: str = "reference") -> None:
        self.path = need_path(path, "path", "xliff")
        if targets not in self.TARGETS:
            from simpe.errors import ConfigError

            raise ConfigError(f"dataset 'xliff': unknown targets {targets!r}; known: {', '.join(self.TARGETS)}")
        self.targets = targets
        self.version, file_src, file_tgt, self.units, self.store = read_xliff(self.path)
        self.src_lang = src_lang or file_src.split("-")[0].split("_")[0].lower()
        self.tgt_lang = tgt_lang or (file_tgt or "de").split("-")[0].split("_")[0].lower()
        self.references = all(u.target is not None for u in self.units)

    def _load(self, split: str) -> list[Segment]:
        if self.targets == "reference" and not any(u.target is not None for u in self.units):
            raise DataError(f"{self.path} has no filled target: --dataset xliff takes the targets as references (a file "
                            "without them is for simpe serve init --xliff, where translators fill them)")
        out = []
        for unit in self.units:
            info = {"unit": unit.id, "tagged_source": unit.source, "position": unit.position}
            if unit.target is not None:
                info["target"] = unit.target
            if unit.state:
                info["state"] = unit.state
            if unit.target is not None:
                reference = plain(unit.target)
            elif self.targets == "reference":
                reference = ""  # refused by check_segments (or skipped with --skip-empty)
            else:
                reference = plain(unit.source)
            out.append(Segment(unit.doc, unit.id, plain(unit.source), reference, info=info))
        return out

    def manifest(self) -> dict[str, Any] | None:
        return {"xliff": str(self.path), "version": self.version, "segments": len(self.units),
                "targets": sum(u.target is not None for u in self.units)}
