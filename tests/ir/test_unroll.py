"""Small arrays as their elements (ir/unroll.py): the rewritten jaxpr computes
what the array code computes, to the bit, and jit then runs it on Python floats."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.nn as fnn
import fgrad.numpy as fnp
from fgrad.ir.evaluate import eval_jaxpr
from fgrad.ir.unroll import UNROLL_SIZE, unroll_small_arrays
from fgrad.test_util import check_grads

SPECIAL = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e300, -1e-300]
N_INPUTS = 6


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":  # the sign of zeros (a nan's sign is not NumPy's to keep)
        np.testing.assert_array_equal(np.signbit(got) & (want == want), np.signbit(want) & (want == want))


def _unary(op):
    return {
        "sin": fnp.sin, "exp": fnp.exp, "neg": fnp.negative, "abs": fnp.abs, "sqrt": lambda a: fnp.sqrt(fnp.abs(a)),
        "tanh": fnp.tanh, "floor": fnp.floor, "sign": fnp.sign, "log1p": lambda a: fnp.log1p(fnp.abs(a)),
        "sum": lambda a: fnp.sum(a, axis=-1), "max": lambda a: fnp.max(a, axis=0, keepdims=True),
        "min_all": fnp.min, "sum_0": lambda a: fnp.sum(a, axis=0), "T": lambda a: a.T,
        "flip": lambda a: a[::-1], "first": lambda a: a[..., 0], "pick": lambda a: a.reshape(-1)[np.array([0, -1, 0])],
        "at_add": lambda a: a.reshape(-1).at[np.array([0, 0, -1])].add(2.0),
        "at_set": lambda a: a.reshape(-1).at[0].set(-1.0), "at_max": lambda a: a.reshape(-1).at[-1:].max(0.5),
        "at_mul": lambda a: a.reshape(-1).at[::2].multiply(3.0), "cat": lambda a: fnp.concatenate([a, a], axis=-1),
        "wide": lambda a: fnp.broadcast_to(a, (2, *fnp.shape(a))), "pos": lambda a: fnp.where(a > 0, a, 0.0),
        "isnan": lambda a: fnp.where(fnp.isnan(a), 1.0, a),
    }[op]


_BINARY = {
    "add": fnp.add, "sub": fnp.subtract, "mul": fnp.multiply, "div": fnp.divide, "maximum": fnp.maximum,
    "minimum": fnp.minimum, "fmax": fnp.fmax, "logaddexp": fnp.logaddexp,
    "select": lambda a, b: fnp.where(a < b, a, b), "eq": lambda a, b: fnp.where(a == b, 1.0, -1.0),
}
_UNARY = ["sin", "exp", "neg", "abs", "sqrt", "tanh", "floor", "sign", "log1p", "sum", "max", "min_all",
          "sum_0", "T", "flip", "first", "pick", "at_add", "at_set", "at_max", "at_mul", "cat", "wide", "pos",
          "isnan"]


@st.composite
def small_array_programs(draw):
    shapes = draw(st.lists(st.sampled_from([(), (1,), (2,), (3,), (2, 3), (3, 1), (4,)]), min_size=1, max_size=3))
    steps = draw(st.lists(st.tuples(st.sampled_from(_UNARY + list(_BINARY)), st.integers(0, 50),
                                    st.integers(0, 50)), min_size=1, max_size=8))
    return shapes, steps


def _program(shapes, steps):
    def f(*xs):
        pool, used = [], 0
        for shape in shapes:
            n = int(np.prod(shape))
            pool.append(fnp.reshape(fnp.stack([xs[(used + k) % N_INPUTS] for k in range(n)]), shape))
            used += n
        for op, i, j in steps:
            a = pool[i % len(pool)]
            if op in _BINARY:
                b = pool[j % len(pool)]
                try:
                    np.broadcast_shapes(fnp.shape(a), fnp.shape(b))
                except ValueError:
                    b = xs[j % N_INPUTS]
                pool.append(_BINARY[op](a, b))
                continue
            try:
                pool.append(_unary(op)(a))
            except (ValueError, IndexError, TypeError):
                continue  # not for this shape (a 0-d value has no axis -1)
        return pool[-3:]

    return f


@settings(deadline=None, max_examples=60)
@given(small_array_programs(), st.integers(0, 2**16))
def test_unrolled_programs_compute_what_the_array_code_computes_bit_for_bit(program, seed):
    f = _program(*program)
    rng = np.random.default_rng(seed)
    closed = fgrad.make_jaxpr(f)(*np.ones(N_INPUTS))
    unrolled = unroll_small_arrays(closed)
    for trial in range(4):
        xs = [np.float64(v) for v in rng.standard_normal(N_INPUTS) * 10.0 ** rng.integers(-3, 3, N_INPUTS)]
        if trial % 2:
            xs = [np.float64(rng.choice(SPECIAL)) for _ in range(N_INPUTS)]
        with np.errstate(all="ignore"):
            want = eval_jaxpr(closed.jaxpr, closed.consts, *xs)
            got = eval_jaxpr(unrolled.jaxpr, unrolled.consts, *xs)
        for g, w in zip(got, want):
            _same_bits(g, w)


def test_a_softmax_of_stacked_scalars_becomes_scalar_equations_only():
    def f(a, b, c):
        s = fnn.softmax(fnp.stack([a, b, c]), axis=0)
        return s[0] * a + s[2]

    closed = fgrad.make_jaxpr(fgrad.grad(f, argnums=(0, 1, 2)))(0.5, -1.0, 2.0)
    unrolled = unroll_small_arrays(closed)
    assert any(e.outvars[0].aval.shape for e in closed.eqns)
    assert all(not v.aval.shape for e in unrolled.eqns for v in e.outvars)
    args = (np.float64(0.5), np.float64(-1.0), np.float64(2.0))
    for g, w in zip(eval_jaxpr(unrolled.jaxpr, unrolled.consts, *args), eval_jaxpr(closed.jaxpr, closed.consts, *args)):
        _same_bits(g, w)


def test_an_array_needed_as_an_array_is_kept_beside_its_elements():
    def f(a, b):
        v = fnp.stack([a, b]) * 2.0
        return fnp.sum(v), v  # the sum from the elements, the array for the output

    unrolled = unroll_small_arrays(fgrad.make_jaxpr(f)(1.0, 2.0))
    names = [e.primitive.name for e in unrolled.eqns]
    assert names.count("concatenate") == 1 and "reduce_sum" not in names
    out = eval_jaxpr(unrolled.jaxpr, unrolled.consts, np.float64(1.0), np.float64(2.0))
    _same_bits(out[0], np.float64(6.0))
    _same_bits(out[1], np.array([2.0, 4.0]))


@pytest.mark.parametrize("case", ["large", "float32", "input"])
def test_what_is_not_unrolled_large_arrays_other_dtypes_arrays_of_unknown_elements(case):
    if case == "large":
        f, args = (lambda *xs: fnp.sum(fnp.exp(fnp.stack(xs)))), [1.0] * (UNROLL_SIZE + 1)
    elif case == "float32":
        f, args = (lambda a, b: fnp.sum(fnp.exp(fnp.stack([a, b])))), [np.float32(1.0)] * 2
    else:
        f, args = (lambda v: fnp.sum(fnp.exp(v))), [np.ones(3)]
    closed = fgrad.make_jaxpr(f)(*args)
    assert unroll_small_arrays(closed) is closed


def _w9_graph(x, n):
    """The scalar graph of benchmarks/bench_w9_scalar_graph.py, on fgrad."""
    nodes = [*x]
    for op in range(n):
        if op % 4 == 0:
            nodes.append(fnn.softplus(nodes[-10]))
        elif op % 4 == 1:
            nodes.append(sum(nodes[-30:-10:5]))
        elif op % 4 == 2:
            nodes.append(nodes[-20] * nodes[-10])
        else:
            nodes.extend(fnn.softmax(fnp.stack(nodes[-4:]), axis=0))
    return nodes[-1]


def test_the_w9_graph_runs_on_python_floats_under_jit_and_its_gradient_is_right():
    x = np.random.default_rng(0).standard_normal(40)
    f = lambda x: _w9_graph(x, 60)  # noqa: E731
    jitted = fgrad.jit(fgrad.grad(f))
    body = jitted.lower(x).as_text().split("def jitted")[1].split("except")[0]  # the code on floats
    # NumPy is called only to take the input apart and put the gradient together.
    assert body.count("math.exp(") > 30 and "logaddexp" not in body
    assert not any(name in body for name in ("reduce_sum", "where's", "f64(")), body
    np.testing.assert_allclose(jitted(x), fgrad.grad(f)(x), rtol=1e-13, atol=1e-300)
    check_grads(f, (x,), order=1, modes=("rev",))


def test_small_arrays_under_jit_keep_numpy_s_inf_and_nan():
    def f(a, b):
        v = fnp.stack([a, b, a * b])
        return fnp.max(v), fnp.sum(fnp.exp(v)), fnn.logsumexp(v), fnp.min(fnp.where(v > 0, v, fnp.nan))

    jitted = fgrad.jit(f)
    for a, b in [(1000.0, 1000.0), (0.0, 0.0), (np.nan, 1.0), (-np.inf, 2.0), (3.0, -1e308)]:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = f(np.float64(a), np.float64(b))
            got = jitted(a, b)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-15)
