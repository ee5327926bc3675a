"""The aligned segment every corpus builder produces: document id, segment id, source, target."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    doc_id: str
    seg_id: str
    source: str
    target: str
