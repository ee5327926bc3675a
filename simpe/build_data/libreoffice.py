"""Build the offline LibreOffice 7.4 en-US -> de corpus and write its splits.

Sources are Debian's ``libreoffice-help-en-us``, ``libreoffice-help-de`` and
``libreoffice-l10n-de`` packages, fetched with ``apt-get download`` into a cache and
unpacked with ``dpkg-deb -x`` (or read from an installed LibreOffice). Help paragraphs
are aligned by (file, ``par_id``/``hd_id``); UI strings come from the German gettext
catalogs. Splits (MISSION.md, "Data"): stream = ``scalc`` in document order, dev =
``schart``, reserved = ``smath`` + ``sdatabase``, train = all other modules plus the UI
strings, minus every pair whose source occurs in stream, dev or reserved, and minus
repeated pairs. The build is deterministic: files are visited in sorted path order.

Train also gets extra text from other Debian packages (``extras.py``: GNOME Mallard help
and German gettext catalogs, ``EXTRA_PACKAGES``), appended after the LibreOffice pairs and
cleaned the same way; it never enters dev, stream or reserved. The manifest counts each
package's pairs, words and kept train pairs, and the NOTICE lists the extra text per licence.

From the written train split it draws ``train-sample`` (``simpe.datasets.libreoffice.TRAIN_SAMPLE``): the 200 pairs
that ``simpe.datasets.base.draw`` with seed 1 picks, as a run's method draws its own sentences. That split ships with
the repository (EWC's Fisher reads it: ``adapters/full+ewc.yaml``); the manifest records the draw (the train pairs'
indices) and the NOTICE what the shipped pairs hold, per licence.

It also writes ``vocab.train.de``, the target-side vocabulary of the train split in the
``rk.rb -v`` format of the authors of Simianer et al. (2019) (``<count> <word>``), for the novel-word R variants
(``metrics.novel_vocab: train``): the types after the R metrics' own pipeline, Moses
tokenisation and truecasing with the demo model's truecaser (``models/demo-en-de/
truecase.de.model``; none when that file is absent). A model with another truecaser needs
its own vocabulary (``write_train_vocab``). The manifest names the truecaser and hashes.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from simpe.build_data.debian import deb_version, download, find_deb, unpack
from simpe.build_data.extras import EXTRA_PACKAGES, KEEP, RELEASE, ExtraCorpus, extra_corpus, licence_notice
from simpe.build_data.gettext import read_catalog
from simpe.build_data.help import extract_segments
from simpe.build_data.segment import Segment
from simpe.datasets.base import draw
from simpe.datasets.libreoffice import SAMPLE_SEED, SAMPLE_SIZE, TRAIN_SAMPLE, LibreOfficeDataset
from simpe.errors import DataError

logger = logging.getLogger(__name__)

PACKAGES = ("libreoffice-help-en-us", "libreoffice-help-de", "libreoffice-l10n-de")
HELP_SUBDIR = Path("usr/share/libreoffice/help")
UI_SUBDIR = Path("usr/lib/libreoffice/program/resource/de/LC_MESSAGES")
SPLIT_OF_MODULE = {"scalc": "stream", "schart": "dev", "smath": "reserved", "sdatabase": "reserved"}
SPLITS = ("train", "dev", "stream", "reserved")
SRC_LANG, TGT_LANG = "en", "de"
LO_RELEASE = "Debian bookworm, LibreOffice 7.4"

NOTICE = """\
The LibreOffice help text and user-interface strings in this folder are taken from
Debian's packages {packages} (LibreOffice 7.4).

LibreOffice is Copyright (c) 2000-2022 LibreOffice contributors and others. The help
content and translations are licensed under the Mozilla Public License, v. 2.0
(https://mozilla.org/MPL/2.0/). The source of the help is available from
https://git.libreoffice.org/help and https://git.libreoffice.org/translations.

simpe extracted plain-text paragraphs, aligned them by paragraph id, and split them by
help module; no text was otherwise modified except for whitespace and UI mnemonics.
"""


def fetch_packages(cache: Path) -> Path:
    """Download (if not cached) and unpack the three LibreOffice packages into ``cache/root``; return it."""
    debs = download(PACKAGES, cache / "debs", LO_RELEASE)
    return unpack(list(debs.values()), cache / "root")


def fetch_extras(cache: Path) -> dict[str, Path]:
    """Download (if not cached) each of ``EXTRA_PACKAGES`` and unpack the files it reads (``extras.KEEP``)
    into ``cache/extra/<package>``."""
    debs = download(EXTRA_PACKAGES, cache / "debs", RELEASE)
    return {package: unpack([deb], cache / "extra" / package, KEEP) for package, deb in sorted(debs.items())}


def package_versions(cache: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Package -> version of the cached .deb files of ``packages``."""
    found = {p: find_deb(cache / "debs", p) for p in packages}
    return {p: deb_version(deb) for p, deb in sorted(found.items()) if deb is not None}


def help_pairs(help_root: Path) -> list[tuple[str, Segment]]:
    """Aligned help segments as ``(module, Segment)`` in sorted file order."""
    en_root, de_root = help_root / "en-US", help_root / "de"
    for lang_root in (en_root, de_root):
        if not lang_root.is_dir():
            raise DataError(f"missing help folder {lang_root}; install or download {', '.join(PACKAGES[:2])}")
    out = []
    for en_page in sorted(en_root.glob("text/**/*.html")):
        rel = en_page.relative_to(en_root)
        de_page = de_root / rel
        if not de_page.exists():
            continue
        module = rel.parts[1]
        en_segs = extract_segments(en_page.read_text(encoding="utf-8"), module)
        de_segs = dict(extract_segments(de_page.read_text(encoding="utf-8"), module))
        doc_id = rel.with_suffix("").as_posix()
        for seg_id, src in en_segs:
            tgt = de_segs.get(seg_id)
            if tgt:
                out.append((module, Segment(doc_id, seg_id, src, tgt)))
    return out


def ui_pairs(ui_root: Path) -> list[Segment]:
    """Aligned UI strings from every German ``.mo`` catalog, in sorted file order."""
    if not ui_root.is_dir():
        raise DataError(f"missing UI catalogs in {ui_root}; install or download libreoffice-l10n-de")
    out = []
    for mo in sorted(ui_root.glob("*.mo")):
        for index, (src, tgt) in enumerate(read_catalog(mo)):
            out.append(Segment(f"ui/{mo.stem}", str(index), src, tgt))
    return out


def split_corpus(help_segments: list[tuple[str, Segment]], ui_segments: list[Segment],
                 extra_segments: Sequence[Segment] = ()) -> dict[str, list[Segment]]:
    """Assign segments to the four splits and clean train (see the module docstring).

    extra_segments: train-only candidates from other packages, after the UI strings.
    """
    splits: dict[str, list[Segment]] = {name: [] for name in SPLITS}
    candidates: list[Segment] = []
    for module, seg in help_segments:
        split = SPLIT_OF_MODULE.get(module)
        (splits[split] if split else candidates).append(seg)
    candidates.extend(ui_segments)
    candidates.extend(extra_segments)
    held_out = {s.source for name in ("dev", "stream", "reserved") for s in splits[name]}
    seen_pairs: set[tuple[str, str]] = set()
    removed = Counter()
    for seg in candidates:
        if seg.source in held_out:
            removed["source in dev/stream/reserved"] += 1
        elif (seg.source, seg.target) in seen_pairs:
            removed["repeated pair"] += 1
        else:
            seen_pairs.add((seg.source, seg.target))
            splits["train"].append(seg)
    for reason, count in sorted(removed.items()):
        logger.info("train: removed %d pairs (%s)", count, reason)
    return splits


def train_sample(out_dir: Path) -> tuple[list[Segment], dict[str, object]]:
    """The shipped draw of the train split written in ``out_dir`` (read back as ``simpe.datasets`` reads it, so the
    draw is the one a run makes) and its manifest entry: where it comes from, the seed and the indices it took."""
    train = LibreOfficeDataset(str(out_dir)).load("train", skip_empty=True)
    indices = draw(len(train), SAMPLE_SIZE, SAMPLE_SEED)
    chosen = [Segment(train[i].doc_id, train[i].seg_id, train[i].source, train[i].reference) for i in indices]
    return chosen, {"drawn_from": "train", "train_segments": len(train), "seed": SAMPLE_SEED, "size": SAMPLE_SIZE,
                    "indices": indices, "read_by": "ewc's Fisher (adapters/full+ewc.yaml, adapters/lasso+ewc.yaml)"}


def sample_notice(sample: list[Segment], extra: ExtraCorpus | None, versions: dict[str, str]) -> str:
    """The NOTICE section of the shipped train sample: its LibreOffice pairs, and its extra pairs per licence and package."""
    own = sum(1 for seg in sample if _part_of(seg) is None)
    lines = [f"The {TRAIN_SAMPLE} split ({TRAIN_SAMPLE}.en, .de, .ids) ships with simpe: the {len(sample)} pairs of the",
             f"train split that simpe's seeded draw (seed {SAMPLE_SEED}) picks, read by EWC's Fisher (the train split",
             f"itself is rebuilt by `make corpus` and not shipped). {own} of them are LibreOffice help and UI",
             "text (MPL-2.0, above); the others are extra text, per licence as above (package, part: pairs):", ""]
    licences: dict[tuple[str, str], set[str]] = {}
    for item in (extra.taken if extra is not None else []):
        licences.setdefault((item.package, item.part.split(" ", 1)[0]), set()).add(item.licence)
    by_licence: dict[str, Counter] = {}
    for seg in sample:
        part = _part_of(seg)
        if part is not None:
            package, kind = part
            licence = " / ".join(sorted(licences.get((package, "help" if kind == "help" else "catalog"), {"unknown"})))
            by_licence.setdefault(licence, Counter())[f"{package} {versions.get(package, '')}".strip() + f" {kind}"] += 1
    for licence in sorted(by_licence):
        lines.append(f"{licence}:")
        lines.extend(f"  {what}: {count}" for what, count in sorted(by_licence[licence].items()))
        lines.append("")
    return "\n".join(lines)


def write_split(out_dir: Path, name: str, segments: list[Segment]) -> dict[str, str]:
    """Write ``name.en``, ``name.de`` and ``name.ids`` (doc id TAB segment id); return their sha256."""
    columns = {
        f"{name}.{SRC_LANG}": [s.source for s in segments],
        f"{name}.{TGT_LANG}": [s.target for s in segments],
        f"{name}.ids": [f"{s.doc_id}\t{s.seg_id}" for s in segments],
    }
    digests = {}
    for filename, lines in columns.items():
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        tmp = out_dir / (filename + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(out_dir / filename)
        digests[filename] = hashlib.sha256(data).hexdigest()
    return digests


def write_train_vocab(out_dir: Path, targets: list[str], truecaser: Path | None = None) -> dict[str, object]:
    """Write ``vocab.train.<tgt>`` (``<count> <word>`` lines) of the train targets; return its manifest entry.

    truecaser: the MosesTruecaser model the R metrics will use (default: the demo model's, when it exists).
    """
    from simpe.metrics.recall import build_vocab, write_vocab
    from simpe.metrics.text import TextPipeline
    from simpe.paths import DEFAULT_MODEL

    if truecaser is None:
        default = DEFAULT_MODEL / f"truecase.{TGT_LANG}.model"
        truecaser = default if default.is_file() else None
    vocab = build_vocab(targets, TextPipeline(TGT_LANG, truecaser))
    path = out_dir / f"vocab.train.{TGT_LANG}"
    tmp = path.with_name(path.name + ".tmp")
    write_vocab(vocab, tmp)
    tmp.replace(path)
    logger.info("train vocabulary: %d types -> %s", len(vocab), path)
    return {"file": path.name, "types": len(vocab), "tokens": sum(vocab.values()), "tokenizer": f"moses.{TGT_LANG}",
            "truecaser": None if truecaser is None else Path(truecaser).name,
            "truecaser_sha256": None if truecaser is None else hashlib.sha256(Path(truecaser).read_bytes()).hexdigest(),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def build(out_dir: Path, cache: Path, installed: bool = False) -> dict[str, int]:
    """Fetch (or find) the packages and build the corpus into ``out_dir``; return split sizes.

    installed: read LibreOffice under ``/usr``; the extra packages are fetched into the cache either way.
    """
    if installed:
        root, versions = Path("/"), {"installed": "/usr"}
    else:
        root = fetch_packages(cache)
        versions = package_versions(cache)
    roots = fetch_extras(cache)
    extra_versions = package_versions(cache, EXTRA_PACKAGES)
    extra = extra_corpus(roots, extra_versions)
    return build_from(root / HELP_SUBDIR, root / UI_SUBDIR, out_dir, {**versions, **extra_versions}, extra)


def source_of(seg: Segment) -> str:
    """Which source a segment comes from, by its doc id: ``libreoffice-help``, ``libreoffice-ui``, ``gnome-help``, ``gettext``."""
    head = seg.doc_id.split("/", 1)[0]
    return {"text": "libreoffice-help", "ui": "libreoffice-ui", "gnome": "gnome-help", "mo": "gettext"}.get(head, head)


def _part_of(seg: Segment) -> tuple[str, str] | None:
    """``(package, "help" | "catalogs")`` of an extra segment, None for LibreOffice's own."""
    kind, _, rest = seg.doc_id.partition("/")
    if kind not in ("gnome", "mo"):
        return None
    return rest.split("/", 1)[0], "help" if kind == "gnome" else "catalogs"


def _count_train(extra: ExtraCorpus, splits: dict[str, list[Segment]]) -> dict[str, int]:
    """Add what train kept and removed to each package's figures; return the train pairs per source."""
    held_out = {s.source for name in ("dev", "stream", "reserved") for s in splits[name]}
    kept = Counter(_part_of(seg) for seg in splits["train"])
    removed_held_out = Counter(_part_of(seg) for seg in extra.segments if seg.source in held_out)
    for package, figures in extra.figures.items():
        for part in ("help", "catalogs"):
            if part in figures:
                entry = figures[part]
                entry["train_pairs"] = kept[(package, part)]
                entry["removed_source_in_dev_stream_reserved"] = removed_held_out[(package, part)]
                entry["removed_repeated"] = entry["pairs"] - entry["train_pairs"] - entry["removed_source_in_dev_stream_reserved"]
    return dict(sorted(Counter(source_of(s) for s in splits["train"]).items()))


GLOSSARY_NOTICE_MARK = "The glossary (glossary.tsv)"  # where the NOTICE's glossary section starts (simpe.build_data.glossary)


def _keep_glossary(out_dir: Path, manifest: dict, notice: str) -> tuple[dict, str]:
    """The new manifest and NOTICE with the glossary's entry and section of the old ones (``make glossary`` wrote them;
    rebuilding the corpus keeps them: run ``make glossary`` again when the splits changed)."""
    old_manifest, old_notice = out_dir / "manifest.json", out_dir / "NOTICE"
    if (out_dir / "glossary.tsv").exists() and old_manifest.exists():
        entry = json.loads(old_manifest.read_text(encoding="utf-8")).get("glossary")
        if entry is not None:
            manifest = {**manifest, "glossary": entry}
        text = old_notice.read_text(encoding="utf-8") if old_notice.exists() else ""
        if GLOSSARY_NOTICE_MARK in text:
            notice = notice.rstrip("\n") + "\n\n" + GLOSSARY_NOTICE_MARK + text.split(GLOSSARY_NOTICE_MARK, 1)[1]
    return manifest, notice


def build_from(help_root: Path, ui_root: Path, out_dir: Path, versions: dict[str, str],
               extra: ExtraCorpus | None = None) -> dict[str, int]:
    """Align, split and write the corpus from unpacked help pages and UI catalogs.

    extra: pairs from other packages for train only (``extras.extra_corpus``); None adds none.
    """
    help_segments = help_pairs(help_root)
    ui_segments = ui_pairs(ui_root)
    logger.info("aligned %d help paragraphs and %d UI strings", len(help_segments), len(ui_segments))
    if extra is not None:
        logger.info("extra: %d pairs from %d packages", len(extra.segments), len(extra.figures))
    splits = split_corpus(help_segments, ui_segments, extra.segments if extra is not None else ())
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"packages": versions, "splits": {}, "sha256": {}}
    for name in SPLITS:
        manifest["sha256"].update(write_split(out_dir, name, splits[name]))
        manifest["splits"][name] = {
            "segments": len(splits[name]),
            "documents": len({s.doc_id for s in splits[name]}),
            "source_words": sum(len(s.source.split()) for s in splits[name]),
        }
    sample, drawn = train_sample(out_dir)
    manifest["sha256"].update(write_split(out_dir, TRAIN_SAMPLE, sample))
    manifest["splits"][TRAIN_SAMPLE] = {"segments": len(sample), "documents": len({s.doc_id for s in sample}),
                                        "source_words": sum(len(s.source.split()) for s in sample), **drawn}
    manifest["train_vocab"] = write_train_vocab(out_dir, [s.target for s in splits["train"]])
    manifest["help_segments"] = len(help_segments)
    manifest["ui_segments"] = len(ui_segments)
    notice = NOTICE.format(packages=", ".join(PACKAGES))
    if extra is not None:
        manifest["train_sources"] = _count_train(extra, splits)
        manifest["extra_segments"] = len(extra.segments)
        manifest["extra_sources"] = extra.figures
        notice += "\n" + licence_notice(extra.taken, versions)
    notice += "\n" + sample_notice(sample, extra, versions)
    manifest, notice = _keep_glossary(out_dir, manifest, notice)
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (out_dir / "NOTICE").write_text(notice)
    return {**{name: len(splits[name]) for name in SPLITS}, TRAIN_SAMPLE: len(sample)}
