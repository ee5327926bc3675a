"""The import rules of docs/architecture.md: its layers (a part imports only parts of lower layers: no upward import,
no circle), and what each part never imports."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "simpe"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
FLOOR = {"config", "registry", "values", "paths", "textfile", "errors", "ties", "stats", "filehash"}
NEVER = {
    **{part: {"datasets", "decoders", "methods", "metrics", "model", "ranking", "report", "rundir", "loop", "cli",
              "measure", "demo", "build_data", "store", "sweep", "track"} for part in FLOOR},
    "metrics": {"model", "decoders", "methods", "rundir", "loop", "cli"},
    "methods": {"decoders", "metrics", "rundir", "loop", "cli"},
    "decoders": {"methods", "rundir", "loop", "cli"},
    "datasets": {"model", "metrics", "loop", "cli"},
    "terms": {"model", "decoders", "methods", "rundir", "loop", "cli"},
    "rundir": {"model", "metrics", "decoders", "methods", "loop", "cli"},
    "report": {"model", "decoders", "methods", "loop", "cli"},
    "loop": {"report", "cli", "sweep", "track", "serve", "store", "measure"},
    "sweep": {"cli"},
    "replicate": {"cli"},
    "track": {"model", "decoders", "methods", "metrics", "loop", "sweep", "report", "cli"},
    "fingerprint": {"cli", "loop", "sweep", "replicate", "report", "rundir"},
    "models": {"model", "decoders", "methods", "metrics", "rundir", "loop", "cli", "ranking", "report", "store",
               "sweep", "datasets", "measure", "demo", "build_data"},
}
ALLOWED_FLOOR = {"config": {"errors", "paths", "values", "textfile"}, "registry": {"errors", "values"}, "values": {"errors"},
                 "paths": set(), "textfile": {"errors"}, "errors": set(), "ties": set(), "stats": set(), "filehash": set()}


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



@functools.cache
def _layer_rows() -> tuple[tuple[str, ...], ...]:
    """The layers block of docs/architecture.md: its rows of parts, top layer first."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = text.split("<!-- layers: read by tests/unit/test_architecture.py -->", 1)[1].split("<!-- end of layers -->", 1)[0]
    lines = [line for line in block.strip().strip("`").strip().splitlines() if line.strip()]
    return tuple(tuple(part.strip() for part in line.split("·") if part.strip()) for line in lines)


def _layers() -> dict[str, int]:
    """part -> its layer (0 the floor)."""
    rows = _layer_rows()
    return {part: len(rows) - 1 - depth for depth, row in enumerate(rows) for part in row}


def _graph() -> dict[str, set[str]]:
    """part -> the parts it imports (at the top of a module or inside a function alike)."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        part = _part(path)
        graph.setdefault(part, set()).update(_imports(path) - {part})
    return graph


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_down_the_layers(path: Path) -> None:
    """Every module imports only parts of lower layers than its own: no upward import, so no circle."""
    layers, part = _layers(), _part(path)
    assert part in layers, f"part {part!r} has no layer in docs/architecture.md's layers block: give it one"
    upward = sorted(other for other in _imports(path) - {part} if layers.get(other, len(layers)) >= layers[part])
    assert not upward, f"{part} (layer {layers[part]}) imports {upward}, of its own layer or above"


def test_the_layers_name_every_part_once() -> None:
    named = [part for row in _layer_rows() for part in row]
    assert len(named) == len(set(named)), "a part is named twice"
    assert set(named) == set(_graph()), f"named but not a part: {sorted(set(named) - set(_graph()))}; " \
                                        f"a part not named: {sorted(set(_graph()) - set(named))}"


def _loop_imports(path: Path) -> set[str]:
    """The simpe.loop modules a loop module imports when it runs (imports under ``if TYPE_CHECKING:`` left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
                   for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        found.update(name.split(".")[2] for name in names if name.startswith("simpe.loop.") and name.count(".") >= 2)
    return found - {path.stem}


def test_the_loop_package_reads_top_down() -> None:
    """Inside simpe/loop/ the modules import one way: ``run`` (the Loop) at the top, nothing imports it at run time
    (``protocols`` and ``summary`` name it for types only), and no circle."""
    graph = {path.stem: _loop_imports(path) for path in (PACKAGE / "loop").glob("*.py") if path.stem != "__init__"}
    assert not [name for name, imported in graph.items() if "run" in imported], "a loop module imports loop.run"
    init = ast.parse((PACKAGE / "loop" / "__init__.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(init) if isinstance(n, (ast.Import, ast.ImportFrom))], \
        "simpe/loop/__init__.py imports nothing (a module's fingerprint holds only what it uses)"
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"a circle in simpe/loop: {' -> '.join(path + (name,))}"
        if name not in done:
            for other in graph.get(name, ()):
                visit(other, path + (name,))
            done.add(name)
    for name in graph:
        visit(name, ())
