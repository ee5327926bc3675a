"""Code fingerprints: which source files (and model files) a result depends on, and one hash of their contents.

A fingerprint is the first 16 hex digits of the SHA-256 of the sorted lines ``<file> <sha256[:16] of the file>``
over a *file table*. The table of a loop run (``run_code``) holds:

* simpe's source files that ``simpe.loop.run`` imports, directly or through others, found statically (every
  ``import simpe...`` / ``from simpe... import`` of a module, including those inside functions);
* of the variant families (``simpe.methods``, ``simpe.decoders``, ``simpe.datasets``, ``simpe.models``), whose
  ``__init__`` imports every variant, only the base and the variants the run names (its method and the modifiers it
  is composed with, decoder, dataset and the model's family) with what they import: a change to ``lasso.py`` makes the
  lasso runs stale, not the baseline, and one to ``ewc.py`` the runs composed with ewc;
  every metric counts for every run (the metrics package is not narrowed);
* the model folder's files (weights, tokenizer, truecaser, the fixed selection), except its README and model card
  (a file above 256 MiB, an LLM's weights, by its size and its first and last 8 MiB: hashing it whole would take
  seconds per gigabyte at every run's start).

Other results name their own roots (``source_table``), e.g. the replication page's claims or a decoding study.
The stream is not in the table: a run's summary records its sha256. Nothing here imports torch or runs code from
the files it reads (they are parsed, never executed).
"""
from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from simpe.filehash import file_hash
from simpe.paths import DEFAULT_MODEL, REPO_ROOT

PACKAGE_ROOT = REPO_ROOT / "simpe"
# the variant families: a run counts only the variants it names (their __init__ imports them all, for the registry)
NARROWED = ("simpe.methods", "simpe.decoders", "simpe.datasets", "simpe.models")
MODEL_FILES_LEFT_OUT = ("README.md", "model_card.json")  # a model folder's description, not what loads
LOOP_ROOT = "simpe.loop.run"


def _module_file(name: str) -> Path | None:
    """The source file of simpe module ``name`` (a package's ``__init__.py``), or None when there is none."""
    if name != "simpe" and not name.startswith("simpe."):
        return None
    path = REPO_ROOT.joinpath(*name.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def _family_members(package: str) -> list[str]:
    folder = REPO_ROOT.joinpath(*package.split("."))
    return sorted(f"{package}.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__")


@lru_cache(maxsize=None)
def _imports(name: str) -> frozenset[str]:
    """The simpe modules that module ``name`` imports anywhere in its text (and the packages above them)."""
    path = _module_file(name)
    assert path is not None, name
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # a submodule imported by name
    if path.name == "__init__.py" and name not in NARROWED and "import_all(" in path.read_text(encoding="utf-8"):
        found.update(_family_members(name))  # a family that is not narrowed: every variant counts
    out: set[str] = set()
    for module in found:
        parts = module.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if _module_file(".".join(parts[:i])))
    return frozenset(out - {name})


def source_files(roots: Iterable[str]) -> list[Path]:
    """The source files of modules ``roots`` and of every simpe module they import, transitively (sorted)."""
    seen: set[str] = set()
    todo = [r for r in roots if _module_file(r)]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_imports(name) - seen)
    return sorted(p for p in (_module_file(m) for m in seen) if p is not None)


def _label(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return f"{path.parent.name}/{path.name}"  # a model outside the repository: its folder and file name


def source_table(roots: Iterable[str]) -> dict[str, str]:
    """{file relative to the repository: hash} of the source files of ``roots`` and what they import."""
    return {_label(path): file_hash(path) for path in source_files(roots)}


def model_table(model: str | Path | None) -> dict[str, str]:
    """{model folder/file: hash} of a local model folder's files (the demo model when None); a hub id: its name."""
    folder = Path(model) if model else DEFAULT_MODEL
    if not folder.is_dir():
        return {f"model:{model}": "hub"}  # not a local folder: the hub id is all there is to record
    return {_label(path): file_hash(path) for path in sorted(folder.iterdir())
            if path.is_file() and path.name not in MODEL_FILES_LEFT_OUT}


def model_digest(model: str | Path | None) -> str:
    """The hash (16 hex digits) of what a model is, wherever its folder lies: its files' names and contents (the demo
    model when None), leaving out the description (README, card) and the ``fixed`` method's selections
    (``fixed-selection*.json``, a method's input); a hub id: its name. A run group is named by it
    (``simpe.rundir.layout.group_digest``): two folders of one name hold two models."""
    folder = Path(model) if model else DEFAULT_MODEL
    if not folder.is_dir():
        return fingerprint({"hub": str(model)})
    return fingerprint({path.name: file_hash(path) for path in sorted(folder.iterdir()) if path.is_file()
                        and path.name not in MODEL_FILES_LEFT_OUT and not path.name.startswith("fixed-selection")})


def fingerprint(table: Mapping[str, str]) -> str:
    """One hash of a file table (16 hex digits)."""
    text = "".join(f"{name} {table[name]}\n" for name in sorted(table))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _variant_modules(config: Mapping[str, Any]) -> list[str]:
    """The modules of the variants a run config (a dict as config.yaml holds it) names."""
    from simpe.datasets import DATASETS
    from simpe.decoders import DECODERS
    from simpe.errors import SimpeError
    from simpe.methods import METHODS
    from simpe.methods.compose import MODIFIERS
    from simpe.models import FAMILIES

    def section(key: str) -> Mapping[str, Any]:
        value = config.get(key)
        return value if isinstance(value, Mapping) else {}

    modules = []
    for registry, key, package in ((METHODS, "method", "simpe.methods"), (DECODERS, "decoder", "simpe.decoders"),
                                   (DATASETS, "data", "simpe.datasets")):
        name = section(key).get("name")
        if isinstance(name, str) and name in registry:
            modules.append(registry.get(name).__module__)
        else:  # no name or an unknown one: the whole family counts
            modules.extend(_family_members(package))
    modifiers = section("method").get("modifiers")
    for entry in modifiers if isinstance(modifiers, list) else []:  # a composition's (replay, ewc, prefer, knn, ...)
        name = entry.get("name") if isinstance(entry, Mapping) else None
        registry = METHODS if name in METHODS.names() else MODIFIERS if name in MODIFIERS.names() else None
        modules.extend([registry.get(name).__module__] if registry is not None else _family_members("simpe.methods"))
    model = section("model")
    try:
        from simpe.model import check_model

        family = check_model(model.get("path") or None, str(model.get("family") or "auto"))
    except (SimpeError, OSError, ValueError):
        family = None
    modules.extend([FAMILIES.get(family).__module__] if family in FAMILIES else _family_members("simpe.models"))
    return modules


def run_code(config: Mapping[str, Any]) -> dict[str, Any]:
    """``{"fingerprint": ..., "files": {file: hash}}`` of a loop run with this config (a config.yaml dict)."""
    model = config.get("model") if isinstance(config.get("model"), Mapping) else {}
    table = {**source_table([LOOP_ROOT, *_variant_modules(config)]), **model_table((model or {}).get("path"))}
    return {"fingerprint": fingerprint(table), "files": table}


def code_of(roots: Iterable[str], model: str | Path | None = None, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"fingerprint", "files"}`` of a result computed by modules ``roots`` (with a model's files when it uses one, and
    ``extra`` entries such as the fingerprints of the runs it reads)."""
    table = source_table(roots)
    if model is not None:
        table.update(model_table(model))
    table.update(extra or {})
    return {"fingerprint": fingerprint(table), "files": table}


def changed_files(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    """The entries of two file tables that differ (changed, added or removed), sorted."""
    return sorted(name for name in set(old) | set(new) if old.get(name) != new.get(name))
