"""Datasets: a registry of parallel corpora (``libreoffice``, ``autodesk``, ``text``, ``tsv``, ``tmx``, ``xliff``, ``hf``);
importing this package registers every module in it."""
from simpe.datasets.base import DATASETS, Dataset, Segment, draw, stream_hash
from simpe.registry import import_all

import_all(__name__, __path__)

__all__ = ["DATASETS", "Dataset", "Segment", "draw", "stream_hash"]
