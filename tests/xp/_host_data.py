"""Test inputs shared by the host-loop tests (test_host_loops.py, test_host_fast.py): every NumPy
dtype xp supports, 16-element samples with the values where NumPy's loops differ from naive
arithmetic (overflow at the integer edges, NaN and infinities), and work left pending on a stream."""
import time

import numpy as np
import torch

import npudist.xp as xp
from npudist import _C

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def sample(dt, seed=0, n=16, zeros=False):
    """n values of dtype dt: integers include both edges (and a 0 divisor with ``zeros``), floats
    NaN, +inf and 0 (and -inf with ``zeros``)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)
        v[:2] = [info.max, info.min]   # overflow at the edges
        if zeros:
            v[2] = 0                   # division by zero
        return v
    v = rng.uniform(-3, 3, n)
    if dt.kind == "c":
        v = v + 1j * rng.uniform(-3, 3, n)
    v = v.astype(dt)
    v[0] = np.nan
    v[1] = np.inf
    v[2] = 0
    if zeros:
        v[3] = -np.inf
    return v


def fill_later(a, value, delay=0.2):
    """Queues on the current npu stream a host function that sleeps ``delay`` s, then fills xp array
    ``a`` with ``value``: work still pending on the stream when the test's next call runs."""
    t = xp.to_torch(a)
    s = torch.npu.current_stream()
    _C._launch_host_func(s.stream_id, s.device_index, lambda: (time.sleep(delay), t.fill_(value)))
