"""gather and the scatters with their indices as operands: values against NumPy
(negative indices from the end, out of bounds clamped or dropped), derivatives
against finite differences in both modes, vmap over the array, the indices
or both against a Python loop, and every NumPy indexing form with traced
indices (jit, vmap, make_jaxpr) against the same index given as a constant."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.primitives import gather as g
from fgrad.test_util import check_grads
from tests.strategies import seeds, values

PRIMITIVES = {"gather", "scatter_add", "scatter_set", "scatter_mul", "scatter_min", "scatter_max",
              "scatter_mul_cofactors"}


def _rows(y):
    """Row indices in [0, 3) with repeats, computed from `y` (traced under vmap)."""
    return fnp.argsort(y[:, 0]) % 3


BATCH_CASES = {
    "gather": (lambda x, y: g.gather(x, fnp.argsort(y), mode="clip"), [(4, 2), (4,)], "real"),
    "gather_two_axes": (lambda x, y: g.gather(x, fnp.argsort(y)[:, None] % 3, fnp.argsort(y)[None, :2] % 2,
                                              mode="fill"), [(3, 2, 2), (4,)], "real"),
    "scatter_add": (lambda x, y: g.scatter_add(x, y, _rows(y), mode="drop"), [(3, 2), (4, 2)], "real"),
    "scatter_set": (lambda x, y: g.scatter_set(x, y[:, 1], _rows(y), mode="clip"), [(3,), (4, 2)], "real"),
    "scatter_mul": (lambda x, y: g.scatter_mul(x, y, _rows(y), mode="drop"), [(3, 2), (4, 2)], "real"),
    "scatter_min": (lambda x, y: g.scatter_min(x, y[:, :1], _rows(y), mode="drop"), [(3, 2), (4, 2)], "real"),
    "scatter_max": (lambda x, y: g.scatter_max(x, y, _rows(y), mode="clip"), [(3, 2), (4, 2)], "real"),
    "scatter_mul_cofactors": (lambda x, y: g.scatter_mul_cofactors_p.bind(x, y, _rows(y), mode="drop"),
                              [(3, 2), (4, 2)], "real"),
    "index_traced": (lambda x, y: fnp.at(x)[:, fnp.argmax(y, axis=0), None, 1:].get(), [(2, 3, 3), (3, 2)],
                     "real"),
    "take_traced": (lambda x, y: fnp.take(x, fnp.argsort(y), axis=1, mode="wrap"), [(2, 3), (3,)], "real"),
    "take_along_axis_traced": (lambda x: fnp.take_along_axis(x, fnp.argsort(x, axis=0), axis=0),
                               [(3, 2)], "real"),
    "at_add_traced": (lambda x, y: fnp.at(x)[fnp.argsort(y) % 2].add(y), [(3,), (4,)], "real"),
}

REPEATED = np.array([2, 0, -1, 2])  # the last row twice more, once from the end
OUT_OF_BOUNDS = np.array([1, 3, -4, 0])  # 3 past the end, -4 before the start of 3 rows


def _np_scatter(combine, x, y, i, mode):
    out = x.copy()
    i = np.where(i < 0, i + len(x), i)
    if mode == "clip":
        i = np.clip(i, 0, len(x) - 1)
    else:
        keep = (i >= 0) & (i < len(x))
        i, y = i[keep], np.broadcast_to(y, (len(keep),) + x.shape[1:])[keep]
    if combine is None:
        out[i] = y
    else:
        combine.at(out, i, y)
    return out


SCATTERS = {"scatter_add": np.add, "scatter_set": None, "scatter_mul": np.multiply,
            "scatter_min": np.minimum, "scatter_max": np.maximum}


@pytest.mark.parametrize("index", [REPEATED, OUT_OF_BOUNDS], ids=["repeated", "out_of_bounds"])
@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_gather_values_clamp_or_fill_out_of_bounds(index, mode):
    x = np.arange(6.0).reshape(3, 2)
    got = g.gather(x, index, mode=mode)
    rows = np.where(index < 0, index + 3, index)
    want = x[np.clip(rows, 0, 2)]
    if mode == "fill":
        want = np.where(((rows >= 0) & (rows < 3))[:, None], want, 0.0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(SCATTERS))
@pytest.mark.parametrize("index", [REPEATED, OUT_OF_BOUNDS], ids=["repeated", "out_of_bounds"])
@pytest.mark.parametrize("mode", ["clip", "drop"])
def test_scatter_values_apply_every_update_and_clamp_or_drop(name, index, mode):
    x, y = values((3, 2), "real", 1), values((4, 2), "real", 2)
    got = getattr(g, name)(x, y, index, mode=mode)
    np.testing.assert_array_equal(got, _np_scatter(SCATTERS[name], x, y, index, mode))


@settings(deadline=None)
@given(seed=seeds, trailing=st.booleans())
def test_gather_derivatives(seed, trailing):
    x = values((3, 2) if trailing else (3,), "real", seed)
    for index, mode in ((REPEATED, "clip"), (OUT_OF_BOUNDS, "fill"), (OUT_OF_BOUNDS, "clip")):
        check_grads(lambda x: g.gather(x, index, mode=mode), (x,), order=2)
    two = (REPEATED[:, None], np.array([[1, 0, -1]]))  # two axes, broadcast to (4, 3)
    check_grads(lambda x: g.gather(x, *two[:x.ndim], mode="clip") * 1.0, (x,), order=2)


@pytest.mark.parametrize("name", sorted(SCATTERS))
@pytest.mark.parametrize("index", [REPEATED, OUT_OF_BOUNDS], ids=["repeated", "out_of_bounds"])
@pytest.mark.parametrize("mode", ["clip", "drop"])
@settings(deadline=None, max_examples=10)
@given(seed=seeds, broadcast=st.booleans())
def test_scatter_derivatives(name, index, mode, seed, broadcast):
    x = values((3, 2), "nonzero", seed)
    y = values((2,) if broadcast else (4, 2), "nonzero", seed + 1)
    if name in ("scatter_min", "scatter_max"):
        y = y + 0.01 * np.sign(y)  # no ties with x: a kink there
        both = np.concatenate([x.ravel(), y.ravel()])
        assume(np.min(np.abs(both[:, None] - both[None, :]) + np.eye(both.size)) > 1e-4)  # nor among the updates
    scatter = getattr(g, name)
    order = 1 if name == "scatter_mul" else 2  # its cofactors are differentiated once
    check_grads(lambda x, y: scatter(x, y, index, mode=mode), (x, y), order=order)


def test_scatter_mul_second_order_in_the_updates_raises():
    x, y = np.arange(1.0, 4.0), np.array([2.0, 3.0])
    f = lambda y: fnp.sum(g.scatter_mul(x, y, np.array([1, 1]), mode="drop"))  # noqa: E731
    np.testing.assert_allclose(fgrad.grad(f)(y), [3.0 * 2.0, 2.0 * 2.0])  # x[1] = 2 times the other factor
    with pytest.raises(NotImplementedError, match="second derivative of at\\[...\\].multiply"):
        fgrad.hessian(f)(y)


def test_ties_of_scatter_max_share_the_derivative():
    x, y = np.array([1.0, 5.0]), np.array([5.0, 5.0, 0.0])
    grad_x, grad_y = fgrad.grad(lambda x, y: fnp.sum(g.scatter_max(x, y, np.array([1, 1, 0]), mode="drop")),
                                argnums=(0, 1))(x, y)
    np.testing.assert_allclose(grad_x, [1.0, 1 / 3])
    np.testing.assert_allclose(grad_y, [1 / 3, 1 / 3, 0.0])


def test_a_dropped_update_has_no_derivative():
    x, y = np.zeros(3), np.array([1.0, 2.0])
    for name in SCATTERS:
        grad_y = fgrad.grad(lambda y: fnp.sum(getattr(g, name)(x, y, np.array([7, 1]), mode="drop") ** 2))(y)
        assert grad_y[0] == 0.0, name


def test_errors_say_what_was_given():
    def staged(f):
        return fgrad.make_jaxpr(f)(np.ones(3))

    with pytest.raises(TypeError, match="indices must be integers, but one is f64\\[2\\]"):
        staged(lambda x: g.gather(x, np.ones(2), mode="clip"))
    with pytest.raises(ValueError, match="2 index arrays for an array of rank 1"):
        staged(lambda x: g.gather(x, np.zeros(2, int), np.zeros(2, int), mode="clip"))
    with pytest.raises(ValueError, match="cannot add values of shape \\(3,\\) at an index selecting shape"):
        staged(lambda x: g.scatter_add(x, x, np.zeros(2, int), mode="drop"))
    with pytest.raises(ValueError, match="mode must be one of"):
        staged(lambda x: g.gather(x, np.zeros(2, int), mode="wrap"))


# --- every indexing form with traced indices ------------------------------------------

X = np.arange(24.0).reshape(2, 3, 4)
I = np.array([1, 0, -1])  # noqa: E741
FORMS = {
    "x[i]": lambda x, i: x[i % 2],
    "x[:, i]": lambda x, i: x[:, i],
    "x[..., i]": lambda x, i: x[..., i],
    "x[i, :, i]": lambda x, i: x[i % 2, :, i],
    "x[None, i, 1:3]": lambda x, i: x[None, i % 2, 1:3],
    "x[1, i]": lambda x, i: x[1, i],
    "x[:, None, i, ::2]": lambda x, i: x[:, None, i, ::2],
    "x[i, 2]": lambda x, i: x[i % 2, 2],
    "x[i[:, None], i]": lambda x, i: x[i[:, None] % 2, i],
    "x[i[0]]": lambda x, i: x[i[0]],
    "x[1:, i, np.array([0, 3, 1])]": lambda x, i: x[1:, i, np.array([0, 3, 1])],
    "take axis 2": lambda x, i: fnp.take(x, i, axis=2),
    "take flat": lambda x, i: fnp.take(x, i * 7),
    "take_along_axis": lambda x, i: fnp.take_along_axis(x, fnp.reshape(i % 3, (1, 3, 1)), axis=1),
    "at get": lambda x, i: fnp.at(x)[:, i].get(),
}


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
def test_traced_indices_give_numpy_s_result_under_jit_vmap_and_make_jaxpr(form):
    want = form(X, I)  # the index a constant: NumPy's own indexing
    np.testing.assert_array_equal(fgrad.jit(form)(X, I), want)
    closed = fgrad.make_jaxpr(form)(X, I)
    assert "gather" in str(closed)
    np.testing.assert_array_equal(fgrad.eval_jaxpr(closed.jaxpr, closed.consts, X, I)[0], want)
    indices = np.stack([I, np.array([0, 2, 1]), np.array([-2, 1, 1])])
    looped = np.stack([form(X, i) for i in indices])
    # Only the indices batched (x traced by jit: NumPy's own x[i] cannot take a traced i).
    per_index = fgrad.jit(lambda x, i: fgrad.vmap(form, in_axes=(None, 0))(x, i))
    np.testing.assert_array_equal(per_index(X, indices), looped)
    xs = np.stack([X, X + 100.0])
    np.testing.assert_array_equal(fgrad.vmap(form)(xs, indices[:2]), np.stack([form(xs[0], indices[0]),
                                                                                form(xs[1], indices[1])]))


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
def test_gradients_through_traced_indices_equal_those_through_constant_ones(form):
    want = fgrad.grad(lambda x: fnp.sum(fnp.sin(form(x, I))))(X)
    got = fgrad.jit(fgrad.grad(lambda x, i: fnp.sum(fnp.sin(form(x, i)))))(X, I)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    t = np.cos(X)
    _, want_t = fgrad.jvp(lambda x: fnp.sin(form(x, I)), (X,), (t,))
    _, got_t = fgrad.jit(lambda x, i, t: fgrad.jvp(lambda x: fnp.sin(form(x, i)), (x,), (t,)))(X, I, t)
    np.testing.assert_allclose(got_t, want_t, rtol=1e-14)


UPDATES = {
    "set": lambda r, v: r.set(v), "add": lambda r, v: r.add(v), "subtract": lambda r, v: r.subtract(v),
    "multiply": lambda r, v: r.multiply(v), "divide": lambda r, v: r.divide(v),
    "min": lambda r, v: r.min(v), "max": lambda r, v: r.max(v),
}


@pytest.mark.parametrize("update", UPDATES.values(), ids=UPDATES.keys())
@pytest.mark.parametrize("where", ["rows", "columns"])
def test_at_updates_with_traced_indices_equal_constant_ones_and_their_gradients(update, where):
    x = values((3, 4), "nonzero", 3)
    i = np.array([2, 0, 2])
    v = values((3, 4) if where == "rows" else (3, 3), "nonzero", 4)
    index = (lambda i: i) if where == "rows" else (lambda i: (slice(None), i))

    def f(x, v, i):
        return update(fnp.at(x)[index(i)], v)

    want = f(x, v, i)
    np.testing.assert_allclose(fgrad.jit(f)(x, v, i), want, rtol=1e-15)
    loss = lambda x, v, i: fnp.sum(fnp.sin(f(x, v, i)))  # noqa: E731
    want_grads = fgrad.grad(loss, argnums=(0, 1))(x, v, i)
    got_grads = fgrad.jit(fgrad.grad(loss, argnums=(0, 1)))(x, v, i)
    for got, expected in zip(got_grads, want_grads):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_traced_updates_out_of_bounds_are_dropped_or_clamped_and_reads_clamped():
    x, i = np.zeros(3), np.array([0, 5, -1, -7])
    np.testing.assert_array_equal(fgrad.jit(lambda x, i: fnp.at(x)[i].add(1.0))(x, i), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(fgrad.jit(lambda x, i: fnp.at(x)[i].add(1.0, mode="clip"))(x, i),
                                  [2.0, 0.0, 2.0])
    np.testing.assert_array_equal(fgrad.jit(lambda x, i: x[i])(np.arange(3.0), i), [0.0, 2.0, 2.0, 0.0])
    # The same index as a constant: NumPy's IndexError.
    with pytest.raises(IndexError):
        fgrad.grad(lambda x: fnp.sum(x[i]))(np.arange(3.0))


def test_what_traced_indices_cannot_do_raises_saying_why():
    with pytest.raises(IndexError, match="boolean mask index is a traced value.*fgrad.numpy.where"):
        fgrad.jit(lambda x: x[x > 0])(np.ones(3))
    with pytest.raises(NotImplementedError, match="power\\(\\) with a traced index is not supported"):
        fgrad.jit(lambda x, i: fnp.at(x)[i].power(2.0))(np.ones(3), np.array([0]))
    with pytest.raises(ValueError, match="with a traced index, mode may be.*or 'fill'"):
        fgrad.jit(lambda x, i: fnp.at(x)[i].get(mode="wrap"))(np.ones(3), np.array([0]))
    with pytest.raises(ValueError, match="take: mode must be 'raise', 'wrap', 'clip' or 'fill', not 'drop'"):
        fgrad.jit(lambda x, i: fnp.take(x, i, mode="drop"))(np.ones(3), np.array([0]))
    with pytest.raises(IndexError, match="too many indices for array: array is 1-dimensional, but 2"):
        fgrad.jit(lambda x, i: x[i, i])(np.ones(3), np.array([0]))
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        fgrad.jit(lambda x, i: x[i, np.array([5])])(np.ones((3, 3)), np.array([0]))


def test_a_numpy_array_indexed_by_a_traced_index_says_to_use_take_or_at():
    emb = np.arange(6.0).reshape(3, 2)
    with pytest.raises(TypeError, match=r"write fnp.at\(y\)\[i\].get\(\) or fnp.take\(y, i, axis=0\)"):
        fgrad.jit(lambda i: emb[i])(np.array([0, 2]))
    np.testing.assert_array_equal(fgrad.jit(lambda i: fnp.take(emb, i, axis=0))(np.array([0, 2])), emb[[0, 2]])
    np.testing.assert_array_equal(fgrad.jit(lambda i: fnp.at(emb)[i].get())(np.array([0, 2])), emb[[0, 2]])


def test_an_embedding_lookup_under_jit_grad():
    rng = np.random.default_rng(0)
    params = {"emb": rng.standard_normal((10, 3)), "w": rng.standard_normal(3)}
    tokens = np.array([1, 5, 5, 9])

    def loss(params, tokens):
        return fnp.sum(fnp.tanh(params["emb"][tokens] @ params["w"]))

    want = fgrad.grad(loss)(params, tokens)
    got = fgrad.jit(fgrad.grad(loss))(params, tokens)
    for k in params:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-14)
    per_example = fgrad.vmap(fgrad.grad(loss), in_axes=(None, 0))(params, tokens[:, None])
    np.testing.assert_allclose(per_example["emb"].sum(0), want["emb"], rtol=1e-13)


# --- take's modes and at[].get(mode="fill") with traced indices ---------------------

TAKE_X = np.arange(12.0).reshape(3, 4) ** 1.5
TAKE_I = np.array([[-9, -5, -4, -1], [0, 3, 4, 9]])


def _numpy_filled(x, i, axis, fill):
    """JAX's mode='fill' written in NumPy: negative indices from the end, the rest out of
    bounds replaced by `fill`."""
    n = x.shape[axis]
    j = np.where(i < 0, i + n, i)
    inside = (j >= 0) & (j < n)
    taken = np.take(x, np.clip(j, 0, n - 1), axis=axis)
    mask = np.expand_dims(inside, tuple(range(axis))) if axis else inside
    mask = mask.reshape(mask.shape + (1,) * (taken.ndim - mask.ndim))
    return np.where(mask, taken, fill)


def _expected_take(x, i, axis, mode, fill=np.nan):
    n = x.shape[axis]
    if mode == "fill":
        return _numpy_filled(x, i, axis, fill)
    if mode == "raise":  # traced: negative from the end, then clamped (README)
        return np.take(x, np.clip(np.where(i < 0, i + n, i), 0, n - 1), axis=axis)
    return np.take(x, i, axis=axis, mode=mode)


@pytest.mark.parametrize("mode", ["clip", "wrap", "raise", "fill"])
@pytest.mark.parametrize("axis", [0, 1, None])
def test_take_with_a_traced_index_gives_numpy_s_result_for_its_mode(mode, axis):
    x, i = TAKE_X, TAKE_I
    want = _expected_take(x.ravel() if axis is None else x, i, axis or 0, mode)
    kwargs = {"axis": axis, "mode": mode}
    got = fgrad.jit(lambda x, i: fnp.take(x, i, **kwargs))(x, i)
    np.testing.assert_array_equal(got, want)
    per_row = fgrad.vmap(lambda i: fnp.take(x, i, **kwargs))(i)
    loop = [_expected_take(x.ravel() if axis is None else x, r, axis or 0, mode) for r in i]
    np.testing.assert_array_equal(per_row, loop)
    if mode != "raise":  # NumPy defines these for any index: eagerly and under grad the same
        np.testing.assert_array_equal(fnp.take(x, i, **kwargs), want)
        np.testing.assert_array_equal(fgrad.jit(lambda x: fnp.take(x, i, **kwargs))(x), want)


def test_take_clip_clamps_the_index_itself_as_numpy():
    x = np.array([10.0, 20.0, 30.0])
    for i in (-1, -7, 5):
        want = np.take(x, i, mode="clip")
        assert fgrad.jit(lambda x, i: fnp.take(x, i, mode="clip"))(x, i) == want
        assert fgrad.vmap(lambda i: fnp.take(x, i, mode="clip"))(np.array([i]))[0] == want
    assert np.take(x, -1, mode="clip") == 10.0


def test_take_fill_values_and_defaults():
    x, i = np.array([1.0, 2.0, 3.0]), np.array([-4, -3, 2, 3])
    jitted = fgrad.jit(lambda x, i, f: fnp.take(x, i, mode="fill", fill_value=f))
    np.testing.assert_array_equal(jitted(x, i, -1.0), [-1.0, 1.0, 3.0, -1.0])
    np.testing.assert_array_equal(fgrad.jit(lambda x, i: fnp.take(x, i, mode="fill"))(x, i),
                                  [np.nan, 1.0, 3.0, np.nan])
    ints = np.array([1, 2, 3], np.int32)
    np.testing.assert_array_equal(fgrad.jit(lambda x, i: fnp.take(x, i, mode="fill"))(ints, i),
                                  [np.iinfo(np.int32).min, 1, 3, np.iinfo(np.int32).min])
    np.testing.assert_array_equal(fnp.take(np.array([5, 6], np.uint8), [2], mode="fill"), [255])
    np.testing.assert_array_equal(fnp.take(np.array([False]), [1], mode="fill"), [True])
    assert fnp.take(x, 7, mode="fill", fill_value=0.5) == 0.5  # eagerly a NumPy scalar, as np.take
    # A traced fill value keeps its derivative: d/df of the filled elements.
    assert fgrad.grad(lambda f: fnp.sum(fnp.take(x, i, mode="fill", fill_value=f)))(0.0) == 2.0


@pytest.mark.parametrize("mode", ["clip", "wrap", "fill"])
def test_take_gradients_go_to_the_position_read_and_nothing_for_fills(mode):
    x, i = TAKE_X, TAKE_I
    w = np.arange(1.0, 1.0 + i.size * 3).reshape(3, *i.shape)  # (3 rows, 2, 4)
    n = x.shape[1]

    def loss(x, i):
        return fnp.sum(w * fnp.take(x, i, axis=1, mode=mode, fill_value=0.0) ** 2)

    j = {"clip": np.clip(i, 0, n - 1), "wrap": i % n, "fill": np.where(i < 0, i + n, i)}[mode]
    inside = (j >= 0) & (j < n)
    want = np.zeros_like(x)
    for r in range(x.shape[0]):
        np.add.at(want[r], j[inside], (2 * w[r] * x[r][np.clip(j, 0, n - 1)])[inside])
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(loss))(x, i), want, rtol=1e-14)
    np.testing.assert_allclose(fgrad.grad(loss)(x, i), want, rtol=1e-14)
    check_grads(lambda x: loss(x, i), (x,), order=2)
    xs = np.stack([x, 2.0 * x])
    per_x = fgrad.vmap(fgrad.grad(loss), in_axes=(0, None))(xs, i)
    np.testing.assert_allclose(per_x, [fgrad.grad(loss)(v, i) for v in xs], rtol=1e-14)


def test_at_get_fill_with_a_traced_index():
    m = np.arange(12.0).reshape(3, 4)
    r, c = np.array([-4, -1, 0, 2, 3]), np.array([1, -5, 3, -4, 0])
    rows = np.where(r < 0, r + 3, r)
    cols = np.where(c < 0, c + 4, c)
    inside = (rows >= 0) & (rows < 3) & (cols >= 0) & (cols < 4)
    want = np.where(inside, m[np.clip(rows, 0, 2), np.clip(cols, 0, 3)], -1.0)
    get = fgrad.jit(lambda m, r, c: m.at[r, c].get(mode="fill", fill_value=-1.0))
    np.testing.assert_array_equal(get(m, r, c), want)
    np.testing.assert_array_equal(fnp.at(m)[r, c].get(mode="fill", fill_value=-1.0), want)  # eagerly
    np.testing.assert_array_equal(fnp.at(m)[r, c].get(mode="drop", fill_value=-1.0), want)
    per = fgrad.vmap(lambda r, c: fnp.at(m)[r, c].get(mode="fill", fill_value=-1.0))(r, c)
    np.testing.assert_array_equal(per, want)
    # Rows of m with a traced row index, the rest of the axes whole.
    np.testing.assert_array_equal(
        fgrad.jit(lambda m, r: m.at[r].get(mode="fill", fill_value=0.0))(m, r),
        np.where((rows >= 0)[:, None] & (rows < 3)[:, None], m[np.clip(rows, 0, 2)], 0.0))
    # Gradients: ones at the positions read in bounds, none for the filled ones.
    want_grad = np.zeros_like(m)
    np.add.at(want_grad, (rows[inside], cols[inside]), 1.0)
    loss = lambda m, r, c: fnp.sum(m.at[r, c].get(mode="fill", fill_value=7.0))  # noqa: E731
    np.testing.assert_array_equal(fgrad.jit(fgrad.grad(loss))(m, r, c), want_grad)
    check_grads(lambda m: fnp.sum(fnp.at(m)[r, c].get(mode="fill", fill_value=7.0) ** 2), (m,), order=2)
