"""The Autodesk Post-Editing Data corpus (Zhechev 2012), en -> de, from a local folder.

No dataset host is reachable offline, so the loader reads a documented local path:
``$SIMPE_AUTODESK_DIR`` or, by default, ``data/autodesk/``. It accepts the en->de part
as distributed (TMX files, read in sorted file order) or as a TSV export
(``*.tsv``: source TAB post-edit). When nothing is there, the error says what to
download, from where, and where to put it. There is no fallback to another dataset.
"""
from __future__ import annotations

import os
from pathlib import Path

from simpe.datasets.base import DATASETS, Dataset, Segment
from simpe.datasets.parallel import TsvDataset, read_tmx
from simpe.errors import DataError
from simpe.paths import DATA_DIR

ENV_VAR = "SIMPE_AUTODESK_DIR"
DEFAULT_DIR = DATA_DIR / "autodesk"
DOWNLOAD_HINT = (
    "download the 'Autodesk Post-Editing Data' corpus (Zhechev 2012, en-US -> de-DE part; published by Autodesk, "
    "https://autodesk.app.box.com/Autodesk-PostEditing) on a machine with network "
    "access, and put its .tmx (or a source<TAB>post-edit .tsv) file(s) in {where} (or set {env} to their folder)"
)


@DATASETS.add("autodesk")
class AutodeskDataset(Dataset):
    splits = ("stream",)

    def __init__(self, path: str | None = None) -> None:
        self.path = Path(path or os.environ.get(ENV_VAR) or DEFAULT_DIR)

    def _load(self, split: str) -> list[Segment]:
        hint = DOWNLOAD_HINT.format(where=self.path, env=ENV_VAR)
        if not self.path.is_dir():
            raise DataError(f"the Autodesk corpus is not at {self.path}: {hint}")
        tmx, tsv = sorted(self.path.glob("*.tmx")), sorted(self.path.glob("*.tsv"))
        if not tmx and not tsv:
            raise DataError(f"no .tmx or .tsv file in {self.path}: {hint}")
        out: list[Segment] = []
        for f in tmx:
            out.extend(read_tmx(f, "en", "de"))
        for f in tsv:
            out.extend(TsvDataset(str(f))._load("stream"))
        return out
