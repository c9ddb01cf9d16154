"""fgrad.nn: JAX's `jax.nn`, the activations and normalisations of neural
networks, written on `fgrad.numpy` (so differentiable to every order, traced
by jit and batched by vmap like any other fgrad.numpy code); the weight
initializers are `fgrad.nn.initializers`.

>>> import fgrad, fgrad.nn as nn
>>> nn.softmax(np.array([1000.0, 1000.0]))
array([0.5, 0.5])
>>> fgrad.grad(nn.relu)(0.0)  # JAX's choice at the kink
np.float64(0.0)

Names, signatures and special values are JAX's; dtypes are NumPy's: float64
by default, float32 stays float32, and integers give float64 (``sigmoid(1)``),
but for relu and hard_tanh, whose results stay integers (``relu(3)``), as in JAX.
At a kink the derivative is JAX's: 0 for relu at 0 and relu6 at 0 and 6, 1
for leaky_relu at 0 and hard_tanh at +-1. softplus and log_sigmoid are exact
and have finite derivatives for any |x|; softmax and log_softmax subtract the
maximum (without a derivative, since the result does not depend on it) and
take -inf entries (probability 0). With `where`, left-out entries get 0
(softmax) or -inf (log_softmax) and no derivative, even in a row with every
entry left out.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..core.avals import get_aval
from ..custom_derivatives import custom_jvp
from ..numpy.operands import Array, ArrayLike, normalize_axes
from ..primitives import elementwise as ew
from ..primitives import special
from ..random.keys import leave
from ..scipy.special import logsumexp
from . import initializers

__all__ = [
    "relu", "relu6", "gelu", "silu", "swish", "sigmoid", "log_sigmoid", "softplus", "soft_sign", "elu",
    "leaky_relu", "celu", "selu", "hard_tanh", "glu", "mish", "squareplus", "hard_sigmoid", "hard_silu",
    "hard_swish", "sparse_plus", "sparse_sigmoid", "softmax", "log_softmax", "logsumexp", "one_hot",
    "standardize", "initializers",
]

Axis = int | Sequence[int] | None

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _array(x: ArrayLike) -> Any:
    return fnp.asarray(x)


def _inexact(x: ArrayLike) -> Any:
    """`x` as an array of a float or complex type: integers and booleans as float64."""
    x = fnp.asarray(x)
    if get_aval(x).dtype.kind in "biu":
        x = fnp.astype(x, np.float64)
    return x


# --- activations --------------------------------------------------------------------------


# relu and relu6 as JAX has them: NumPy's maximum and clip (np.where costs 30 times as much
# on large arrays), with a derivative rule of their own for JAX's 0 at the kinks.


@custom_jvp
def _relu(x: Any) -> Any:
    return fnp.maximum(x, 0)


_relu.defjvps(lambda g, ans, x: fnp.where(x > 0, g, 0.0))


@custom_jvp
def _relu6(x: Any) -> Any:
    return fnp.clip(x, 0, 6.0)


_relu6.defjvps(lambda g, ans, x: fnp.where((x > 0) & (x < 6), g, 0.0))


def relu(x: ArrayLike) -> Array:
    """The rectified linear unit max(x, 0); its derivative at 0 is 0, as JAX's.

    >>> relu(np.array([-2.0, 0.0, 3.0]))
    array([0., 0., 3.])
    """
    return _relu(_array(x))


def relu6(x: ArrayLike) -> Array:
    """min(max(x, 0), 6); its derivative at 0 and 6 is 0, as JAX's.

    >>> relu6(np.array([-1.0, 3.0, 7.0]))
    array([0., 3., 6.])
    """
    return _relu6(_array(x))


def softplus(x: ArrayLike) -> Array:
    """log(1 + exp(x)), exact for large |x| (``logaddexp(x, 0)``).

    >>> softplus(np.array([-1000.0, 0.0, 1.0]))
    array([0.        , 0.69314718, 1.31326169])
    """
    return leave(fnp.logaddexp(_array(x), 0.0))


def sigmoid(x: ArrayLike) -> Array:
    """The logistic sigmoid 1 / (1 + exp(-x)), without overflow for large |x|.

    >>> sigmoid(0.0)
    np.float64(0.5)
    """
    return leave(special.logistic(_array(x)))


def log_sigmoid(x: ArrayLike) -> Array:
    """log(sigmoid(x)) = -softplus(-x), exact for large |x|.

    >>> log_sigmoid(-1000.0)
    np.float64(-1000.0)
    """
    return leave(-softplus(-_array(x)))


def silu(x: ArrayLike) -> Array:
    """x * sigmoid(x) (alias `swish`).

    >>> silu(0.0)
    np.float64(0.0)
    """
    x = _array(x)
    return leave(x * sigmoid(x))


swish = silu


def soft_sign(x: ArrayLike) -> Array:
    """x / (|x| + 1).

    >>> soft_sign(1.0)
    np.float64(0.5)
    """
    x = _array(x)
    return leave(x / (fnp.abs(x) + 1))


def elu(x: ArrayLike, alpha: ArrayLike = 1.0) -> Array:
    """x where x > 0, else alpha * (exp(x) - 1).

    >>> elu(np.array([-1000.0, 2.0]))
    array([-1.,  2.])
    """
    x = _array(x)
    positive = x > 0
    return leave(fnp.where(positive, x, alpha * fnp.expm1(fnp.where(positive, 0.0, x))))


def leaky_relu(x: ArrayLike, negative_slope: ArrayLike = 1e-2) -> Array:
    """x where x >= 0, else negative_slope * x.

    >>> leaky_relu(np.array([-1.0, 2.0]))
    array([-0.01,  2.  ])
    """
    x = _array(x)
    return leave(fnp.where(x >= 0, x, negative_slope * x))


def celu(x: ArrayLike, alpha: ArrayLike = 1.0) -> Array:
    """x where x > 0, else alpha * (exp(x / alpha) - 1): continuously differentiable.

    >>> celu(np.array([-1000.0, 2.0]), alpha=2.0)
    array([-2.,  2.])
    """
    x = _array(x)
    positive = x > 0
    return leave(fnp.where(positive, x, alpha * fnp.expm1(fnp.where(positive, 0.0, x) / alpha)))


def selu(x: ArrayLike) -> Array:
    """The scaled exponential linear unit, lambda * elu(x, alpha) with the
    self-normalising constants lambda = 1.0507..., alpha = 1.6732....

    >>> selu(1.0)
    np.float64(1.0507009873554805)
    """
    return leave(_SELU_SCALE * elu(x, _SELU_ALPHA))


def gelu(x: ArrayLike, approximate: bool = True) -> Array:
    """The Gaussian error linear unit x * Phi(x), Phi the standard normal
    distribution function; by default (``approximate=True``, as JAX) its tanh
    approximation ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``,
    computed as ``x * sigmoid(2 * sqrt(2/pi) * (...))``, which is the same but
    keeps its digits for large negative x, where 1 + tanh cancels.

    >>> round(float(gelu(1.0, approximate=False)), 12)  # Phi(1) = 0.841344746068543
    0.841344746069
    """
    x = _inexact(x)
    if approximate:
        inner = (2 * math.sqrt(2 / math.pi)) * (x + 0.044715 * (x * x * x))
        return leave(x * special.logistic(inner))
    cdf = special.erfc(x * -math.sqrt(0.5))
    return leave(fnp.astype(0.5 * x * cdf, get_aval(x).dtype))


def hard_tanh(x: ArrayLike) -> Array:
    """-1 below -1, 1 above 1, x between (derivative 1 at +-1, as JAX's).

    >>> hard_tanh(np.array([-3.0, 0.5, 3.0]))
    array([-1. ,  0.5,  1. ])
    """
    x = _array(x)
    return leave(fnp.where(x > 1, 1, fnp.where(x < -1, -1, x)))


def glu(x: ArrayLike, axis: int = -1) -> Array:
    """The gated linear unit: `x` split in halves a, b along `axis`, a * sigmoid(b).

    >>> glu(np.array([2.0, 0.0]))
    array([1.])
    """
    x = _array(x)
    shape = get_aval(x).shape
    (ax,) = normalize_axes(axis, len(shape))
    if shape[ax] % 2:
        raise ValueError(f"fgrad.nn.glu: the size of axis {axis} must be even, to split it in halves; "
                         f"got shape {shape}")
    a, b = fnp.split(x, 2, axis=ax)
    return leave(a * sigmoid(b))


def mish(x: ArrayLike) -> Array:
    """x * tanh(softplus(x)).

    >>> mish(0.0)
    np.float64(0.0)
    """
    x = _array(x)
    return leave(x * fnp.tanh(softplus(x)))


def squareplus(x: ArrayLike, b: ArrayLike = 4) -> Array:
    """(x + sqrt(x**2 + b)) / 2, a smooth relu.

    >>> squareplus(0.0)
    np.float64(1.0)
    """
    x = _array(x)
    return leave((x + fnp.sqrt(fnp.square(x) + b)) / 2)


def hard_sigmoid(x: ArrayLike) -> Array:
    """relu6(x + 3) / 6.

    >>> hard_sigmoid(0.0)
    np.float64(0.5)
    """
    return leave(relu6(_array(x) + 3.0) / 6.0)


def hard_silu(x: ArrayLike) -> Array:
    """x * hard_sigmoid(x) (alias `hard_swish`).

    >>> hard_silu(3.0)
    np.float64(3.0)
    """
    x = _array(x)
    return leave(x * hard_sigmoid(x))


hard_swish = hard_silu


def sparse_plus(x: ArrayLike) -> Array:
    """0 up to -1, (x + 1)**2 / 4 between -1 and 1, x from 1.

    >>> sparse_plus(np.array([-2.0, 0.0, 2.0]))
    array([0.  , 0.25, 2.  ])
    """
    x = _array(x)
    return leave(fnp.where(x <= -1.0, 0.0, fnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4)))


def sparse_sigmoid(x: ArrayLike) -> Array:
    """(x + 1) / 2 clipped into [0, 1]: the derivative of sparse_plus.

    >>> sparse_sigmoid(np.array([-2.0, 0.0, 2.0]))
    array([0. , 0.5, 1. ])
    """
    return leave(0.5 * fnp.clip(_array(x) + 1.0, 0.0, 2.0))


# --- normalisations -----------------------------------------------------------------------


def _keeps(axes: tuple[int, ...]) -> bool:
    """Whether a reduction over `axes` must keep them to broadcast against its
    operand: not when they are the leading axes (the reduced shape is then the
    operand's trailing one), which spares a reshape (W9's softmax of 4 scalars)."""
    return axes != tuple(range(len(axes)))  # normalize_axes sorts them


def _shift(x: Any, axis: Axis, masked: bool) -> Any:
    """The maximum of `x` over `axis` (kept unless leading: `_keeps`; -inf for an empty axis), without a
    derivative (the results do not depend on it). Where entries are masked out
    (made -inf), a row with no finite maximum is shifted by 0 instead, so that
    its exp is 0, not nan."""
    # Taken of x without its derivative, so no transform works on the maximum's;
    # `initial` only for an empty axis (elsewhere it is one equation more, of no effect).
    shape = get_aval(x).shape
    axes = normalize_axes(axis, len(shape))
    empty = any(shape[a] == 0 for a in axes)
    x_max = fnp.max(ew.stop_gradient(x), axis, keepdims=_keeps(axes),
                    initial=-np.inf if empty else None)
    if masked:
        x_max = fnp.where(fnp.isfinite(x_max), x_max, 0.0)
    return x_max


def _total(e: Any, axis: Axis, masked: bool) -> Any:
    """The sum of `e` over `axis` (kept unless leading: `_keeps`); where entries are masked out, 1 for
    a row whose sum is 0 (nothing selected), so that its result (masked out in
    turn) and derivative are not nan."""
    total = fnp.sum(e, axis, keepdims=_keeps(normalize_axes(axis, len(get_aval(e).shape))))
    return fnp.where(total == 0, 1.0, total) if masked else total


def softmax(x: ArrayLike, axis: Axis = -1, where: ArrayLike | None = None) -> Array:
    """exp(x) / sum(exp(x)) over `axis` (an int, a tuple, or None for all),
    computed with x shifted by its maximum so that exp cannot overflow; over the
    entries `where` selects (broadcast with x), the others 0. An entry of +inf
    gives nan, as in JAX (inf / inf).

    >>> softmax(np.array([0.0, -np.inf]))
    array([1., 0.])
    """
    x = _inexact(x)
    if where is not None:
        x = fnp.where(where, x, -np.inf)
    masked = where is not None
    unnormalized = fnp.exp(x - _shift(x, axis, masked))
    result = unnormalized / _total(unnormalized, axis, masked)
    if where is not None:
        result = fnp.where(where, result, 0.0)
    return leave(result)


def log_softmax(x: ArrayLike, axis: Axis = -1, where: ArrayLike | None = None) -> Array:
    """x - logsumexp(x) over `axis`, accurate where softmax underflows; over the
    entries `where` selects (broadcast with x), the others -inf.

    >>> log_softmax(np.array([0.0, -1000.0]))
    array([    0., -1000.])
    """
    x = _inexact(x)
    if where is not None:
        x = fnp.where(where, x, -np.inf)
    masked = where is not None
    shifted = x - _shift(x, axis, masked)
    result = shifted - fnp.log(_total(fnp.exp(shifted), axis, masked))
    if where is not None:
        result = fnp.where(where, result, -np.inf)
    return leave(result)


def standardize(x: ArrayLike, axis: Axis = -1, mean: ArrayLike | None = None,
                variance: ArrayLike | None = None, epsilon: ArrayLike = 1e-5,
                where: ArrayLike | None = None) -> Array:
    """(x - mean) / sqrt(variance + epsilon), the mean and variance (as JAX,
    mean(x**2) - mean(x)**2) over `axis` of the entries `where` selects unless
    given. Every entry of x is standardized, selected or not.

    >>> standardize(np.array([1.0, 3.0]), epsilon=0.0)
    array([-1.,  1.])
    """
    x = _inexact(x)
    if where is None:
        average = lambda v: fnp.mean(v, axis, keepdims=True)
    else:
        mask = fnp.broadcast_to(where, get_aval(x).shape)
        count = fnp.sum(mask, axis, keepdims=True)
        average = lambda v: fnp.sum(v, axis, keepdims=True, where=mask) / count
    if mean is None:
        mean = average(x)
    if variance is None:
        variance = average(fnp.square(x)) - fnp.square(mean)
    return leave((x - mean) / fnp.sqrt(variance + epsilon))


def one_hot(x: ArrayLike, num_classes: int, *, dtype: Any = np.float64, axis: int = -1) -> Array:
    """One-hot vectors of the indices `x`, along a new axis `axis` of size
    `num_classes`: 1 at the index, 0 elsewhere, and all 0 for an index outside
    [0, num_classes) (negative ones included).

    >>> one_hot(np.array([0, 2, -1]), 3)
    array([[1., 0., 0.],
           [0., 0., 1.],
           [0., 0., 0.]])
    """
    try:
        n = operator.index(num_classes)
    except TypeError:
        raise TypeError(f"fgrad.nn.one_hot: num_classes must be an int known when it is called (it sets the "
                        f"shape), got {num_classes!r}; pass it as a static argument under jit") from None
    if n < 0:
        raise ValueError(f"fgrad.nn.one_hot: num_classes must be non-negative, got {n}")
    x = _array(x)
    ndim = get_aval(x).ndim
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"fgrad.nn.one_hot: axis {axis} is out of bounds for the result, of {ndim + 1} "
                         f"dimensions")
    ax = axis % (ndim + 1)
    classes = np.arange(n).reshape([n if i == ax else 1 for i in range(ndim + 1)])
    return leave(fnp.astype(fnp.expand_dims(x, ax) == classes, dtype))
