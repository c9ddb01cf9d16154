"""Fused clusters (ir/fusion.py, ir/blocks.py): jit's code with fusion gives
eager NumPy's results and those of jit without fusion, bit for bit where
each element is computed the same way, to rounding where a sum is taken
block by block; warnings, errors, effects and threads behave as without it.

The size from which clusters fuse is lowered, and blocks made small, so that
small arrays run in many blocks."""

import contextlib
import os
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.config import Config
from fgrad.core.trace import EVAL_TRACE, ctx
from fgrad.ir import blocks
from fgrad.test_util import check_grads
from tests.strategies import seeds, values
from tests.threads import run_threads

MIN_SIZE, BLOCK = 16, 5


@pytest.fixture(autouse=True)
def small_blocks():
    saved = {name: getattr(fgrad.config, name) for name in
             ("jit_fusion", "jit_fusion_min_size", "jit_fusion_block_size", "jit_fusion_threads")}
    fgrad.config.update("jit_fusion_min_size", MIN_SIZE)
    fgrad.config.update("jit_fusion_block_size", BLOCK)
    yield
    for name, value in saved.items():
        fgrad.config.update(name, value)


@contextlib.contextmanager
def fusion(on):
    fgrad.config.update("jit_fusion", on)
    try:
        yield
    finally:
        fgrad.config.update("jit_fusion", True)


def run(f, *args, on=True):
    """A new `jit(f)(*args)` (compiled now) with fusion on or off, and its source."""
    with fusion(on):
        g = fgrad.jit(f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = g(*args)
        return out, g.lower(*args).as_text()


def same_bits(got, want):
    """The same bits, but for complex values: NumPy's complex multiply takes a SIMD
    loop or a scalar one by the length and layout of its operands (a block's or the
    whole array's), which may round the imaginary part 1 ulp apart."""
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.shape(got) == np.shape(want)
    if np.iscomplexobj(want):
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(np.asarray(want).dtype).eps, atol=0)
    else:
        np.testing.assert_array_equal(got, want)  # nan where nan


# --- random elementwise chains -------------------------------------------------------

# Shapes that broadcast together, of 0-d, below and above MIN_SIZE (and 7 a side, not a
# multiple of the blocks). Inputs: a float64, a float32, an int64 and a complex array.
SHAPE_SETS = [
    [(7,), (7,), (), (7,)],
    [(3, 7), (7,), (3, 1), ()],
    [(40,), (40,), (40,), ()],
    [(2, 3, 7), (3, 1), (1, 7), (2, 3, 7)],
    [(17, 1), (1, 4), (17, 4), (4,)],
    [(5, 9), (5, 9), (), (5, 9)],
]
UNARY = ["sin", "exp", "tanh", "square", "negative", "abs"]
BINARY = ["add", "multiply", "subtract", "maximum", "where", "astype32"]


def program(ops):
    """A function of four inputs computing `ops`, each (op, i, j) on earlier values
    (i, j counted from the end), returning every value it made and two sums."""

    def f(np_, a, b, c, d):
        env = [a, b, c, d]
        for op, i, j in ops:
            x, y = env[-1 - i % len(env)], env[-1 - j % len(env)]
            complex_ = np.iscomplexobj(x) or np.iscomplexobj(y)
            if op in UNARY:
                out = getattr(np_, op)(np_.clip(x, -3, 3) if op == "exp" and not complex_ else x)
            elif op == "where":
                out = np_.where(np_.real(x) > 0.5, x, y)
            elif op == "astype32":
                out = x.astype(np.complex64 if complex_ else np.float32) if hasattr(x, "astype") else x
            elif op == "maximum" and complex_:
                out = np_.add(x, y)
            else:
                out = getattr(np_, op)(x, y)
            env.append(out)
        last = env[-1]
        return (*env[4:], np_.sum(last), np_.sum(last, axis=-1) if np.ndim(last) else last)

    return f


ops_lists = st.lists(st.tuples(st.sampled_from(UNARY + BINARY), st.integers(0, 5), st.integers(0, 5)),
                     min_size=1, max_size=7)


@given(ops=ops_lists, shapes=st.sampled_from(SHAPE_SETS), seed=seeds, strided=st.booleans())
def test_fused_chains_equal_eager_and_unfused_jit(ops, shapes, seed, strided):
    a = values(shapes[0], "real", seed)
    b = values(shapes[1], "real", seed + 1, np.float32)
    c = np.asarray(np.floor(values(shapes[2], "real", seed + 2) * 3), np.int64)
    d = values(shapes[3], "real", seed + 3) + 1j * values(shapes[3], "real", seed + 4)
    if strided:  # a view with gaps, and one in Fortran order
        a = np.repeat(a[..., None], 2, axis=-1)[..., 0]
        d = np.asfortranarray(d)
    f = program(ops)
    with np.errstate(all="ignore"):
        eager = f(np, a, b, c, d)
    fused, text = run(lambda *xs: f(fnp, *xs), a, b, c, d)
    plain, plain_text = run(lambda *xs: f(fnp, *xs), a, b, c, d, on=False)
    assert "def fused" not in plain_text
    for got, unfused, want in zip(fused[:-2], plain[:-2], eager[:-2]):
        same_bits(got, unfused)
        if np.ndim(want):
            same_bits(got, want)
        else:  # jit writes `a * b`, which NumPy's scalars compute apart from its ufunc (complex: 1 ulp)
            dtype = np.asarray(want).dtype
            assert np.asarray(got).dtype == dtype
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps if dtype.kind in "fc" else 0)
    for got, want in zip(fused[-2:], eager[-2:]):  # sums: taken block by block, to rounding
        assert np.asarray(got).dtype == np.asarray(want).dtype
        rtol = 1e-4 if np.asarray(want).dtype in (np.float32, np.complex64) else 1e-12
        with np.errstate(all="ignore"):
            scale = np.nansum(np.abs(eager[-3])) + 1.0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def test_a_chain_on_large_arrays_runs_fused_and_small_ones_do_not():
    def f(x, y):
        z = fnp.exp(fnp.sin(x) * y)
        return z, fnp.sum(z)

    assert "def fused" not in run(f, np.ones(15), np.ones(15))[1]
    text = run(f, np.ones((4, 5)), np.ones(5))[1]
    assert text.count("def fused") == 1
    assert "# f0: 4 equations (sin, mul, exp, reduce_sum) on arrays [4,5] fused: 4 blocks" in text


@given(seed=seeds, axis_sum=st.booleans())
def test_sums_of_many_blocks_agree_to_rounding(seed, axis_sum):
    x = values((13, 4), "real", seed) * 1e3  # 13 blocks of a row each

    def f(x):
        y = fnp.sin(x) * x + 1e3
        return fnp.sum(y, axis=-1) if axis_sum else fnp.sum(y)

    (got,), text = run(lambda x: (f(x),), x)
    assert "(sin, mul, add, reduce_sum) on arrays [13,4] fused: 13 blocks" in text
    np.testing.assert_allclose(got, np.sum(np.sin(x) * x + 1e3, axis=-1 if axis_sum else None), rtol=1e-13)
    np.testing.assert_allclose(fgrad.jit(f)(x), f(x), rtol=1e-13)


def test_max_and_min_of_blocks_are_exact():
    x = values((9, 8), "real", 3)

    def f(x):
        y = fnp.exp(x) - x
        return fnp.max(y), fnp.min(y), fnp.max(y, axis=1)

    for got, want in zip(run(f, x)[0], f(x)):
        same_bits(got, want)


# --- derivatives ------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(), (20,), (4, 6), (3, 1, 7)])
def test_gradients_through_fused_clusters_match_finite_differences(shape):
    x = values(shape, "real", 1)
    w = values(shape[-1:], "real", 2)

    def f(x, w):
        return fnp.sum(fnp.sin(x) * fnp.exp(-(x**2)) + fnp.tanh(x * w) * w)

    check_grads(fgrad.jit(f), (x, w), order=2, modes=("fwd", "rev"))
    got, _ = run(fgrad.grad(f, argnums=(0, 1)), x, w)
    want, _ = run(fgrad.grad(f, argnums=(0, 1)), x, w, on=False)
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(g, w_, rtol=1e-13, atol=1e-13)


def test_the_w6_gradient_is_one_fused_cluster_with_the_unfused_bits():
    x = values((1000,), "real", 4)

    def f(x):
        return fnp.sum(fnp.sin(x) * fnp.exp(-(x**2)))

    got, text = run(fgrad.grad(f), x)
    want, _ = run(fgrad.grad(f), x, on=False)
    assert text.count("def fused") == 1 and "200 blocks" in text
    same_bits(got, want)


# --- what stays as it was ---------------------------------------------------------------

def test_a_cluster_never_reads_a_value_computed_from_itself_outside_it():
    # z depends on y's cluster through a matmul: z + y cannot join that cluster.
    x, a = values((6, 6), "real", 5), values((6, 6), "real", 6)

    def f(x, a):
        y = fnp.sin(x) + 1.0
        z = fnp.tanh(y @ a)
        return fnp.exp(z) * y, y * 2.0

    for got, want in zip(run(f, x, a)[0], f(x, a)):
        same_bits(got, want)


def test_effects_keep_their_order_and_no_cluster_spans_one(capsys):
    x = values((30,), "real", 7)

    def f(x):
        y = fnp.sin(x) * 2.0
        fgrad.debug.print("first {}", fnp.sum(y > 10.0))
        z = fnp.exp(y) + y
        fgrad.debug.print("second {}", fnp.sum(z > 1e9))
        return z * y

    (got, text) = run(f, x)
    same_bits(got, f(x))
    assert capsys.readouterr().out.splitlines()[-2:] == ["first 0", "second 0"]
    assert text.count("def fused") >= 2


def test_a_single_result_may_take_a_dead_buffer_and_the_arguments_stay_untouched():
    x, a = values((256, 32), "real", 8), values((32, 256), "real", 9)  # h: large enough to reuse
    before = x.copy(), a.copy()

    def f(x, a):
        h = x @ a  # a fresh buffer, dead after the cluster
        return fnp.tanh(h + 1.0) * 3.0 - h

    got, text = run(f, x, a)
    assert "out=v" in text.split("def fused")[0]
    same_bits(got, f(x, a))
    same_bits(x, before[0])
    same_bits(a, before[1])


def test_integer_complex_and_bool_results_keep_numpy_dtypes():
    i = np.arange(24, dtype=np.int32).reshape(4, 6)
    z = (np.arange(24) + 1j).reshape(4, 6)

    def f(i, z):
        return i * 3 + 1, (i % 5) > 2, z * i - 1j, fnp.abs(z) + i, (i // 2).astype(np.float32) * 0.5

    got, text = run(f, i, z)
    assert "def fused" in text
    for g, w in zip(got, f(i, z)):
        same_bits(g, w)


def test_floating_point_warnings_come_once_from_the_user_s_line():
    x = np.linspace(-1.0, 1.0, 41)
    g = fgrad.jit(lambda x: fnp.log(x) * 2.0 + fnp.sqrt(x))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = g(x)  # fgrad: this line
    messages = sorted(str(w.message) for w in caught)
    assert messages == ["divide by zero encountered in log", "invalid value encountered in log",
                        "invalid value encountered in sqrt"]
    assert {w.filename for w in caught} == {__file__}
    with np.errstate(all="ignore"):
        same_bits(got, np.log(x) * 2.0 + np.sqrt(x))


def test_errstate_raise_and_ignore_hold_in_every_thread():
    x = np.linspace(-1.0, 1.0, 400)
    g = fgrad.jit(lambda x: fnp.log(x) * 2.0)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid value"):
        g(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="ignore"):
            g(x)


def test_debug_nans_names_the_primitive_inside_a_cluster():
    x = np.linspace(-1.0, 1.0, 40)
    g = fgrad.jit(lambda x: fnp.sin(x) + fnp.sqrt(x))
    with np.errstate(invalid="ignore"), fgrad.debug_nans(), pytest.raises(FloatingPointError,
                                                                          match="`sqrt` produced NaN"):
        g(x)


def test_calls_from_many_threads_share_the_pool_and_agree():
    xs = [values((50,), "real", s) for s in range(6)]
    g = fgrad.jit(fgrad.grad(lambda x: fnp.sum(fnp.sin(x) * fnp.exp(-(x**2)))))
    want = [np.cos(x) * np.exp(-x * x) - 2 * x * np.sin(x) * np.exp(-x * x) for x in xs]

    def work(i):
        return [g(xs[(i + k) % 6]) for k in range(12)]

    for i, results in enumerate(run_threads(work, 6)):
        for k, got in enumerate(results):
            np.testing.assert_allclose(got, want[(i + k) % 6], rtol=1e-13, atol=1e-15)


def test_pool_threads_run_blocks_under_no_transform_while_the_caller_differentiates(monkeypatch):
    seen = []
    run_blocks = blocks._Run.run

    def spy(self):
        seen.append((threading.current_thread().name, ctx.trace))
        run_blocks(self)

    monkeypatch.setattr(blocks._Run, "run", spy)
    g = fgrad.jit(lambda x: fnp.sin(x) * 2.0)
    x = values((2000,), "real", 11)
    for _ in range(50):  # until a pool thread took part (at once, unless the machine is busy)
        got = fgrad.grad(lambda x: fnp.sum(g(x) * x))(x)  # jit's primal and linear parts, fused
        np.testing.assert_allclose(got, 2 * (np.cos(x) * x + np.sin(x)), rtol=1e-13)
        if (os.cpu_count() or 1) == 1 or any(name.startswith("fgrad-fusion") for name, _ in seen):
            break
    pool = [trace for name, trace in seen if name.startswith("fgrad-fusion")]
    assert (os.cpu_count() or 1) == 1 or pool
    assert all(trace is EVAL_TRACE for trace in pool)


def test_one_thread_and_fusion_off_are_options():
    fgrad.config.update("jit_fusion_threads", 1)
    assert blocks.thread_count() == 1
    x = values((60,), "real", 12)
    g = fgrad.jit(lambda x: fnp.sin(x) * 2.0)
    same_bits(g(x), np.sin(x) * 2.0)
    fgrad.config.update("jit_fusion_threads", None)
    assert blocks.thread_count() >= 1
    for name, bad in [("jit_fusion_threads", 0), ("jit_fusion_block_size", 2.5), ("jit_fusion_min_size", -1),
                      ("jit_fusion", 1)]:
        with pytest.raises(TypeError, match=f"option '{name}' takes"):
            fgrad.config.update(name, bad)


def test_the_options_are_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("FGRAD_JIT_FUSION", "0")
    monkeypatch.setenv("FGRAD_JIT_FUSION_MIN_SIZE", "1000")
    monkeypatch.setenv("FGRAD_JIT_FUSION_THREADS", "none")
    options = Config()
    assert (options.jit_fusion, options.jit_fusion_min_size, options.jit_fusion_threads) == (False, 1000, None)
    monkeypatch.setenv("FGRAD_JIT_FUSION_BLOCK_SIZE", "big")
    with pytest.raises(ValueError, match="FGRAD_JIT_FUSION_BLOCK_SIZE='big'.*takes a whole number"):
        Config()


def test_chains_that_meet_make_one_cluster():
    x, y = values((40,), "real", 13), values((40,), "real", 14)

    def f(x, y):
        return fnp.sin(x) * 2.0 + fnp.cos(y) * 3.0

    got, text = run(f, x, y)
    assert text.count("def fused") == 1 and "5 equations (sin, mul, cos, add)" in text
    same_bits(got, f(x, y))


def test_a_donated_argument_s_buffer_may_take_the_result():
    x = values((40_000,), "real", 15)  # large enough to be reused
    want = np.sin(x) * 2.0 + x
    with fusion(True):
        g = fgrad.jit(lambda x: fnp.sin(x) * 2.0 + x, donate_argnums=0)
        text = g.lower(x).as_text()
        given = x.copy()
        got = g(given)
    assert "fused" in text
    same_bits(got, want)
    assert np.shares_memory(got, given)  # written block by block over the blocks it read
