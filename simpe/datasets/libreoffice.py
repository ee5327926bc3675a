"""The offline default: LibreOffice 7.4 help + UI, en-US -> de (built by ``make corpus``).

Reads ``data/libreoffice/{split}.en|.de|.ids``. The dev, stream and reserved splits ship
with the repository, and so does ``train-sample``: the 200 pairs of train that the seeded draw (seed 1) picks,
the general-domain pairs of EWC's Fisher (``adapters/full+ewc.yaml``), so that a clone without the train split and
a full checkout read the same pairs; train is rebuilt by ``make corpus`` (see ``simpe.build_data.libreoffice``, which
writes train-sample from it).
"""
from __future__ import annotations

from pathlib import Path

from simpe.datasets.base import DATASETS, Dataset, Segment
from simpe.errors import DataError
from simpe.paths import DATA_DIR
from simpe.textfile import read_lines

DEFAULT_DIR = DATA_DIR / "libreoffice"


# Sub-splits of ``reserved`` by help module (the document id's second part, ``text/<module>/...``).
# ``smath`` is deliberately absent: it is the project's final held-out check, never used for tuning or
# reports; ``sdatabase`` is the second, smaller stream of ``simpe replicate`` (the role of Table 5 in Simianer et al. (2019)).
RESERVED_MODULES = ("sdatabase",)
# The shipped draw of the train split: the SAMPLE_SIZE pairs that ``simpe.datasets.base.draw`` with SAMPLE_SEED picks
# from train (seed 1, the run's default; the draw ewc's Fisher made from train before this split shipped). The
# manifest records the train lines it took.
TRAIN_SAMPLE, SAMPLE_SIZE, SAMPLE_SEED = "train-sample", 200, 1


@DATASETS.add("libreoffice")
class LibreOfficeDataset(Dataset):
    splits = ("train", TRAIN_SAMPLE, "dev", "stream", "reserved", *RESERVED_MODULES)

    def __init__(self, path: str | None = None) -> None:
        self.path = Path(path) if path else DEFAULT_DIR

    def train_vocab(self, lang: str) -> Path | None:
        """``vocab.train.<lang>``, written by ``make corpus`` (``simpe.build_data.libreoffice``)."""
        return self.path / f"vocab.train.{lang}"

    def glossary(self) -> Path | None:
        """``glossary.tsv``, the UI strings the Calc and Chart help quotes with their German UI translations (``make
        glossary``, ``simpe.build_data.glossary``; shipped with the repository)."""
        return self.path / "glossary.tsv"

    def _load(self, split: str) -> list[Segment]:
        if split in RESERVED_MODULES:  # the module's segments of the reserved split, in their order
            return [seg for seg in self._load("reserved") if seg.doc_id.split("/")[1:2] == [split]]
        files = [self.path / f"{split}.{ext}" for ext in ("en", "de", "ids")]
        missing = [str(f) for f in files if not f.exists()]
        if missing:
            raise DataError(f"missing {', '.join(missing)}; run `make corpus` (needs apt-get and Debian's LibreOffice 7.4 packages)")
        src, ref, ids = (read_lines(f, "corpus file") for f in files)
        if not len(src) == len(ref) == len(ids):
            raise DataError(f"line-count mismatch in {self.path}: {split}.en {len(src)}, {split}.de {len(ref)}, {split}.ids {len(ids)}")
        out = []
        for s, r, i in zip(src, ref, ids):
            doc, _, seg = i.partition("\t")
            out.append(Segment(doc, seg, s, r))
        return out
