"""The primitives of `fgrad.random`: random bits from explicit keys, and gamma
samples with their implicit-reparameterisation derivative.

A key is two uint64 words, the key of NumPy's counter-based `numpy.random.Philox`;
a batch of keys is an array of shape ``(*batch, 2)``. The bits of a key are
Philox's stream under that key with the counter starting from 0, so they
depend on the key alone. Each primitive takes a batch of keys and gives one
result per key, which makes their batch rules a move of the batch axis to the
front (vmap over keys equals a loop over them; the implementations loop).

| primitive | operands | result |
|---|---|---|
| random_bits | keys ``(*K, 2)`` | ``(*K, *shape)`` unsigned bits of `dtype`, the start of each key's stream |
| random_fold_in | keys ``(*K, 2)``, data uint64 ``K`` | keys: the Philox block at (data, 0, 0, 2**63) |
| random_gamma | keys ``(*K, 2)``, a ``(*K, *S)`` | Gamma(a, 1) samples by rejection on each key's stream |
| random_gamma_grad | a, x (broadcasting) | d x / d a of a gamma sample x, at fixed CDF value |

Keys and bits are integers: no tangent flows through them. fold_in's counters
(top bit of the last word set) are never reached by a stream, so folded keys
are independent of the bits of their key. The gamma derivative is the
implicit one (Figurnov et al. 2018, JAX's ``random_gamma_grad``):
``dx/da = -(dP/da) / (dP/dx)`` with ``P(a, x)`` the regularised lower
incomplete gamma function; written with the series
``P = x**a e**-x / Gamma(a + 1) * sum_n t_n``, ``t_n = x**n Gamma(a + 1) / Gamma(a + n + 1)``,
it is ``(x / a) * sum_n t_n (digamma(a + n + 1) - log x)``, summed until the
terms no longer count. It has no derivative of its own (second derivatives
in `a` raise NotImplementedError).

The NumPy-level samplers are in fgrad.random; this module knows nothing of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes, dtype_name
from ..core.libraries import numpy_blockwise, numpy_only
from ..core.rules import batch_rules, jvp_rules
from ..core.trace import Primitive
from . import batching, special
from . import derivatives as d
from . import elementwise as ew

__all__ = ["random_bits", "random_fold_in", "random_gamma", "random_gamma_grad", "KEY_DTYPE", "BITS_DTYPES"]

KEY_DTYPE = np.dtype(np.uint64)
BITS_DTYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
# fold_in's counters: the top bit of Philox's last counter word set, which a
# stream started from 0 never reaches.
_FOLD_IN_COUNTER_TOP = np.uint64(1 << 63)


def _check_keys(keys: ShapedArray, what: str) -> tuple[int, ...]:
    """The batch shape of `keys`, a uint64 array of shape (..., 2)."""
    if keys.dtype != KEY_DTYPE or keys.ndim < 1 or keys.shape[-1] != 2:
        raise TypeError(f"{what}: keys must be uint64 arrays of shape (..., 2), got {keys.str_short()}")
    return keys.shape[:-1]


def _key_indices(keys: np.ndarray) -> Iterator[tuple[int, ...]]:
    """The index of each key of a batch ``(*K, 2)``."""
    return itertools.product(*map(range, keys.shape[:-1]))


def _each_key(keys: np.ndarray) -> Iterator[tuple[tuple[int, ...], np.random.Philox]]:
    """The index and Philox generator (counter 0) of each key of a batch ``(*K, 2)``."""
    for index in _key_indices(keys):
        yield index, np.random.Philox(key=keys[index])


# --- random_bits ----------------------------------------------------------------------


def _bits_aval(keys: ShapedArray, *, shape: tuple[int, ...], dtype: np.dtype) -> ShapedArray:
    if dtype not in BITS_DTYPES:
        raise TypeError(f"random_bits: dtype must be one of {[dtype_name(t) for t in BITS_DTYPES]}, "
                        f"got {dtype}")
    return ShapedArray(_check_keys(keys, "random_bits") + shape, dtype)


def _bits_impl(keys: Any, *, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    keys = np.asarray(keys)
    size = int(np.prod(shape, dtype=np.int64))
    words = -(-size * dtype.itemsize // 8)  # the 64-bit outputs that hold `size` values
    out = np.empty(keys.shape[:-1] + (size,), dtype)
    for index, philox in _each_key(keys):
        raw = philox.random_raw(words).astype("<u8")  # little-endian: the same bits on every machine
        out[index] = raw.view(np.uint8)[: size * dtype.itemsize].view(dtype.newbyteorder("<"))
    return out.reshape(keys.shape[:-1] + shape)


random_bits_p = Primitive("random_bits", numpy_only("random_bits", _bits_impl), _bits_aval)
d.defnojvp(random_bits_p)


def _front_batch(prim: Primitive) -> Callable[..., Any]:
    """The batch rule of a primitive taking a batch of keys: every operand's batch
    axis moved to the front (an unbatched one repeated), so that the examples'
    keys ``(*K, 2)`` are one batch ``(B, *K, 2)``, and so is the result."""

    def rule(args: list[Any], dims: list[int | None], **params: Any) -> tuple[Any, int]:
        size = batching.batch_size(args, dims)
        return prim.bind(*[batching.with_batch_axis(x, dim, size) for x, dim in zip(args, dims)], **params), 0

    return rule


batch_rules[random_bits_p] = _front_batch(random_bits_p)


# --- random_fold_in -------------------------------------------------------------------


def _fold_in_aval(keys: ShapedArray, data: ShapedArray) -> ShapedArray:
    batch = _check_keys(keys, "random_fold_in")
    if data.dtype != KEY_DTYPE or data.shape != batch:
        raise TypeError(f"random_fold_in: data must be uint64 of shape {batch} (one per key), "
                        f"got {data.str_short()}")
    return keys.strip_weak_type()


def _fold_in_impl(keys: Any, data: Any) -> np.ndarray:
    keys, data = np.asarray(keys), np.asarray(data)
    out = np.empty(keys.shape, KEY_DTYPE)
    for index in _key_indices(keys):
        counter = np.array([data[index], 0, 0, _FOLD_IN_COUNTER_TOP], KEY_DTYPE)
        out[index] = np.random.Philox(key=keys[index], counter=counter).random_raw(2)
    return out


random_fold_in_p = Primitive("random_fold_in", numpy_only("random_fold_in", _fold_in_impl), _fold_in_aval)
d.defnojvp(random_fold_in_p)
batch_rules[random_fold_in_p] = _front_batch(random_fold_in_p)


# --- random_gamma ---------------------------------------------------------------------


def _gamma_aval(keys: ShapedArray, a: ShapedArray) -> ShapedArray:
    batch = _check_keys(keys, "random_gamma")
    if a.shape[: len(batch)] != batch:
        raise ValueError(f"random_gamma: a ({a.str_short()}) must start with the batch shape {batch} "
                         f"of its keys ({keys.str_short()})")
    if a.dtype.kind != "f":
        raise TypeError(f"random_gamma: a must be a float array, got {a.str_short()}")
    return a.strip_weak_type()


def _units(philox: np.random.Philox, n: int) -> np.ndarray:
    """The next `n` words of the stream as float64 in [0, 1): their top 53 bits."""
    return (philox.random_raw(n) >> np.uint64(11)) * 2.0**-53


def _standard_gamma(philox: np.random.Philox, a: np.ndarray) -> np.ndarray:
    """Gamma(a, 1) samples for a flat float64 `a`, from the stream alone (not
    NumPy's Generator, whose algorithms may change): Marsaglia and Tsang's
    rejection on normals (Box-Muller) for a >= 1, and for a < 1 a sample of
    a + 1 times u**(1/a). The stream is read as: n boost uniforms, then per
    round three words for each sample still rejected, in order."""
    if (a < 0).any():
        raise ValueError(f"fgrad.random.gamma: a must be non-negative, got {a[a < 0][0]}")
    boost = 1 - _units(philox, a.size)  # in (0, 1]
    small = (a > 0) & (a < 1)
    d = np.where(a < 1, a + 1, a) - 1 / 3
    c = 1 / np.sqrt(9 * d)
    out = np.full(a.shape, np.nan)
    pending = np.flatnonzero(np.isfinite(a) & (a > 0))
    while pending.size:
        u1, u2, u = _units(philox, 3 * pending.size).reshape(3, -1)
        z = np.sqrt(-2 * np.log1p(-u1)) * np.cos(2 * np.pi * u2)
        dp, cp = d[pending], c[pending]
        v = (1 + cp * z) ** 3
        with np.errstate(invalid="ignore", divide="ignore"):  # v <= 0 is rejected
            accept = (v > 0) & (np.log1p(-u) < 0.5 * z * z + dp - dp * v + dp * np.log(v))
        out[pending[accept]] = dp[accept] * v[accept]
        pending = pending[~accept]
    out[small] *= boost[small] ** (1 / a[small])
    out[a == 0] = 0.0
    out[np.isinf(a)] = np.inf
    return out


def _gamma_impl(keys: Any, a: Any) -> np.ndarray:
    keys, a = np.asarray(keys), np.asarray(a)
    batch = keys.shape[:-1]
    out = np.empty(a.shape, a.dtype)
    for index, philox in _each_key(keys):
        example = a[index].astype(np.float64)
        out[index] = _standard_gamma(philox, example.reshape(-1)).reshape(a.shape[len(batch):])
    return out


random_gamma_p = Primitive("random_gamma", numpy_only("random_gamma", _gamma_impl), _gamma_aval)


def _gamma_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    (keys, a), (_, t_a) = primals, tangents
    x = random_gamma(keys, a)
    if t_a is None:
        return x, None
    return x, ew.mul(t_a, random_gamma_grad(a, x))


jvp_rules[random_gamma_p] = _gamma_jvp
batch_rules[random_gamma_p] = _front_batch(random_gamma_p)


# --- random_gamma_grad ----------------------------------------------------------------


def _gamma_grad_impl(a: Any, x: Any) -> np.ndarray:
    dtype = np.result_type(np.asarray(a).dtype, np.asarray(x).dtype)
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.zeros(a.shape)
    live = (x > 0) & np.isfinite(x) & (a > 0)  # x == 0 (underflow for small a): dx/da = 0
    a, x = a[live], x[live]
    log_x = np.log(x)
    # The series summed outwards from its largest term t_peak (at n = floor(x - a)),
    # in units of that term: as many terms as the peak is wide, not as x is large.
    peak = np.floor(np.maximum(x - a, 0.0))
    psi = special.digamma_p.impl(a + peak + 1)
    up_term, up_n, up_psi = np.ones_like(x), peak, psi
    with np.errstate(divide="ignore", over="ignore"):  # for n < 0, masked below
        down_term, down_n, down_psi = (a + peak) / x, peak - 1, psi - 1 / (a + peak)
    total, weighted = np.zeros_like(x), np.zeros_like(x)  # sum t_n, sum t_n (digamma(a + n + 1) - log x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # n < 0: masked
        while True:
            down = down_n >= 0
            total += up_term + np.where(down, down_term, 0.0)
            weighted += up_term * (up_psi - log_x) + np.where(down, down_term * (down_psi - log_x), 0.0)
            up_n, down_n = up_n + 1, down_n - 1
            up_term, up_psi = up_term * x / (a + up_n), up_psi + 1 / (a + up_n)
            down_term, down_psi = down_term * (a + down_n + 1) / x, down_psi - 1 / (a + down_n + 1)
            # Away from the peak the terms shrink faster than geometrically.
            if not ((up_term > 1e-17 * total) | ((down_n >= 0) & (down_term > 1e-17 * total))).any():
                break
    log_peak = peak * log_x + special.lgamma_p.impl(a + 1) - special.lgamma_p.impl(a + peak + 1)
    out[live] = x / a * np.exp(log_peak) * weighted
    return out.astype(dtype, copy=False)


def _gamma_grad_aval(a: ShapedArray, x: ShapedArray) -> ShapedArray:
    if a.dtype.kind != "f" or x.dtype.kind != "f":
        raise TypeError(f"random_gamma_grad: a and x must be float arrays, got {a.str_short()} and "
                        f"{x.str_short()}")
    return ShapedArray(broadcast_shapes(a.shape, x.shape), np.result_type(a.dtype, x.dtype))


# Elementwise in (a, x): block by block on Dask. The other primitives read each
# key's Philox stream with NumPy, which other libraries do not compute.
random_gamma_grad_p = Primitive(
    "random_gamma_grad", numpy_blockwise("random_gamma_grad", _gamma_grad_impl, _gamma_grad_aval),
    _gamma_grad_aval,
)


def _gamma_grad_jvp(primals: list[Any], tangents: list[Any]) -> tuple[Any, Any]:
    if all(t is None for t in tangents):
        return random_gamma_grad(*primals), None
    raise NotImplementedError(
        "fgrad.random.gamma: only first derivatives in the shape parameter `a` are implemented "
        "(random_gamma_grad has no derivative of its own); differentiate gamma samples once in `a`."
    )


jvp_rules[random_gamma_grad_p] = _gamma_grad_jvp
batching.defbatch_elementwise(random_gamma_grad_p)

random_bits: Callable[..., Any] = random_bits_p.bind
random_fold_in: Callable[..., Any] = random_fold_in_p.bind
random_gamma: Callable[..., Any] = random_gamma_p.bind
random_gamma_grad: Callable[..., Any] = random_gamma_grad_p.bind
