"""Decoders behind one interface (base.py); importing this package registers them all.

greedy, beam, heap_beam, sampling, topk (exact, batched best-first), topk_dfs (exact,
Algorithm 1 of seed 003, the reference) and mbr. COMET, used only by MBR with the
``comet`` utility, is imported lazily.
"""
from simpe.decoders import beam, greedy, heap_beam, mbr, sampling, topk, topk_reference  # noqa: F401  (registers)
from simpe.decoders.base import DECODERS, Decoder, DecodeResult, Hypothesis

__all__ = ["DECODERS", "Decoder", "DecodeResult", "Hypothesis"]
