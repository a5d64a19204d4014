"""``torch_npu.testing.testcase``: TestCase and run_tests, as torch_npu's op examples use them.

``TestCase`` is a unittest (expecttest) TestCase that selects npu device 0 for the class and
seeds torch and random from ``SEED`` (default 666) before each test, as torch_npu's does, and adds
``assertRtolEqual``: torch_npu's tolerance rule for comparing a reference with an npu result.
``run_tests()`` runs the calling module's tests with ``unittest.main``. Partial: torch_npu's
TestCase also overrides ``assertEqual`` with a ``prec`` argument and has sparse-tensor helpers;
those are not provided (``assertEqual`` is unittest's).
"""
from __future__ import annotations

import random
import sys
import unittest
from collections.abc import Sequence
from numbers import Number

import numpy as np
import torch

from npudist import _env

try:  # torch_npu's TestCase is an expecttest one; unittest's serves when expecttest is not installed
    from expecttest import TestCase as _Base
except ImportError:
    _Base = unittest.TestCase

__all__ = ["TestCase", "run_tests"]

# The floor added to the denominator of the relative error (fp16, other dtypes), so zeros compare.
_DENOMINATOR_FLOOR = {np.dtype(np.float16): 6e-8}
_DEFAULT_FLOOR = 1e-9
_COMPARABLE = {np.dtype(t) for t in (np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64,
                                     np.float16, np.float32, np.float64)}


def run_tests() -> None:
    """Runs the tests of the calling script (``unittest.main`` over ``sys.argv``)."""
    unittest.main(argv=sys.argv)


def _as_numpy(t):
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)


class TestCase(_Base):
    """torch_npu's op-test base class (module docstring)."""

    _precision = 1e-5
    maxDiff = None

    @property
    def precision(self) -> float:
        return self._precision

    @precision.setter
    def precision(self, prec: float) -> None:
        self._precision = prec

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        torch.npu.set_device(0)
        cls.npu_device = "npu:0"

    def setUp(self):
        super().setUp()
        seed = _env.get_int("SEED", 666)
        torch.manual_seed(seed)
        random.seed(seed)

    def assertRtolEqual(self, x, y, prec: float = 1e-4, prec16: float = 1e-3, auto_trans_dtype: bool = False,
                        message: str | None = None) -> None:
        """Fails unless ``y`` matches ``x`` within torch_npu's tolerance rule.

        x, y: tensors (any device), NumPy arrays, numbers, or sequences of them (compared pairwise).
        Shapes and dtypes must match (``auto_trans_dtype=True`` first casts tensor x to y's dtype);
        bool compares exactly. An element passes when its absolute error is at most ``prec`` (fp16:
        ``prec16``) or its relative error |x-y| / (max(|x|,|y|) + floor) is; the comparison fails
        only when more than ``size * prec`` elements fail the absolute test and as many fail the
        relative one. bfloat16 and complex are rejected, as in torch_npu (cast to float32 first).
        """
        if isinstance(x, Sequence) and isinstance(y, Sequence) and not isinstance(x, str):
            for a, b in zip(x, y, strict=True):
                self.assertRtolEqual(a, b, prec, prec16, auto_trans_dtype, message)
            return
        if isinstance(x, torch.Tensor) and isinstance(y, Sequence):
            y = torch.as_tensor(y, dtype=x.dtype)
        elif isinstance(y, torch.Tensor) and isinstance(x, Sequence):
            x = torch.as_tensor(x, dtype=y.dtype)
        if auto_trans_dtype and isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            x = x.to(y.dtype)
        for t in (x, y):
            if isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16:
                self.fail(self._msg(message, "assertRtolEqual does not compare bfloat16 (as in torch_npu); "
                                             "cast both sides to float32"))
        a, b = _as_numpy(x), _as_numpy(y)
        if isinstance(x, Number) and isinstance(y, Number):
            a, b = np.array(x), np.array(y)
        if a.shape != b.shape:
            self.fail(self._msg(message, f"shape error: {a.shape} vs {b.shape}"))
        if a.dtype != b.dtype:
            self.fail(self._msg(message, f"dtype error: {a.dtype} vs {b.dtype}"))
        if a.dtype not in _COMPARABLE:
            self.fail(self._msg(message, f"assertRtolEqual compares {sorted(str(d) for d in _COMPARABLE)}, "
                                         f"got {a.dtype}"))
        if a.dtype == np.bool_:
            if not np.array_equal(a, b):
                self.fail(self._msg(message, f"result error: {int((a != b).sum())} of {a.size} elements differ"))
            return
        tol = prec16 if a.dtype == np.float16 else prec
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        err = np.abs(b64 - a64)
        rel = err / (np.maximum(np.abs(a64), np.abs(b64)) + _DENOMINATOR_FLOOR.get(a.dtype, _DEFAULT_FLOOR))
        bad_abs, bad_rel = int((err > tol).sum()), int((rel > tol).sum())
        if bad_abs and bad_rel and bad_abs > a.size * tol and bad_rel > a.size * tol:
            self.fail(self._msg(message, f"result error: {bad_abs} of {a.size} elements exceed the absolute "
                                         f"tolerance {tol} and {bad_rel} the relative one (max abs error "
                                         f"{float(err.max()):.3g})"))

    @staticmethod
    def _msg(message, detail):
        return f"{message}: {detail}" if message else detail
