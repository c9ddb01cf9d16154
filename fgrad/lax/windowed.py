"""Windowed reductions, as JAX's lax: `reduce_window` (max, sum and average
pooling), `reduce_window_shape_tuple`, `padtype_to_pads`, and the binary
operations JAX programs pass as its `computation`: `add`, `max`, `min`, `mul`.

`reduce_window` takes the operand's windows (`window_patches`,
primitives/windows.py: a view, no copy) and reduces their window axes with
the reduction primitive of the monoid: `reduce_sum` for `add`, `reduce_max`
and `reduce_min` for `max` and `min`, `reduce_prod` for `mul`. Positions that
padding or base dilation put into a window hold the monoid's identity (they
take no part, as in XLA's ReduceWindow), and the result is combined with
`init_value` once, unless it is the identity (0 for add, -inf for max). So
derivatives are those of the reductions: the gradient of max pooling goes to
the window's maximum, shared equally between tied maxima (reduce_max's rule,
JAX's convention for reductions; XLA's max pooling gives it all to one of
them: both are subgradients). Any other `computation` (a Python function of
two arrays, or of two pytrees for pytrees of operands) is folded over the
window elements one at a time, from `init_value` (padding skipped by a
select), and differentiated through.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..api.pytree import tree_flatten, tree_unflatten
from ..core.avals import get_aval
from ..numpy import shaping, ufuncs
from ..numpy.operands import Array, ArrayLike, concrete_value, shape_of
from ..numpy.operands import operand as as_operand
from ..primitives import elementwise as ew
from ..primitives import reductions as red
from ..primitives import windows

__all__ = ["reduce_window", "reduce_window_shape_tuple", "padtype_to_pads", "add", "max", "min", "mul"]


def add(x: ArrayLike, y: ArrayLike) -> Array:
    """`x + y` elementwise (JAX's `lax.add`; the operands broadcast as NumPy's).

    >>> import fgrad.lax
    >>> fgrad.lax.add(1.0, 2.0)
    np.float64(3.0)
    """
    return ufuncs.add(x, y)


def mul(x: ArrayLike, y: ArrayLike) -> Array:
    """`x * y` elementwise (JAX's `lax.mul`).

    >>> import fgrad.lax
    >>> fgrad.lax.mul(2.0, 3.0)
    np.float64(6.0)
    """
    return ufuncs.multiply(x, y)


def max(x: ArrayLike, y: ArrayLike) -> Array:  # noqa: A001 (JAX's name)
    """The larger of `x` and `y` elementwise, nan if either is (JAX's `lax.max`).

    >>> import fgrad.lax
    >>> fgrad.lax.max(1.0, 2.0)
    np.float64(2.0)
    """
    return ufuncs.maximum(x, y)


def min(x: ArrayLike, y: ArrayLike) -> Array:  # noqa: A001 (JAX's name)
    """The smaller of `x` and `y` elementwise, nan if either is (JAX's `lax.min`).

    >>> import fgrad.lax
    >>> fgrad.lax.min(1.0, 2.0)
    np.float64(1.0)
    """
    return ufuncs.minimum(x, y)


# computation -> (the reduction over window axes, the monoid's identity for a dtype)
_MONOIDS: dict[Any, tuple[Callable[..., Any], Callable[[np.dtype], Any]]] = {}
for _fns, _reduce, _identity in (
    ((add, ufuncs.add), red.reduce_sum, lambda dtype: 0),
    ((mul, ufuncs.multiply), red.reduce_prod, lambda dtype: 1),
    ((max, ufuncs.maximum), red.reduce_max,
     lambda dtype: -np.inf if dtype.kind in "fc" else (False if dtype.kind == "b" else np.iinfo(dtype).min)),
    ((min, ufuncs.minimum), red.reduce_min,
     lambda dtype: np.inf if dtype.kind in "fc" else (True if dtype.kind == "b" else np.iinfo(dtype).max)),
):
    for _fn in _fns:
        _MONOIDS[_fn] = (_reduce, _identity)


def ints_of(name: str, value: Any, n: int, function: str) -> tuple[int, ...]:
    """`value` as a tuple of `n` ints, or the TypeError that says what was given."""
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"{function}: {name} must be a sequence of {n} integers, got {value!r}") from None
    if len(out) != n:
        raise TypeError(f"{function}: {name} must have {n} entries (one per dimension), got {value!r}")
    return out


def pads_of(padding: Any, n: int, function: str) -> tuple[tuple[int, int], ...]:
    """Explicit padding as a tuple of `n` (low, high) int pairs, or a ValueError."""
    try:
        pads = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise ValueError(f"{function}: padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence of "
                         f"(low, high) integer pairs, got {padding!r}") from None
    if len(pads) != n:
        raise ValueError(f"{function}: padding must have {n} (low, high) pairs (one per dimension), "
                         f"got {len(pads)}: {padding!r}")
    return pads


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int], window_strides: Sequence[int],
                    padding: str) -> list[tuple[int, int]]:
    """The explicit (low, high) padding of each dimension that `padding` means
    (JAX's `lax.padtype_to_pads`): 'VALID' none; 'SAME' (or 'SAME_LOWER') as much as
    makes ``ceil(in / stride)`` windows, split evenly, the odd one at the end (at the start).

    >>> import fgrad.lax
    >>> fgrad.lax.padtype_to_pads((5, 4), (3, 3), (2, 1), "SAME")
    [(1, 1), (1, 1)]
    """
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "SAME_LOWER", "VALID"):
        raise ValueError(f"padding must be 'SAME', 'SAME_LOWER' or 'VALID', got {padding!r}")
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-int(n) // int(s))
        total = builtins.max((out - 1) * int(s) + int(w) - int(n), 0)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return pads


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[tuple[int, int]],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> tuple[int, ...]:
    """The shape of `reduce_window`'s result (JAX's `lax.reduce_window_shape_tuple`;
    `padding` explicit: see `padtype_to_pads`).

    >>> import fgrad.lax
    >>> fgrad.lax.reduce_window_shape_tuple((1, 28, 28, 8), (1, 2, 2, 1), (1, 2, 2, 1), [(0, 0)] * 4)
    (1, 14, 14, 8)
    """
    n = len(operand_shape)
    return windows.window_shape(tuple(int(s) for s in operand_shape), window_dimensions, window_strides,
                                padding, (1,) * n if base_dilation is None else base_dilation,
                                (1,) * n if window_dilation is None else window_dilation)


def reduce_window(operand: Any, init_value: Any, computation: Callable[..., Any],
                  window_dimensions: Sequence[int], window_strides: Sequence[int],
                  padding: str | Sequence[tuple[int, int]], base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """`computation` reduced over each window of `operand`, from `init_value`
    (JAX's `lax.reduce_window`): max pooling is ``reduce_window(x, -inf, lax.max,
    ...)``, sum pooling ``reduce_window(x, 0., lax.add, ...)``.

    One entry of `window_dimensions`, `window_strides` (and of the dilations)
    per dimension of `operand`; `padding` is 'SAME', 'SAME_LOWER', 'VALID' or
    (low, high) pairs. As XLA, positions of padding (and of base dilation's
    holes) take no part, and `init_value` is taken in once. `lax.add`,
    `lax.max`, `lax.min` and `lax.mul` (or NumPy's names for them) reduce with
    one primitive; any other computation is applied to the window elements one
    after another. A pytree of operands needs as many init values and a
    computation of two such pytrees.

    >>> import fgrad.lax
    >>> import numpy as np
    >>> x = np.arange(16.0).reshape(4, 4)
    >>> fgrad.lax.reduce_window(x, -np.inf, fgrad.lax.max, (2, 2), (2, 2), "VALID")
    array([[ 5.,  7.],
           [13., 15.]])
    """
    leaves, tree = tree_flatten(operand)
    inits, init_tree = tree_flatten(init_value)
    if init_tree != tree:
        raise ValueError(f"reduce_window: the operands and init values must have the same tree structure, "
                         f"got {tree} and {init_tree}")
    if not leaves:
        raise ValueError("reduce_window needs at least one operand")
    leaves = [as_operand(x) for x in leaves]
    inits = [as_operand(init) for init in inits]
    for init in inits:
        if get_aval(init).shape != ():
            raise TypeError(f"reduce_window: init values must be scalars, got one of shape "
                            f"{get_aval(init).shape}")
    shape = shape_of(leaves[0])
    n = len(shape)
    for x in leaves[1:]:
        if shape_of(x) != shape:
            raise ValueError(f"reduce_window: operands of shapes {[shape_of(x) for x in leaves]} must have "
                             "the same shape")
    name = "reduce_window"
    window_dimensions = ints_of("window_dimensions", window_dimensions, n, name)
    window_strides = ints_of("window_strides", window_strides, n, name)
    base_dilation = (1,) * n if base_dilation is None else ints_of("base_dilation", base_dilation, n, name)
    window_dilation = (1,) * n if window_dilation is None else ints_of(
        "window_dilation", window_dilation, n, name)
    if isinstance(padding, str):
        spans = [windows.dilate_dim(w, d) for w, d in zip(window_dimensions, window_dilation)]
        pads = tuple(padtype_to_pads(shape, spans, window_strides, padding))
    else:
        pads = pads_of(padding, n, name)
    # Only the axes whose windows do something are windowed; the others pass through.
    axes = tuple(a for a in range(n) if window_dimensions[a] != 1 or window_strides[a] != 1
                 or pads[a] != (0, 0) or base_dilation[a] != 1)
    per_axis = {"window_dimensions": window_dimensions, "window_strides": window_strides, "padding": pads,
                "base_dilation": base_dilation, "window_dilation": window_dilation}
    params: dict[str, Any] = {"axes": axes, **{k: tuple(v[a] for a in axes) for k, v in per_axis.items()}}
    filled = any(p != (0, 0) for p in params["padding"]) or any(d != 1 for d in params["base_dilation"])
    mask = windows.patches_mask(shape, **params) if filled else None
    patches = [windows.window_patches(x, **params) if axes else x for x in leaves]
    monoid = _MONOIDS.get(computation) if tree.node is None else None  # one array, not a pytree of them
    if monoid is not None:
        return _monoid_reduce(patches[0], inits[0], mask, monoid, computation, n, len(axes))
    acc = [_init_for(x, init) for x, init in zip(leaves, inits)]
    for offset in np.ndindex(*params["window_dimensions"]):
        key = (Ellipsis, *offset)
        present = None if mask is None else mask[key]
        if present is not None and not present.any():
            continue  # padding everywhere: no element to take in
        element = tree_unflatten(tree, [p[key] for p in patches])
        new, new_tree = tree_flatten(computation(tree_unflatten(tree, acc), element))
        if new_tree != tree:
            raise ValueError(f"reduce_window: the computation must return the operands' tree structure "
                             f"{tree}, got {new_tree}")
        if present is not None and not present.all():  # padding skipped, as XLA does
            new = [ufuncs.where(present, y, a) for y, a in zip(new, acc)]
        acc = new
    out_shape = shape_of(patches[0])[:n]
    return tree_unflatten(tree, [_fit(shaping.broadcast_to(y, out_shape), x) for y, x in zip(acc, leaves)])


def _init_for(x: Any, init: Any) -> Any:
    """`init` (a scalar) in `x`'s dtype; a TypeError for one of another dtype (as JAX's)."""
    aval, x_dtype = get_aval(init), get_aval(x).dtype
    if ufuncs.result_type(x, init) != x_dtype:
        raise TypeError(f"reduce_window: an init value of dtype {aval.dtype} does not fit an operand of "
                        f"dtype {x_dtype}: give it in the operand's dtype")
    return init if aval.dtype == x_dtype else ew.convert_element_type(init, new_dtype=x_dtype)


def _is(value: Any, target: Any) -> bool:
    """Whether `value` is concretely `target` (False when it is traced)."""
    known = concrete_value(value, None)
    return known is not None and bool(np.asarray(known) == target)


def _monoid_reduce(patches: Any, init: Any, mask: Any, monoid: Any, computation: Any, ndim: int,
                   k: int) -> Any:
    """The monoid's reduction over the window axes (the last `k` of `patches`),
    padding filled with the monoid's identity, combined with `init` once. An
    init value that is the identity (by value, as JAX: 0 for add whatever its
    dtype) is not combined at all."""
    reduce, identity = monoid
    dtype = get_aval(patches).dtype
    neutral = _is(init, identity(dtype))
    if mask is not None and reduce is not red.reduce_sum:  # padded zeros are already add's identity
        patches = ufuncs.where(mask, patches, identity(dtype))
    out = reduce(patches, axes=tuple(range(ndim, ndim + k))) if k else patches
    if not neutral:
        out = computation(out, _init_for(patches, init))
    return _fit(out, patches)


def _fit(y: Any, like: Any) -> Any:
    """`y` in `like`'s dtype (a reduction may widen: NumPy sums bools as ints)."""
    dtype = get_aval(like).dtype
    return y if get_aval(y).dtype == dtype else ew.convert_element_type(y, new_dtype=dtype)

