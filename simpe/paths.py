"""The repository root and the default locations under it, computed once.

Every module that needs a shipped file (presets, stopword lists, the demo model,
the LibreOffice splits) takes its path from here. Nothing here reads or writes files.
"""
from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PRESETS_DIR = REPO_ROOT / "adapters"
DEFAULTS_FILE = PRESETS_DIR / "defaults.yaml"
STOPWORDS_DIR = REPO_ROOT / "stopwords"
DATA_DIR = REPO_ROOT / "data"
MODELS_DIR = REPO_ROOT / "models"
DEFAULT_MODEL = MODELS_DIR / "demo-en-de"
