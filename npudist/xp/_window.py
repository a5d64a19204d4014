"""Window functions (matches numpy.bartlett, blackman, hamming, hanning, kaiser).

Each returns a float64 array of M points (empty for M < 1, ``[1.]`` for M == 1), computed on the
npu with NumPy's formulas."""
import math
import operator

import torch

from . import _config
from ._core import wrap


def _points(M):
    M = operator.index(M) if not isinstance(M, float) else int(M)
    dev = _config.device()
    if M < 1:
        return M, None, torch.zeros(0, dtype=torch.float64, device=dev)
    if M == 1:
        return M, None, torch.ones(1, dtype=torch.float64, device=dev)
    # n = 1-M, 3-M, ..., M-1 (NumPy's symmetric sample points)
    return M, torch.arange(1 - M, M, 2, dtype=torch.float64, device=dev), None


def _cosine_window(M, a0, a1, a2=0.0):
    M, n, early = _points(M)
    if early is not None:
        return wrap(early)
    x = math.pi * n / (M - 1)
    w = a0 + a1 * torch.cos(x)
    if a2:
        w = w + a2 * torch.cos(2 * x)
    return wrap(w)


def bartlett(M):
    """Triangular window of M points (matches numpy.bartlett)."""
    M, n, early = _points(M)
    if early is not None:
        return wrap(early)
    return wrap(torch.where(n <= 0, 1 + n / (M - 1), 1 - n / (M - 1)))


def blackman(M):
    """Blackman window of M points (matches numpy.blackman)."""
    return _cosine_window(M, 0.42, 0.5, 0.08)


def hamming(M):
    """Hamming window of M points (matches numpy.hamming)."""
    return _cosine_window(M, 0.54, 0.46)


def hanning(M):
    """Hann window of M points (matches numpy.hanning)."""
    return _cosine_window(M, 0.5, 0.5)


def kaiser(M, beta):
    """Kaiser window of M points with shape parameter beta (matches numpy.kaiser; the Bessel
    function I0 is PyTorch's, equal to NumPy's within a few ulp)."""
    M, n, early = _points(M)
    if early is not None:
        return wrap(early)
    k = torch.arange(0, M, dtype=torch.float64, device=n.device)
    alpha = (M - 1) / 2.0
    beta = torch.tensor(float(beta), dtype=torch.float64, device=n.device)
    return wrap(torch.special.i0(beta * torch.sqrt(1 - ((k - alpha) / alpha) ** 2)) / torch.special.i0(beta))
