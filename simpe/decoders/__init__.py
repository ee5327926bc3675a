"""Decoders behind one interface (base.py); importing this package registers every module in it.

greedy, beam, heap_beam, sampling, topk (exact, batched best-first), topk_dfs (exact,
Algorithm 1 of Yan et al. (2021), the reference) and mbr. COMET, used only by MBR with the
``comet`` utility, is imported lazily.
"""
from simpe.decoders.base import DECODERS, Decoder, DecodeResult, Hypothesis
from simpe.registry import import_all

import_all(__name__, __path__)

__all__ = ["DECODERS", "Decoder", "DecodeResult", "Hypothesis"]
