"""``simpe serve export PROJECT TRANSLATOR --xliff OUT``: a translator's post-edits back into the CAT tool's file.

The project's XLIFF file (``serve init --xliff``, kept in the project folder) is written again with each segment the
translator submitted as its target: the final version (the latest revision, else the submission the model learned
from), with its inline tags restored (``simpe.datasets.xliff.fill_targets``) and the state ``translated``.
Segments not submitted yet keep what the file had. Each record goes to the segment at its own place in the file
(``info.position``), so two units with the same id never get each other's post-edit. The run folder is read, never
written; no model is loaded; a record or revision that is not what the server writes (a post-edit that is not
text, a segment the file lacks) is refused in one line, naming the file.

OUT follows the run folder's rules (``check_out``): an existing file is replaced only with ``--overwrite``; OUT is
never a symbolic link, a folder, a device or a path of a kernel file system (/proc, /sys, /dev), never one of the
project's own files (``project.json``, ``source.xlf``, the glossary) nor inside the translator's run folder, and
its folder must exist. The file is written whole to a temporary file beside OUT, synced, then renamed into place
(``write_atomic``): a full disk leaves OUT as it was and no temporary file behind; a kill leaves OUT as it was (and
perhaps the hidden temporary file, ``.OUT.*.tmp``), never half a file.
"""
from __future__ import annotations

import errno
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from simpe.errors import ConfigError, DataError
from simpe.rundir import layout
from simpe.rundir.events import final_versions, read_events
from simpe.rundir.reader import read_jsonl
from simpe.serve.project import PROJECT_FILE, XLIFF_FILE, Project
from simpe.textfile import special_kind

KERNEL_FILE_SYSTEMS = (Path("/proc"), Path("/sys"), Path("/dev"))
GLOSSARY_FILES = ("glossary.tsv", "glossary.tbx")


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where} is {str(value)[:40]!r} ({type(value).__name__}), not the text of a post-edit; the "
                        "file was not written by simpe serve (changed by hand?)")
    return value


def final_targets(run_path: Path, segments: list[Any]) -> dict[int, str]:
    """Segment position in the XLIFF file -> the final tagged post-edit of each recorded segment of the person's run
    at ``run_path``; ``segments``: the file's (``read_xliff``). DataError naming the file for a record or a revision
    that is not what the server writes, or a segment the file lacks."""
    records = read_jsonl(run_path / layout.SEGMENTS_FILE, tolerate_torn_tail=True)
    finals = final_versions(read_events(run_path))
    ids: dict[str, list[int]] = {}
    for segment in segments:
        ids.setdefault(segment.id, []).append(segment.position)
    out: dict[int, str] = {}
    for number, record in enumerate(records, 1):
        where = f"{run_path / layout.SEGMENTS_FILE} record {number}"
        if not isinstance(record, dict) or not isinstance(record.get("index"), int) or not isinstance(record.get("seg_id"), str):
            raise DataError(f"{where} has no index and seg_id; not a record of simpe serve")
        position = (record.get("info") or {}).get("position") if isinstance(record.get("info"), dict) else None
        seg_id = record["seg_id"]
        if position is None:  # recorded before the position was kept: by id, while ids are unique
            if len(ids.get(seg_id, [])) > 1:
                raise DataError(f"{where}: segment id {seg_id!r} stands {len(ids[seg_id])} times in the project's file, "
                                "and the record (from an older simpe) does not say which; export it by hand")
            position = ids.get(seg_id, [None])[0]
        if not isinstance(position, int) or isinstance(position, bool) or not 0 <= position < len(segments) \
                or segments[position].id != seg_id:
            raise DataError(f"{run_path} holds segment {seg_id!r}, which the project's {XLIFF_FILE} lacks at its place: not "
                            "this project's run")
        latest = finals.get(record["index"])
        if latest is None:
            latest, what = {"post_edit": record.get("reference"), "human": record.get("human")}, where
        else:
            what = f"{run_path / layout.EVENTS_FILE}: the revision of segment {record['index']}"
        human = latest.get("human") or {}
        if not isinstance(human, dict):
            raise DataError(f"{what} has a human part that is not an object; the file was not written by simpe serve")
        tagged = human.get("tagged")
        out[position] = _text(tagged, f"{what}'s tagged post-edit") if tagged is not None else \
            _text(latest.get("post_edit"), f"{what}'s post_edit")
    return out


def check_out(out: Path, project: Project, run_path: Path, overwrite: bool) -> Path:
    """OUT, checked against the rules of the module docstring; ConfigError in one line naming it."""
    out = Path(out)
    try:
        info = os.lstat(out)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise ConfigError(f"--xliff {out}: cannot be written ({err.strerror})") from None
    if info is not None:
        import stat

        if stat.S_ISLNK(info.st_mode):
            raise ConfigError(f"--xliff {out} is a symbolic link; the export never writes through one: give the path of "
                              "the file itself")
        kind = special_kind(info.st_mode)
        if kind is not None:
            raise ConfigError(f"--xliff {out} is {kind}, not a file; give the path of the XLIFF file to write")
    resolved = out.resolve()
    if any(resolved.is_relative_to(root) for root in KERNEL_FILE_SYSTEMS):
        raise ConfigError(f"--xliff {out} is in {resolved.parts[0]}{resolved.parts[1]}, a kernel file system; write the "
                          "export to a folder of files")
    assert project.folder is not None
    own = [project.folder / name for name in (PROJECT_FILE, XLIFF_FILE, *GLOSSARY_FILES)]
    if any(resolved == path.resolve() or (info is not None and path.exists() and os.path.samefile(out, path))
           for path in own) or resolved.is_relative_to(run_path.resolve()):
        raise ConfigError(f"--xliff {out} is one of project {project.name}'s own files (its {XLIFF_FILE}, "
                          f"{PROJECT_FILE}, glossary or run folder), which the export never replaces; write elsewhere")
    if not resolved.parent.is_dir():
        raise ConfigError(f"--xliff {out}: the folder {out.parent} does not exist; create it first")
    if info is not None and not overwrite:
        raise ConfigError(f"--xliff {out} exists; give --overwrite to replace it")
    return out


def write_atomic(out: Path, data: bytes, overwrite: bool) -> None:
    """Write ``data`` to a temporary file beside ``out``, sync it, and move it into place (replacing ``out`` only when
    ``overwrite``); RunDirError in one line when it fails, and then nothing is left behind."""
    from simpe.rundir.writer import write_error

    fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb", buffering=0) as handle:
            view = memoryview(data)
            while view:
                view = view[handle.write(view):]
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, out)
        else:
            try:
                os.link(tmp, out)  # fails if OUT appeared meanwhile: never replaced without --overwrite
            except FileExistsError:
                raise ConfigError(f"--xliff {out} exists; give --overwrite to replace it") from None
            except OSError:  # a file system without hard links (FAT, some network mounts): checked, then renamed
                if os.path.lexists(out):
                    raise ConfigError(f"--xliff {out} exists; give --overwrite to replace it") from None
                os.replace(tmp, out)
            tmp.unlink(missing_ok=True)
        folder = os.open(out.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        if err.errno == errno.EFBIG:  # a file-size limit (ulimit -f): as full as a full disk for this file
            err = OSError(errno.EFBIG, "the file-size limit (ulimit -f) is reached")
        raise write_error(out, err, "nothing was written; free space or choose another place") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def export_xliff(project: Project, translator: str, out: Path, overwrite: bool = False) -> tuple[int, int, Path]:
    """Write ``translator``'s final post-edits into a copy of the project's XLIFF file at ``out`` (replacing a file
    there only when ``overwrite``); returns (segments written, segments in the file, the run folder read)."""
    from simpe.datasets.xliff import fill_targets, read_xliff
    from simpe.loop.plan import run_path

    assert project.folder is not None
    source = project.folder / XLIFF_FILE
    if not source.is_file():
        raise ConfigError(f"project {project.name!r} was not made from an XLIFF file (simpe serve init --xliff FILE): "
                          "nothing to export into")
    if translator not in project.translators:
        raise ConfigError(f"translator {translator!r} is not in project {project.name!r}; known: "
                          f"{', '.join(sorted(project.translators))}")
    reader = logging.getLogger("simpe.datasets.xliff")
    level = reader.level
    reader.setLevel(logging.ERROR)  # its warnings (ids that repeat, empty units) were said at serve init
    try:
        path = run_path(project.run_config(translator))  # the plan's folder: no model, scorer or COMET built
        out = check_out(Path(out), project, path, overwrite)
        version, _, _, segments, store = read_xliff(source)
    finally:
        reader.setLevel(level)
    targets = final_targets(path, segments)
    if not targets:
        raise DataError(f"{translator} has submitted no segment of project {project.name!r} yet ({path})")
    written = fill_targets(store, version, segments, targets)
    try:
        data = bytes(store)
    except (UnicodeError, ValueError) as err:  # lxml refuses a character XML cannot hold
        raise DataError(f"a post-edit of {path} cannot be written as XML ({str(err)[:120]})") from None
    write_atomic(out, data, overwrite)
    return written, len(segments), path
