"""Datasets: a registry of parallel corpora (``libreoffice``, ``autodesk``, ``text``, ``tsv``, ``tmx``)."""
from simpe.datasets import autodesk, libreoffice, parallel  # noqa: F401  (registers them)
from simpe.datasets.base import DATASETS, Dataset, Segment, stream_hash

__all__ = ["DATASETS", "Dataset", "Segment", "stream_hash"]
