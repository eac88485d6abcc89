"""Giving freed memory back to the system.

glibc keeps freed blocks in its heap (under its mmap threshold, which rises
to 32 MB once big blocks are freed): a process that once held a big array or
parsed a big page keeps that memory resident until ``malloc_trim``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os


def _load_libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_LIBC = _load_libc()


def release_freed_memory() -> None:
    """Return the heap's free pages to the system (a no-op where the C library is not glibc)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def resident_bytes() -> int | None:
    """The process's resident memory (Linux; None where it cannot be read)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
