"""Products: matmul and einsum.

matmul has NumPy's semantics: 1-d operands are promoted to a row (left) or a
column (right) and the added axis removed from the result; leading axes
broadcast as a stack of matrices. It is linear in each operand; its
transpose works on the promoted 2-d forms, so the 1-d cases need no rules of
their own.

einsum takes normalized subscripts only: explicit output, one letter per
axis, and every axis of a letter the same size (the NumPy layer expands
`...`, infers implicit outputs and removes broadcast axes of size 1). It is
multilinear: its jvp is the product rule (`defbilinear`), and its transpose
with respect to one operand is another einsum of the cotangent with the
other operands. Tensordot, inner, dot and the like are written on these two.

`matrix_transpose` is shared with the decompositions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..core.avals import ShapedArray, broadcast_shapes, cached_aval, get_aval
from ..core.libraries import cast, dtype_of
from ..core.rules import UndefinedPrimal, batch_rules, emit_rules, out_rules, transpose_rules
from ..core.trace import Primitive
from . import batching, elementwise, shapes
from . import derivatives as d

__all__ = ["matmul", "einsum", "parse_subscripts", "stacked_einsum", "matrix_transpose"]


def matrix_transpose(x: Any) -> Any:
    """Each matrix of a stack (the last two axes) transposed."""
    nd = len(x.shape)
    return shapes.transpose(x, axes=(*range(nd - 2), nd - 1, nd - 2))


@cached_aval
def _matmul_aval(a: ShapedArray, b: ShapedArray) -> ShapedArray:
    a, b = a.strip_weak_type(), b.strip_weak_type()
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: an operand is 0-d (a scalar); use multiply or `*` instead")
    a_shape = (1, *a.shape) if a.ndim == 1 else a.shape
    b_shape = (*b.shape, 1) if b.ndim == 1 else b.shape
    if a_shape[-1] != b_shape[-2]:
        raise ValueError(
            f"matmul: mismatch in the contracted dimension: shapes {a.shape} and {b.shape} "
            f"({a_shape[-1]} is different from {b_shape[-2]})"
        )
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    shape = batch + a_shape[-2:-1] * (a.ndim > 1) + b_shape[-1:] * (b.ndim > 1)
    dtype = np.result_type(a.dtype, b.dtype)
    return ShapedArray(shape, dtype)


# On a namespace, matmul is the standard's, on operands cast to NumPy's common dtype.
def _matmul(xp: Any, a: Any, b: Any) -> Any:
    dtype = _matmul_aval(get_aval(a), get_aval(b)).dtype
    return xp.matmul(cast(xp, a, dtype), cast(xp, b, dtype))


def _numpy_matmul(a: Any, b: Any) -> Any:
    """NumPy's matmul. Of arrays of one or two dimensions, `np.dot`, the same
    product of the same BLAS calls without a generalized ufunc's dispatch: on
    small matrices it costs half (0.8 µs instead of 1.4 µs for 8×8 float64),
    and a loop of small steps (an RNN's `h @ W`) is made of them."""
    if (type(a) is np.ndarray and type(b) is np.ndarray and 0 < a.ndim <= 2 and 0 < b.ndim <= 2
            and a.shape[-1] == b.shape[0]):  # (otherwise matmul's own error)
        return np.dot(a, b)
    return np.matmul(a, b)


matmul_p = Primitive("matmul", _matmul, _matmul_aval, numpy=_numpy_matmul)
d.defbilinear(matmul_p)
out_rules[matmul_p] = np.matmul


def _matmul_emit(args: list[str], avals: list[ShapedArray]) -> str | None:
    """jit's code calls np.dot itself where `_matmul` would: the shapes are known."""
    if all(0 < a.ndim <= 2 for a in avals):
        return f"np.dot({args[0]}, {args[1]})"
    return None


emit_rules[matmul_p] = _matmul_emit


def _matrix_aval(aval: ShapedArray, left: bool) -> ShapedArray:
    if aval.ndim > 1:
        return aval
    return ShapedArray((1, *aval.shape) if left else (*aval.shape, 1), aval.dtype)


def _as_matrix(x: Any, aval: ShapedArray, left: bool) -> Any:
    if aval.ndim > 1:
        return x
    return shapes.reshape(x, new_shape=_matrix_aval(aval, left).shape)


def _cast(ct: Any, aval: ShapedArray) -> Any:
    """`ct` in the dtype of the operand it is the cotangent of (a float32 operand
    of a float64 product has a float32 cotangent)."""
    if (ct.dtype if type(ct) is np.ndarray else get_aval(ct).dtype) == aval.dtype:
        return ct
    return elementwise.convert_element_type(ct, new_dtype=aval.dtype)


def _matmul_transpose(ct: Any, a: Any, b: Any) -> list[Any]:
    a_linear = type(a) is UndefinedPrimal
    a_aval = a.aval if a_linear else get_aval(a)
    b_aval = b.aval if type(b) is UndefinedPrimal else get_aval(b)
    if a_aval.ndim == 1 and b_aval.ndim == 1:  # a dot product: ct is 0-d
        if a_linear:
            return [_cast(elementwise.mul(ct, b), a_aval), None]
        return [None, _cast(elementwise.mul(a, ct), b_aval)]
    if a_aval.ndim == 2 and b_aval.ndim <= 2:  # the common cases, without the general bookkeeping
        if not a_linear:
            return [None, _cast(matmul(shapes.transpose(a, axes=(1, 0)), ct), b_aval)]
        if b_aval.ndim == 2:
            return [_cast(matmul(ct, shapes.transpose(b, axes=(1, 0))), a_aval), None]
        # matrix @ vector: the cotangent of the matrix is the outer product
        return [_cast(elementwise.mul(shapes.reshape(ct, new_shape=(ct.shape[0], 1)), b), a_aval), None]
    if a_aval.ndim == 1 and b_aval.ndim == 2:  # vector @ matrix (a loop's h @ W): no reshapes
        if a_linear:
            return [_cast(matmul(ct, shapes.transpose(b, axes=(1, 0))), a_aval), None]
        # the cotangent of the matrix is the outer product of a and ct
        return [None, _cast(elementwise.mul(shapes.reshape(a, new_shape=(a_aval.shape[0], 1)), ct), b_aval)]
    a2, b2 = _matrix_aval(a_aval, left=True), _matrix_aval(b_aval, left=False)
    # Work on the 2-d forms: put back the axes that 1-d operands took out of ct.
    ct_shape = (*broadcast_shapes(a2.shape[:-2], b2.shape[:-2]), a2.shape[-2], b2.shape[-1])
    if ct.shape != ct_shape:
        ct = shapes.reshape(ct, new_shape=ct_shape)
    if a_linear:
        ct_a = d.unbroadcast(matmul(ct, matrix_transpose(_as_matrix(b, b_aval, left=False))), a2)
        return [shapes.reshape(ct_a, new_shape=a_aval.shape) if a_aval.ndim == 1 else ct_a, None]
    ct_b = d.unbroadcast(matmul(matrix_transpose(_as_matrix(a, a_aval, left=True)), ct), b2)
    return [None, shapes.reshape(ct_b, new_shape=b_aval.shape) if b_aval.ndim == 1 else ct_b]


transpose_rules[matmul_p] = _matmul_transpose


def _matmul_batch_folded(a: Any, b: Any, da: Any, db: Any) -> tuple[Any, int] | None:
    """One operand batched, the other a single matrix or vector: fold the
    batch into a matrix axis and do one matrix product (a stack of small
    products is one call per example in NumPy)."""
    if da is not None and db is None and get_aval(b).ndim <= 2:
        a = batching.move_axis(a, da, 0)
        shape = get_aval(a).shape  # (B, ..., k)
        rows = shapes.reshape(a, new_shape=(math.prod(shape[:-1]), shape[-1]))
        out = matmul(rows, b)
        tail = get_aval(b).shape[1:]  # (m,) for a matrix, () for a vector
        return shapes.reshape(out, new_shape=shape[:-1] + tail), 0
    if da is None and db is not None and get_aval(a).ndim <= 2 and get_aval(b).ndim <= 3:
        b = batching.move_axis(b, db, 0)
        size, *example = get_aval(b).shape
        if len(example) == 1:  # a @ vector, per example: (B, k) @ a.T
            return matmul(b, shapes.transpose(a, axes=tuple(reversed(range(get_aval(a).ndim))))), 0
        k, m = example  # a @ matrix, per example: a @ (k, B*m), batch ends up at axis -2
        cols = shapes.reshape(shapes.transpose(b, axes=(1, 0, 2)), new_shape=(k, size * m))
        out = matmul(a, cols)
        lead = get_aval(out).shape[:-1]
        return shapes.reshape(out, new_shape=(*lead, size, m)), len(lead)
    return None


def _matmul_batch(args: list[Any], dims: list[Any]) -> tuple[Any, int]:
    folded = _matmul_batch_folded(*args, *dims)
    if folded is not None:
        return folded
    size = batching.batch_size(args, dims)
    ranks = [get_aval(x).ndim - (dim is not None) for x, dim in zip(args, dims)]
    # One example's 1-d operands become matrices, so that the batch axis is
    # never taken for a matrix axis; then the batch axes go in front, with
    # room to broadcast against the other operand's stack of matrices.
    ops = []
    for i, (x, dim, r) in enumerate(zip(args, dims, ranks)):
        lead: tuple[int, ...] = () if dim is None else (size,)
        if dim is not None:
            x = batching.move_axis(x, dim, 0)
        if r == 1:
            k = get_aval(x).shape[-1]
            x = shapes.reshape(x, new_shape=lead + ((1, k) if i == 0 else (k, 1)))
        ops.append(x)
    stack = max(max(r, 2) for r in ranks)
    for i, (x, dim, r) in enumerate(zip(ops, dims, ranks)):
        if dim is not None and max(r, 2) < stack:
            shape = get_aval(x).shape
            ops[i] = shapes.reshape(x, new_shape=(size,) + (1,) * (stack - max(r, 2)) + shape[1:])
    out = matmul(*ops)
    shape = get_aval(out).shape
    drop = {len(shape) - 2} if ranks[0] == 1 else set()
    drop |= {len(shape) - 1} if ranks[1] == 1 else set()
    if drop:
        out = shapes.reshape(out, new_shape=tuple(n for i, n in enumerate(shape) if i not in drop))
    return out, 0


batch_rules[matmul_p] = _matmul_batch

matmul: Callable[..., Any] = matmul_p.bind


# --- einsum ----------------------------------------------------------------------


def parse_subscripts(subscripts: str) -> tuple[list[str], str]:
    """The input terms and the output term of normalized subscripts: ``"ij,jk->ik"``."""
    inputs, output = subscripts.split("->")
    return inputs.split(","), output


def _letter_sizes(terms: list[str], shapes_: list[tuple[int, ...]]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes_):
        for letter, n in zip(term, shape):
            if sizes.setdefault(letter, n) != n:
                raise ValueError(
                    f"einsum: the axes labelled {letter!r} have different sizes ({sizes[letter]} and "
                    f"{n}) in shapes {[tuple(s) for s in shapes_]}"
                )
    return sizes


@cached_aval
def _einsum_aval(*avals: ShapedArray, subscripts: str) -> ShapedArray:
    inputs, output = parse_subscripts(subscripts)
    if len(inputs) != len(avals) or any(len(t) != a.ndim for t, a in zip(inputs, avals)):
        raise ValueError(
            f"einsum: subscripts {subscripts!r} do not fit operands of shapes {[a.shape for a in avals]}"
        )
    sizes = _letter_sizes(inputs, [a.shape for a in avals])
    dtype = np.result_type(*(a.dtype for a in avals))
    return ShapedArray(tuple(sizes[c] for c in output), dtype)


# Above this many multiply-adds, let NumPy pick a contraction order (and BLAS);
# below, the direct C loop is cheaper than planning.
_PLAN_THRESHOLD = 1 << 15
_plans: dict[tuple[str, tuple[tuple[int, ...], ...]], bool] = {}


def _einsum_impl(*operands: Any, subscripts: str) -> Any:
    shapes_ = tuple(getattr(x, "shape", ()) for x in operands)
    optimize = _plans.get((subscripts, shapes_))
    if optimize is None:
        sizes = _letter_sizes(parse_subscripts(subscripts)[0], list(shapes_))
        optimize = len(operands) > 2 or math.prod(sizes.values()) > _PLAN_THRESHOLD
        _plans[subscripts, shapes_] = optimize
    return np.einsum(subscripts, *operands, optimize=optimize)


# On a namespace, einsum is composed of the standard's functions, so that it runs on any library
# (the standard has no einsum): each operand's diagonals taken and the letters
# no one else needs summed out, then the operands contracted left to right,
# each contraction one (batched) matmul, and the result's axes put in order.


def _diagonals(xp: Any, x: Any, term: str) -> tuple[Any, str]:
    """`x` with the axes of each letter that `term` repeats reduced to their
    diagonal: the two axes moved last and flattened, every (n+1)-th element."""
    while len(set(term)) < len(term):
        letter = next(c for c in term if term.count(c) > 1)
        first = term.index(letter)
        second = term.index(letter, first + 1)
        kept = [i for i in range(len(term)) if i not in (first, second)]
        x = xp.permute_dims(x, (*kept, first, second))
        n = x.shape[-1]
        x = xp.reshape(x, (*x.shape[:-2], n * n))[..., :: n + 1]
        term = "".join(term[i] for i in kept) + letter
    return x, term


def _sum_out(xp: Any, x: Any, term: str, needed: str, dtype: Any) -> tuple[Any, str]:
    """`x` summed over the letters of `term` not in `needed` (in `dtype`: the
    standard's sum widens integers)."""
    axes = tuple(i for i, c in enumerate(term) if c not in needed)
    if not axes:
        return x, term
    return xp.sum(x, axis=axes, dtype=dtype), "".join(c for c in term if c in needed)


def _contract(xp: Any, x: Any, x_term: str, y: Any, y_term: str, needed: str) -> tuple[Any, str]:
    """The product of `x` and `y` summed over the letters they share that are
    not `needed` later: one matmul of stacks of matrices (batch, rows, inner)
    @ (batch, inner, columns), the batch being the shared letters still needed."""
    sizes = dict(zip(x_term, x.shape)) | dict(zip(y_term, y.shape))
    batch = [c for c in x_term if c in y_term and c in needed]
    inner = [c for c in x_term if c in y_term and c not in needed]
    rows = [c for c in x_term if c not in y_term]
    cols = [c for c in y_term if c not in x_term]

    def stack(z: Any, term: str, order: list[str], split: int) -> Any:
        z = xp.permute_dims(z, tuple(term.index(c) for c in order))
        groups = (order[:len(batch)], order[len(batch):split], order[split:])
        return xp.reshape(z, tuple(math.prod(sizes[c] for c in g) for g in groups))

    a = stack(x, x_term, batch + rows + inner, len(batch) + len(rows))
    b = stack(y, y_term, batch + inner + cols, len(batch) + len(inner))
    out = xp.matmul(a, b)
    term = batch + rows + cols
    return xp.reshape(out, tuple(sizes[c] for c in term)), "".join(term)


def _einsum(xp: Any, *operands: Any, subscripts: str) -> Any:
    dtype = _einsum_aval(*(get_aval(x) for x in operands), subscripts=subscripts).dtype
    theirs = dtype_of(xp, dtype)
    inputs, output = parse_subscripts(subscripts)
    parts = [_diagonals(xp, cast(xp, x, dtype), term) for x, term in zip(operands, inputs)]
    x, term = parts[0]
    for k in range(1, len(parts)):
        y, y_term = parts[k]
        later = output + "".join(t for _, t in parts[k + 1:])
        x, term = _sum_out(xp, x, term, later + y_term, theirs)
        y, y_term = _sum_out(xp, y, y_term, later + term, theirs)
        x, term = _contract(xp, x, term, y, y_term, later)
    x, term = _sum_out(xp, x, term, output, theirs)
    return xp.permute_dims(x, tuple(term.index(c) for c in output))


einsum_p = Primitive("einsum", _einsum, _einsum_aval, numpy=_einsum_impl)
d.defbilinear(einsum_p)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"  # string.ascii_letters, without its import


def _fresh_letters(used: str) -> Iterator[str]:
    letters = (c for c in _LETTERS if c not in used)
    yield from letters
    raise ValueError("einsum: out of letters (at most 52 distinct axes)")


def _einsum_transpose(ct: Any, *operands: Any, subscripts: str) -> list[Any]:
    """The cotangent of the one linear operand: the cotangent contracted with the
    other operands, onto that operand's subscripts. A letter repeated in the
    operand (a diagonal) puts the result on a diagonal, through an identity
    matrix; a letter only that operand has (summed away) broadcasts it, through
    a vector of ones."""
    inputs, output = parse_subscripts(subscripts)
    (i,) = [k for k, x in enumerate(operands) if type(x) is UndefinedPrimal]
    aval = operands[i].aval
    target = inputs[i]
    terms = [output] + [t for k, t in enumerate(inputs) if k != i]
    args = [ct] + [x for k, x in enumerate(operands) if k != i]
    present = set("".join(terms))
    fresh = _fresh_letters(subscripts)
    dtype = get_aval(ct).dtype
    result = ""
    for pos, letter in enumerate(target):
        n = aval.shape[pos]
        if letter in target[:pos]:  # a diagonal: a fresh letter tied to the first by an identity
            new = next(fresh)
            terms.append(letter + new)
            args.append(np.eye(n, dtype=dtype))
            result += new
            continue
        if letter not in present and letter not in target[pos + 1:]:
            terms.append(letter)
            args.append(np.ones(n, dtype=dtype))
        result += letter
    out = einsum(*args, subscripts=",".join(terms) + "->" + result)
    cts: list[Any] = [None] * len(operands)
    cts[i] = out if get_aval(out).dtype == aval.dtype else elementwise.convert_element_type(
        out, new_dtype=aval.dtype
    )
    return cts


transpose_rules[einsum_p] = _einsum_transpose


def _einsum_batch(args: list[Any], dims: list[Any], *, subscripts: str) -> tuple[Any, int]:
    inputs, output = parse_subscripts(subscripts)
    letter = next(_fresh_letters(subscripts))
    terms = [t if dim is None else t[:dim] + letter + t[dim:] for t, dim in zip(inputs, dims)]
    return einsum(*args, subscripts=",".join(terms) + "->" + letter + output), 0


batch_rules[einsum_p] = _einsum_batch

einsum: Callable[..., Any] = einsum_p.bind


def stacked_einsum(subscripts: str, *operands: Any) -> Any:
    """einsum on stacks: ``...`` in `subscripts` stands for the same leading axes
    of every operand (no broadcasting), e.g. ``"...ij,...ji->..."`` for the
    trace of a product of two stacks of matrices."""
    inputs, output = subscripts.replace(" ", "").split("->")
    terms = inputs.split(",")
    core = len(terms[0].replace("...", ""))
    lead = get_aval(operands[0]).ndim - core
    fresh = _fresh_letters(subscripts)
    letters = "".join(next(fresh) for _ in range(lead))
    spec = ",".join(t.replace("...", letters) for t in terms) + "->" + output.replace("...", letters)
    return einsum(*operands, subscripts=spec)
