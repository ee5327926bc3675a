"""Min-heap beam search (Yan et al. (2021), section 5): beam search whose output is a min-heap of
capacity ``beam_size`` fed with every EOS-ending candidate of every step.

The live beams are chosen exactly as in plain beam search (the best ``beam_size`` non-EOS
continuations), so the heap receives a superset of what plain beam search keeps: its best
score is never below plain beam's at the same width. The search stops when the heap is
full and no live beam scores above its minimum, or at the length limit. It also provides
the initial bound of the exact top-k searches (topk.py, topk_dfs.py).
"""
from __future__ import annotations

from simpe.decoders.base import DECODERS
from simpe.decoders.beam import _BeamBase


@DECODERS.add("heap_beam")
class HeapBeamDecoder(_BeamBase):
    """Beam search with a min-heap of finished hypotheses; up to ``beam_size``, best first."""

    heap = True

    def __init__(self, beam_size: int = 5, max_len_a: float = 2.0, max_len_b: int = 10, max_len_cap: int = 256) -> None:
        super().__init__(beam_size, max_len_a, max_len_b, max_len_cap)
