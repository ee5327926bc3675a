"""The top level the design card names (MISSION.md, "Layout") exists, so the folders cannot be renamed again."""
from __future__ import annotations

from simpe.config.files import known_presets
from simpe.paths import DEFAULTS_FILE, PRESETS_DIR, REPO_ROOT

DESIGN_CARD = {"simpe": "dir", "adapters": "dir", "stopwords": "dir", "runs": "dir", "tests": "dir",
               "pyproject.toml": "file", "Makefile": "file"}


def test_the_design_cards_top_level_exists():
    for name, kind in DESIGN_CARD.items():
        path = REPO_ROOT / name
        assert (path.is_dir() if kind == "dir" else path.is_file()), f"{name} ({kind}) is missing from the top level"
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert all(f"| `{name}{'/' if kind == 'dir' else ''}` |" in readme for name, kind in DESIGN_CARD.items())


def test_the_presets_live_in_adapters():
    assert PRESETS_DIR == REPO_ROOT / "adapters" and DEFAULTS_FILE == PRESETS_DIR / "defaults.yaml"
    assert not (REPO_ROOT / "presets").exists()
    assert {"baseline", "full", "bias", "fixed", "top", "lasso"} <= set(known_presets())
