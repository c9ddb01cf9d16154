"""Reductions over a tuple of axes (reduce_sum, reduce_prod, reduce_max,
reduce_min, reduce_and, reduce_or, two_norm), over one axis (argmax, argmin),
and the cumulative operations along one axis (cumsum, cumprod).

The axes are normalized (non-negative, sorted) by the NumPy layer, which also
implements `keepdims` with a reshape. reduce_sum and cumsum are linear; their
transposes broadcast the cotangent back and sum it in the opposite direction.
reduce_max/min share one jvp: the tangent at the locations of the extremum,
averaged over ties (JAX's convention). Products never divide by the input, so
their derivatives are right where elements are zero: reduce_prod multiplies
exclusive cumulative products from both ends, and cumprod's jvp is the
product rule run as a scan. two_norm, sqrt(sum |x|^2), is one primitive
rather than the six of its formula guarded at 0, because norms run in Python
loops (`while norm(b) < 1000`) where each primitive's overhead counts.
Boolean and index results carry no derivative.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, cached_aval, get_aval
from ..core.libraries import cast, dtype_of
from ..core.rules import Linearization, batch_rules, jvp_rules, reduce_rules, transpose_rules, unroll_rules
from ..core.trace import Primitive
from ..ir.jaxpr import Literal
from ..ir.unroll import positions
from . import batching, indexing, linalg, shapes
from . import derivatives as d
from . import elementwise as ew

__all__ = [
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or", "two_norm", "argmax",
    "argmin", "cumsum", "cumprod", "kept_shape", "check_axes",
]


def kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with the reduced axes kept as size 1."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def check_axes(x: ShapedArray, axes: tuple[int, ...]) -> None:
    """The ValueError of a primitive given an axis (normalized: non-negative) that `x` does not have."""
    if any(not 0 <= a < x.ndim for a in axes):
        shown = axes[0] if len(axes) == 1 else axes
        raise ValueError(f"axis {shown} is out of bounds for an array of dimension {x.ndim}")


@functools.cache
def _reduction_dtype(np_fn: Callable[..., Any], dtype: np.dtype) -> np.dtype:
    return np_fn(np.zeros(1, dtype)).dtype


def _reduction(
    name: str, np_fn: Callable[..., Any], ufunc: np.ufunc, empty_ok: bool
) -> Primitive:
    """The namespace's reduction of NumPy's name `np_fn.__name__` over `axes`,
    in the dtype NumPy's gives, which the standard's does not always: its sum
    of int32 may be int32, and it neither sums nor orders booleans, which are
    cast to the result's integer dtype for sums and products, and reduced with
    any/all for max/min. On NumPy's arrays, the ufunc's reduce."""
    @cached_aval
    def abstract_eval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        check_axes(x, axes)
        if not empty_ok and any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation {np_fn.__name__} "
                             "which has no identity")
        shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, _reduction_dtype(np_fn, x.dtype))

    standard = np_fn.__name__  # the Array API's name: sum, prod, max, min, all, any

    def impl(xp: Any, x: Any, *, axes: tuple[int, ...]) -> Any:
        dtype = abstract_eval(get_aval(x), axes=axes).dtype
        if standard in ("sum", "prod"):
            return getattr(xp, standard)(cast(xp, x, dtype), axis=axes, dtype=dtype_of(xp, dtype))
        x = cast(xp, x)
        if dtype.kind == "b" and standard in ("max", "min"):
            return (xp.any if standard == "max" else xp.all)(x, axis=axes)
        return getattr(xp, standard)(x, axis=axes)

    reduce = ufunc.reduce

    def numpy_impl(x: Any, *, axes: tuple[int, ...]) -> Any:
        # The ufunc's reduce skips numpy.sum's Python wrapper; numpy.sum itself
        # is kept for the small integer and bool dtypes it widens.
        if getattr(x, "dtype", None) is not None and x.dtype.kind in "fc":
            return reduce(x, axis=axes)
        return np_fn(x, axis=axes)

    return Primitive(name, impl, abstract_eval, numpy=numpy_impl)


reduce_sum_p = _reduction("reduce_sum", np.sum, np.add, empty_ok=True)
d.deflinear(reduce_sum_p)


def _reduce_sum_transpose(ct: Any, x: Any, *, axes: tuple[int, ...]) -> list[Any]:
    shape = x.aval.shape
    return [shapes.broadcast_to(shapes.reshape(ct, new_shape=kept_shape(shape, axes)), shape=shape)]


transpose_rules[reduce_sum_p] = _reduce_sum_transpose

reduce_max_p = _reduction("reduce_max", np.max, np.maximum, empty_ok=False)
reduce_min_p = _reduction("reduce_min", np.min, np.minimum, empty_ok=False)


def _chooser_jvp(prim: Primitive) -> Callable[..., Any]:
    def jvp(primals: list[Any], tangents: list[Any], *, axes: tuple[int, ...]) -> tuple[Any, Any]:
        (x,), (g,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        at_extremum = ew.eq(x, shapes.reshape(ans, new_shape=kept_shape(x.shape, axes)))
        weights = ew.convert_element_type(at_extremum, new_dtype=get_aval(g).dtype)
        weights = ew.div(weights, shapes.reshape(reduce_sum(weights, axes=axes),
                                                 new_shape=kept_shape(x.shape, axes)))
        return ans, reduce_sum(ew.mul(g, weights), axes=axes)

    return jvp


jvp_rules[reduce_max_p] = _chooser_jvp(reduce_max_p)
jvp_rules[reduce_min_p] = _chooser_jvp(reduce_min_p)


def _reduction_batch(prim: Primitive) -> Callable[..., Any]:
    def rule(args: list[Any], dims: list[Any], *, axes: tuple[int, ...]) -> tuple[Any, int]:
        (x,), (dim,) = args, dims
        actual = tuple(batching.batched_axis(a, dim) for a in axes)
        return prim.bind(x, axes=actual), dim - sum(a < dim for a in actual)

    return rule


for _p in (reduce_sum_p, reduce_max_p, reduce_min_p):
    batch_rules[_p] = _reduction_batch(_p)
reduce_rules.update({reduce_sum_p: np.add, reduce_max_p: np.maximum, reduce_min_p: np.minimum})



def _reduction_unroll(combine: Primitive, from_zero: bool) -> Callable[..., Any]:
    """The unroll rule of a reduction: the elements of each result combined in
    turn, in C order over the reduced axes, as NumPy does for a few elements
    (a sum of more than seven is pairwise in NumPy: not unrolled). A float
    sum starts from 0.0, as NumPy's does (so that a sum of -0.0 is 0.0)."""

    def rule(elements: list[list[Any]], avals: list[ShapedArray], emit: Callable[..., Any], *,
             axes: tuple[int, ...]) -> list[list[Any]] | None:
        (xs,), (x,) = elements, avals
        if from_zero and x.dtype.kind == "b":
            return None  # a sum of bools counts them, in an int
        kept = [i for i in range(x.ndim) if i not in axes]
        groups = positions(x.shape).transpose(*kept, *axes).reshape(-1, math.prod(x.shape[a] for a in axes))
        if groups.shape[1] == 0 or (from_zero and groups.shape[1] > 7):
            return None
        outs = []
        for group in groups.tolist():
            acc = xs[group[0]]
            if from_zero and x.dtype.kind == "f":
                acc = emit(combine, Literal(x.dtype.type(0.0), ShapedArray((), x.dtype)), acc)
            for k in group[1:]:
                acc = emit(combine, acc, xs[k])
            outs.append(acc)
        return [outs]

    return rule


unroll_rules[reduce_sum_p] = _reduction_unroll(ew.add_p, from_zero=True)
unroll_rules[reduce_max_p] = _reduction_unroll(ew.max_p, from_zero=False)
unroll_rules[reduce_min_p] = _reduction_unroll(ew.min_p, from_zero=False)

reduce_sum: Callable[..., Any] = reduce_sum_p.bind
reduce_max: Callable[..., Any] = reduce_max_p.bind
reduce_min: Callable[..., Any] = reduce_min_p.bind


# --- the 2-norm -------------------------------------------------------------------


@cached_aval
def _two_norm_aval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
    check_axes(x, axes)
    shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    dtype = np.empty(0, x.dtype).real.dtype if x.dtype.kind in "fc" else np.dtype(np.float64)
    return ShapedArray(shape, dtype)


def _two_norm_impl(x: Any, *, axes: tuple[int, ...]) -> Any:
    # As numpy.linalg.norm computes it: integers as float64, a dot product when
    # every axis is reduced (NumPy's axis=None), else a sum of squares.
    if type(x) is np.ndarray and x.ndim == 1 and axes and x.dtype.kind == "f":  # a vector
        return np.sqrt(x.dot(x))
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(np.float64)
    if len(axes) == x.ndim:
        x = x.ravel()
        if x.dtype.kind == "c":
            re, im = x.real, x.imag
            return np.sqrt(re.dot(re) + im.dot(im))
        return np.sqrt(x.dot(x))
    squares = (x.conj() * x).real if x.dtype.kind == "c" else x * x
    return np.sqrt(np.add.reduce(squares, axis=axes))


def _two_norm(xp: Any, x: Any, *, axes: tuple[int, ...]) -> Any:
    # sqrt(sum |x|^2), NumPy's formula (numpy.linalg.norm's, integers as float64).
    complex_ = get_aval(x).dtype.kind == "c"
    x = cast(xp, x, None if complex_ else _two_norm_aval(get_aval(x), axes=axes).dtype)
    if complex_:
        re, im = xp.real(x), xp.imag(x)
        squares = re * re + im * im
    else:
        squares = x * x
    return xp.sqrt(xp.sum(squares, axis=axes))


two_norm_p = Primitive("two_norm", _two_norm, _two_norm_aval, numpy=_two_norm_impl)


def _two_norm_tangent(apply: Callable[..., Any], ans: Any, x: Any, g: Any, axes: tuple[int, ...]) -> Any:
    """d|x| = Re(sum(conj(x) g)) / |x|, taken as 0 where |x| = 0 (where the sum is 0
    too). `apply(prim, args, params)` applies the operations on the tangent `g`.
    Scaling by 1/|x| rather than dividing keeps forward and reverse mode to the
    same roundings."""
    scale = ew.div(1.0, ew.add(ans, ew.eq(ans, 0)))  # 1/|x|, or 1 where |x| = 0: cheaper than a where
    aval = get_aval(x)
    if aval.dtype.kind == "c":
        t = apply(ew.real_p, [apply(ew.mul_p, [g, ew.conj(x)], {})], {})
        t = apply(reduce_sum_p, [t], {"axes": axes})
    elif aval.ndim == 1 and axes:  # a vector: its dot product with x, one equation
        t = apply(linalg.matmul_p, [g, x], {})
    else:
        t = apply(reduce_sum_p, [apply(ew.mul_p, [g, x], {})], {"axes": axes})
    return apply(ew.mul_p, [t, scale], {})


def _bind(prim: Primitive, args: list[Any], params: dict[str, Any]) -> Any:
    return prim.bind(*args, **params)


def _two_norm_jvp(primals: list[Any], tangents: list[Any], *, axes: tuple[int, ...]) -> tuple[Any, Any]:
    (x,), (g,) = primals, tangents
    ans = two_norm(x, axes=axes)
    return ans, _two_norm_tangent(_bind, ans, x, g, axes)


def _two_norm_linearize(trace: Any, primals: list[Any], tangents: list[Any], *,
                        axes: tuple[int, ...]) -> tuple[Any, Any]:
    # The same tangent, its equations recorded straight into the linear jaxpr:
    # a norm whose result only steers control flow costs little more than its
    # value.
    (x,), (g,) = primals, tangents
    ans = two_norm(x, axes=axes)
    return ans, _two_norm_tangent(trace.stage, ans, x, g, axes)


jvp_rules[two_norm_p] = Linearization(_two_norm_jvp, _two_norm_linearize)
batch_rules[two_norm_p] = _reduction_batch(two_norm_p)
two_norm: Callable[..., Any] = two_norm_p.bind


# --- products -------------------------------------------------------------------

reduce_prod_p = _reduction("reduce_prod", np.prod, np.multiply, empty_ok=True)


def _shift(x: Any, step: int, axis: int, reverse: bool, fill: float) -> Any:
    """`x` moved `step` places along `axis` (towards the end, or the start if
    `reverse`), the vacated places filled with `fill`: out[i] = x[i - step]."""
    aval = get_aval(x)
    n = aval.shape[axis]
    pad = np.full(aval.shape[:axis] + (min(step, n),) + aval.shape[axis + 1:], fill, aval.dtype)
    if step >= n:
        return pad
    kept = slice(step, None) if reverse else slice(0, n - step)
    kept_part = indexing.getitem(x, idx=indexing.StaticIndex((*(slice(None),) * axis, kept)))
    return shapes.concatenate(*((kept_part, pad) if reverse else (pad, kept_part)), axis=axis)


def _others_product(x: Any, axis: int) -> Any:
    """For each element, the product of the other elements along `axis`: the
    exclusive cumulative products from the start and from the end, multiplied."""
    before = _shift(cumprod(x, axis=axis, reverse=False), 1, axis, False, 1)
    after = _shift(cumprod(x, axis=axis, reverse=True), 1, axis, True, 1)
    return ew.mul(before, after)


def _others_product_over(x: Any, axes: tuple[int, ...]) -> Any:
    """`_others_product` over several axes: they are moved to the end and flattened into one."""
    if len(axes) == 1:
        return _others_product(x, axes[0])
    shape = get_aval(x).shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    perm = kept + axes
    moved = shapes.transpose(x, axes=perm)
    n = math.prod(shape[a] for a in axes)
    flat = shapes.reshape(moved, new_shape=tuple(shape[i] for i in kept) + (n,))
    others = shapes.reshape(_others_product(flat, len(kept)), new_shape=get_aval(moved).shape)
    return shapes.transpose(others, axes=tuple(int(i) for i in np.argsort(perm)))


def _reduce_prod_jvp(primals: list[Any], tangents: list[Any], *, axes: tuple[int, ...]) -> tuple[Any, Any]:
    (x,), (g,) = primals, tangents
    ans = reduce_prod(x, axes=axes)
    if not axes:  # nothing reduced: the identity
        return ans, g
    return ans, reduce_sum(ew.mul(g, _others_product_over(x, axes)), axes=axes)


jvp_rules[reduce_prod_p] = _reduce_prod_jvp


# --- all, any ---------------------------------------------------------------------

reduce_and_p = _reduction("reduce_and", np.all, np.logical_and, empty_ok=True)
reduce_or_p = _reduction("reduce_or", np.any, np.logical_or, empty_ok=True)
d.defnojvp(reduce_and_p)
d.defnojvp(reduce_or_p)

for _p in (reduce_prod_p, reduce_and_p, reduce_or_p):
    batch_rules[_p] = _reduction_batch(_p)


# --- argmax, argmin over one axis -----------------------------------------------------

def _index_reduction(name: str) -> Primitive:
    def abstract_eval(x: ShapedArray, *, axis: int) -> ShapedArray:
        check_axes(x, (axis,))
        if x.shape[axis] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        return ShapedArray(x.shape[:axis] + x.shape[axis + 1:], indexing.INDEX_DTYPE)

    def impl(xp: Any, x: Any, *, axis: int) -> Any:
        # The standard orders no booleans: as uint8.
        x = cast(xp, x, np.dtype(np.uint8) if get_aval(x).dtype.kind == "b" else None)
        return cast(xp, getattr(xp, name)(x, axis=axis), indexing.INDEX_DTYPE)

    def numpy_impl(x: Any, *, axis: int) -> Any:
        return getattr(np.asarray(x), name)(axis=axis)  # the method: no Python wrapper

    prim = Primitive(name, impl, abstract_eval, numpy=numpy_impl)
    d.defnojvp(prim)

    def batch(args: list[Any], dims: list[Any], *, axis: int) -> tuple[Any, int]:
        (x,), (dim,) = args, dims
        return prim.bind(x, axis=batching.batched_axis(axis, dim)), dim - (axis < dim)

    batch_rules[prim] = batch
    return prim


argmax_p = _index_reduction("argmax")
argmin_p = _index_reduction("argmin")


# --- cumulative sums and products along one axis ------------------------------------


def _cumulative(name: str, np_fn: Callable[..., Any], ufunc: np.ufunc, standard: str) -> Primitive:
    """`np_fn` along `axis`, from the start (or from the end if `reverse`):
    the namespace's `standard` (flipping before and after for `reverse`); on
    NumPy's arrays the ufunc's accumulate."""
    accumulate = ufunc.accumulate

    def abstract_eval(x: ShapedArray, *, axis: int, reverse: bool) -> ShapedArray:
        check_axes(x, (axis,))
        return ShapedArray(x.shape, _reduction_dtype(np_fn, x.dtype))

    def impl(xp: Any, x: Any, *, axis: int, reverse: bool) -> Any:
        dtype = abstract_eval(get_aval(x), axis=axis, reverse=reverse).dtype
        x = cast(xp, x, dtype)
        if reverse:
            x = xp.flip(x, axis=axis)
        out = getattr(xp, standard)(x, axis=axis, dtype=dtype_of(xp, dtype))
        return xp.flip(out, axis=axis) if reverse else out

    def numpy_impl(x: Any, *, axis: int, reverse: bool) -> Any:
        x = np.asarray(x)
        flip = (slice(None),) * axis + (slice(None, None, -1),)
        if reverse:
            x = x[flip]
        # The ufunc's accumulate skips the Python wrapper; np_fn widens small integers.
        out = accumulate(x, axis=axis) if x.dtype.kind in "fc" else np_fn(x, axis=axis)
        return out[flip] if reverse else out

    prim = Primitive(name, impl, abstract_eval, numpy=numpy_impl)

    def batch(args: list[Any], dims: list[Any], *, axis: int, reverse: bool) -> tuple[Any, int]:
        (x,), (dim,) = args, dims
        return prim.bind(x, axis=batching.batched_axis(axis, dim), reverse=reverse), dim

    batch_rules[prim] = batch
    return prim


cumsum_p = _cumulative("cumsum", np.cumsum, np.add, "cumulative_sum")
d.deflinear(cumsum_p)
transpose_rules[cumsum_p] = lambda ct, x, *, axis, reverse: [cumsum(ct, axis=axis, reverse=not reverse)]

cumprod_p = _cumulative("cumprod", np.cumprod, np.multiply, "cumulative_prod")


def _cumprod_jvp(primals: list[Any], tangents: list[Any], *, axis: int, reverse: bool) -> tuple[Any, Any]:
    # The product rule as a scan (Hillis-Steele): after the step of size s each
    # place holds the product of its last 2s elements and that product's
    # tangent; joining a segment with the one before it multiplies the products
    # and gives t_before * p + p_before * t. No division: zeros are fine.
    (x,), (g,) = primals, tangents
    n = get_aval(x).shape[axis]
    products, t = x, g
    step = 1
    while step < n:
        products_before = _shift(products, step, axis, reverse, 1)
        t = ew.add(ew.mul(_shift(t, step, axis, reverse, 0), products), ew.mul(products_before, t))
        products = ew.mul(products_before, products)
        step *= 2
    return cumprod(x, axis=axis, reverse=reverse), t


jvp_rules[cumprod_p] = _cumprod_jvp

reduce_prod: Callable[..., Any] = reduce_prod_p.bind
reduce_and: Callable[..., Any] = reduce_and_p.bind
reduce_or: Callable[..., Any] = reduce_or_p.bind
argmax: Callable[..., Any] = argmax_p.bind
argmin: Callable[..., Any] = argmin_p.bind
cumsum: Callable[..., Any] = cumsum_p.bind
cumprod: Callable[..., Any] = cumprod_p.bind
