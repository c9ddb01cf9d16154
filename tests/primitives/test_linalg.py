"""Products (matmul, einsum and what is written on them: dot, vdot, inner,
outer, tensordot, kron, vecdot) and norms: values equal NumPy's; derivatives
checked to second order in both modes; NumPy's errors on misuse."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads
from tests.strategies import broadcast_pairs, seeds, shapes, values

PRIMITIVES = {"matmul", "einsum", "two_norm"}

BATCH_CASES = {
    "matmul": (fnp.matmul, [(2, 3), (3, 4)], "real"),
    "matmul_vec_mat": (fnp.matmul, [(3,), (3, 4)], "real"),
    "matmul_mat_vec": (fnp.matmul, [(2, 3), (3,)], "real"),
    "matmul_vec_vec": (fnp.matmul, [(3,), (3,)], "real"),
    "matmul_stacks": (fnp.matmul, [(5, 2, 3), (3, 2)], "real"),
    "matmul_stack_vec": (fnp.matmul, [(3,), (2, 3, 4)], "real"),
    # einsum: the batch rule gives each batched operand a fresh letter.
    "einsum": (lambda a, b: fnp.einsum("ij,jk->ik", a, b), [(2, 3), (3, 2)], "positive"),
    "einsum_diagonal": (lambda a: fnp.einsum("ii->i", a), [(3, 3)], "positive"),
    "einsum_implicit": (lambda a, b: fnp.einsum("ba,ac", a, b), [(2, 3), (3, 2)], "positive"),
    "einsum_ellipsis": (lambda a, b: fnp.einsum("...ij,...j", a, b), [(2, 3, 3), (3,)], "positive"),
    "einsum_three": (lambda a, b, c: fnp.einsum("i,ij,jk->k", a, b, c), [(2,), (2, 3), (3, 2)], "positive"),
    "einsum_broadcast_one": (lambda a, b: fnp.einsum("ij,ij->i", a, b), [(2, 1), (2, 3)], "positive"),
    "tensordot": (lambda a, b: fnp.tensordot(a, b, axes=([0, 2], [1, 0])), [(2, 3, 4), (4, 2)], "positive"),
    "dot_nd": (fnp.dot, [(2, 3), (4, 3, 2)], "positive"),
    "inner": (fnp.inner, [(2, 3), (4, 3)], "positive"),
    "outer": (fnp.outer, [(2, 2), (3,)], "real"),
    "vdot": (fnp.vdot, [(2, 3), (6,)], "positive"),
    "kron": (fnp.kron, [(2, 1), (2, 3)], "real"),
    "vecdot": (fnp.vecdot, [(2, 3), (3,)], "positive"),
    "two_norm": (lambda x: fnp.linalg.norm(x, axis=-1), [(2, 3)], "real"),
    "two_norm_all": (lambda x: fnp.linalg.norm(x, "fro", keepdims=True), [(2, 3)], "real"),
    "two_norm_vector_grad": (fgrad.grad(fnp.linalg.norm), [(3,)], "nonzero"),
    "two_norm_rows_grad": (fgrad.grad(lambda x: fnp.sum(fnp.linalg.norm(x, axis=0))), [(3, 2)], "nonzero"),
}


def traced(f):
    """`f` staged by make_jaxpr and run by eval_jaxpr: fgrad's primitives rather
    than NumPy's fast path. Each output must match its abstract value."""

    def run(*args):
        closed = fgrad.make_jaxpr(f)(*args)
        outs = fgrad.eval_jaxpr(closed.jaxpr, closed.consts, *args)
        for out, aval in zip(outs, closed.out_avals):
            assert np.shape(out) == aval.shape and np.asarray(out).dtype == aval.dtype, (out, aval)
        return outs[0] if len(outs) == 1 else outs

    return run


MATMUL_SHAPES = [
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4)),
    ((2, 2, 3), (3,)), ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("a_shape, b_shape", MATMUL_SHAPES)
@given(seed=seeds)
def test_matmul(a_shape, b_shape, seed):
    a, b = values(a_shape, "real", seed), values(b_shape, "real", seed + 1)
    np.testing.assert_allclose(fnp.matmul(a, b), a @ b, rtol=1e-13)
    check_grads(fnp.matmul, (a, b), order=2)
    check_grads(lambda a, b: a @ b, (a, b), order=1)


DOT_SHAPES = [
    ((), (2, 3)), ((3,), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4)),
    ((2, 3), (4, 3, 2)), ((3,), (2, 3, 4)), ((2, 2, 3), (2, 3, 1)), ((2, 2, 3), (3, 2)),
]


@pytest.mark.parametrize("a_shape, b_shape", DOT_SHAPES)
@given(seed=seeds)
def test_dot(a_shape, b_shape, seed):
    a, b = values(a_shape, "real", seed), values(b_shape, "real", seed + 1)
    np.testing.assert_allclose(traced(fnp.dot)(a, b), np.dot(a, b), rtol=1e-12, atol=1e-14)
    check_grads(fnp.dot, (a, b), order=2)
    if a.ndim:
        check_grads(lambda a, b: a.dot(b), (a, b), order=1)  # the method, on tracers


@st.composite
def inner_cases(draw):
    k = draw(st.integers(1, 3))
    a = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    b = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    return (a + (k,) if a or draw(st.booleans()) else ()), (b + (k,) if b or draw(st.booleans()) else ())


@given(shapes_=inner_cases(), seed=seeds)
def test_inner(shapes_, seed):
    a, b = values(shapes_[0], "real", seed), values(shapes_[1], "real", seed + 1)
    np.testing.assert_allclose(traced(fnp.inner)(a, b), np.inner(a, b), rtol=1e-12, atol=1e-14)
    check_grads(fnp.inner, (a, b), order=2)


@given(a_shape=shapes, b_shape=shapes, seed=seeds)
def test_outer_and_kron(a_shape, b_shape, seed):
    a, b = values(a_shape, "real", seed), values(b_shape, "real", seed + 1)
    for f, ref in [(fnp.outer, np.outer), (fnp.kron, np.kron)]:
        out = traced(f)(a, b)
        np.testing.assert_allclose(out, ref(a, b), rtol=1e-13)
        assert np.shape(out) == np.shape(ref(a, b))
        check_grads(f, (a, b), order=2)


@given(shape=shapes, seed=seeds, data=st.data())
def test_vdot(shape, seed, data):
    a = values(shape, "real", seed)
    b_shape = data.draw(st.sampled_from([shape, (a.size,)]))
    b = values(b_shape, "real", seed + 1)
    np.testing.assert_allclose(traced(fnp.vdot)(a, b), np.vdot(a, b), rtol=1e-12, atol=1e-14)
    check_grads(fnp.vdot, (a, b), order=2)


@given(pair=broadcast_pairs(2), k=st.integers(1, 3), seed=seeds, data=st.data())
def test_vecdot(pair, k, seed, data):
    axis = data.draw(st.sampled_from([-1, 0]))
    shape_a, shape_b = pair[0] + (k,), pair[1] + (k,)
    if axis == 0:  # the vectors along the first axis: same rank needed for the axes to line up
        assume(len(shape_a) == len(shape_b))
        shape_a, shape_b = (k,) + pair[0], (k,) + pair[1]
    a, b = values(shape_a, "real", seed), values(shape_b, "real", seed + 1)
    f = lambda a, b: fnp.vecdot(a, b, axis=axis)
    np.testing.assert_allclose(traced(f)(a, b), np.vecdot(a, b, axis=axis), rtol=1e-12, atol=1e-14)
    check_grads(f, (a, b), order=2)


@st.composite
def tensordot_cases(draw):
    """Shapes of a and b and an `axes` argument: an int, or a pair of axis lists
    (negative axes included)."""
    contracted = draw(st.lists(st.integers(1, 3), max_size=3))
    free_a = draw(st.lists(st.integers(1, 3), max_size=2))
    free_b = draw(st.lists(st.integers(1, 3), max_size=2))
    if draw(st.booleans()):
        return tuple(free_a + contracted), tuple(contracted + free_b), len(contracted)
    a_order = draw(st.permutations(range(len(free_a) + len(contracted))))
    b_order = draw(st.permutations(range(len(contracted) + len(free_b))))
    a_dims = contracted + free_a  # positions in a_order: the contracted axes first
    b_dims = contracted + free_b
    a_shape = [0] * len(a_dims)
    b_shape = [0] * len(b_dims)
    for i, pos in enumerate(a_order):
        a_shape[pos] = a_dims[i]
    for i, pos in enumerate(b_order):
        b_shape[pos] = b_dims[i]
    axes_a = [a_order[i] - (len(a_shape) if draw(st.booleans()) else 0) for i in range(len(contracted))]
    axes_b = [b_order[i] for i in range(len(contracted))]
    return tuple(a_shape), tuple(b_shape), (axes_a, axes_b)


@given(case=tensordot_cases(), seed=seeds)
def test_tensordot(case, seed):
    a_shape, b_shape, axes = case
    a, b = values(a_shape, "real", seed), values(b_shape, "real", seed + 1)
    f = lambda a, b: fnp.tensordot(a, b, axes)
    np.testing.assert_allclose(traced(f)(a, b), np.tensordot(a, b, axes), rtol=1e-12, atol=1e-13)
    check_grads(f, (a, b), order=2)


def test_tensordot_and_products_under_vmap_and_numpy_dispatch():
    a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(12.0).reshape(4, 3)
    got = fgrad.vmap(lambda a: np.tensordot(a, b, axes=([0, 1], [1, 0])))(a)
    np.testing.assert_allclose(got, np.stack([np.tensordot(x, b, axes=([0, 1], [1, 0])) for x in a]))
    for np_fn in (np.inner, np.outer, np.kron, np.vdot):  # plain NumPy calls on tracers dispatch
        g = fgrad.grad(lambda x, np_fn=np_fn: fnp.sum(np_fn(x, x)))(np.array([1.0, 2.0]))
        assert g.shape == (2,)
    np.testing.assert_allclose(fgrad.grad(lambda x: np.einsum("i,i", x, x))(np.array([1.0, 2.0])), [2.0, 4.0])


def test_product_errors_like_numpy():
    jaxpr = fgrad.make_jaxpr
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(2,\) not aligned"):
        jaxpr(fnp.dot)(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="not aligned"):
        jaxpr(fnp.dot)(np.ones((2, 3)), np.ones((4, 2, 3)))
    with pytest.raises(ValueError, match="not aligned"):
        jaxpr(fnp.inner)(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="shape-mismatch for sum"):
        jaxpr(lambda a, b: fnp.tensordot(a, b, axes=([0], [0])))(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(np.exceptions.AxisError):
        jaxpr(lambda a, b: fnp.tensordot(a, b, axes=([2], [0])))(np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="different lengths"):
        jaxpr(fnp.vdot)(np.ones(3), np.ones(2))
    with pytest.raises(ValueError, match="must be one-dimensional"):
        jaxpr(fnp.linalg.outer)(np.ones((2, 2)), np.ones(2))


# --- einsum ------------------------------------------------------------------------


@st.composite
def einsum_cases(draw):
    """Subscripts and operand shapes NumPy accepts: 1 to 3 operands, letters
    repeated within and across operands (diagonals, contractions), upper and
    lower case, `...` with broadcasting, size-1 axes that broadcast, and an
    implicit or explicit output."""
    pool = "abcdAB"
    sizes = {c: draw(st.integers(1, 3)) for c in pool}
    ellipsis_shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    use_ellipsis = draw(st.booleans())
    terms, shapes_ = [], []
    for _ in range(draw(st.integers(1, 3))):
        letters = draw(st.lists(st.sampled_from(pool), max_size=3))
        shape = [sizes[c] for c in letters]
        for i, c in enumerate(letters):  # an axis of size 1 broadcasts against the others
            if letters.count(c) == 1 and draw(st.integers(0, 4)) == 0:
                shape[i] = 1
        term = "".join(letters)
        if use_ellipsis and draw(st.booleans()):
            nd = draw(st.integers(0, len(ellipsis_shape)))
            extra = [1 if draw(st.booleans()) else n for n in ellipsis_shape[len(ellipsis_shape) - nd:]]
            pos = draw(st.integers(0, len(letters)))
            term = term[:pos] + "..." + term[pos:]
            shape = shape[:pos] + extra + shape[pos:]
        terms.append(term)
        shapes_.append(tuple(shape))
    subscripts = ",".join(terms)
    if draw(st.booleans()):
        present = sorted(set(subscripts) - {".", ","})
        out = "".join(draw(st.lists(st.sampled_from(present), unique=True)) if present else [])
        if "..." in subscripts:
            pos = draw(st.integers(0, len(out)))
            out = out[:pos] + "..." + out[pos:]
        subscripts += "->" + out
    return subscripts, shapes_


@given(case=einsum_cases(), seed=seeds)
def test_einsum(case, seed):
    subscripts, shapes_ = case
    ops = [values(s, "real", seed + i) for i, s in enumerate(shapes_)]
    f = lambda *ops: fnp.einsum(subscripts, *ops)
    expected = np.einsum(subscripts, *ops)
    out = traced(f)(*ops)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-13)
    assert np.asarray(out).dtype == expected.dtype and np.shape(out) == np.shape(expected)
    check_grads(f, ops, order=2)


def test_einsum_forms_and_options():
    a, b = values((2, 3), "real", 0), values((3, 4), "real", 1)
    expected = np.einsum("ij,jk->ik", a, b)
    interleaved = lambda a, b: fnp.einsum(a, [0, 1], b, [1, 2], [0, 2])
    np.testing.assert_allclose(traced(interleaved)(a, b), expected, rtol=1e-13)
    check_grads(interleaved, (a, b), order=1)
    ellipsis = lambda a, b: fnp.einsum(a, [Ellipsis, 1], b, [1, 30])
    np.testing.assert_allclose(traced(ellipsis)(a, b), np.einsum(a, [Ellipsis, 1], b, [1, 30]), rtol=1e-13)
    path = np.einsum_path("ij,jk->ik", a, b)[0]
    for optimize in (False, True, "greedy", "optimal", path):
        f = lambda a, b, o=optimize: fnp.einsum("ij, jk -> ik", a, b, optimize=o)
        np.testing.assert_allclose(traced(f)(a, b), expected, rtol=1e-13)
    f32 = lambda a, b: fnp.einsum("ij,jk->ik", a, b, dtype=np.float32, casting="same_kind")
    assert traced(f32)(a, b).dtype == np.float32
    assert traced(lambda a: fnp.einsum("ii", a))(np.ones((2, 2), np.float32)).dtype == np.float32
    big = values((40, 40), "real", 2)  # large enough for a planned (BLAS) contraction
    np.testing.assert_allclose(traced(lambda x: fnp.einsum("ij,jk", x, x))(big), big @ big, rtol=1e-12)


def test_einsum_jaxpr_is_one_equation_with_normalized_subscripts():
    text = str(fgrad.make_jaxpr(lambda a, b: fnp.einsum("...ij,...jk", a, b))(np.ones((5, 2, 3)), np.ones((3, 4))))
    assert text.count("einsum") == 1 and "subscripts=aij,jk->aik" in text


EINSUM_ERRORS = [
    ("ij", [(2,)], "too many subscripts for operand 0"),
    ("i", [(2, 2)], "more dimensions than subscripts given"),
    ("i->j", [(2,)], "output subscript 'j' which never appeared"),
    ("i->ii", [(2,)], "output subscript 'i' multiple times"),
    ("i.", [(2,)], "not part of an ellipsis"),
    ("i1", [(2,)], "subscripts must be letters"),
    ("ii", [(2, 3)], "don't match"),
    ("ij,jk", [(2, 3), (4, 2)], "could not be broadcast together"),
    ("...i->i", [(2, 3)], "no '...' ellipsis provided"),
]


@pytest.mark.parametrize("subscripts, shapes_, message", EINSUM_ERRORS)
def test_einsum_errors_like_numpy(subscripts, shapes_, message):
    ops = [np.ones(s) for s in shapes_]
    with pytest.raises(ValueError, match=message):
        np.einsum(subscripts, *ops)  # NumPy's own message...
    with pytest.raises(ValueError, match=message):  # ...and fgrad's, under a transform
        fgrad.make_jaxpr(lambda *ops: fnp.einsum(subscripts, *ops))(*ops)


def test_einsum_operand_count():
    message = r"the subscripts 'i,j' name 2 operands, but 1 were given"
    with pytest.raises(ValueError, match=message):
        fgrad.make_jaxpr(lambda a: fnp.einsum("i,j", a))(np.ones(2))
    with pytest.raises(ValueError, match="name 1 operands, but 2 were given"):
        fgrad.make_jaxpr(lambda a: fnp.einsum("i", a, a))(np.ones(2))


def test_einsum_primitive_checks_its_operands():
    from fgrad.primitives import linalg as P

    with pytest.raises(ValueError, match="different sizes"):
        fgrad.make_jaxpr(lambda a, b: P.einsum(a, b, subscripts="i,i->"))(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="do not fit"):
        fgrad.make_jaxpr(lambda a: P.einsum(a, subscripts="ij->"))(np.ones(2))


# --- norms -------------------------------------------------------------------------

VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 3, 0.5, -1, -2.5]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


def _well_separated(x, gap=1e-2):
    s = np.sort(np.abs(np.ravel(x)))
    return s.size < 2 or np.min(np.diff(s)) > gap


@pytest.mark.parametrize("ord", VECTOR_ORDS, ids=str)
@given(shape=st.sampled_from([(3,), (2, 3), (2, 2, 3), (1,)]), seed=seeds, data=st.data())
def test_vector_norms(ord, shape, seed, data):
    x = values(shape, "nonzero", seed)
    axis = data.draw(st.sampled_from([None, -1, 0]) if len(shape) == 1 else st.sampled_from([-1, 0, 1]))
    keepdims = data.draw(st.booleans())
    f = lambda x: fnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    expected = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(traced(f)(x), expected, rtol=1e-12)
    assert np.shape(traced(f)(x)) == np.shape(expected)
    if ord in (np.inf, -np.inf):
        assume(_well_separated(x))  # away from ties
    check_grads(f, (x,), order=2)


@pytest.mark.parametrize("ord", MATRIX_ORDS, ids=str)
@given(shape=st.sampled_from([(2, 3), (3, 3), (3, 2), (2, 3, 2)]), seed=seeds, data=st.data())
def test_matrix_norms(ord, shape, seed, data):
    x = values(shape, "nonzero", seed)
    nd = len(shape)
    axes = data.draw(st.permutations(range(nd)).map(lambda p: tuple(p[:2])))
    axis = tuple(a - nd if data.draw(st.booleans()) else a for a in axes)
    keepdims = data.draw(st.booleans())
    f = lambda x: fnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    expected = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(traced(f)(x), expected, rtol=1e-12)
    assert np.shape(traced(f)(x)) == np.shape(expected)
    moved = np.moveaxis(x, axes, (-2, -1))
    if ord in (2, -2, "nuc"):
        s = np.linalg.svd(moved, compute_uv=False)  # distinct, non-zero singular values
        assume(np.min(s) > 0.1 and (s.shape[-1] < 2 or np.min(-np.diff(s, axis=-1)) > 0.1))
    if ord in (1, -1, np.inf, -np.inf):
        sums = np.abs(moved).sum(axis=-2 if ord in (1, -1) else -1)
        assume(all(_well_separated(row, 1e-2) for row in np.reshape(sums, (-1, sums.shape[-1]))))
    check_grads(f, (x,), order=2)


def test_norm_defaults_and_array_api_names():
    x = values((2, 3, 4), "nonzero", 0)
    for f, ref in [
        (lambda x: fnp.linalg.norm(x), lambda x: np.linalg.norm(x)),
        (lambda x: fnp.linalg.norm(x, keepdims=True), lambda x: np.linalg.norm(x, keepdims=True)),
        (lambda x: fnp.linalg.norm(x[0], 2), lambda x: np.linalg.norm(x[0], 2)),
        (lambda x: fnp.linalg.norm(x[0, 0], 0), lambda x: np.linalg.norm(x[0, 0], 0)),
        (lambda x: fnp.linalg.vector_norm(x, axis=(0, 2), ord=3, keepdims=True),
         lambda x: np.linalg.vector_norm(x, axis=(0, 2), ord=3, keepdims=True)),
        (lambda x: fnp.linalg.vector_norm(x, ord=1), lambda x: np.linalg.vector_norm(x, ord=1)),
        (lambda x: fnp.linalg.matrix_norm(x, ord="nuc"), lambda x: np.linalg.matrix_norm(x, ord="nuc")),
        (lambda x: np.linalg.norm(x, axis=-1), lambda x: np.linalg.norm(x, axis=-1)),  # dispatch
    ]:
        np.testing.assert_allclose(traced(f)(x), ref(x), rtol=1e-12)
        check_grads(f, (x,), order=1)
    np.testing.assert_allclose(traced(fnp.linalg.norm)(np.arange(4)), np.linalg.norm(np.arange(4)))
    y = np.ones(3, np.float32)
    assert traced(fnp.linalg.norm)(y).dtype == np.float32
    assert traced(lambda y: fnp.linalg.norm(y, 0))(y).dtype == np.float32
    # ord=0 counts non-zero elements: no derivative
    np.testing.assert_array_equal(fgrad.grad(lambda x: fnp.linalg.norm(x, 0))(np.array([1.0, 0.0])), [0, 0])


@pytest.mark.parametrize("kwargs", [{}, {"axis": -1}, {"axis": -1, "keepdims": True}, {"ord": "fro"},
                                    {"ord": 3, "axis": 0}, {"axis": (0, 1)}], ids=str)
def test_norm_derivative_at_zero_is_zero_not_nan(kwargs):
    x = np.zeros((2, 3))
    x1 = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])  # one zero row, one non-zero
    f = lambda x: fnp.sum(fnp.linalg.norm(x, **kwargs))
    for point in (x, x1):
        g = fgrad.grad(f)(point)
        assert not np.any(np.isnan(g))
        np.testing.assert_array_equal(fgrad.jacfwd(f)(point), g)
        assert not np.any(np.isnan(fgrad.hessian(f)(point)))
    np.testing.assert_array_equal(fgrad.grad(f)(x), np.zeros_like(x))
    if kwargs.get("axis") == -1 and "ord" not in kwargs:
        np.testing.assert_allclose(fgrad.grad(f)(x1), [[0, 0, 0], [0.6, 0.8, 0]])


def test_norm_of_a_vector_derivative_at_zero_is_zero_not_nan():
    for dtype in (np.float64, np.float32):
        f = lambda x: fnp.linalg.norm(x)
        zero = np.zeros(3, dtype)
        g = fgrad.grad(f)(zero)
        np.testing.assert_array_equal(g, zero)
        assert g.dtype == dtype
        np.testing.assert_array_equal(fgrad.jacfwd(f)(zero), zero)
        assert not np.any(np.isnan(fgrad.hessian(f)(zero)))
    np.testing.assert_allclose(fgrad.grad(fnp.linalg.norm)(np.array([3.0, 4.0])), [0.6, 0.8])


@pytest.mark.parametrize("kwargs", [{}, {"axis": -1}, {"axis": (0, 1)}, {"ord": 2, "axis": 0}], ids=str)
@given(seed=seeds)
def test_two_norms_of_complex_arrays(kwargs, seed):
    z = values((2, 3), "real", seed) + 1j * values((2, 3), "nonzero", seed + 1)
    f = lambda z: fnp.linalg.norm(z, **kwargs)
    expected = np.linalg.norm(z, **kwargs)
    got = traced(f)(z)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert np.asarray(got).dtype == np.float64
    check_grads(f, (z,), order=2)
    check_grads(lambda z: fnp.linalg.norm(z[0], **{k: v for k, v in kwargs.items() if k == "ord"}), (z,),
                order=2)  # a vector


def test_two_norm_of_a_vector_is_one_primitive_with_a_two_equation_tangent():
    # W2 (benchmarks/bench_w2_control_flow.py) takes norms in a Python loop: each
    # primitive there costs its dispatch under grad, each tangent equation its staging.
    x = np.array([3.0, 4.0])
    eqns = fgrad.make_jaxpr(lambda x, t: fgrad.jvp(fnp.linalg.norm, (x,), (t,)))(x, x).jaxpr.eqns
    assert [e.primitive.name for e in eqns] == ["two_norm", "eq", "add", "div", "matmul", "mul"]
    assert [e.primitive.name for e in fgrad.make_jaxpr(fnp.linalg.norm)(x).jaxpr.eqns] == ["two_norm"]


@pytest.mark.parametrize("shape, kwargs", [
    ((0,), {"ord": np.inf}), ((0, 3), {"ord": np.inf, "axis": 0}), ((0, 3), {"ord": np.inf, "axis": 1}),
    ((0, 0), {"ord": np.inf}), ((0, 0), {"ord": 1}), ((0, 0), {"ord": 2}), ((0, 0), {"ord": "nuc"}),
    ((2, 0, 3), {"ord": 1, "axis": (1, 2)}), ((2, 2), {"ord": "f"}), ((2, 3), {"ord": "f", "axis": (1, 0)}),
], ids=str)
def test_norms_of_empty_arrays_and_the_f_alias_like_numpy(shape, kwargs):
    x = np.ones(shape)
    f = lambda x: fnp.linalg.norm(x, **kwargs)
    expected = np.linalg.norm(x, **kwargs)
    got = traced(f)(x)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_array_equal(got, expected)
    assert not np.any(np.isnan(fgrad.grad(lambda x: fnp.sum(f(x)))(x)))
    with pytest.raises(ValueError, match="zero-size array"):  # as NumPy's: no minimum of nothing
        traced(lambda x: fnp.linalg.norm(x, -np.inf))(np.ones(0))


NORM_ERRORS = [
    ({"ord": "fro", "axis": 0}, (2, 2), "Invalid norm order 'fro' for vectors"),
    ({"ord": 3}, (2, 2), "Invalid norm order for matrices"),
    ({"ord": 2}, (2, 2, 2), "Improper number of dimensions to norm"),
    ({"axis": (0, 0)}, (2, 2), "Duplicate axes given"),
    ({"axis": (0, 1, 2)}, (2, 2, 2), "Improper number of dimensions to norm"),
]


@pytest.mark.parametrize("kwargs, shape, message", NORM_ERRORS)
def test_norm_errors_like_numpy(kwargs, shape, message):
    with pytest.raises(ValueError, match=message):
        np.linalg.norm(np.ones(shape), **kwargs)
    with pytest.raises(ValueError, match=message):
        fgrad.make_jaxpr(lambda x: fnp.linalg.norm(x, **kwargs))(np.ones(shape))
    with pytest.raises(np.exceptions.AxisError):
        fgrad.make_jaxpr(lambda x: fnp.linalg.norm(x, axis=2))(np.ones((2, 2)))


def test_matmul_errors_like_numpy():
    with pytest.raises(ValueError, match="mismatch"):  # NumPy's own error, computing the primal
        fgrad.grad(lambda a: fnp.sum(a @ np.ones((3, 2))))(np.ones((2, 2)))
    message = r"mismatch in the contracted dimension: shapes \(2, 2\) and \(3, 2\)"
    with pytest.raises(ValueError, match=message):
        fgrad.make_jaxpr(lambda a: a @ np.ones((3, 2)))(np.ones((2, 2)))
    with pytest.raises(ValueError, match="0-d"):
        fgrad.make_jaxpr(fnp.matmul)(1.0, np.ones(2))


def test_out_and_dtype_misuse():
    with pytest.raises(TypeError, match="does not support out="):
        fgrad.make_jaxpr(lambda a: fnp.dot(a, a, out=np.empty(())))(np.ones(2))
    with pytest.raises(TypeError, match="does not support out="):
        fgrad.make_jaxpr(lambda a: fnp.einsum("i,i", a, a, out=np.empty(())))(np.ones(2))
    with pytest.raises(TypeError, match="cannot be cast to float32 according to the rule 'safe'"):
        fgrad.make_jaxpr(lambda a: fnp.einsum("i,i", a, a, dtype=np.float32))(np.ones(2))


PRODUCTS_WITH_A_FLOAT64_PARTNER = {  # f(x) with x float32, the other operand float64
    "matmul_vector": lambda x: np.ones((2, 3)) @ x,
    "matmul_matrix": lambda x: np.ones((2, 3)) @ x.reshape(3, 1),
    "matmul_left": lambda x: x.reshape(1, 3) @ np.ones((3, 2)),
    "matrix_times_vector": lambda x: fnp.matmul(x.reshape(1, 3), np.ones(3)),
    "stack_matmul": lambda x: fnp.matmul(np.ones((2, 2, 3)), x),
    "dot": lambda x: fnp.dot(np.ones((2, 3)), x),
    "dot_scalar": lambda x: fnp.dot(x, 2.0),
    "inner": lambda x: fnp.inner(x, np.ones(3)),
    "inner_scalar": lambda x: fnp.inner(2.0, x),
    "tensordot": lambda x: fnp.tensordot(np.ones((2, 3)), x, axes=1),
    "vdot": lambda x: fnp.vdot(np.ones(3), x),
    "matmul_vectors": lambda x: np.ones(3) @ x,
    "matmul_vectors_left": lambda x: fnp.matmul(x, np.ones(3)),
    "einsum": lambda x: fnp.einsum("ij,j->i", np.ones((2, 3)), x),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS_WITH_A_FLOAT64_PARTNER))
def test_gradients_keep_the_dtype_of_a_float32_operand(name):
    f = PRODUCTS_WITH_A_FLOAT64_PARTNER[name]
    x = np.array([1.0, 2.0, 3.0], np.float32)
    assert np.asarray(f(x)).dtype == np.float64
    g = fgrad.grad(lambda x: fnp.sum(f(x)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, fgrad.grad(lambda x: fnp.sum(f(x)))(x.astype(np.float64)), rtol=1e-6)
    assert fgrad.vjp(f, x)[1](np.ones(np.shape(f(x))))[0].dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.complex64, bool])
def test_dot_and_inner_take_python_scalars_as_numpy_does(dtype):
    x = np.ones(3, dtype)
    for f, ref in [(fnp.dot, np.dot), (fnp.inner, np.inner)]:
        for scalar in (2.0, 2, 2j, True):
            for args in ((x, scalar), (scalar, x)):
                expected = ref(*args)
                got = traced(lambda x, f=f, args=args: f(*(x if a is x else a for a in args)))(x)
                assert np.asarray(got).dtype == expected.dtype, (f, args)
                np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", [bool, np.int8, np.uint8, np.int32, np.float16, np.float32])
def test_vecdot_keeps_numpy_result_dtype(dtype):
    a = np.array([[1, 0, 1], [0, 0, 1], [0, 0, 0]], dtype)
    b = np.array([1, 1, 0], dtype)
    expected = np.vecdot(a, b)
    got = traced(fnp.vecdot)(a, b)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    wraps = np.full(3, 100, np.int8)
    np.testing.assert_array_equal(traced(fnp.vecdot)(wraps, wraps), np.vecdot(wraps, wraps))


def test_vdot_and_vecdot_conjugate_their_first_argument():
    a, b = np.array([1 + 2j, 3 - 1j]), np.array([2 - 1j, 1 + 1j])
    assert fnp.vdot(a, b) == np.vdot(a, b)
    assert fgrad.make_jaxpr(fnp.vdot)(a, b).out_avals[0].dtype == np.complex128
    check_grads(lambda a: fnp.vdot(a, b), (a,), order=2)
    check_grads(lambda a: fnp.vecdot(a, b), (a,), order=2)
