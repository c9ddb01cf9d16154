"""fgrad.nn.initializers: JAX's weight initializers (`jax.nn.initializers`).

An initializer is a function ``init(key, shape, dtype=float64)`` of an
fgrad.random key; the factories (`normal`, `glorot_uniform`, ...) take their
parameters and return one. The fan-based ones (`variance_scaling` and its
named cases) read a kernel's fan-in and fan-out from its shape: the sizes of
`in_axis` (default -2) and `out_axis` (default -1), each times the receptive
field (the product of the other axes, `batch_axis` left out), as JAX's, so
a convolution kernel (H, W, in, out) has fan-in H * W * in.

>>> import fgrad.random as fr
>>> from fgrad.nn import initializers
>>> w = initializers.glorot_uniform()(fr.key(0), (3, 4))
>>> w.shape, w.dtype
((3, 4), dtype('float64'))

The numbers come from fgrad.random, so they differ from JAX's for the same
seed; their distributions are JAX's. Weights are real: a complex dtype
raises TypeError.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import numpy as fnp
from .. import random
from ..numpy.operands import Array, ArrayLike

__all__ = [
    "Initializer", "zeros", "ones", "constant", "uniform", "normal", "truncated_normal", "variance_scaling",
    "glorot_uniform", "xavier_uniform", "glorot_normal", "xavier_normal", "lecun_uniform", "lecun_normal",
    "he_uniform", "kaiming_uniform", "he_normal", "kaiming_normal", "orthogonal", "delta_orthogonal",
]

Axes = int | Sequence[int]

# The standard deviation of a standard normal truncated to (-2, 2):
# sqrt(1 - 4 phi(2) / (Phi(2) - Phi(-2))), phi and Phi its density and distribution function.
_TRUNCATED_STDDEV = 0.87962566103423978


@runtime_checkable
class Initializer(Protocol):
    """What every initializer is: ``init(key, shape, dtype) -> array``."""

    def __call__(self, key: ArrayLike, shape: Sequence[int], dtype: Any = np.float64) -> Array: ...


def _shape(shape: Any, function: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"fgrad.nn.initializers.{function}: shape must be a tuple of ints, got "
                        f"{shape!r}") from None
    if any(n < 0 for n in dims):
        raise ValueError(f"fgrad.nn.initializers.{function}: shape must not have negative sizes, got {dims}")
    return dims


def _real_float(dtype: Any, function: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.kind != "f":
        raise TypeError(f"fgrad.nn.initializers.{function}: dtype must be a real float type (float16, "
                        f"float32 or float64), got {dt}")
    return dt


def zeros(key: ArrayLike, shape: Sequence[int], dtype: Any = np.float64) -> Array:
    """Zeros of `shape` (the key is not used).

    >>> zeros(None, (2,))
    array([0., 0.])
    """
    return fnp.zeros(_shape(shape, "zeros"), np.dtype(dtype))


def ones(key: ArrayLike, shape: Sequence[int], dtype: Any = np.float64) -> Array:
    """Ones of `shape` (the key is not used).

    >>> ones(None, (2,), np.float32)
    array([1., 1.], dtype=float32)
    """
    return fnp.ones(_shape(shape, "ones"), np.dtype(dtype))


def constant(value: ArrayLike, dtype: Any = np.float64) -> Initializer:
    """An initializer of arrays full of `value` (broadcast to the shape).

    >>> constant(-7)(None, (2,))
    array([-7., -7.])
    """

    def init(key: ArrayLike, shape: Sequence[int], dtype: Any = dtype) -> Array:
        return fnp.full(_shape(shape, "constant"), value, np.dtype(dtype))

    return init


def uniform(scale: ArrayLike = 1e-2, dtype: Any = np.float64) -> Initializer:
    """An initializer of samples uniform in [0, scale).

    >>> import fgrad.random as fr
    >>> bool((uniform(10.0)(fr.key(0), (100,)) < 10).all())
    True
    """

    def init(key: ArrayLike, shape: Sequence[int], dtype: Any = dtype) -> Array:
        dt = _real_float(dtype, "uniform")
        return random.uniform(key, _shape(shape, "uniform"), dt) * fnp.asarray(scale, dt)

    return init


def normal(stddev: ArrayLike = 1e-2, dtype: Any = np.float64) -> Initializer:
    """An initializer of normal samples of mean 0 and standard deviation `stddev`.

    >>> import fgrad.random as fr
    >>> normal(5.0)(fr.key(0), (2, 3)).shape
    (2, 3)
    """

    def init(key: ArrayLike, shape: Sequence[int], dtype: Any = dtype) -> Array:
        dt = _real_float(dtype, "normal")
        return random.normal(key, _shape(shape, "normal"), dt) * fnp.asarray(stddev, dt)

    return init


def truncated_normal(stddev: ArrayLike = 1e-2, dtype: Any = np.float64, lower: ArrayLike = -2.0,
                     upper: ArrayLike = 2.0) -> Initializer:
    """An initializer of standard normal samples truncated to [lower, upper],
    then times `stddev` (which is the standard deviation before truncation,
    as in JAX: unlike `variance_scaling`, no correction).

    >>> import fgrad.random as fr
    >>> bool((abs(truncated_normal(1.0)(fr.key(0), (100,))) <= 2).all())
    True
    """

    def init(key: ArrayLike, shape: Sequence[int], dtype: Any = dtype) -> Array:
        dt = _real_float(dtype, "truncated_normal")
        draws = random.truncated_normal(key, lower, upper, _shape(shape, "truncated_normal"), dt)
        return draws * fnp.asarray(stddev, dt)

    return init


def _size(shape: tuple[int, ...], axes: Axes) -> int:
    if isinstance(axes, (int, np.integer)):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _fans(shape: tuple[int, ...], in_axis: Axes, out_axis: Axes, batch_axis: Axes,
          function: str) -> tuple[float, float]:
    """Fan-in and fan-out of a kernel of `shape`: the sizes of the input and output
    axes, each times the receptive field (the other axes but the batch axes)."""
    if len(shape) < 2:
        raise ValueError(f"fgrad.nn.initializers.{function}: a kernel needs at least 2 dimensions to have a "
                         f"fan-in and a fan-out, got shape {shape}")
    try:
        in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
        batch_size = _size(shape, batch_axis)
    except IndexError:
        raise ValueError(f"fgrad.nn.initializers.{function}: in_axis {in_axis}, out_axis {out_axis} or "
                         f"batch_axis {batch_axis} is out of bounds for shape {shape}") from None
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


_MODES = ("fan_in", "fan_out", "fan_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


def variance_scaling(scale: ArrayLike, mode: str, distribution: str, in_axis: Axes = -2, out_axis: Axes = -1,
                     batch_axis: Axes = (), dtype: Any = np.float64) -> Initializer:
    """An initializer of samples of mean 0 and variance ``scale / n``, n the
    fan-in (``mode="fan_in"``), the fan-out (``"fan_out"``) or their mean
    (``"fan_avg"``), from a normal truncated at 2 standard deviations (then
    rescaled to that variance), a normal, or a uniform distribution
    (`distribution` "truncated_normal", "normal" or "uniform").

    >>> import fgrad.random as fr
    >>> w = variance_scaling(2.0, "fan_in", "normal")(fr.key(0), (1000, 300))
    >>> round(float(w.var() * 1000), 1)
    2.0
    """
    if mode not in _MODES:
        raise ValueError(f"fgrad.nn.initializers.variance_scaling: invalid mode {mode!r}; expected one of "
                         f"{', '.join(map(repr, _MODES))}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"fgrad.nn.initializers.variance_scaling: invalid distribution {distribution!r}; "
                         f"expected one of {', '.join(map(repr, _DISTRIBUTIONS))}")

    def init(key: ArrayLike, shape: Sequence[int], dtype: Any = dtype) -> Array:
        dt = _real_float(dtype, "variance_scaling")
        dims = _shape(shape, "variance_scaling")
        fan_in, fan_out = _fans(dims, in_axis, out_axis, batch_axis, "variance_scaling")
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[mode]
        stddev = fnp.sqrt(fnp.asarray(scale / n, dt))
        if distribution == "truncated_normal":
            return random.truncated_normal(key, -2.0, 2.0, dims, dt) * (stddev / _TRUNCATED_STDDEV)
        if distribution == "normal":
            return random.normal(key, dims, dt) * stddev
        return random.uniform(key, dims, dt, -1.0, 1.0) * (stddev * math.sqrt(3))

    return init


def glorot_uniform(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                   dtype: Any = np.float64) -> Initializer:
    """Glorot (Xavier) uniform: variance_scaling(1.0, "fan_avg", "uniform"), alias `xavier_uniform`.

    >>> import fgrad.random as fr
    >>> glorot_uniform()(fr.key(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                  dtype: Any = np.float64) -> Initializer:
    """Glorot (Xavier) normal: variance_scaling(1.0, "fan_avg", "truncated_normal"), alias `xavier_normal`.

    >>> import fgrad.random as fr
    >>> glorot_normal()(fr.key(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def lecun_uniform(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                  dtype: Any = np.float64) -> Initializer:
    """LeCun uniform: variance_scaling(1.0, "fan_in", "uniform").

    >>> import fgrad.random as fr
    >>> lecun_uniform()(fr.key(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                 dtype: Any = np.float64) -> Initializer:
    """LeCun normal: variance_scaling(1.0, "fan_in", "truncated_normal").

    >>> import fgrad.random as fr
    >>> lecun_normal()(fr.key(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


def he_uniform(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
               dtype: Any = np.float64) -> Initializer:
    """He (Kaiming) uniform: variance_scaling(2.0, "fan_in", "uniform"), alias `kaiming_uniform`.

    >>> import fgrad.random as fr
    >>> he_uniform()(fr.key(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
              dtype: Any = np.float64) -> Initializer:
    """He (Kaiming) normal: variance_scaling(2.0, "fan_in", "truncated_normal"), alias `kaiming_normal`.

    >>> import fgrad.random as fr
    >>> he_normal()(fr.key(0), (2, 3)).shape
    (2, 3)
    """
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis, dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale: ArrayLike = 1.0, column_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    """An initializer of uniformly distributed (Haar) orthogonal matrices times
    `scale`: the slices along `column_axis` are orthonormal columns of the
    matrix (the other axes flattened into its rows), or its rows are
    orthonormal where there are fewer rows than columns.

    >>> import fgrad.random as fr
    >>> q = orthogonal()(fr.key(0), (3, 3))
    >>> bool(np.allclose(q.T @ q, np.eye(3)))
    True
    """

    def init(key: ArrayLike, shape: Sequence[int], dtype: Any = dtype) -> Array:
        dt = _real_float(dtype, "orthogonal")
        dims = _shape(shape, "orthogonal")
        if len(dims) < 2:
            raise ValueError(f"fgrad.nn.initializers.orthogonal: needs a shape of at least 2 dimensions, got "
                             f"{dims}")
        n_cols = dims[column_axis]
        n_rows = math.prod(dims) // n_cols
        wide = n_rows < n_cols
        q, r = fnp.linalg.qr(random.normal(key, (n_cols, n_rows) if wide else (n_rows, n_cols), dt))
        q = q * fnp.sign(fnp.diagonal(r))  # makes the distribution uniform: QR's signs are not
        if wide:
            q = q.T
        rows = dims[:column_axis % len(dims)] + dims[column_axis % len(dims) + 1:]
        q = fnp.moveaxis(fnp.reshape(q, (*rows, n_cols)), -1, column_axis)
        return fnp.asarray(scale, dt) * q

    return init


def delta_orthogonal(scale: ArrayLike = 1.0, column_axis: int = -1, dtype: Any = np.float64) -> Initializer:
    """An initializer of delta-orthogonal convolution kernels (3-d to 5-d,
    spatial axes first, with in <= out channels): zero but at the spatial
    centre, which is an `orthogonal` (in, out) matrix.

    >>> import fgrad.random as fr
    >>> w = delta_orthogonal()(fr.key(0), (3, 2, 2))
    >>> bool((w[0] == 0).all() and np.allclose(w[1].T @ w[1], np.eye(2)))
    True
    """

    def init(key: ArrayLike, shape: Sequence[int], dtype: Any = dtype) -> Array:
        dt = _real_float(dtype, "delta_orthogonal")
        dims = _shape(shape, "delta_orthogonal")
        if len(dims) not in (3, 4, 5):
            raise ValueError(f"fgrad.nn.initializers.delta_orthogonal: needs a shape of 3, 4 or 5 "
                             f"dimensions, got {dims}")
        if dims[-1] < dims[-2]:
            raise ValueError(f"fgrad.nn.initializers.delta_orthogonal: the input channels ({dims[-2]}) must "
                             f"be at most the output channels ({dims[-1]}), got shape {dims}")
        matrix = orthogonal(scale, column_axis, dt)(key, dims[-2:])
        centre = tuple((k - 1) // 2 for k in dims[:-2])
        return fnp.at(fnp.zeros(dims, dt))[centre].set(matrix)

    return init
