"""Read aligned (msgid, msgstr) pairs from gettext catalogs: compiled ``.mo`` and ``.po``.

Only translated, non-fuzzy singular entries are pairs; the catalog header (empty msgid)
is skipped. UI mnemonics are removed so the strings read as the user sees them: ``~``
everywhere, and ``_`` when it is the only underscore and stands before a letter (GTK
``.ui`` mnemonics such as ``_Name``). This module does not split or deduplicate.
"""
from __future__ import annotations

import ast
import re
import struct
from pathlib import Path

from simpe.build_data.help import normalise
from simpe.errors import DataError

MO_MAGIC = {0x950412DE: "<", 0xDE120495: ">"}
GTK_MNEMONIC = re.compile(r"_(?=\w)")


def strip_mnemonics(text: str) -> str:
    """Remove UI accelerator markers (``~File``, ``_Name``)."""
    text = text.replace("~", "")
    if text.count("_") == 1:
        text = GTK_MNEMONIC.sub("", text)
    return text


def read_mo(path: Path) -> list[tuple[str, str, str]]:
    """Return ``(context, msgid, msgstr)`` of a compiled catalog in file order (by msgid)."""
    data = path.read_bytes()
    if len(data) < 28:
        raise DataError(f"{path}: not a gettext .mo file (only {len(data)} bytes)")
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in MO_MAGIC:
        raise DataError(f"{path}: not a gettext .mo file (bad magic number {magic:#x})")
    order = MO_MAGIC[magic]
    _, count, orig_off, trans_off = struct.unpack(order + "4I", data[4:20])
    entries = []
    for i in range(count):
        olen, opos = struct.unpack(order + "2I", data[orig_off + 8 * i: orig_off + 8 * i + 8])
        tlen, tpos = struct.unpack(order + "2I", data[trans_off + 8 * i: trans_off + 8 * i + 8])
        try:
            msgid = data[opos: opos + olen].decode("utf-8")
            msgstr = data[tpos: tpos + tlen].decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(f"{path}: entry {i} is not valid UTF-8 ({err.reason})") from None
        context = ""
        if "\x04" in msgid:
            context, msgid = msgid.split("\x04", 1)
        if "\x00" in msgid:  # plural forms: keep the singular
            msgid = msgid.split("\x00")[0]
            msgstr = msgstr.split("\x00")[0]
        entries.append((context, msgid, msgstr))
    return entries


def _po_string(token: str, path: Path, lineno: int) -> str:
    try:
        value = ast.literal_eval(token)
    except (ValueError, SyntaxError):
        raise DataError(f"{path}:{lineno}: malformed .po string {token!r}") from None
    if not isinstance(value, str):
        raise DataError(f"{path}:{lineno}: malformed .po string {token!r}")
    return value


def read_po(path: Path) -> list[tuple[str, str, str]]:
    """Return ``(context, msgid, msgstr)`` of a ``.po`` catalog in file order.

    Fuzzy entries and obsolete (``#~``) entries are skipped; for plural entries the
    singular (``msgstr[0]``) is kept.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not valid UTF-8 (byte {err.start})") from None
    entries: list[tuple[str, str, str]] = []
    entry: dict[str, str] = {}
    fuzzy = False
    key = None

    def flush() -> None:
        nonlocal entry, fuzzy, key
        if "msgid" in entry and not fuzzy:
            entries.append((entry.get("msgctxt", ""), entry["msgid"], entry.get("msgstr", "")))
        entry, fuzzy, key = {}, False, None

    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            flush()
            continue
        if line.startswith("#"):
            if "msgid" in entry:
                flush()
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            continue
        if line.startswith('"'):
            if key is None:
                raise DataError(f"{path}:{lineno}: string continuation outside an entry")
            if key != "skip":
                entry[key] += _po_string(line, path, lineno)
            continue
        keyword, _, rest = line.partition(" ")
        if keyword == "msgctxt" and "msgid" in entry:
            flush()
        if keyword in ("msgctxt", "msgid", "msgstr", "msgstr[0]"):
            key = "msgstr" if keyword == "msgstr[0]" else keyword
            entry[key] = _po_string(rest, path, lineno)
        elif keyword == "msgid_plural" or keyword.startswith("msgstr["):
            key = "skip"
        else:
            raise DataError(f"{path}:{lineno}: unknown .po keyword {keyword!r}")
    flush()
    return entries


def read_catalog(path: Path) -> list[tuple[str, str]]:
    """Return the aligned ``(source, target)`` pairs of a ``.po`` or ``.mo`` file."""
    if path.suffix == ".mo":
        entries = read_mo(path)
    elif path.suffix == ".po":
        entries = read_po(path)
    else:
        raise DataError(f"{path}: unknown catalog type {path.suffix!r}; known: .mo, .po")
    pairs = []
    for _, msgid, msgstr in entries:
        src, tgt = normalise(strip_mnemonics(msgid)), normalise(strip_mnemonics(msgstr))
        if src and tgt:
            pairs.append((src, tgt))
    return pairs


def find_catalogs(paths: list[Path]) -> list[Path]:
    """Expand folders into the sorted ``.po``/``.mo`` files under them; files stay as given."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.suffix in (".po", ".mo")))
        elif path.is_file():
            out.append(path)
        else:
            raise DataError(f"{path} does not exist")
    if not out:
        raise DataError(f"no .po or .mo files in {', '.join(map(str, paths))}")
    return out


def write_pairs(paths: list[Path], prefix: Path) -> int:
    """Write the aligned pairs of all catalogs to ``PREFIX.src`` / ``PREFIX.tgt``; return the count."""
    pairs = [pair for path in find_catalogs(paths) for pair in read_catalog(path)]
    prefix.parent.mkdir(parents=True, exist_ok=True)
    for suffix, side in ((".src", 0), (".tgt", 1)):
        target = prefix.with_name(prefix.name + suffix)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text("".join(p[side] + "\n" for p in pairs), encoding="utf-8")
        tmp.replace(target)
    return len(pairs)
