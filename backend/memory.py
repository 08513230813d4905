"""Handing freed memory back to the system once the scoring worker goes idle.

A forward pass allocates and frees tens to hundreds of MiB of activations and keys/values. glibc keeps
freed blocks in its heaps (one arena per thread that allocated them: the scoring worker's, torch's
intra-op threads') for reuse, so without a trim the process keeps its largest pass's working set for
good: about 400 MiB after a few 24-question requests on the bundled model. ``malloc_trim(0)`` returns
the free pages of every arena; it takes a few milliseconds, so the engine calls it only when its
queue is empty, never between passes of a busy queue. A no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        trim = libc.malloc_trim  # glibc only (musl and macOS have none)
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_memory() -> bool:
    """Return the C heap's free pages to the system; True when some were released."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False
