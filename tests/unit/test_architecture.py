"""The import rules of docs/architecture.md: each part never imports the parts listed there."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "simpe"
FLOOR = {"config", "registry", "values", "paths", "textfile", "errors", "ties"}
NEVER = {
    **{part: {"datasets", "decoders", "methods", "metrics", "model", "ranking", "report", "rundir", "simulate", "cli",
              "update", "score", "select_fixed", "train_demo", "build_data", "store", "sweep", "track"} for part in FLOOR},
    "metrics": {"model", "decoders", "methods", "rundir", "simulate", "cli"},
    "methods": {"decoders", "metrics", "rundir", "simulate", "cli"},
    "decoders": {"methods", "rundir", "simulate", "cli"},
    "datasets": {"model", "metrics", "simulate", "cli"},
    "rundir": {"model", "metrics", "decoders", "methods", "simulate", "cli"},
    "report": {"model", "decoders", "methods", "simulate", "cli"},
    "simulate": {"report", "cli", "sweep", "track"},
    "sweep": {"cli"},
    "replicate": {"cli"},
    "track": {"model", "decoders", "methods", "metrics", "simulate", "sweep", "report", "cli"},
    "fingerprint": {"cli", "simulate", "sweep", "replicate", "report", "rundir"},
    "models": {"model", "decoders", "methods", "metrics", "rundir", "simulate", "cli", "update", "ranking", "report", "store",
               "sweep", "datasets", "score", "select_fixed", "train_demo", "build_data", "profiling"},
}
ALLOWED_FLOOR = {"config": {"errors", "paths", "values", "textfile"}, "registry": {"errors", "values"}, "values": {"errors"},
                 "paths": set(), "textfile": {"errors"}, "errors": set(), "ties": set()}


def _imports(path: Path) -> set[str]:
    """The top-level simpe parts a module imports (``simpe.metrics.online`` -> ``metrics``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found.update(name.split(".")[1] for name in names if name.startswith("simpe.") and name.count(".") >= 1)
    return found


def _part(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_architecture(path: Path) -> None:
    part = _part(path)
    imported = _imports(path) - {part}
    assert not imported & NEVER.get(part, set()), f"{part} imports {sorted(imported & NEVER[part])}"
    if part in ALLOWED_FLOOR:
        assert imported <= ALLOWED_FLOOR[part], f"{part} imports {sorted(imported - ALLOWED_FLOOR[part])}"
    if path.relative_to(PACKAGE).as_posix() == "report/stats.py":
        assert not _imports(path), "report/stats.py is pure numerical code"
