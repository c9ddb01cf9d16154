"""Keys: making them (`key`, `PRNGKey`), deriving new ones (`split`, `fold_in`),
checking them, and the raw bits of one (`bits`).

A key is a uint64 array of shape (2,), the key of NumPy's `numpy.random.Philox`;
a batch of keys is an array of shape ``(..., 2)``. Every sampler takes one key
and checks it here. The bits come from the primitives of
`fgrad.primitives.random`, so they are traced under jit and make_jaxpr and
batched under vmap; this module knows nothing of distributions.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..core.avals import get_aval
from ..core.trace import EVAL_TRACE, Tracer, ctx
from ..numpy.operands import Array, ArrayLike, operand
from ..primitives import random as prim

__all__ = [
    "key", "PRNGKey", "split", "fold_in", "key_data", "wrap_key_data", "bits", "check_key", "check_shape",
    "leave",
]

_KEY_HELP = ("a key is a uint64 array of shape (2,), made by fgrad.random.key(seed) "
             "(split or fold_in a key for more keys)")
_WORD = 1 << 64


def check_key(key: Any, function: str) -> Any:
    """`key` as an array if it is one key; TypeError saying what a key is otherwise.

    >>> check_key(key(1), "normal")
    array([1, 0], dtype=uint64)
    """
    key = operand(key)
    aval = get_aval(key)
    if aval.dtype == prim.KEY_DTYPE and aval.shape == (2,):
        return key
    hint = ""
    if aval.dtype == prim.KEY_DTYPE and aval.ndim > 1 and aval.shape[-1] == 2:
        hint = " This is a batch of keys: map the function over it with fgrad.vmap."
    elif aval.dtype == prim.KEY_DTYPE and aval.ndim == 0:
        hint = (" This is one word of a key: vmap over a single key maps over its two words. Map over "
                "keys made by fgrad.random.split(key, n) instead, or pass the key with in_axes=None.")
    elif aval.dtype == np.uint32:
        hint = " (JAX's uint32 keys are not fgrad keys: fgrad's streams are NumPy's Philox.)"
    raise TypeError(f"fgrad.random.{function}: expected a key, got {aval.str_short()}; {_KEY_HELP}.{hint}")


def check_shape(shape: int | Sequence[int], function: str) -> tuple[int, ...]:
    """`shape` as a tuple of non-negative ints (an int n is (n,), as in NumPy).

    >>> check_shape(3, "normal")
    (3,)
    """
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        dims = tuple(operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"fgrad.random.{function}: shape must be a tuple of ints, got {shape!r}") from None
    if any(n < 0 for n in dims):
        raise ValueError(f"fgrad.random.{function}: shape must not have negative sizes, got {dims}")
    return dims


def leave(x: Any) -> Any:
    """A result as it leaves fgrad: a 0-d array as a NumPy scalar (as fgrad.numpy's and
    jit's results are), anything else as it is.

    >>> leave(np.asarray(2.0))
    np.float64(2.0)
    """
    return x[()] if type(x) is np.ndarray and x.ndim == 0 else x


def _is_traced(x: Any) -> bool:
    return ctx.trace is not EVAL_TRACE and isinstance(x, Tracer)


def _integer(x: Any, function: str, name: str) -> Any:
    """`x` as a 0-d integer: a Python int, or a (traced) integer array."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return int(x)
    aval = get_aval(operand(x))
    if aval.dtype.kind not in "iu" or aval.ndim != 0:
        raise TypeError(f"fgrad.random.{function}: {name} must be an integer scalar, got {aval.str_short()}")
    return int(np.asarray(x)) if not _is_traced(x) else x


def key(seed: int | ArrayLike) -> Array:
    """A key from an integer seed: the words ``(seed mod 2**64, (seed >> 64) mod 2**64)``.
    The seed may be traced (under jit or vmap).

    >>> key(0)
    array([0, 0], dtype=uint64)
    >>> key(-1)
    array([18446744073709551615, 18446744073709551615], dtype=uint64)
    """
    seed = _integer(seed, "key", "seed")
    if isinstance(seed, int):
        if not -(1 << 127) <= seed < 1 << 128:
            raise ValueError(f"fgrad.random.key: seed must fit in 128 bits, got {seed}")
        return np.array([seed % _WORD, (seed >> 64) % _WORD], prim.KEY_DTYPE)
    low = fnp.astype(seed, prim.KEY_DTYPE)  # two's complement: seed mod 2**64
    if get_aval(seed).dtype.kind == "u":
        high = fnp.zeros((), prim.KEY_DTYPE)
    else:
        high = fnp.where(seed < 0, np.uint64(_WORD - 1), np.uint64(0))
    return fnp.stack([low, high])


def PRNGKey(seed: int | ArrayLike) -> Array:  # noqa: N802 (JAX's name)
    """JAX's older name of `key`: the same keys.

    >>> PRNGKey(3)
    array([3, 0], dtype=uint64)
    """
    return key(seed)


def key_data(keys: ArrayLike) -> Array:
    """The words of a key or a batch of keys ``(..., 2)``: the keys themselves
    (fgrad's keys are their uint64 data).

    >>> key_data(key(7))
    array([7, 0], dtype=uint64)
    """
    keys = operand(keys)
    aval = get_aval(keys)
    if aval.dtype != prim.KEY_DTYPE or aval.ndim < 1 or aval.shape[-1] != 2:
        raise TypeError(f"fgrad.random.key_data: expected keys of shape (..., 2), got {aval.str_short()}; "
                        f"{_KEY_HELP}.")
    return keys


def wrap_key_data(data: ArrayLike) -> Array:
    """Keys from their words, a uint64 array ``(..., 2)`` (as `key_data` gives).

    >>> wrap_key_data(np.array([7, 0], np.uint64))
    array([7, 0], dtype=uint64)
    """
    try:
        return key_data(data)
    except TypeError:
        raise TypeError(f"fgrad.random.wrap_key_data: expected uint64 data of shape (..., 2), got "
                        f"{get_aval(operand(data)).str_short()}; {_KEY_HELP}.") from None


def split(key: ArrayLike, num: int | Sequence[int] = 2) -> Array:
    """`num` new keys from `key` (`num` an int, or a shape: keys of that shape),
    independent of one another. As in JAX, use a key either to draw samples or
    to split it, not both: the new keys are words of `key`'s own stream.

    >>> split(key(0)).shape
    (2, 2)
    """
    key = check_key(key, "split")
    shape = check_shape(num, "split")
    return prim.random_bits(key, shape=(*shape, 2), dtype=prim.KEY_DTYPE)


def fold_in(key: ArrayLike, data: int | ArrayLike) -> Array:
    """A new key from `key` and an integer `data` (mod 2**64; it may be traced):
    different data give independent keys, also independent of `key`'s stream.

    >>> fold_in(key(0), 1).dtype
    dtype('uint64')
    """
    key = check_key(key, "fold_in")
    data = _integer(data, "fold_in", "data")
    words = np.uint64(data % _WORD) if isinstance(data, int) else fnp.astype(data, prim.KEY_DTYPE)
    return prim.random_fold_in(key, words)


def bits(key: ArrayLike, shape: int | Sequence[int] = (), dtype: Any = np.uint32) -> Array:
    """Random bits as unsigned integers of `dtype` (uint8 to uint64): the start of
    the Philox stream of `key`, the counter from 0.

    >>> bits(key(0), (2,), np.uint64).dtype
    dtype('uint64')
    """
    key = check_key(key, "bits")
    shape = check_shape(shape, "bits")
    dt = np.dtype(dtype)
    if dt not in prim.BITS_DTYPES:
        raise TypeError(f"fgrad.random.bits: dtype must be an unsigned integer type (uint8, uint16, uint32 "
                        f"or uint64), got {dt}")
    return leave(prim.random_bits(key, shape=shape, dtype=dt))
