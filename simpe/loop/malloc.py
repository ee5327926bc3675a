"""glibc's malloc told to keep freed memory for the loop's next update (``reuse_freed_memory``, called once a process
before the model loads). It changes how fast a step is, never what it computes."""
from __future__ import annotations

import ctypes
import sys


def reuse_freed_memory() -> None:
    """Have glibc's malloc keep freed memory for the next allocation instead of handing it back (Linux, glibc).

    Every update step allocates the trainable tensors' gradients (40 MB for the demo model's ``full``)
    and frees them. With glibc's defaults, blocks from 128 KiB up to the largest freed so far are
    mapped and unmapped each time and a free heap top over twice that is returned to the system, so
    every step pays the page faults of fresh memory in backward and the unmapping after the step:
    ~20 ms and ~5 ms per 40 MB allocated and freed on the demo machine, ~0.05 ms each kept. Blocks up
    to 32 MiB (glibc's largest threshold) then come from the heap, and up to 1 GiB of free heap is kept.
    The process's peak memory is the same; it is kept between steps. Once per process; nothing elsewhere.
    """
    if sys.platform != "linux":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt  # glibc's; another C library may lack it
    except (OSError, AttributeError):
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    m_trim_threshold, m_mmap_threshold = -1, -3  # malloc.h
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 1 << 30)
