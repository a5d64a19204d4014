"""The naming rule of npudist's shared-memory entries, as npurun's cleanup applies it.

Mirror of ``csrc/util/shm_name.{h,cpp}`` (the engine creates the entries with that one);
``tests/launcher/test_shm_names.py`` checks that both give the same names. An entry of job tag
``T`` (``$NPUDIST_JOB_TAG``) is named ``npudist-<job_component(T)>-...``:

- ``T`` with every character outside ``[A-Za-z0-9_.]`` replaced by ``_`` (``job`` if empty);
- when that is longer than :data:`MAX_JOB_COMPONENT` (32) characters: its first 19 characters,
  ``.``, and 12 hex digits of the 64-bit FNV-1a hash of ``T``'s bytes. A long tag (npurun accepts
  up to 64 characters) thus always maps to the same 32-character component, and two long tags
  with a common beginning stay apart.

The component never contains ``-``, so one job's prefix never matches another job's entries.
Standard library only.
"""
from __future__ import annotations

import os

MAX_JOB_COMPONENT = 32
_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._")


def fnv1a64(data: bytes) -> int:
    """64-bit FNV-1a of ``data``."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def job_component(tag: str) -> str:
    """The part of an entry's name that stands for job tag ``tag`` (see the module docstring)."""
    raw = os.fsencode(tag)
    # The engine sees the tag as bytes (getenv): replace byte by byte, as it does.
    out = "".join(chr(b) if chr(b) in _OK else "_" for b in raw)
    if not out:
        return "job"
    if len(out) <= MAX_JOB_COMPONENT:
        return out
    return out[:MAX_JOB_COMPONENT - 13] + "." + f"{fnv1a64(raw):016x}"[:12]


def job_prefix(tag: str) -> str:
    """``npudist-<job_component(tag)>-``: the start of every /dev/shm entry of the job."""
    return f"npudist-{job_component(tag)}-"
