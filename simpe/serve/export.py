"""``simpe serve export PROJECT TRANSLATOR --xliff OUT``: a translator's post-edits back into the CAT tool's file.

The project's XLIFF file (``serve init --xliff``, kept in the project folder) is written again with each segment the
translator submitted as its target: the final version (the latest revision, else the submission the model learned
from), with its inline tags restored (``simpe.datasets.xliff.write_targets``) and the state ``translated``.
Segments not submitted yet keep what the file had. The run folder is read, never written; no model is loaded.
"""
from __future__ import annotations

from pathlib import Path

from simpe.errors import ConfigError, DataError
from simpe.rundir import layout
from simpe.rundir.events import final_versions, read_events
from simpe.rundir.reader import read_jsonl
from simpe.serve.project import XLIFF_FILE, Project


def final_targets(run_path: Path) -> dict[str, str]:
    """Segment id -> the final tagged post-edit of each recorded segment of the person's run at ``run_path``."""
    records = read_jsonl(run_path / layout.SEGMENTS_FILE, tolerate_torn_tail=True)
    finals = final_versions(read_events(run_path))
    out = {}
    for record in records:
        latest = finals.get(record["index"]) or {"post_edit": record["reference"], "human": record.get("human") or {}}
        out[str(record["seg_id"])] = (latest.get("human") or {}).get("tagged") or latest["post_edit"]
    return out


def export_xliff(project: Project, translator: str, out: Path) -> tuple[int, int, Path]:
    """Write ``translator``'s final post-edits into a copy of the project's XLIFF file at ``out``; returns (segments
    written, segments in the file, the run folder read)."""
    from simpe.datasets.xliff import read_xliff
    from simpe.loop.run import Loop

    assert project.folder is not None
    source = project.folder / XLIFF_FILE
    if not source.is_file():
        raise ConfigError(f"project {project.name!r} was not made from an XLIFF file (simpe serve init --xliff FILE): "
                          "nothing to export into")
    if translator not in project.translators:
        raise ConfigError(f"translator {translator!r} is not in project {project.name!r}; known: "
                          f"{', '.join(sorted(project.translators))}")
    path = Loop(project.run_config(translator), progress=False).path
    targets = final_targets(path)
    if not targets:
        raise DataError(f"{translator} has submitted no segment of project {project.name!r} yet ({path})")
    from simpe.datasets.xliff import write_targets

    version, _, _, segments, store = read_xliff(source)
    unknown = sorted(set(targets) - {s.id for s in segments})
    if unknown:
        raise DataError(f"{path} holds segment {unknown[0]!r}, which {source} lacks: not this project's run")
    written = write_targets(store, version, segments, targets, Path(out))
    return written, len(segments), path
