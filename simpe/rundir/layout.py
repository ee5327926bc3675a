"""The names of everything under ``runs/``: one place for every file and folder name.

A group folder ``runs/<dataset>-<split>--<model>--<N>seg--<digest>/`` holds the runs of several
presets on one stream (one folder each) and the outputs derived from them (``compare/``,
``plots/``, ``report.html``). The digest (``group_digest``) names what the runs compare: the stream as loaded, the
model's files, the warm-start memory and the glossary, so two datasets, models, memories or glossaries of the same
name never share a group.
The writer (writer.py) and the reader (reader.py) take every name from here; docs/run-format.md describes the files.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

CONFIG_FILE = "config.yaml"
ENV_FILE = "env.json"
LOG_FILE = "log.txt"
SEGMENTS_FILE = "segments.jsonl"
SNAPSHOTS_FILE = "snapshots.jsonl"
SUMMARY_FILE = "summary.json"
STATE_DIR = "state"
CHECKPOINT_FILE = "checkpoint.pt"  # inside STATE_DIR
LOCK_FILE = ".lock"
DONE_FILE = "DONE"
STORE_FILE = "store.safetensors"  # the run's final adapted state: the per-user store (simpe export-store copies it)
EVENTS_FILE = "events.jsonl"  # a person's run (simpe serve): revisions, comments, flags (simpe.serve.events)
ERROR_FILE = "error.txt"  # a run that failed in a Slurm task: its error (simpe.sweep.slurm); removed when it starts again
MANIFEST_FILE = "data-manifest.json"  # how the dataset's splits were made (files, choices, counts), when it says
COMPARE_DIR = "compare"  # inside a group folder
PLOTS_DIR = "plots"  # inside a group folder
REPORT_FILE = "report.html"  # inside a group folder: simpe report's page
RANK_RECORDS_FILE = "records.jsonl"  # simpe rank's outputs
RANK_SUMMARY_FILE = "summary.json"
CORRELATION_FILE = "correlation.json"


def hyp_tok_file(lang: str) -> str:
    """Moses-tokenised, truecased hypotheses, one per line (what the R metrics saw)."""
    return f"hyp.tok.{lang}"


def ref_tok_file(lang: str) -> str:
    """Moses-tokenised, truecased references, one per line."""
    return f"ref.tok.{lang}"


def hyp_file(lang: str) -> str:
    """Detokenised hypotheses, one per line."""
    return f"hyp.{lang}"


def mt_file(lang: str) -> str:
    """The raw MT output the references were post-edited from, one per line (datasets that carry it: autodesk)."""
    return f"mt.{lang}"


def is_run_file(name: str) -> bool:
    """A name a run folder holds (the files above, their temporary twins, the per-language text files)."""
    fixed = {CONFIG_FILE, ENV_FILE, LOG_FILE, SEGMENTS_FILE, SNAPSHOTS_FILE, SUMMARY_FILE, STATE_DIR, LOCK_FILE, DONE_FILE,
             STORE_FILE, MANIFEST_FILE, EVENTS_FILE, ERROR_FILE}
    base = name[: -len(".tmp")] if name.endswith(".tmp") else name
    return base in fixed or base.startswith(("hyp.", "ref.tok.", "mt.", STORE_FILE))


def inside(path: Path, root: Path) -> bool:
    """``path`` resolves to a place inside ``root`` (symbolic links followed): where simpe may write."""
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


DIGEST_CHARS = 8  # hex digits of a group's digest in its folder name


def group_digest(stream: str, model: str, memory: str | None, glossary: str | None = None,
                 languages: str | None = None) -> str:
    """The short digest of what a group's runs compare: the stream as loaded (``simpe.datasets.stream_hash``), the
    model's files (``simpe.fingerprint.model_digest``), the warm-start memory's pairs (None: no warm start) and the
    glossary file's content hash (``simpe.filehash.file_hash``; None: no glossary, and then the text hashed is what it
    was before glossaries, so a run without one keeps its group) and the stream's language pair (``xx-yy``; None for
    en -> de, the pair of every run before languages were checked, which keeps its group)."""
    text = f"stream {stream}\nmodel {model}\nmemory {memory or '-'}\n" + (f"glossary {glossary}\n" if glossary else "")
    text += f"languages {languages}\n" if languages else ""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]


def group_name(dataset: str, split: str, model: str, segments: int | None, protocol: str = "post-edit",
               warm_start: str | None = None, digest: str | None = None) -> str:
    """The folder shared by runs on the same stream: ``<dataset>-<split>--<model>--<N>seg``, and ``--interactive``
    after it for the interactive-predictive protocol (its runs are compared with each other, not with post-editing's),
    ``--warm-<name>`` for runs warm-started on the memory file ``name`` (compared with the warm-started baseline),
    then ``--<digest>`` (``group_digest``: the stream, the model's files, the memory and the glossary the name only
    hints at)."""
    suffix = "" if protocol == "post-edit" else f"--{protocol}"
    if warm_start:
        suffix += f"--warm-{warm_start}"
    if digest:
        suffix += f"--{digest}"
    return f"{dataset}-{split}--{model}--{segments if segments else 'all'}seg{suffix}"


def run_path(runs_dir: str | Path, dataset: str, split: str, model: str, segments: int | None, adapter: str,
             protocol: str = "post-edit", warm_start: str | None = None, digest: str | None = None) -> Path:
    """``<runs_dir>/<group>/<adapter>``: the folder of one run."""
    return Path(runs_dir) / group_name(dataset, split, model, segments, protocol, warm_start, digest) / adapter


def groups_named(path: Path) -> list[Path]:
    """The group folders whose name is ``path``'s name followed by a digest (``<path>--<digest>``), sorted: what a
    group's readable name (``runs/libreoffice-stream--demo-en-de--500seg``, the Makefile's GROUP) stands for."""
    pattern = re.compile(re.escape(Path(path).name) + rf"--[0-9a-f]{{{DIGEST_CHARS}}}")
    parent = Path(path).parent
    if not parent.is_dir():
        return []
    return sorted(child for child in parent.iterdir() if child.is_dir() and pattern.fullmatch(child.name))


def compare_dir(group_dir: Path) -> Path:
    """Where ``simpe compare`` writes by default."""
    return Path(group_dir) / COMPARE_DIR


def plots_dir(group_dir: Path) -> Path:
    """Where ``simpe plot`` writes by default."""
    return Path(group_dir) / PLOTS_DIR


def report_path(group_dir: Path) -> Path:
    """Where ``simpe report`` writes the group's HTML page by default."""
    return Path(group_dir) / REPORT_FILE


def is_run_dir(path: Path) -> bool:
    """True for a folder holding segments.jsonl (a run directory, complete or not)."""
    return Path(path).is_dir() and (Path(path) / SEGMENTS_FILE).is_file()
