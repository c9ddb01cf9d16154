"""The reductions, shapes, sorting, products, indexing and gather/scatter
primitives computed on array_api_strict's and Dask's namespaces: under jit,
vmap, jvp and grad the result is an array of that library, of NumPy's dtype,
equal to what NumPy computes (the derivatives by the complex step, or by
their formula where NumPy's function is not analytic on complex numbers), and
Dask's chunks survive where the computation allows."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.primitives import gather, indexing
from fgrad.primitives.indexing import StaticIndex

xs = pytest.importorskip("array_api_strict")
da = pytest.importorskip("dask.array")

pytestmark = pytest.mark.filterwarnings("error::UserWarning")  # strict's warning on comparing dtypes


def _dask(x):
    """A Dask array of `x` in chunks of half its length along each axis."""
    return da.from_array(x, chunks=tuple(max(1, (n + 1) // 2) for n in x.shape))


LIBRARIES = {  # name -> (NumPy -> library, library -> NumPy, array type)
    "array_api_strict": (xs.asarray, np.from_dlpack, type(xs.asarray(0.0))),
    "dask.array": (_dask, lambda x: x.compute(), da.Array),
}

rng = np.random.default_rng(0)
A = rng.uniform(0.5, 1.5, (4, 6))
B = rng.uniform(-1, 1, (6, 3))
V = rng.uniform(-1, 1, 6)
S = rng.uniform(-1, 1, (4, 4))
D = rng.uniform(-1, 1, (2, 3, 4))
E = rng.uniform(-1, 1, (2, 4, 5))
F = rng.uniform(-1, 1, (3, 2))
Y3 = rng.uniform(0.5, 1.5, (3, 6))
Y5 = rng.uniform(0.5, 1.5, (5, 6))
MASK = rng.uniform(size=(4, 6)) > 0.5
SORTED = np.array([-1, 0, 0, 1, 3])
REPEATED = StaticIndex((np.array([0, 2, 0]),))  # row 0 twice
TRACED = np.array([0, 2, 0, 9, -1])  # row 0 twice, 9 out of bounds, -1 the last row

H = 1e-30  # the complex step


def complex_step(np_f):
    """The jvp of `np_f` (NumPy, analytic on complex numbers): Im f(x + iht) / h."""
    return lambda args, tangents: np.imag(np_f(*(a + 1j * H * t for a, t in zip(args, tangents)))) / H


def _jit_scatter(prim, mode):
    """`prim` with the indices TRACED as an operand: traced by jit, so a scatter primitive."""
    inner = fgrad.jit(lambda x, y, i: prim.bind(x, y, i, mode=mode))
    return lambda x, y: inner(x, y, TRACED)


def _np_scatter(ufunc, mode):
    """NumPy's `ufunc.at` (None: assignment) at TRACED with `mode`."""

    def f(x, y):
        i = np.where(TRACED < 0, TRACED + len(x), TRACED)
        keep = (i >= 0) & (i < len(x)) if mode == "drop" else np.ones(len(i), bool)
        i, y = np.clip(i, 0, len(x) - 1)[keep], np.broadcast_to(y, (len(TRACED), x.shape[1]))[keep]
        out = x.copy()
        if ufunc is None:
            out[i] = y
        else:
            ufunc.at(out, i, y)
        return out

    return f


def _np_at(ufunc, idx):
    def f(x, y):
        out = x.copy()
        if ufunc is None:
            out[tuple(idx)] = y
        else:
            ufunc.at(out, tuple(idx), y)
        return out

    return f


def _norm_jvp(axis, scale=1.0):
    return lambda args, ts: scale * np.sum(args[0] * ts[0], axis=axis) / np.linalg.norm(args[0], axis=axis)


_gather_rows = fgrad.jit(lambda x, i: x[i])
_gather_pairs = fgrad.jit(lambda x, i, j: x[i, j])
I_CLIPPED = np.array([1, -1, 7, -9, 1])


class Case:
    """`f` (fgrad.numpy) and `np_f` (NumPy) of `args`; `jvp(args, tangents)` is
    NumPy's jvp (None: `f` has no derivative)."""

    def __init__(self, name, f, np_f, args, jvp="complex step"):
        self.name, self.f, self.np_f, self.args = name, f, np_f, args
        self.jvp = complex_step(np_f) if jvp == "complex step" else jvp

    def __repr__(self):
        return self.name


CASES = [
    # reductions
    Case("two_norm", lambda x: fnp.linalg.norm(x), np.linalg.norm, [A], _norm_jvp(None)),
    Case("two_norm_axis", lambda x: fnp.linalg.norm(x, axis=1), lambda x: np.linalg.norm(x, axis=1), [A],
         _norm_jvp(1)),
    Case("two_norm_complex", lambda x: fnp.linalg.norm(x * (1 + 2j), axis=0),
         lambda x: np.linalg.norm(x * (1 + 2j), axis=0), [A], _norm_jvp(0, np.sqrt(5))),
    Case("two_norm_int", lambda x: fnp.linalg.norm((x * 4).astype(np.int32)),
         lambda x: np.linalg.norm((x * 4).astype(np.int32)), [A], None),
    Case("argmax", lambda x: fnp.argmax(x, axis=1), lambda x: np.argmax(x, axis=1), [A], None),
    Case("argmin", lambda x: fnp.argmin(x, axis=0), lambda x: np.argmin(x, axis=0), [A], None),
    Case("argmax_bool", lambda x: fnp.argmax(x > 1, axis=1), lambda x: np.argmax(x > 1, axis=1), [A], None),
    Case("cumsum", lambda x: fnp.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), [A]),
    Case("cumsum_int32", lambda x: fnp.cumsum((x * 4).astype(np.int32), axis=0),
         lambda x: np.cumsum((x * 4).astype(np.int32), axis=0), [A], None),
    Case("cumsum_bool", lambda x: fnp.cumsum(x > 1, axis=1), lambda x: np.cumsum(x > 1, axis=1), [A], None),
    Case("cumprod", lambda x: fnp.cumprod(x, axis=0), lambda x: np.cumprod(x, axis=0), [A]),
    Case("sum", lambda x: fnp.sum(x, axis=0), lambda x: np.sum(x, axis=0), [A]),
    Case("max", lambda x: fnp.max(x, axis=1), lambda x: np.max(x, axis=1), [A]),
    Case("prod", lambda x: fnp.prod(x, axis=0), lambda x: np.prod(x, axis=0), [A]),
    Case("sum_bool", lambda x: fnp.sum(x > 1, axis=0), lambda x: np.sum(x > 1, axis=0), [A], None),
    Case("max_bool", lambda x: fnp.max(x > 1, axis=1), lambda x: np.max(x > 1, axis=1), [A], None),
    Case("min_bool", lambda x: fnp.min(x > 0.6, axis=0), lambda x: np.min(x > 0.6, axis=0), [A], None),
    Case("prod_int32", lambda x: fnp.prod((x * 2).astype(np.int32), axis=1),
         lambda x: np.prod((x * 2).astype(np.int32), axis=1), [A], None),
    Case("all", lambda x: fnp.all(x > 0.6, axis=1), lambda x: np.all(x > 0.6, axis=1), [A], None),
    # shapes
    Case("concatenate", lambda x, y: fnp.concatenate([x, y.T], axis=0),
         lambda x, y: np.concatenate([x, y.T], axis=0), [A, B]),
    # (4, 6) to (6, 4), in chunks (2, 3): not a merge or split of axes, which Dask's reshape refuses
    Case("reshape_across_chunks", lambda x: fnp.reshape(x, (6, 4)), lambda x: np.reshape(x, (6, 4)), [A]),
    Case("reshape_split", lambda x: fnp.reshape(x, (2, 2, 3, 2)), lambda x: np.reshape(x, (2, 2, 3, 2)), [A]),
    Case("concatenate_kinds", lambda x: fnp.concatenate([x, x > 1], axis=1),
         lambda x: np.concatenate([x, x > 1], axis=1), [A],
         lambda args, ts: np.concatenate([ts[0], np.zeros(A.shape)], axis=1)),
    # sorting
    Case("sort", lambda x: fnp.sort(x, axis=1), lambda x: np.sort(x, axis=1), [A]),
    Case("sort_chunked_axis", lambda x: fnp.sort(x, axis=0), lambda x: np.sort(x, axis=0), [A]),
    Case("sort_bool", lambda x: fnp.sort(x > 1, axis=1), lambda x: np.sort(x > 1, axis=1), [A], None),
    Case("argsort", lambda x: fnp.argsort(x, axis=0), lambda x: np.argsort(x, axis=0, kind="stable"), [A],
         None),
    Case("argsort_bool_stable", lambda x: fnp.argsort(x > 1, axis=1, kind="stable"),
         lambda x: np.argsort(x > 1, axis=1, kind="stable"), [A], None),
    Case("argpartition", lambda x: fnp.sort(fnp.take_along_axis(x, fnp.argpartition(x, 2, axis=1)[:, :2], axis=1),
                                            axis=1),
         lambda x: np.sort(x, axis=1)[:, :2], [A]),
    Case("take_along_argsort", lambda x: fnp.take_along_axis(x, fnp.argsort(x, axis=1), axis=1),
         lambda x: np.sort(x, axis=1), [A]),
    Case("searchsorted", lambda v: fnp.searchsorted(SORTED, v * 2), lambda v: np.searchsorted(SORTED, v * 2),
         [V], None),
    Case("searchsorted_right", lambda v: fnp.searchsorted(SORTED, fnp.round(v * 2), side="right"),
         lambda v: np.searchsorted(SORTED, np.round(v * 2), side="right"), [V], None),
    Case("searchsorted_scalar", lambda v: fnp.searchsorted(SORTED, v[0] * 2, side="right"),
         lambda v: np.searchsorted(SORTED, v[0] * 2, side="right"), [V], None),
    # products
    Case("matmul", lambda x, y: x @ y, lambda x, y: x @ y, [A, B]),
    Case("matmul_vector", lambda x, v: x @ v, lambda x, v: x @ v, [A, V]),
    Case("matmul_dot", lambda v: v @ v, lambda v: v @ v, [V]),
    Case("matmul_stack", lambda d, e: d @ e, lambda d, e: d @ e, [D, E]),
    Case("matmul_float32", lambda x, y: x.astype(np.float32) @ y, lambda x, y: x.astype(np.float32) @ y, [A, B],
         None),
    Case("einsum", lambda x, y: fnp.einsum("ij,jk->ki", x, y), lambda x, y: np.einsum("ij,jk->ki", x, y), [A, B]),
    Case("einsum_batch", lambda d, e: fnp.einsum("bij,bjk->bik", d, e),
         lambda d, e: np.einsum("bij,bjk->bik", d, e), [D, E]),
    Case("einsum_three", lambda x, y, z: fnp.einsum("ij,jk,kl->il", x, y, z),
         lambda x, y, z: np.einsum("ij,jk,kl->il", x, y, z), [A, B, F]),
    Case("einsum_diagonal", lambda s: fnp.einsum("ii->i", s), lambda s: np.einsum("ii->i", s), [S]),
    Case("einsum_diagonal_product", lambda s, x: fnp.einsum("ii,ij->j", s, x),
         lambda s, x: np.einsum("ii,ij->j", s, x), [S, A]),
    Case("einsum_full", lambda x, y: fnp.einsum("ij,ij->", x, y), lambda x, y: np.einsum("ij,ij->", x, y),
         [A, A]),
    # indexing with a static index
    Case("getitem_slices", lambda x: x[1:, ::-2], lambda x: x[1:, ::-2], [A]),
    Case("getitem_none_int", lambda x: x[None, -1, ...], lambda x: x[None, -1, ...], [A]),
    Case("getitem_beyond", lambda x: x[:100, -100:2], lambda x: x[:100, -100:2], [A]),
    Case("getitem_rows", lambda x: x[np.array([0, 2, 2]), 1:3], lambda x: x[np.array([0, 2, 2]), 1:3], [A]),
    Case("getitem_columns", lambda x: x[:, np.array([[0, 5], [1, 1]])],
         lambda x: x[:, np.array([[0, 5], [1, 1]])], [A]),
    # its jvp takes position [0] of a one-chunk Dask array: as a Dask array, the
    # positions would be named as the chunks' offsets (also [0]), and mixed up
    Case("at_divide", lambda x, y: x.at[np.array([0, 2, 0])].divide(y),
         _np_at(np.divide, (np.array([0, 2, 0]),)), [V[:3] + 2, V[3:] + 2]),
    Case("getitem_mask", lambda x: x[MASK], lambda x: x[MASK], [A]),
    Case("index_add", lambda x, y: indexing.index_add(x, y, idx=REPEATED), _np_at(np.add, REPEATED), [A, Y3]),
    Case("index_set", lambda x, y: indexing.index_set(x, y, idx=REPEATED), _np_at(None, REPEATED), [A, Y3]),
    Case("index_mul", lambda x, y: indexing.index_mul(x, y, idx=REPEATED), _np_at(np.multiply, REPEATED),
         [A, Y3]),
    Case("index_min", lambda x, y: indexing.index_min(x, y, idx=REPEATED), _np_at(np.minimum, REPEATED),
         [A, Y3]),
    Case("index_max", lambda x, y: indexing.index_max(x, y, idx=REPEATED), _np_at(np.maximum, REPEATED),
         [A, Y3]),
    Case("index_add_basic", lambda x, y: indexing.index_add(x, y, idx=StaticIndex((slice(1, 3), 2))),
         _np_at(np.add, (slice(1, 3), 2)), [A, V[:2]]),
    Case("at_add", lambda x, y: x.at[np.array([3, 1, 3])].add(y), _np_at(np.add, (np.array([3, 1, 3]),)),
         [A, V]),
    # gather and scatter: indices traced by jit
    Case("gather", lambda x: _gather_rows(x, I_CLIPPED),
         lambda x: x[np.clip(np.where(I_CLIPPED < 0, I_CLIPPED + 4, I_CLIPPED), 0, 3)], [A]),
    Case("gather_pairs", lambda x: _gather_pairs(x, np.array([[0], [3]]), np.array([5, 0, 2])),
         lambda x: x[np.array([[0], [3]]), np.array([5, 0, 2])], [A]),
    Case("scatter_add", _jit_scatter(gather.scatter_add_p, "drop"), _np_scatter(np.add, "drop"), [A, Y5]),
    Case("scatter_add_clip", _jit_scatter(gather.scatter_add_p, "clip"), _np_scatter(np.add, "clip"),
         [A, Y5[:, :1]]),
    Case("scatter_set", _jit_scatter(gather.scatter_set_p, "drop"), _np_scatter(None, "drop"), [A, Y5]),
    Case("scatter_mul", _jit_scatter(gather.scatter_mul_p, "drop"), _np_scatter(np.multiply, "drop"), [A, Y5]),
    Case("scatter_min", _jit_scatter(gather.scatter_min_p, "drop"), _np_scatter(np.minimum, "drop"), [A, Y5]),
    Case("scatter_max", _jit_scatter(gather.scatter_max_p, "clip"), _np_scatter(np.maximum, "clip"), [A, Y5]),
]
DIFFERENTIABLE = [c for c in CASES if c.jvp is not None]


def _same(out, expected, library):
    """`out` is an array of `library` of `expected`'s dtype and value."""
    _, to_numpy, array_type = LIBRARIES[library]
    assert isinstance(out, array_type), type(out)
    value = to_numpy(out)
    expected = np.asarray(expected)
    assert value.dtype == expected.dtype
    np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)


def _to(library, arrays):
    return [LIBRARIES[library][0](a) for a in arrays]


def _tangents(case):
    return [np.random.default_rng(7 + k).normal(size=a.shape) for k, a in enumerate(case.args)]


libraries = pytest.mark.parametrize("library", list(LIBRARIES))


@libraries
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_jit(case, library):
    _same(fgrad.jit(case.f)(*_to(library, case.args)), case.np_f(*case.args), library)


@libraries
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_vmap(case, library):
    examples = [case.args, [np.flip(a) for a in case.args]]
    batch = [np.stack(column) for column in zip(*examples)]
    expected = np.stack([case.np_f(*args) for args in examples])
    _same(fgrad.vmap(case.f)(*_to(library, batch)), expected, library)


@libraries
@pytest.mark.parametrize("case", DIFFERENTIABLE, ids=repr)
def test_jvp(case, library):
    tangents = _tangents(case)
    out, tangent = fgrad.jvp(case.f, tuple(_to(library, case.args)), tuple(_to(library, tangents)))
    _same(out, case.np_f(*case.args), library)
    _same(tangent, case.jvp(case.args, tangents), library)


@libraries
@pytest.mark.parametrize("case", DIFFERENTIABLE, ids=repr)
def test_grad(case, library):
    # Of sum(f * w): its derivative along each basis vector, by NumPy's jvp, is one entry of the gradient.
    weights = np.random.default_rng(3).normal(size=np.shape(case.np_f(*case.args)))
    grads = fgrad.grad(lambda *args: fnp.sum(case.f(*args) * weights), argnums=tuple(range(len(case.args))))(
        *_to(library, case.args))
    for k, (arg, grad) in enumerate(zip(case.args, grads)):
        expected = np.zeros(arg.shape)
        for position in np.ndindex(arg.shape):
            tangents = [np.zeros(a.shape) for a in case.args]
            tangents[k][position] = 1.0
            expected[position] = np.sum(case.jvp(case.args, tangents) * weights)
        _same(grad, expected, library)


# --- Dask's chunks ------------------------------------------------------------------


@pytest.mark.parametrize("f, chunks", [
    (lambda x, y: x @ y, ((2, 2), (2, 1))),
    (lambda x, y: fnp.einsum("ij,jk->ik", x, y), ((2, 2), (2, 1))),
    (lambda x, y: fnp.sum(x, axis=0), ((3, 3),)),
    (lambda x, y: fnp.cumsum(x, axis=1), ((2, 2), (3, 3))),
    (lambda x, y: x[1:, ::2], ((1, 2), (2, 1))),
    (lambda x, y: fnp.concatenate([x, y.T]), ((2, 2, 2, 1), (3, 3))),
    (lambda x, y: fnp.reshape(x, (2, 2, 6)), ((1, 1), (2,), (3, 3))),
    (lambda x, y: fnp.reshape(x, (6, 4)), ((1,) * 6, (4,))),
], ids=["matmul", "einsum", "sum", "cumsum", "slices", "concatenate", "reshape_split", "reshape_across"])
def test_dask_keeps_chunks(f, chunks):
    out = fgrad.jit(f)(_dask(A), _dask(B))
    assert out.chunks == chunks


def test_dask_grad_of_matmul_is_chunked():
    g = fgrad.grad(lambda x: fnp.sum((x @ B) ** 2))(_dask(A))
    np.testing.assert_allclose(g.compute(), 2 * (A @ B) @ B.T, rtol=1e-12)
    assert g.chunks[0] == (2, 2)


@libraries
def test_gather_with_indices_of_the_library(library):
    i = np.array([[3, -1], [0, 2]])
    out = fgrad.jit(lambda x, i: x[i, 1:])(*_to(library, [A, i]))
    _same(out, A[i, 1:], library)


@libraries
def test_scatter_with_indices_of_the_library(library):
    i = np.array([3, 0, 3, 1])
    out = fgrad.jit(lambda x, i: x.at[i].add(V))(*_to(library, [A, i]))
    expected = A.copy()
    np.add.at(expected, i, V)
    _same(out, expected, library)


# --- beyond what a scatter composes ------------------------------------------------------


@libraries
def test_scatter_beyond_its_limit_names_primitive_and_library(library, monkeypatch):
    monkeypatch.setattr(gather, "ONE_HOT_LIMIT", 10)
    f = _jit_scatter(gather.scatter_add_p, "drop")
    with pytest.raises(NotImplementedError, match=rf"`scatter_add` on arrays of {library}.*more than"):
        f(*_to(library, [A, Y5]))
