"""npudist.xp.random: NumPy's random API on the npu.

``default_rng(seed)`` returns a Generator with NumPy's Generator methods and distributions;
the legacy module functions (seed, rand, randn, randint, random, choice, shuffle, permutation,
normal, ...) use a global RandomState. Streams come from a torch npu Generator, so they are
reproducible for a seed but are not NumPy's bit streams (the same seed gives different numbers
than NumPy). Gamma-family variates use Marsaglia and Tsang's method on this generator.
"""
import builtins
import math
import operator

import numpy as np
import torch

from . import _config
from ._core import as_tensor, ndarray, result, tensor_of, wrap
from ._dtypes import NP_TO_TORCH, to_dtype

_F64 = torch.float64


def _size(size):
    if size is None:
        return None
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(operator.index(s) for s in size)


def _seed_int(seed):
    if seed is None:
        return int.from_bytes(np.random.SeedSequence().generate_state(2, np.uint32).tobytes(), "little")
    if isinstance(seed, (Generator,)):
        return int(torch.randint(0, 2**62, (1,), generator=seed._gen, device=seed._gen.device))
    if isinstance(seed, np.random.SeedSequence):
        return int.from_bytes(seed.generate_state(2, np.uint32).tobytes(), "little")
    if isinstance(seed, (list, tuple, np.ndarray, ndarray)):
        arr = np.asarray(seed.get() if isinstance(seed, ndarray) else seed)
        if arr.size and (arr < 0).any():
            raise ValueError("Seed values must be non-negative")
        return int.from_bytes(np.random.SeedSequence(arr.astype(np.uint64).tolist()).generate_state(2, np.uint32)
                              .tobytes(), "little")
    seed = operator.index(seed)
    if seed < 0:
        raise ValueError("Seed must be non-negative")
    return int.from_bytes(np.random.SeedSequence(seed).generate_state(2, np.uint32).tobytes(), "little")


def _param(x):
    return x._t if isinstance(x, ndarray) else (as_tensor(x) if not isinstance(x, (int, float)) else x)


class Generator:
    """Random number generator on the npu with numpy.random.Generator's methods.

    Each method returns an xp.ndarray (a 0-d array when size is None and parameters are scalars)."""

    def __init__(self, seed=None):
        self._device = _config.device()
        self._gen = torch.Generator(device=self._device)
        self._gen.manual_seed(_seed_int(seed))

    def __repr__(self):
        return f"Generator(torch npu generator on {self._device})"

    def _shape(self, size, *params):
        s = _size(size)
        if s is not None:
            return s
        shapes = [tuple(p.shape) for p in params if isinstance(p, torch.Tensor)]
        return tuple(torch.broadcast_shapes(*shapes)) if shapes else ()

    def _u(self, shape, dtype=_F64):
        return torch.rand(shape, generator=self._gen, device=self._device, dtype=dtype)

    def _n(self, shape, dtype=_F64):
        return torch.randn(shape, generator=self._gen, device=self._device, dtype=dtype)

    def _fdt(self, dtype):
        dt = to_dtype(dtype)
        if dt.kind != "f" or dt.itemsize < 4:
            raise TypeError(f"Unsupported dtype {dt} for this method; use float32 or float64")
        return NP_TO_TORCH[dt]

    # ---- core -------------------------------------------------------------------------------------
    def random(self, size=None, dtype=np.float64, out=None):
        """Uniform floats in [0, 1) (matches Generator.random)."""
        r = self._u(self._shape(size) if out is None else tuple(out._t.shape), self._fdt(dtype))
        return result(r, out)

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Uniform integers in [low, high) or [low, high] (matches Generator.integers)."""
        if high is None:
            low, high = 0, low
        dt = to_dtype(dtype)
        lo, hi = _param(low), _param(high)
        if endpoint:
            hi = hi + 1
        shape = self._shape(size, lo, hi)
        if isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor):
            lo_t = torch.as_tensor(lo, device=self._device).to(torch.int64)
            hi_t = torch.as_tensor(hi, device=self._device).to(torch.int64)
            if bool((hi_t <= lo_t).any()):
                raise ValueError("low >= high" if not endpoint else "low > high")
            span = (hi_t - lo_t).to(_F64)
            r = lo_t + torch.floor(self._u(shape) * span).to(torch.int64).clamp(max=(hi_t - lo_t - 1))
        else:
            if hi <= lo:
                raise ValueError("high <= low" if not endpoint else "low > high")
            if dt.kind in "iu":
                info = np.iinfo(dt)
                if lo < info.min or hi - 1 > info.max:
                    raise ValueError(f"integers: [{lo}, {hi}) is out of bounds for {dt}")
            lo, hi = int(lo), int(hi)
            if lo >= -2**63 and hi <= 2**63 and hi - lo < 2**63:
                r = torch.randint(lo, hi, shape, generator=self._gen, device=self._device, dtype=torch.int64)
            else:
                r = self._wide_integers(lo, hi, shape)
        return wrap(r.to(NP_TO_TORCH[dt]))

    def _wide_integers(self, lo, hi, shape):
        """Uniform integers in [lo, hi) when the range does not fit torch.randint's int64 arguments
        (uint64 values >= 2**63, spans up to 2**64): 64 random bits from two 32-bit draws of this
        generator, rejection above the largest multiple of the span (no modulo bias), then lo added
        modulo 2**64. Returns int64 holding the result's two's-complement bits."""
        span = hi - lo
        n = math.prod(shape)
        out = np.empty(0, np.uint64)
        while out.size < n:
            k = n - out.size
            halves = torch.randint(0, 2**32, (2, k), generator=self._gen, device=self._device, dtype=torch.int64)
            halves = halves.cpu().numpy().astype(np.uint64)
            bits = (halves[0] << np.uint64(32)) | halves[1]
            if span < 2**64:
                bits = bits[bits < np.uint64(2**64 - 2**64 % span)] % np.uint64(span)
            out = np.concatenate([out, bits])
        with np.errstate(over="ignore"):
            out = out + np.uint64(lo % 2**64)
        return torch.from_numpy(out.view(np.int64)).reshape(shape).to(self._device)

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        r = self._n(self._shape(size) if out is None else tuple(out._t.shape), self._fdt(dtype))
        return result(r, out)

    def normal(self, loc=0.0, scale=1.0, size=None):
        """Normal(loc, scale) (matches Generator.normal; scale must be >= 0)."""
        loc, scale = _param(loc), _param(scale)
        _nonneg(scale, "scale")
        return wrap(self._n(self._shape(size, loc, scale)) * scale + loc)

    def uniform(self, low=0.0, high=1.0, size=None):
        low, high = _param(low), _param(high)
        return wrap(low + (high - low) * self._u(self._shape(size, low, high)))

    def standard_exponential(self, size=None, dtype=np.float64, method="zig", out=None):
        r = self._exp(self._shape(size)).to(self._fdt(dtype))
        return wrap(r)

    def _exp(self, shape):
        return -torch.log1p(-self._u(shape))

    def exponential(self, scale=1.0, size=None):
        scale = _param(scale)
        _nonneg(scale, "scale")
        return wrap(self._exp(self._shape(size, scale)) * scale)

    def _gamma(self, shape_param, shape):
        """Standard gamma variates (Marsaglia & Tsang; k < 1 boosted by U**(1/k))."""
        k = torch.as_tensor(shape_param, dtype=_F64, device=self._device).broadcast_to(shape)
        small = k < 1
        kk = torch.where(small, k + 1, k)
        d = kk - 1.0 / 3.0
        c = 1.0 / torch.sqrt(9.0 * d)
        out = torch.empty(shape, dtype=_F64, device=self._device)
        todo = torch.ones(shape, dtype=torch.bool, device=self._device)
        for _ in range(64):
            if not bool(todo.any()):
                break
            x = self._n(shape)
            v = (1 + c * x) ** 3
            u = self._u(shape)
            ok = (v > 0) & (torch.log(u) < 0.5 * x * x + d - d * v + d * torch.log(torch.where(v > 0, v, 1.0)))
            take = todo & ok
            out = torch.where(take, d * v, out)
            todo = todo & ~ok
        boost = torch.where(small, self._u(shape) ** (1.0 / torch.where(small, k, 1.0)), 1.0)
        out = out * boost
        return torch.where(k == 0, 0.0, out)

    def standard_gamma(self, shape, size=None, dtype=np.float64, out=None):
        s = _param(shape)
        _nonneg(s, "shape")
        return wrap(self._gamma(s, self._shape(size, s)).to(self._fdt(dtype)))

    def gamma(self, shape, scale=1.0, size=None):
        """Gamma(shape, scale) (matches Generator.gamma)."""
        s, sc = _param(shape), _param(scale)
        _nonneg(s, "shape")
        _nonneg(sc, "scale")
        return wrap(self._gamma(s, self._shape(size, s, sc)) * sc)

    def beta(self, a, b, size=None):
        a, b = _param(a), _param(b)
        _positive(a, "a")
        _positive(b, "b")
        shape = self._shape(size, a, b)
        x, y = self._gamma(a, shape), self._gamma(b, shape)
        return wrap(x / (x + y))

    def chisquare(self, df, size=None):
        df = _param(df)
        _positive(df, "df")
        return wrap(2.0 * self._gamma(df / 2.0 if not isinstance(df, torch.Tensor) else df / 2, self._shape(size, df)))

    def f(self, dfnum, dfden, size=None):
        shape = self._shape(size, _param(dfnum), _param(dfden))
        n, m = _param(dfnum), _param(dfden)
        return wrap((2 * self._gamma(n / 2, shape) / n) / (2 * self._gamma(m / 2, shape) / m))

    def standard_t(self, df, size=None):
        df = _param(df)
        _positive(df, "df")
        shape = self._shape(size, df)
        return wrap(self._n(shape) / torch.sqrt(2 * self._gamma(df / 2, shape) / df))

    def standard_cauchy(self, size=None):
        shape = self._shape(size)
        return wrap(self._n(shape) / self._n(shape))

    def lognormal(self, mean=0.0, sigma=1.0, size=None):
        return wrap(torch.exp(self.normal(mean, sigma, size)._t))

    def laplace(self, loc=0.0, scale=1.0, size=None):
        loc, scale = _param(loc), _param(scale)
        u = self._u(self._shape(size, loc, scale)) - 0.5
        return wrap(loc - scale * torch.sign(u) * torch.log1p(-2 * u.abs()))

    def logistic(self, loc=0.0, scale=1.0, size=None):
        loc, scale = _param(loc), _param(scale)
        u = self._u(self._shape(size, loc, scale))
        return wrap(loc + scale * torch.log(u / (1 - u)))

    def gumbel(self, loc=0.0, scale=1.0, size=None):
        loc, scale = _param(loc), _param(scale)
        u = self._u(self._shape(size, loc, scale))
        return wrap(loc - scale * torch.log(-torch.log1p(-u)))

    def weibull(self, a, size=None):
        a = _param(a)
        _nonneg(a, "a")
        return wrap(self._exp(self._shape(size, a)) ** (1.0 / a))

    def pareto(self, a, size=None):
        a = _param(a)
        _positive(a, "a")
        return wrap(torch.expm1(self._exp(self._shape(size, a)) / a))

    def power(self, a, size=None):
        a = _param(a)
        _positive(a, "a")
        return wrap(-torch.expm1(-self._exp(self._shape(size, a))) ** (1.0 / a))

    def rayleigh(self, scale=1.0, size=None):
        scale = _param(scale)
        _nonneg(scale, "scale")
        return wrap(scale * torch.sqrt(2.0 * self._exp(self._shape(size, scale))))

    def triangular(self, left, mode, right, size=None):
        left, mode, right = _param(left), _param(mode), _param(right)
        u = self._u(self._shape(size, left, mode, right))
        fc = (mode - left) / (right - left)
        lo = left + torch.sqrt(u * (right - left) * (mode - left))
        hi = right - torch.sqrt((1 - u) * (right - left) * (right - mode))
        return wrap(torch.where(u < fc, lo, hi))

    def poisson(self, lam=1.0, size=None):
        """Poisson(lam) counts, int64 (matches Generator.poisson)."""
        lam = _param(lam)
        _nonneg(lam, "lam")
        rate = torch.as_tensor(lam, dtype=_F64, device=self._device).broadcast_to(self._shape(size, lam)).contiguous()
        return wrap(torch.poisson(rate, generator=self._gen).to(torch.int64))

    def binomial(self, n, p, size=None):
        """Binomial(n, p) counts, int64 (matches Generator.binomial)."""
        n, p = _param(n), _param(p)
        _nonneg(n, "n")
        pt = torch.as_tensor(p, dtype=_F64, device=self._device)
        if bool(((pt < 0) | (pt > 1) | torch.isnan(pt)).any()):
            raise ValueError("p < 0, p > 1 or p is NaN")
        shape = self._shape(size, n, p)
        cnt = torch.as_tensor(n, dtype=_F64, device=self._device).broadcast_to(shape).contiguous()
        return wrap(torch.binomial(cnt, pt.broadcast_to(shape).contiguous(), generator=self._gen).to(torch.int64))

    def negative_binomial(self, n, p, size=None):
        n, p = _param(n), _param(p)
        shape = self._shape(size, n, p)
        y = self._gamma(n, shape) * (1 - torch.as_tensor(p, dtype=_F64, device=self._device)) / p
        return wrap(torch.poisson(y, generator=self._gen).to(torch.int64))

    def geometric(self, p, size=None):
        p = _param(p)
        u = self._u(self._shape(size, p))
        return wrap(torch.ceil(torch.log1p(-u) / torch.log1p(-torch.as_tensor(p, dtype=_F64, device=self._device)))
                    .clamp(min=1).to(torch.int64))

    def _t64(self, x, shape):
        return torch.as_tensor(x, dtype=_F64, device=self._device).broadcast_to(shape)

    def wald(self, mean, scale, size=None):
        """Wald (inverse Gaussian) variates (matches Generator.wald; NumPy's transformation method)."""
        mean, scale = _param(mean), _param(scale)
        _positive(mean, "mean")
        _positive(scale, "scale")
        shape = self._shape(size, mean, scale)
        mu, lam = self._t64(mean, shape), self._t64(scale, shape)
        y = self._n(shape) ** 2 * mu
        x = mu + mu / (2 * lam) * (y - torch.sqrt(4 * lam * y + y * y))
        return wrap(torch.where(self._u(shape) <= mu / (mu + x), x, mu * mu / x))

    def vonmises(self, mu, kappa, size=None):
        """von Mises variates on [-pi, pi] (matches Generator.vonmises; Best & Fisher's rejection)."""
        mu, kappa = _param(mu), _param(kappa)
        _nonneg(kappa, "kappa")
        shape = self._shape(size, mu, kappa)
        m, k = self._t64(mu, shape), self._t64(kappa, shape)
        tiny = k < 1e-8
        ks = torch.where(tiny, 1.0, k)
        r = 1 + torch.sqrt(1 + 4 * ks * ks)
        rho = (r - torch.sqrt(2 * r)) / (2 * ks)
        s = (1 + rho * rho) / (2 * rho)
        w = torch.zeros(shape, dtype=_F64, device=self._device)
        todo = torch.ones(shape, dtype=torch.bool, device=self._device)
        for _ in range(200):
            if not bool(todo.any()):
                break
            z = torch.cos(math.pi * self._u(shape))
            wz = (1 + s * z) / (s + z)
            y = ks * (s - wz)
            v = self._u(shape)
            ok = (y * (2 - y) - v >= 0) | (torch.log(y / torch.where(v > 0, v, 1e-300)) + 1 - y >= 0)
            w = torch.where(todo & ok, wz, w)
            todo = todo & ~ok
        sign = torch.where(self._u(shape) < 0.5, -1.0, 1.0)
        res = m + sign * torch.acos(w.clamp(-1, 1))
        res = torch.remainder(res + math.pi, 2 * math.pi) - math.pi
        return wrap(torch.where(tiny, math.pi * (2 * self._u(shape) - 1), res))

    def _chisq(self, df, shape):
        return 2.0 * self._gamma(self._t64(df, shape) / 2, shape)

    def _noncentral_chisq(self, df, nonc, shape):
        d, lam = self._t64(df, shape), self._t64(nonc, shape)
        big = self._chisq(torch.where(d > 1, d - 1, 1.0), shape) + (self._n(shape) + torch.sqrt(lam)) ** 2
        i = torch.poisson((lam / 2).contiguous(), generator=self._gen)
        small = self._chisq(d + 2 * i, shape)
        out = torch.where(d > 1, big, small)
        return torch.where(lam == 0, self._chisq(d, shape), out)

    def noncentral_chisquare(self, df, nonc, size=None):
        """Noncentral chi-square variates (matches Generator.noncentral_chisquare)."""
        df, nonc = _param(df), _param(nonc)
        _positive(df, "df")
        _nonneg(nonc, "nonc")
        return wrap(self._noncentral_chisq(df, nonc, self._shape(size, df, nonc)))

    def noncentral_f(self, dfnum, dfden, nonc, size=None):
        """Noncentral F variates (matches Generator.noncentral_f)."""
        dfnum, dfden, nonc = _param(dfnum), _param(dfden), _param(nonc)
        _positive(dfnum, "dfnum")
        _positive(dfden, "dfden")
        _nonneg(nonc, "nonc")
        shape = self._shape(size, dfnum, dfden, nonc)
        t = self._noncentral_chisq(dfnum, nonc, shape) * self._t64(dfden, shape)
        return wrap(t / (self._chisq(dfden, shape) * self._t64(dfnum, shape)))

    def zipf(self, a, size=None):
        """Zipf variates, int64 (matches Generator.zipf; NumPy's rejection method)."""
        a = _param(a)
        if bool((torch.as_tensor(a) <= 1).any()) if isinstance(a, torch.Tensor) else not a > 1:
            raise ValueError("a <= 1.0")
        shape = self._shape(size, a)
        am1 = self._t64(a, shape) - 1
        b = 2.0 ** am1
        out = torch.zeros(shape, dtype=torch.int64, device=self._device)
        todo = torch.ones(shape, dtype=torch.bool, device=self._device)
        big = float(np.iinfo(np.int64).max)
        for _ in range(1000):
            if not bool(todo.any()):
                break
            u = 1 - self._u(shape)
            v = self._u(shape)
            x = torch.floor(u ** (-1 / am1))
            inrange = (x >= 1) & (x <= big)
            xs = torch.where(inrange, x, 1.0)
            t = (1 + 1 / xs) ** am1
            ok = inrange & (v * xs * (t - 1) / (b - 1) <= t / b)
            out = torch.where(todo & ok, xs.to(torch.int64), out)
            todo = todo & ~ok
        return wrap(out)

    def logseries(self, p, size=None):
        """Logarithmic series variates, int64 (matches Generator.logseries; Kemp's method as NumPy)."""
        p = _param(p)
        pt = torch.as_tensor(p, dtype=_F64)
        if bool(((pt < 0) | (pt >= 1) | torch.isnan(pt)).any()):
            raise ValueError("p < 0, p >= 1 or p is NaN")
        shape = self._shape(size, p)
        pp = self._t64(p, shape)
        r = torch.log1p(-pp)
        out = torch.ones(shape, dtype=torch.int64, device=self._device)
        todo = torch.ones(shape, dtype=torch.bool, device=self._device)
        for _ in range(1000):
            if not bool(todo.any()):
                break
            v = self._u(shape)
            u = self._u(shape)
            q = -torch.expm1(r * u)
            vv = torch.where(v > 0, v, 0.5)
            res = torch.floor(1 + torch.log(vv) / torch.log(torch.where(q > 0, q, 0.5)))
            case_small = v <= q * q
            retry = case_small & ((res < 1) | (v == 0))
            val = torch.where(v >= pp, 1.0, torch.where(case_small, res, torch.where(v >= q, 1.0, 2.0)))
            done = todo & ~(retry & (v < pp))
            out = torch.where(done, val.clamp(min=1).to(torch.int64), out)
            todo = todo & ~done
        return wrap(out)

    def hypergeometric(self, ngood, nbad, nsample, size=None):
        """Hypergeometric counts, int64 (matches Generator.hypergeometric's distribution and
        errors; drawn by sequential draws without replacement, one vectorised step per drawn item,
        so the cost grows with nsample)."""
        ngood, nbad, nsample = _param(ngood), _param(nbad), _param(nsample)
        _nonneg(ngood, "ngood")
        _nonneg(nbad, "nbad")
        _nonneg(nsample, "nsample")
        shape = self._shape(size, ngood, nbad, nsample)
        g, b_, n = self._t64(ngood, shape), self._t64(nbad, shape), self._t64(nsample, shape)
        if bool((g + b_ < n).any()):
            raise ValueError("ngood + nbad < nsample")
        tot = g + b_
        # draw the smaller of nsample and tot - nsample; the complement gives the rest
        flip = n > tot / 2
        m = torch.where(flip, tot - n, n)
        good, left = g.clone(), tot.clone()
        cnt = torch.zeros(shape, dtype=_F64, device=self._device)
        steps = int(m.max()) if m.numel() else 0
        for i in range(steps):
            active = m > i
            take = active & (self._u(shape) * left < good)
            cnt = cnt + take
            good = good - take.to(_F64)
            left = left - active.to(_F64)
        return wrap(torch.where(flip, g - cnt, cnt).to(torch.int64))

    def multinomial(self, n, pvals, size=None):
        """Counts of n draws over len(pvals) outcomes (matches Generator.multinomial for scalar n)."""
        pv = torch.as_tensor(_param(pvals), dtype=_F64, device=self._device)
        shape = _size(size) or ()
        k = pv.shape[-1]
        out = torch.zeros(shape + (k,), dtype=torch.int64, device=self._device)
        remaining = torch.full(shape, float(n), dtype=_F64, device=self._device)
        left = torch.ones((), dtype=_F64, device=self._device)
        for i in range(k - 1):
            prob = (pv[..., i] / left).clamp(0, 1) if float(left) > 0 else torch.zeros((), dtype=_F64)
            draw = torch.binomial(remaining.contiguous(), prob.broadcast_to(shape).contiguous(), generator=self._gen)
            out[..., i] = draw.to(torch.int64)
            remaining = remaining - draw
            left = left - pv[..., i]
        out[..., k - 1] = remaining.to(torch.int64)
        return wrap(out)

    def dirichlet(self, alpha, size=None):
        a = torch.as_tensor(_param(alpha), dtype=_F64, device=self._device)
        shape = (_size(size) or ()) + tuple(a.shape)
        g = self._gamma(a, shape)
        return wrap(g / g.sum(-1, keepdim=True))

    def multivariate_normal(self, mean, cov, size=None, check_valid="warn", tol=1e-8, method="svd"):
        m = torch.as_tensor(_param(mean), dtype=_F64, device=self._device)
        c = torch.as_tensor(_param(cov), dtype=_F64, device=self._device)
        shape = (_size(size) or ()) + tuple(m.shape)
        u, s, _ = torch.linalg.svd(c)
        factor = u * torch.sqrt(s.clamp(min=0))
        z = self._n(shape)
        return wrap(m + z @ factor.T)

    # ---- permutations -----------------------------------------------------------------------------
    def permutation(self, x, axis=0):
        """Shuffled copy, or a permuted arange for an int (matches Generator.permutation)."""
        if isinstance(x, (int, np.integer)):
            return wrap(torch.randperm(int(x), generator=self._gen, device=self._device))
        t = tensor_of(x)
        if t.ndim == 0:
            raise np.exceptions.AxisError("x must be an integer or at least 1-dimensional")
        idx = torch.randperm(t.shape[axis], generator=self._gen, device=self._device)
        return wrap(t.index_select(axis, idx))

    def shuffle(self, x, axis=0):
        """Shuffles an xp array in place along axis (matches Generator.shuffle)."""
        if not isinstance(x, ndarray):
            raise TypeError("shuffle works in place on an xp.ndarray")
        if x.ndim == 0:
            raise TypeError("len() of unsized object")
        x._t.copy_(self.permutation(x, axis)._t)

    def permuted(self, x, axis=None, out=None):
        """Each slice along axis shuffled independently (matches Generator.permuted)."""
        t = tensor_of(x)
        if axis is None:
            r = t.reshape(-1)[torch.randperm(t.numel(), generator=self._gen, device=self._device)].reshape(t.shape)
        else:
            keys = self._u(tuple(t.shape))
            r = torch.gather(t, axis, torch.argsort(keys, dim=axis))
        return result(r, out)

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        """Random sample from a (an int means arange(a)) (matches Generator.choice)."""
        if isinstance(a, (int, np.integer)):
            n = int(a)
            pop = None
        else:
            pop = tensor_of(a)
            if pop.ndim == 0:
                raise ValueError("a must be a sequence or an integer, not a 0-d array")
            n = pop.shape[axis]
        if n <= 0 and (size is None or np.prod(_size(size)) > 0):
            raise ValueError("a cannot be empty unless no samples are taken")
        shape = _size(size)
        count = 1 if shape is None else int(np.prod(shape))
        if p is not None:
            pt = torch.as_tensor(_param(p), dtype=_F64, device=self._device)
            if pt.ndim != 1 or pt.numel() != n:
                raise ValueError("p must be 1-dimensional and the same size as a")
            if bool((pt < 0).any()) or abs(float(pt.sum()) - 1) > 1e-8:
                raise ValueError("probabilities are not non-negative or do not sum to 1")
            if not replace and count > int((pt > 0).sum()):
                raise ValueError("Fewer non-zero entries in p than size")
            idx = torch.multinomial(pt, count, replacement=replace, generator=self._gen)
        elif replace:
            idx = torch.randint(0, n, (count,), generator=self._gen, device=self._device)
        else:
            if count > n:
                raise ValueError("Cannot take a larger sample than population when replace=False")
            idx = torch.randperm(n, generator=self._gen, device=self._device)[:count]
        idx = idx.reshape(shape if shape is not None else ())
        if pop is None:
            return wrap(idx)
        return wrap(torch.movedim(pop.index_select(axis, idx.reshape(-1)).reshape(
            tuple(pop.shape[:axis]) + tuple(idx.shape) + tuple(pop.shape[axis + 1:])), axis, axis))

    def bytes(self, length):
        # builtins.bytes: the module-level legacy function ``bytes`` shadows the builtin here
        return builtins.bytes(torch.randint(0, 256, (int(length),), generator=self._gen, device=self._device,
                                            dtype=torch.uint8).cpu().numpy().tobytes())

    def spawn(self, n_children):
        return [Generator(_seed_int(self)) for _ in range(n_children)]


def _nonneg(x, name):
    bad = bool((torch.as_tensor(x) < 0).any()) if isinstance(x, torch.Tensor) else x < 0
    if bad:
        raise ValueError(f"{name} < 0")


def _positive(x, name):
    bad = bool((torch.as_tensor(x) <= 0).any()) if isinstance(x, torch.Tensor) else x <= 0
    if bad:
        raise ValueError(f"{name} <= 0")


def default_rng(seed=None):
    """A new Generator seeded from seed (int, sequence, SeedSequence, Generator or None for fresh
    entropy) (matches numpy.random.default_rng's API; the streams differ from NumPy's)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed)


class RandomState(Generator):
    """Legacy numpy.random.RandomState API on the npu (streams differ from NumPy's)."""

    def seed(self, seed=None):
        self._gen.manual_seed(_seed_int(seed))

    def rand(self, *shape):
        return self.random(shape if shape else None)

    def randn(self, *shape):
        return self.standard_normal(shape if shape else None)

    def randint(self, low, high=None, size=None, dtype=int):
        return self.integers(low, high, size, dtype=dtype)

    def random_integers(self, low, high=None, size=None):
        if high is None:
            low, high = 1, low
        return self.integers(low, high, size, endpoint=True)

    def random_sample(self, size=None):
        return self.random(size)

    def tomaxint(self, size=None):
        return self.integers(0, 2**63 - 1, size)

    def get_state(self):
        return self._gen.get_state()

    def set_state(self, state):
        self._gen.set_state(state)


_global = None


def _rs():
    global _global
    if _global is None:
        _global = RandomState()
    return _global


def seed(seed=None):
    """Reseeds the global RandomState (matches numpy.random.seed)."""
    _rs().seed(seed)


def get_state():
    return _rs().get_state()


def set_state(state):
    _rs().set_state(state)


def _legacy(name):
    def fn(*args, **kwargs):
        return getattr(_rs(), name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"numpy.random.{name} on the global RandomState (an xp.ndarray on the npu)."
    return fn


for _name in ("rand", "randn", "randint", "random_integers", "random_sample", "choice", "shuffle", "permutation",
              "normal", "uniform", "standard_normal", "exponential", "standard_exponential", "gamma",
              "standard_gamma", "beta", "chisquare", "f", "standard_t", "standard_cauchy", "lognormal", "laplace",
              "logistic", "gumbel", "weibull", "pareto", "power", "rayleigh", "triangular", "poisson", "binomial",
              "negative_binomial", "geometric", "multinomial", "dirichlet", "multivariate_normal", "bytes", "wald",
              "vonmises", "noncentral_chisquare", "noncentral_f", "zipf", "logseries", "hypergeometric"):
    globals()[_name] = _legacy(_name)
random = ranf = sample = _legacy("random_sample")
del _name
