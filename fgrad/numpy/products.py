"""Products of arrays: matmul, dot, vdot, inner, outer, tensordot, einsum,
kron and vecdot; JAX's `Precision` of products and their `precision=` and
`preferred_element_type=` keywords.

Two primitives do the work: `matmul` (BLAS, for everything that is a matrix
product after a transpose and a reshape: dot, inner, tensordot) and `einsum`
(any subscripts). Outer products and kron are elementwise products of
reshaped operands.
"""

from __future__ import annotations

import enum
import math
import string
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..core.avals import get_aval
from ..core.trace import EVAL_TRACE, ctx
from ..primitives import elementwise as ew
from ..primitives import indexing, linalg, shapes
from ..primitives import reductions as red
from ..primitives.indexing import StaticIndex
from . import ufuncs
from .operands import Array, ArrayLike, normalize_axes, numpy_when_eager, operand, shape_of, static_argument
from .shaping import moveaxis

__all__ = [
    "matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron", "vecdot", "cross", "polyval",
    "convolve", "correlate", "polyfit",
]


class Precision(enum.Enum):
    """The precision of a product on an accelerator, as JAX's `lax.Precision`
    (DEFAULT, HIGH, HIGHEST; strings as JAX names them: "default", "fastest",
    "bfloat16", "high", "bfloat16_3x", "tensorfloat32", "highest", "float32").
    fgrad computes on the CPU in the operands' dtype, float64 by default, so
    every precision gives NumPy's result: the keyword is accepted, checked and
    otherwise ignored.

    >>> Precision("highest")
    Precision.HIGHEST
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision | None:
        return _PRECISION_NAMES.get(value) if isinstance(value, str) else None

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


_PRECISION_NAMES = {
    "default": Precision.DEFAULT, "fastest": Precision.DEFAULT, "bfloat16": Precision.DEFAULT,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
}


def check_precision(precision: Any, function: str) -> None:
    """A ValueError unless `precision` is what JAX's products take: None, a
    Precision or its name, or a pair of them (one per operand)."""
    pair = precision if isinstance(precision, (tuple, list)) and len(precision) == 2 else (precision,)
    if not all(p is None and len(pair) == 1 or isinstance(p, Precision) or p in _PRECISION_NAMES
               for p in pair):
        raise ValueError(
            f"{function}: precision must be None, a fgrad.lax.Precision, one of the strings "
            f"{sorted(_PRECISION_NAMES)}, or a pair of those (one per operand), got {precision!r}"
        )


def _with_options(product: Any, function: str, operands: Sequence[Any], precision: Any,
                  preferred_element_type: Any, **kwargs: Any) -> Any:
    """`product(*operands, **kwargs)` with JAX's keywords: `precision` checked
    (fgrad has one precision, NumPy's), and with `preferred_element_type` the
    result of that dtype, each operand first converted to its promotion with
    that dtype (so that int8 operands with int32 preferred do not overflow)."""
    check_precision(precision, f"fgrad.numpy.{function}")
    if preferred_element_type is None:
        return product(*operands, **kwargs)
    dtype = np.dtype(preferred_element_type)
    ops = [_converted(operand(x), np.promote_types(get_aval(operand(x)).dtype, dtype)) for x in operands]
    return _converted(product(*ops, **kwargs), dtype)


def _converted(x: Any, dtype: np.dtype) -> Any:
    return x if get_aval(x).dtype == dtype else ew.convert_element_type(x, new_dtype=dtype)


def _reshape(x: Any, shape: tuple[int, ...]) -> Any:
    return x if shape_of(x) == shape else shapes.reshape(x, new_shape=shape)


def _transpose(x: Any, perm: Sequence[int]) -> Any:
    perm = tuple(perm)
    return x if perm == tuple(range(len(perm))) else shapes.transpose(x, axes=perm)


def _strong(x: Any) -> Any:
    """`x` as an operand, a Python scalar as a NumPy array: numpy.dot and
    numpy.inner convert their operands with asarray, so that a Python float
    is float64 there, not a weak scalar (``dot(float32_array, 2.0)`` is float64)."""
    return np.asarray(x) if type(x) in (float, int, complex, bool) else operand(x)


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise TypeError(f"fgrad.numpy.{name} does not support out= under a transform (arrays are immutable)")


def matmul(a: ArrayLike, b: ArrayLike, /, *,
           precision: Any = None, preferred_element_type: Any = None) -> Array:
    """numpy.matmul (the `@` operator): stacks of matrices, 1-d operands promoted.
    `precision` (a `fgrad.lax.Precision`, its name, or a pair of them) and
    `preferred_element_type` (the result's dtype) are JAX's keywords; fgrad
    computes at NumPy's precision whatever `precision` says.

    >>> matmul(np.eye(2), [1.0, 2.0])
    array([1., 2.])
    """
    if precision is not None or preferred_element_type is not None:
        return _with_options(matmul, "matmul", (a, b), precision, preferred_element_type)
    if ctx.trace is EVAL_TRACE:
        return np.matmul(a, b)
    return linalg.matmul(operand(a), operand(b))


def _not_aligned(a_shape: tuple[int, ...], b_shape: tuple[int, ...], i: int, j: int) -> ValueError:
    return ValueError(
        f"shapes {a_shape} and {b_shape} not aligned: {a_shape[i]} (dim {i}) != {b_shape[j]} (dim {j})"
    )


def dot(a: ArrayLike, b: ArrayLike, out: None = None, *,
        precision: Any = None, preferred_element_type: Any = None) -> Array:
    """numpy.dot: a product with a scalar, an inner product of vectors, a matrix
    product, or for N-d operands a sum over the last axis of `a` and the
    second-to-last of `b`.
    `precision` (a `fgrad.lax.Precision`, its name, or a pair of them) and
    `preferred_element_type` (the result's dtype) are JAX's keywords; fgrad
    computes at NumPy's precision whatever `precision` says.

    >>> dot(np.ones((2, 3)), np.ones((4, 3, 5))).shape
    (2, 4, 5)
    """
    if precision is not None or preferred_element_type is not None:
        return _with_options(dot, "dot", (a, b), precision, preferred_element_type, out=out)
    if ctx.trace is EVAL_TRACE:
        return np.dot(a, b, out)
    _no_out("dot", out)
    a, b = _strong(a), _strong(b)
    a_shape, b_shape = shape_of(a), shape_of(b)
    if not a_shape or not b_shape:
        return ew.mul(a, b)
    k = len(b_shape) - 2 if len(b_shape) > 1 else 0
    if a_shape[-1] != b_shape[k]:
        raise _not_aligned(a_shape, b_shape, len(a_shape) - 1, k)
    if len(b_shape) <= 2:
        return linalg.matmul(a, b)
    return _tensordot(a, b, (len(a_shape) - 1,), (k,))


def vdot(a: ArrayLike, b: ArrayLike, /, *,
         precision: Any = None, preferred_element_type: Any = None) -> Array:
    """numpy.vdot: the dot product of the flattened arrays, the first conjugated.
    `precision` (a `fgrad.lax.Precision`, its name, or a pair of them) and
    `preferred_element_type` (the result's dtype) are JAX's keywords; fgrad
    computes at NumPy's precision whatever `precision` says.

    >>> vdot([[1.0, 2.0]], [3.0, 4.0])
    np.float64(11.0)
    """
    if precision is not None or preferred_element_type is not None:
        return _with_options(vdot, "vdot", (a, b), precision, preferred_element_type)
    if ctx.trace is EVAL_TRACE:
        return np.vdot(a, b)
    a, b = operand(a), operand(b)
    if get_aval(a).dtype.kind == "c":
        a = ew.conj(a)
    n, m = math.prod(shape_of(a)), math.prod(shape_of(b))
    if n != m:
        raise ValueError(f"vdot: the vectors have different lengths ({n} and {m})")
    return linalg.matmul(_reshape(a, (n,)), _reshape(b, (m,)))


def inner(a: ArrayLike, b: ArrayLike, /, *,
          precision: Any = None, preferred_element_type: Any = None) -> Array:
    """numpy.inner: the sum over the last axes of `a` and `b` (a product if one is 0-d).
    `precision` (a `fgrad.lax.Precision`, its name, or a pair of them) and
    `preferred_element_type` (the result's dtype) are JAX's keywords; fgrad
    computes at NumPy's precision whatever `precision` says.

    >>> inner(np.ones((2, 3)), np.ones((4, 3))).shape
    (2, 4)
    """
    if precision is not None or preferred_element_type is not None:
        return _with_options(inner, "inner", (a, b), precision, preferred_element_type)
    if ctx.trace is EVAL_TRACE:
        return np.inner(a, b)
    a, b = _strong(a), _strong(b)
    a_shape, b_shape = shape_of(a), shape_of(b)
    if not a_shape or not b_shape:
        return ew.mul(a, b)
    if a_shape[-1] != b_shape[-1]:
        raise _not_aligned(a_shape, b_shape, len(a_shape) - 1, len(b_shape) - 1)
    if len(b_shape) == 1:
        return linalg.matmul(a, b)
    return _tensordot(a, b, (len(a_shape) - 1,), (len(b_shape) - 1,))


@numpy_when_eager(np.outer)
def outer(a: ArrayLike, b: ArrayLike, out: None = None) -> Array:
    """numpy.outer: ``out[i, j] = a.ravel()[i] * b.ravel()[j]``.

    >>> outer([1.0, 2.0], [1.0, 10.0, 100.0]).shape
    (2, 3)
    """
    _no_out("outer", out)
    a, b = operand(a), operand(b)
    n, m = math.prod(shape_of(a)), math.prod(shape_of(b))
    return ew.mul(_reshape(a, (n, 1)), _reshape(b, (m,)))


def _tensordot(a: Any, b: Any, axes_a: tuple[int, ...], axes_b: tuple[int, ...]) -> Any:
    """The contraction of `axes_a` of `a` with `axes_b` of `b` as one matrix
    product: contracted axes moved last in `a` and first in `b`, each side
    flattened to a matrix."""
    a_shape, b_shape = shape_of(a), shape_of(b)
    free_a = [i for i in range(len(a_shape)) if i not in axes_a]
    free_b = [i for i in range(len(b_shape)) if i not in axes_b]
    rows = tuple(a_shape[i] for i in free_a)
    cols = tuple(b_shape[i] for i in free_b)
    k = math.prod(a_shape[i] for i in axes_a)
    a2 = _reshape(_transpose(a, free_a + list(axes_a)), (math.prod(rows), k))
    b2 = _reshape(_transpose(b, list(axes_b) + free_b), (k, math.prod(cols)))
    return _reshape(linalg.matmul(a2, b2), rows + cols)


def ordered_axes(axes: int | Sequence[int], ndim: int) -> tuple[int, ...]:
    """Axes as non-negative ints in the order given (unlike `normalize_axes`, which
    sorts them); NumPy's AxisError for one out of range."""
    axes = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    out = []
    for ax in axes:
        if not -ndim <= int(ax) < ndim:
            raise np.exceptions.AxisError(int(ax), ndim)
        out.append(int(ax) % ndim)
    return tuple(out)


def tensordot(a: ArrayLike, b: ArrayLike, axes: int | Sequence[Any] = 2, *,
              precision: Any = None, preferred_element_type: Any = None) -> Array:
    """numpy.tensordot: the sum of products over the last `axes` axes of `a` and
    the first of `b`, or over the axes ``axes = (axes_a, axes_b)`` name.
    `precision` (a `fgrad.lax.Precision`, its name, or a pair of them) and
    `preferred_element_type` (the result's dtype) are JAX's keywords; fgrad
    computes at NumPy's precision whatever `precision` says.

    >>> tensordot(np.ones((2, 3, 4)), np.ones((4, 3)), axes=([1, 2], [1, 0])).shape
    (2,)
    """
    if precision is not None or preferred_element_type is not None:
        return _with_options(tensordot, "tensordot", (a, b), precision, preferred_element_type, axes=axes)
    if ctx.trace is EVAL_TRACE:
        return np.tensordot(a, b, axes)  # type: ignore[arg-type]
    a, b = operand(a), operand(b)
    a_shape, b_shape = shape_of(a), shape_of(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > len(a_shape) or n > len(b_shape):
            raise ValueError(f"tensordot: axes={n} does not fit operands of shapes {a_shape} and {b_shape}")
        axes_a, axes_b = tuple(range(len(a_shape) - n, len(a_shape))), tuple(range(n))
    else:
        try:
            spec_a, spec_b = axes
        except (TypeError, ValueError):
            raise ValueError("tensordot: axes must be an int or a pair of sequences of axes") from None
        axes_a, axes_b = ordered_axes(spec_a, len(a_shape)), ordered_axes(spec_b, len(b_shape))
    if len(axes_a) != len(axes_b) or any(a_shape[i] != b_shape[j] for i, j in zip(axes_a, axes_b)):
        raise ValueError("shape-mismatch for sum")
    return _tensordot(a, b, axes_a, axes_b)


@numpy_when_eager(np.kron)
def kron(a: ArrayLike, b: ArrayLike) -> Array:
    """numpy.kron: the Kronecker product, blocks of `b` scaled by the elements of `a`.

    >>> kron(np.eye(2), np.ones((2, 2))).shape
    (4, 4)
    """
    a, b = operand(a), operand(b)
    a_shape, b_shape = shape_of(a), shape_of(b)
    nd = max(len(a_shape), len(b_shape))
    a_shape = (1,) * (nd - len(a_shape)) + a_shape
    b_shape = (1,) * (nd - len(b_shape)) + b_shape
    # Interleave the axes: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...).
    a2 = _reshape(a, tuple(n for s in a_shape for n in (s, 1)))
    b2 = _reshape(b, tuple(n for s in b_shape for n in (1, s)))
    return _reshape(ew.mul(a2, b2), tuple(m * n for m, n in zip(a_shape, b_shape)))


def vecdot(x1: ArrayLike, x2: ArrayLike, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Array:
    """numpy.vecdot: the dot product of vectors along `axis` (the first conjugated),
    broadcast over the other axes.
    `precision` (a `fgrad.lax.Precision`, its name, or a pair of them) and
    `preferred_element_type` (the result's dtype) are JAX's keywords; fgrad
    computes at NumPy's precision whatever `precision` says.

    >>> vecdot(np.ones((2, 3)), [1.0, 2.0, 3.0])
    array([6., 6.])
    """
    if precision is not None or preferred_element_type is not None:
        return _with_options(vecdot, "vecdot", (x1, x2), precision, preferred_element_type, axis=axis)
    if ctx.trace is EVAL_TRACE:
        return np.vecdot(x1, x2, axis=axis)  # type: ignore[call-overload]
    x1, x2 = operand(x1), operand(x2)
    if get_aval(x1).dtype.kind == "c":
        x1 = ew.conj(x1)
    s1, s2 = shape_of(x1), shape_of(x2)
    if not s1 or not s2:
        raise ValueError("vecdot: the operands must have at least one dimension")
    (a1,), (a2,) = normalize_axes(axis, len(s1)), normalize_axes(axis, len(s2))
    if s1[a1] != s2[a2]:
        raise ValueError(f"vecdot: the vectors along axis {axis} differ in length ({s1[a1]} and {s2[a2]})")
    x1, x2 = _transpose_last(x1, a1), _transpose_last(x2, a2)
    prod = ew.mul(x1, x2)
    out = red.reduce_sum(prod, axes=(len(shape_of(prod)) - 1,))
    # NumPy's vecdot keeps the operands' dtype where sum would widen it: bool
    # (any of the products), small integers (the sum wraps around the same way).
    dtype = get_aval(prod).dtype
    return out if get_aval(out).dtype == dtype else ew.convert_element_type(out, new_dtype=dtype)


def _transpose_last(x: Any, axis: int) -> Any:
    nd = len(shape_of(x))
    return _transpose(x, [i for i in range(nd) if i != axis] + [axis])


# --- einsum ----------------------------------------------------------------------

_LETTERS = set(string.ascii_letters)


def _sublist_letters(sublist: Sequence[Any]) -> str:
    """NumPy's interleaved form: 0..25 are 'A'..'Z', 26..51 'a'..'z', Ellipsis '...'."""
    out = ""
    for s in sublist:
        if s is Ellipsis:
            out += "..."
        elif isinstance(s, (int, np.integer)) and 0 <= s < 52:
            out += chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26)
        else:
            raise ValueError(f"subscript {s!r} is not within the valid range [0, 52)")
    return out


def _einsum_arguments(args: tuple[Any, ...]) -> tuple[str, list[Any]]:
    if not args:
        raise TypeError("einsum() needs at least the subscripts and one operand")
    if isinstance(args[0], str):
        return args[0], list(args[1:])
    operands = list(args[0::2])
    sublists = list(args[1::2])
    output = None
    if len(operands) > len(sublists):  # an odd count: the last one is the output's sublist
        output = operands.pop()
    subscripts = ",".join(_sublist_letters(s) for s in sublists)
    if output is not None:
        subscripts += "->" + _sublist_letters(output)
    return subscripts, operands


def _split_term(term: str, where: str) -> tuple[str, str]:
    """The letters of a term before and after its '...' (all of them before, without one)."""
    if term.count(".") not in (0, 3) or (term.count(".") == 3 and "..." not in term):
        raise ValueError(
            "einstein sum subscripts string contains a '.' that is not part of an ellipsis ('...') "
            f"in {where}"
        )
    for c in term.replace("...", ""):
        if c not in _LETTERS:
            raise ValueError(
                f"invalid subscript {c!r} in einstein sum subscripts string, subscripts must be letters"
            )
    return term.partition("...")[::2] if "..." in term else (term, "")


def _normalize_einsum(subscripts: str, operands: list[Any]) -> tuple[str, list[Any]]:
    """Explicit, letters-only subscripts for the einsum primitive: '...' expanded
    to fresh letters, the implicit output spelled out, and axes of size 1 that
    broadcast against a larger one dropped from their operand."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(
            f"einsum: the subscripts {subscripts!r} name {len(terms)} operands, "
            f"but {len(operands)} were given"
        )
    shapes_ = [shape_of(x) for x in operands]
    used = set(subscripts)
    fresh = [c for c in string.ascii_letters if c not in used]
    parts = [_split_term(t, f"operand {k}") for k, t in enumerate(terms)]
    ellipsis_ndims = []
    for k, (term, (head, tail), shape) in enumerate(zip(terms, parts, shapes_)):
        extra = len(shape) - len(head) - len(tail)
        if extra < 0:
            raise ValueError(f"einstein sum subscripts string contains too many subscripts for operand {k}")
        if extra > 0 and "..." not in term:
            raise ValueError(
                "operand has more dimensions than subscripts given in einstein sum, but no '...' "
                "ellipsis provided to broadcast the extra dimensions."
            )
        ellipsis_ndims.append(extra)
    n_ell = max(ellipsis_ndims, default=0)
    ell = "".join(fresh[:n_ell])
    full = [h + ell[n_ell - e:] + t for (h, t), e in zip(parts, ellipsis_ndims)]
    if arrow:
        head, tail = _split_term(output, "the output")
        if n_ell and "..." not in output:
            raise ValueError(
                "output has more dimensions than subscripts given in einstein sum, but no '...' "
                "ellipsis provided to broadcast the extra dimensions."
            )
        out = head + (ell if "..." in output else "") + tail
        for c in out:
            if out.count(c) > 1:
                raise ValueError(
                    f"einstein sum subscripts string includes output subscript {c!r} multiple times"
                )
            if c not in "".join(full):
                raise ValueError(
                    f"einstein sum subscripts string included output subscript {c!r} which never appeared "
                    "in an input"
                )
    else:
        letters = "".join(h + t for h, t in parts)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    # Sizes per letter: a repeated letter in one operand must match exactly; across
    # operands an axis of size 1 broadcasts (it is dropped from its operand).
    sizes: dict[str, int] = {}
    for k, (term, shape) in enumerate(zip(full, shapes_)):
        for c, n in zip(term, shape):
            first = shape[term.index(c)]
            if n != first:
                raise ValueError(
                    f"dimensions in operand {k} for collapsing index {c!r} don't match ({first} != {n})"
                )
            known = sizes.setdefault(c, n)
            if known == 1:
                sizes[c] = n
            elif n not in (1, known):
                raise ValueError(
                    "operands could not be broadcast together with remapped shapes "
                    f"[original->remapped]: {' '.join(str(s) for s in shapes_)}"
                )
    new_terms, new_ops = [], []
    for term, shape, x in zip(full, shapes_, operands):
        keep = [i for i, c in enumerate(term) if shape[i] != 1 or sizes[c] == 1]
        if len(keep) < len(term):
            term = "".join(term[i] for i in keep)
            x = _reshape(x, tuple(shape[i] for i in keep))
        new_terms.append(term)
        new_ops.append(x)
    return ",".join(new_terms) + "->" + out, new_ops


def einsum(*operands: Any, out: Any = None, optimize: Any = False, dtype: Any = None,
           order: str = "K", casting: str = "safe", precision: Any = None,
           preferred_element_type: Any = None) -> Array:
    """numpy.einsum: Einstein summation, with subscripts as a string (implicit or
    explicit output, repeated letters, ``...``) or in NumPy's interleaved form.
    `optimize` is accepted; under a transform fgrad plans contractions itself.
    `precision` (a `fgrad.lax.Precision`, its name, or a pair of them) and
    `preferred_element_type` (the result's dtype) are JAX's keywords; fgrad
    computes at NumPy's precision whatever `precision` says.

    >>> einsum("ij,jk->ik", np.ones((2, 3)), np.ones((3, 4))).shape
    (2, 4)
    """
    if precision is not None or preferred_element_type is not None:
        subscripts, ops = _einsum_arguments(operands)
        return _with_options(lambda *xs: einsum(subscripts, *xs, out=out, optimize=optimize, dtype=dtype,
                                                order=order, casting=casting),
                             "einsum", ops, precision, preferred_element_type)
    if ctx.trace is EVAL_TRACE:
        return np.einsum(  # type: ignore[call-overload]
            *operands, out=out, optimize=optimize, dtype=dtype, order=order, casting=casting
        )
    _no_out("einsum", out)
    subscripts, ops = _einsum_arguments(operands)
    ops = [operand(x) for x in ops]
    if dtype is not None:
        dtype = np.dtype(dtype)
        for x in ops:
            if not np.can_cast(get_aval(x).dtype, dtype, casting=casting):  # type: ignore[arg-type]
                raise TypeError(
                    f"einsum: operand dtype {get_aval(x).dtype} cannot be cast to {dtype} "
                    f"according to the rule {casting!r}"
                )
        ops = [ew.convert_element_type(x, new_dtype=dtype) for x in ops]
    spec, ops = _normalize_einsum(subscripts, ops)
    return linalg.einsum(*ops, subscripts=spec)



def _component(x: Any, i: int) -> Any:
    return indexing.getitem(x, idx=StaticIndex((Ellipsis, i)))


@numpy_when_eager(np.cross)
def cross(a: ArrayLike, b: ArrayLike, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Array:
    """numpy.cross: the cross products of vectors of 3 (or, deprecated, 2) components along the axes given.

    >>> cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    array([0., 0., 1.])
    """
    if axis is not None:
        axisa, axisb, axisc = (axis,) * 3
    a, b = _strong(a), _strong(b)
    if not shape_of(a) or not shape_of(b):
        raise ValueError("At least one array has zero dimension")
    axisa = normalize_axis_index(axisa, len(shape_of(a)), msg_prefix="axisa")
    axisb = normalize_axis_index(axisb, len(shape_of(b)), msg_prefix="axisb")
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors "
                      "instead. (deprecated in NumPy 2.0)", DeprecationWarning,
                      stacklevel=3)  # the caller's line, past numpy_when_eager's frame
    shape = np.broadcast_shapes(shape_of(a)[:-1], shape_of(b)[:-1])
    a0, a1, b0, b1 = _component(a, 0), _component(a, 1), _component(b, 0), _component(b, 1)
    mul, sub = ufuncs.multiply, ufuncs.subtract
    last = sub(mul(a0, b1), mul(a1, b0))
    if na == 2 and nb == 2:
        return last
    if na == 2:
        b2 = _component(b, 2)
        parts = [mul(a1, b2), ufuncs.negative(mul(a0, b2))]
    elif nb == 2:
        a2 = _component(a, 2)
        parts = [ufuncs.negative(mul(a2, b1)), mul(a2, b0)]
    else:
        a2, b2 = _component(a, 2), _component(b, 2)
        parts = [sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2))]
    axisc = normalize_axis_index(axisc, len(shape) + 1, msg_prefix="axisc")
    columns = [_reshape(shapes.broadcast_to(p, shape=shape) if shape_of(p) != shape else p, (*shape, 1))
               for p in (*parts, last)]
    return moveaxis(shapes.concatenate(*columns, axis=len(shape)), -1, axisc)


@numpy_when_eager(np.polyval)
def polyval(p: ArrayLike, x: ArrayLike) -> Array:
    """numpy.polyval: the polynomial with coefficients `p` (highest power first) at `x`, by Horner's rule.

    >>> polyval([1.0, 0.0, -1.0], 3.0)
    np.float64(8.0)
    """
    p, x = _strong(p), _strong(x)
    if not shape_of(p):
        raise TypeError("iteration over a 0-d array")
    y: Any = np.zeros(shape_of(x), get_aval(x).dtype)
    for i in range(shape_of(p)[0]):
        y = ufuncs.add(ufuncs.multiply(y, x), indexing.getitem(p, idx=StaticIndex((i,))))
    return y


_MODES = {"full": "full", "f": "full", 2: "full", "same": "same", "s": "same", 1: "same", "valid": "valid",
          "v": "valid", 0: "valid"}


def _vector(x: Any, name: str) -> Any:
    import fgrad.numpy as fnp

    x = fnp.atleast_1d(_strong(x))
    if len(shape_of(x)) > 1:
        raise ValueError("object too deep for desired array")
    if not shape_of(x)[0]:
        raise ValueError(f"{name} cannot be empty")
    return x


def _convolve_long(a: Any, v: Any, mode: str) -> Any:
    """numpy.convolve of 1-d `a` and `v` with len(a) >= len(v): a sliding window of `a` (padded
    with zeros) against `v` reversed, as one matrix-vector product."""
    import fgrad.numpy as fnp

    n, m = shape_of(a)[0], shape_of(v)[0]
    dtype = np.result_type(get_aval(a).dtype, get_aval(v).dtype)
    zeros = np.zeros(m - 1, dtype)
    padded = fnp.concatenate([zeros, fnp.astype(a, dtype), zeros]) if m > 1 else fnp.astype(a, dtype)
    start, length = {"full": (0, n + m - 1), "same": ((m - 1) // 2, n), "valid": (m - 1, n - m + 1)}[mode]
    windows = padded[np.arange(start, start + length)[:, None] + np.arange(m)[None, :]]
    return fnp.matmul(windows, fnp.astype(fnp.flip(v), dtype))


def _mode(mode: Any) -> str:
    try:
        return _MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})") from None


@numpy_when_eager(np.convolve)
def convolve(a: ArrayLike, v: ArrayLike, mode: str = "full") -> Array:
    """numpy.convolve: the discrete linear convolution of two 1-d sequences, mode 'full', 'same' or 'valid'.

    >>> convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5])
    array([0. , 1. , 2.5, 4. , 1.5])
    """
    a, v = _vector(a, "a"), _vector(v, "v")
    if shape_of(v)[0] > shape_of(a)[0]:
        a, v = v, a
    return _convolve_long(a, v, _mode(mode))


@numpy_when_eager(np.correlate)
def correlate(a: ArrayLike, v: ArrayLike, mode: str = "valid") -> Array:
    """numpy.correlate: the cross-correlation ``sum_n a[n + k] * conj(v[n])`` of two 1-d sequences,
    mode 'valid', 'same' or 'full'.

    >>> correlate([1.0, 2.0, 3.0], [0.0, 1.0, 0.5]), correlate([1.0, 2.0, 3.0], [1.0, 0.5], "full")
    (array([3.5]), array([0.5, 2. , 3.5, 3. ]))
    """
    import fgrad.numpy as fnp

    a, v = _strong(a), _strong(v)
    if not shape_of(a) or not shape_of(v):
        raise ValueError("object of too small depth for desired array")
    a, v = _vector(a, "a"), _vector(v, "v")
    mode = _mode(mode)
    if shape_of(v)[0] > shape_of(a)[0]:
        return fnp.conj(fnp.flip(_convolve_long(v, fnp.conj(fnp.flip(a)), mode)))
    return _convolve_long(a, fnp.conj(fnp.flip(v)), mode)


@numpy_when_eager(np.polyfit)
def polyfit(x: ArrayLike, y: ArrayLike, deg: int, rcond: float | None = None, full: bool = False,
            w: ArrayLike | None = None, cov: bool | str = False) -> Array:
    """numpy.polyfit: the least-squares polynomial of degree `deg` (concrete) through the points (`x`,
    `y`), highest power first, solved by fgrad.numpy.linalg.lstsq (under a transform, without `full`
    and `cov`).

    >>> polyfit([0.0, 1.0, 2.0], [1.0, 3.0, 5.0], 1).round(12)
    array([2., 1.])
    """
    import fgrad.numpy as fnp

    if full or cov:
        raise NotImplementedError("fgrad.numpy.polyfit supports neither full=True nor cov under a transform")
    order = int(static_argument(deg, "polyfit", "deg")) + 1
    x, y = fnp.add(_strong(x), 0.0), fnp.add(_strong(y), 0.0)
    if order < 1:
        raise ValueError("expected deg >= 0")
    if len(shape_of(x)) != 1:
        raise TypeError("expected 1D vector for x")
    if not shape_of(x)[0]:
        raise TypeError("expected non-empty vector for x")
    if len(shape_of(y)) not in (1, 2):
        raise TypeError("expected 1D or 2D array for y")
    if shape_of(x)[0] != shape_of(y)[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = shape_of(x)[0] * np.finfo(get_aval(x).dtype).eps
    lhs, rhs = fnp.vander(x, order), y
    if w is not None:
        w = fnp.add(_strong(w), 0.0)
        if len(shape_of(w)) != 1:
            raise TypeError("expected a 1-d array for weights")
        if shape_of(w)[0] != shape_of(y)[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = fnp.multiply(lhs, w[:, None])
        rhs = fnp.multiply(rhs, w[:, None] if len(shape_of(rhs)) == 2 else w)
    scale = fnp.sqrt(fnp.sum(fnp.multiply(lhs, lhs), axis=0))
    c = fnp.linalg.lstsq(fnp.divide(lhs, scale), rhs, rcond)[0]
    return fnp.transpose(fnp.divide(fnp.transpose(c), scale))
