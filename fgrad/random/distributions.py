"""Samplers: random bits of a key turned into samples of a distribution with
`fgrad.numpy`, so that samples are differentiable in their parameters by
reparameterisation (``mu + sigma * normal(k)``, ``minval + (maxval - minval) * u``,
gamma's implicit derivative in its shape, multivariate normals through the
Cholesky factor of their covariance).

Uniform floats take the top bits of the stream: 53 for float64, 24 for float32,
11 for float16, so that ``uniform`` lies in [0, 1) on that grid. Normals are
Box-Muller on two float64 uniforms, cast to `dtype`; truncated normals are the
inverse distribution function of a float64 uniform between the bounds' values
of it (JAX's method), cast to `dtype`; Gumbel noise (and
categorical, by the Gumbel-max trick) takes open-interval uniforms. Integers
(`randint`) are ``minval + bits % (maxval - minval)`` on 64 bits, biased by
less than ``(maxval - minval) / 2**64``. Gamma samples come from Marsaglia
and Tsang's rejection sampler on the key's stream, a primitive of its own
(`random_gamma`): its number of draws depends on the values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..core.avals import broadcast_shapes, get_aval
from ..numpy.operands import Array, ArrayLike, operand
from ..primitives import elementwise as ew
from ..primitives import random as prim
from ..primitives import special
from .keys import check_key, check_shape, leave

__all__ = [
    "uniform", "normal", "truncated_normal", "gumbel", "bernoulli", "categorical", "randint", "permutation",
    "choice", "gamma", "multivariate_normal",
]

Shape = int | Sequence[int]

# Float dtype -> (unsigned bits of its width, mantissa bits incl. the implicit one).
_UNIT_BITS: dict[np.dtype, tuple[np.dtype, int]] = {
    np.dtype(np.float64): (np.dtype(np.uint64), 53),
    np.dtype(np.float32): (np.dtype(np.uint32), 24),
    np.dtype(np.float16): (np.dtype(np.uint16), 11),
}


def _float_dtype(dtype: Any, function: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in _UNIT_BITS:
        raise TypeError(f"fgrad.random.{function}: dtype must be a real float type (float16, float32 or "
                        f"float64), got {dt}")
    return dt


def _fits(shape: tuple[int, ...], given: Sequence[tuple[int, ...]], function: str, names: str) -> None:
    """ValueError unless the parameters' shapes `given` broadcast to `shape`."""
    try:
        ok = broadcast_shapes(shape, *given) == shape
    except ValueError:
        ok = False
    if not ok:
        shown = ", ".join(map(str, given))
        raise ValueError(f"fgrad.random.{function}: {names} (shapes {shown}) must broadcast to shape {shape}")


def _unit(key: Any, shape: tuple[int, ...], dtype: np.dtype, open_interval: bool = False) -> Any:
    """Uniform floats of `dtype` in [0, 1) (open: (0, 1)) from the top bits of the stream."""
    bits_dtype, mantissa = _UNIT_BITS[dtype]
    drop = bits_dtype.itemsize * 8 - mantissa
    top = fnp.floor_divide(prim.random_bits(key, shape=shape, dtype=bits_dtype), bits_dtype.type(1 << drop))
    u = fnp.astype(top, dtype)
    if open_interval:
        u = u + 0.5
    return u * dtype.type(2.0 ** -mantissa)


def uniform(key: ArrayLike, shape: Shape = (), dtype: Any = np.float64, minval: ArrayLike = 0.0,
            maxval: ArrayLike = 1.0) -> Array:
    """Uniform samples in [minval, maxval), differentiable in both bounds (in
    float16 and float32, ``minval + (maxval - minval) * u`` may round to maxval).

    >>> import fgrad, fgrad.random as fr
    >>> u = fr.uniform(fr.key(0), (3,))
    >>> bool(((0 <= u) & (u < 1)).all())
    True
    """
    key = check_key(key, "uniform")
    shape = check_shape(shape, "uniform")
    dt = _float_dtype(dtype, "uniform")
    minval, maxval = fnp.asarray(minval, dt), fnp.asarray(maxval, dt)
    _fits(shape, [get_aval(minval).shape, get_aval(maxval).shape], "uniform", "minval and maxval")
    u = _unit(key, shape, dt)
    return leave(fnp.broadcast_to(minval + (maxval - minval) * u, shape))


def normal(key: ArrayLike, shape: Shape = (), dtype: Any = np.float64) -> Array:
    """Standard normal samples (Box-Muller).

    >>> import fgrad.random as fr
    >>> fr.normal(fr.key(0), (2, 3)).shape
    (2, 3)
    """
    key = check_key(key, "normal")
    shape = check_shape(shape, "normal")
    dt = _float_dtype(dtype, "normal")
    u = _unit(key, (2, *shape), np.dtype(np.float64))
    z = fnp.sqrt(-2.0 * fnp.log1p(-u[0])) * fnp.cos(2 * math.pi * u[1])
    return leave(fnp.astype(z, dt))


def truncated_normal(key: ArrayLike, lower: ArrayLike, upper: ArrayLike, shape: Shape | None = None,
                     dtype: Any = np.float64) -> Array:
    """Standard normal samples truncated to [lower, upper] (bounds may be
    infinite; shape None: the broadcast shape of lower and upper, which must
    broadcast to `shape` otherwise), differentiable in both bounds.

    As JAX's: ``sqrt(2) * erfinv(u)`` for u uniform between ``erf(lower / sqrt(2))``
    and ``erf(upper / sqrt(2))`` (here in float64, then cast to `dtype`), clipped
    into the bounds against rounding. Where both bounds lie far in one tail
    (beyond about 7 standard deviations), erf rounds to +-1 and the samples
    lose their spread, as they do in JAX (there in float32 already beyond 4).

    >>> import fgrad.random as fr
    >>> x = fr.truncated_normal(fr.key(0), -1.0, 2.0, (1000,))
    >>> bool(((-1 <= x) & (x <= 2)).all())
    True
    """
    key = check_key(key, "truncated_normal")
    dt = _float_dtype(dtype, "truncated_normal")
    lower, upper = fnp.asarray(lower, dt), fnp.asarray(upper, dt)
    bounds = [get_aval(lower).shape, get_aval(upper).shape]
    if shape is None:
        try:
            out_shape = broadcast_shapes(*bounds)
        except ValueError:
            raise ValueError(f"fgrad.random.truncated_normal: lower and upper (shapes {bounds[0]}, "
                             f"{bounds[1]}) do not broadcast together") from None
    else:
        out_shape = check_shape(shape, "truncated_normal")
    _fits(out_shape, bounds, "truncated_normal", "lower and upper")
    f64 = np.dtype(np.float64)
    root2 = math.sqrt(2.0)
    cdf_lo, cdf_hi = (special.erf(fnp.astype(bound, f64) / root2) for bound in (lower, upper))
    u = _unit(key, out_shape, f64, open_interval=True)  # never an end: erfinv(+-1) is infinite
    x = fnp.astype(root2 * special.erf_inv(cdf_lo + (cdf_hi - cdf_lo) * u), dt)
    # Bounds cast to `dt` before the float64 work, so that the cast back keeps x inside them
    # but for erf and erfinv's last bits, which the clip takes (without a derivative in the bound).
    return leave(fnp.clip(x, ew.stop_gradient(lower), ew.stop_gradient(upper)))


def gumbel(key: ArrayLike, shape: Shape = (), dtype: Any = np.float64) -> Array:
    """Standard Gumbel samples, ``-log(-log(u))`` for u uniform in (0, 1).

    >>> import fgrad.random as fr
    >>> fr.gumbel(fr.key(0), (4,)).shape
    (4,)
    """
    key = check_key(key, "gumbel")
    shape = check_shape(shape, "gumbel")
    dt = _float_dtype(dtype, "gumbel")
    u = _unit(key, shape, np.dtype(np.float64), open_interval=True)
    return leave(fnp.astype(-fnp.log(-fnp.log(u)), dt))


def bernoulli(key: ArrayLike, p: ArrayLike = 0.5, shape: Shape | None = None) -> Array:
    """Booleans that are True with probability `p` (shape None: p's shape).

    >>> import fgrad.random as fr
    >>> fr.bernoulli(fr.key(0), 0.3, (5,)).dtype
    dtype('bool')
    """
    key = check_key(key, "bernoulli")
    p = operand(p)
    p_shape = get_aval(p).shape
    out_shape = p_shape if shape is None else check_shape(shape, "bernoulli")
    _fits(out_shape, [p_shape], "bernoulli", "p")
    return leave(_unit(key, out_shape, np.dtype(np.float64)) < p)


def categorical(key: ArrayLike, logits: ArrayLike, axis: int = -1, shape: Shape | None = None) -> Array:
    """Indices along `axis` drawn with probabilities ``softmax(logits, axis)``
    (the Gumbel-max trick), of shape `shape`: logits without `axis` must
    broadcast to it (the default: logits' shape without `axis`).

    >>> import fgrad.random as fr
    >>> fr.categorical(fr.key(0), np.log([0.2, 0.8]), shape=(3,)).shape
    (3,)
    """
    key = check_key(key, "categorical")
    logits = operand(logits)
    logits_shape = get_aval(logits).shape
    if not logits_shape:
        raise ValueError("fgrad.random.categorical: logits must have at least one axis, got a 0-d array")
    ax = axis + len(logits_shape) if axis < 0 else axis
    if not 0 <= ax < len(logits_shape):
        raise ValueError(f"fgrad.random.categorical: axis {axis} is out of bounds for logits of shape "
                         f"{logits_shape}")
    batch = logits_shape[:ax] + logits_shape[ax + 1:]
    out_shape = batch if shape is None else check_shape(shape, "categorical")
    _fits(out_shape, [batch], "categorical", "logits without the category axis")
    prefix = out_shape[: len(out_shape) - len(batch)]
    rest = out_shape[len(prefix):]
    noise_shape = (*prefix, *rest[:ax], logits_shape[ax], *rest[ax:])
    noise = gumbel(key, noise_shape)
    return leave(fnp.argmax(noise + logits, axis=len(prefix) + ax))


def randint(
    key: ArrayLike, shape: Shape, minval: ArrayLike, maxval: ArrayLike, dtype: Any = np.int64
) -> Array:
    """Integers in [minval, maxval) (where maxval <= minval: minval); minval and
    maxval broadcast to `shape`, and minval and maxval - 1 must fit `dtype`.

    >>> import fgrad.random as fr
    >>> v = fr.randint(fr.key(0), (100,), 3, 7)
    >>> bool(((3 <= v) & (v < 7)).all())
    True
    """
    key = check_key(key, "randint")
    shape = check_shape(shape, "randint")
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        raise TypeError(f"fgrad.random.randint: dtype must be an integer type, got {dt}")
    lo, hi = operand(minval), operand(maxval)
    for name, v in (("minval", lo), ("maxval", hi)):
        if get_aval(v).dtype.kind not in "iub":
            raise TypeError(f"fgrad.random.randint: {name} must be integers, got {get_aval(v).str_short()}")
    _fits(shape, [get_aval(lo).shape, get_aval(hi).shape], "randint", "minval and maxval")
    # On uint64 in offset binary (int64 v as v + 2**63: the sign bit flipped), which
    # keeps the order, so that no sum or difference below wraps around.
    u64 = prim.KEY_DTYPE
    flip = np.uint64(0) if dt == np.uint64 else np.uint64(1 << 63)
    work = np.dtype(np.uint64) if dt == np.uint64 else np.dtype(np.int64)
    lo, hi = (fnp.bitwise_xor(fnp.astype(fnp.astype(v, work), u64), flip) for v in (lo, hi))
    span = hi - fnp.minimum(lo, hi)
    span = fnp.where(span == 0, np.uint64(1), span)  # an empty range [minval, maxval): minval
    drawn = fnp.remainder(prim.random_bits(key, shape=shape, dtype=u64), span)
    result = fnp.astype(fnp.bitwise_xor(lo + drawn, flip), work)
    return leave(fnp.broadcast_to(fnp.astype(result, dt), shape))


def _arange_or_array(x: ArrayLike, function: str, name: str) -> Any:
    """An int n as arange(n) (NumPy's choice and permutation); an array as itself."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        if x < 0:
            raise ValueError(f"fgrad.random.{function}: {name} must be non-negative, got {x}")
        return np.arange(int(x))
    return operand(x)


def _sampled_axis(shape: tuple[int, ...], axis: int, function: str, name: str,
                  error: type[Exception]) -> int:
    """`axis` of an array of `shape` to sample along, non-negative; `error` (JAX's
    type for the function) when the array is 0-d, ValueError when the axis is out of bounds."""
    if not shape:
        raise error(f"fgrad.random.{function}: {name} must be an int or an array of at least one axis, "
                    "got a 0-d array")
    ax = axis + len(shape) if axis < 0 else axis
    if not 0 <= ax < len(shape):
        raise ValueError(f"fgrad.random.{function}: axis {axis} is out of bounds for shape {shape}")
    return ax


def permutation(key: ArrayLike, x: int | ArrayLike, axis: int = 0, independent: bool = False) -> Array:
    """A random permutation of arange(x) (x an int), or `x` shuffled along `axis`:
    its slices along `axis` moved whole, or (`independent`) each 1-d line along
    `axis` shuffled on its own.

    >>> import fgrad.random as fr
    >>> sorted(fr.permutation(fr.key(0), 4).tolist())
    [0, 1, 2, 3]
    """
    key = check_key(key, "permutation")
    x = _arange_or_array(x, "permutation", "x")
    x_shape = get_aval(x).shape
    ax = _sampled_axis(x_shape, axis, "permutation", "x", TypeError)
    if independent:
        order = fnp.argsort(prim.random_bits(key, shape=x_shape, dtype=prim.KEY_DTYPE), axis=ax)
        return fnp.take_along_axis(x, order, axis=ax)
    order = fnp.argsort(prim.random_bits(key, shape=(x_shape[ax],), dtype=prim.KEY_DTYPE))
    return fnp.take(x, order, axis=ax, mode="clip")


def choice(key: ArrayLike, a: int | ArrayLike, shape: Shape = (), replace: bool = True,
           p: ArrayLike | None = None, axis: int = 0) -> Array:
    """Samples of arange(a) (a an int) or of the entries of `a` along `axis`,
    with or without replacement, uniform or with probabilities `p`.

    >>> import fgrad.random as fr
    >>> v = fr.choice(fr.key(0), 5, (5,), replace=False)
    >>> sorted(v.tolist())
    [0, 1, 2, 3, 4]
    """
    key = check_key(key, "choice")
    shape = check_shape(shape, "choice")
    arr = _arange_or_array(a, "choice", "a")
    a_shape = get_aval(arr).shape
    ax = _sampled_axis(a_shape, axis, "choice", "a", ValueError)
    n = a_shape[ax]
    size = math.prod(shape)
    if n == 0 and size > 0:
        raise ValueError("fgrad.random.choice: a is empty but samples were asked for")
    if not replace and size > n:
        raise ValueError(f"fgrad.random.choice: cannot take {size} samples without replacement from {n} "
                         "entries (use replace=True or a smaller shape)")
    if p is not None:
        p = operand(p)
        if get_aval(p).shape != (n,):
            raise ValueError(f"fgrad.random.choice: p must have shape ({n},), one probability per entry, "
                             f"got {get_aval(p).shape}")
    if replace and p is None:
        index = randint(key, shape, 0, n)
    elif replace:
        cdf = fnp.cumsum(p)
        r = cdf[-1] * (1 - uniform(key, shape))  # in (0, total]
        index = fnp.minimum(fnp.searchsorted(cdf, r), n - 1)
    elif p is None:
        index = fnp.reshape(permutation(key, n)[:size], shape)
    else:  # the Gumbel top-k trick: the `size` largest of log p + Gumbel noise
        scores = gumbel(key, (n,)) + fnp.log(p)
        index = fnp.reshape(fnp.argsort(-scores)[:size], shape)
    return leave(fnp.take(arr, index, axis=ax, mode="clip"))


def gamma(key: ArrayLike, a: ArrayLike, shape: Shape | None = None, dtype: Any = np.float64) -> Array:
    """Gamma samples of shape parameter `a` (scale 1; shape None: a's shape),
    differentiable in `a` once (the implicit reparameterisation gradient).

    >>> import fgrad, fgrad.random as fr
    >>> fr.gamma(fr.key(0), 2.0, (3,)).shape
    (3,)
    """
    key = check_key(key, "gamma")
    dt = _float_dtype(dtype, "gamma")
    a = fnp.asarray(a, dt)
    a_shape = get_aval(a).shape
    out_shape = a_shape if shape is None else check_shape(shape, "gamma")
    _fits(out_shape, [a_shape], "gamma", "a")
    return leave(prim.random_gamma(key, fnp.broadcast_to(a, out_shape)))


def multivariate_normal(key: ArrayLike, mean: ArrayLike, cov: ArrayLike, shape: Shape | None = None,
                        dtype: Any = np.float64, method: str = "cholesky") -> Array:
    """Normal samples of mean `mean` (..., n) and covariance `cov` (..., n, n), as
    ``mean + L @ z`` with L the Cholesky factor of cov: differentiable in both.
    `cov` is read as the symmetric (cov + cov^T) / 2, as JAX reads it, so the
    gradient in it is symmetric (cholesky alone reads the lower triangle).
    `shape` (default: the broadcast batch shape of mean and cov) excludes n.

    >>> import fgrad.random as fr
    >>> fr.multivariate_normal(fr.key(0), np.zeros(2), np.eye(2), (5,)).shape
    (5, 2)
    """
    key = check_key(key, "multivariate_normal")
    dt = _float_dtype(dtype, "multivariate_normal")
    if method != "cholesky":
        raise ValueError(f"fgrad.random.multivariate_normal: method must be 'cholesky', got {method!r}")
    mean, cov = fnp.asarray(mean, dt), fnp.asarray(cov, dt)
    m_shape, c_shape = get_aval(mean).shape, get_aval(cov).shape
    if len(m_shape) < 1 or len(c_shape) < 2 or c_shape[-2:] != (m_shape[-1],) * 2:
        raise ValueError("fgrad.random.multivariate_normal: mean must have shape (..., n) and cov "
                         f"(..., n, n), got {m_shape} and {c_shape}")
    try:
        batch = broadcast_shapes(m_shape[:-1], c_shape[:-2])
    except ValueError:
        raise ValueError(f"fgrad.random.multivariate_normal: the batch shapes of mean {m_shape[:-1]} and cov "
                         f"{c_shape[:-2]} do not broadcast together") from None
    out_shape = batch if shape is None else check_shape(shape, "multivariate_normal")
    _fits(out_shape, [batch], "multivariate_normal", "mean and cov without their last axes")
    z = normal(key, (*out_shape, m_shape[-1]), dt)
    factor = fnp.linalg.cholesky(0.5 * (cov + fnp.swapaxes(cov, -1, -2)))
    return mean + fnp.matmul(factor, z[..., None])[..., 0]
