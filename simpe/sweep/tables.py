"""A sweep's comparison tables: one per stream group its runs landed in (``simpe compare``'s table)."""
from __future__ import annotations

from pathlib import Path

from simpe.rundir import layout
from simpe.sweep.executor import Outcome
from simpe.sweep.plan import RunSpec


def compare_groups(specs: list[RunSpec], outcomes: list[Outcome], bootstrap: int = 1000) -> list[tuple[Path, str]]:
    """The comparison table (Markdown) of every stream's group folder that has one baseline and another complete run.

    Writes each table under the group's ``compare/`` as ``simpe compare`` does; returns (group, text or a note).
    """
    from simpe.errors import SimpeError
    from simpe.report.compare import compare_runs
    from simpe.report.render import to_markdown, write_comparison
    from simpe.rundir.reader import load_group

    groups: dict[Path, list[Path]] = {}
    for spec, outcome in zip(specs, outcomes):
        if outcome.status != "failed":
            groups.setdefault(spec.path.parent, []).append(spec.path)
    tables = []
    for group_dir, paths in groups.items():
        try:
            group = load_group(paths)
            comparison = compare_runs(group, num_resamples=bootstrap)
            write_comparison(comparison, layout.compare_dir(group_dir))
            tables.append((group_dir, to_markdown(comparison)))
        except SimpeError as err:
            tables.append((group_dir, f"(no comparison table: {err})"))
    return tables
