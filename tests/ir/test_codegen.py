"""Code generation: the generated function equals eval_jaxpr of its jaxpr, its
source is fgrad's own text, and values are released after their last use."""

import itertools
import math
import operator
import threading
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.core.avals import ShapedArray
from fgrad.core.rules import checked_int64, float_rules, out_rules
from fgrad.ir.codegen import compile_jaxpr
from fgrad.ir.evaluate import eval_jaxpr
from tests.strategies import seeds, values


def _same(closed, *args):
    got = compile_jaxpr(closed)(*args)
    want = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert np.asarray(g).dtype == np.asarray(w).dtype
    return got


@given(shape=st.sampled_from([(), (3,), (2, 3)]), seed=seeds)
def test_equals_eval_jaxpr_on_functions_with_constants_literals_and_several_outputs(shape, seed):
    c = np.arange(1.0, 4.0)

    def f(x, y):
        z = fnp.sin(x) * y + 2.0
        return z, fnp.sum(z * fnp.broadcast_to(c[0], np.shape(z))), x  # an input as an output

    x, y = values(shape, "real", seed), values(shape, "real", seed + 1)
    _same(fgrad.make_jaxpr(f)(x, y), x, y)
    _same(fgrad.make_jaxpr(fgrad.grad(lambda x, y: fnp.sum(f(x, y)[0] ** 2)))(x, y), x, y)


def test_multiple_results_effects_and_sub_jaxprs(capsys):
    def f(x):
        fgrad.debug.print("x = {}", x)  # an equation without outputs
        q, r = fnp.linalg.qr(x)  # several outputs
        return fgrad.checkpoint(lambda a: fnp.tanh(a) @ r)(q)  # a sub-jaxpr

    x = np.array([[2.0, 1.0], [0.5, 3.0]])
    closed = fgrad.make_jaxpr(f)(x)
    capsys.readouterr()
    _same(closed, x)
    assert capsys.readouterr().out.count("x = ") == 2


def test_the_source_names_come_from_fgrad_and_dead_values_are_deleted():
    compiled = compile_jaxpr(fgrad.make_jaxpr(lambda weird_name: fnp.exp(fnp.sin(weird_name)))(np.ones(2)))
    assert "weird_name" not in compiled.source
    assert compiled.source.splitlines() == [
        "def jitted(v0):",
        "    v1 = f0(v0)",
        "    del v0",
        "    v2 = f1(v1)",
        "    del v1",
        "    return [v2]",
    ]


def test_compiled_once_per_jaxpr():
    closed = fgrad.make_jaxpr(fnp.cos)(1.0)
    assert compile_jaxpr(closed) is compile_jaxpr(closed)


def test_jit_runs_the_generated_code_and_debug_nans_still_names_the_primitive():
    jf = fgrad.jit(lambda x: fnp.log(x) * 2.0)
    assert jf(np.e) == pytest.approx(2.0)
    with fgrad.debug_nans(), pytest.raises(FloatingPointError, match="`log` produced NaN"):
        jf(-1.0)


@given(seed=seeds, shape=st.sampled_from([(), (3,)]))
def test_operators_are_written_as_operators_with_the_implementation_s_results(seed, shape):
    # Strongly typed operands: Python's operator, as the implementation uses; two
    # Python scalars (weak): the implementation, which goes to NumPy's ufunc.
    x = values(shape, "real", seed)
    strong = fgrad.make_jaxpr(lambda x, y: (x * y + x) - y)(x, np.float64(0.5))
    source = compile_jaxpr(strong).source
    assert " * " in source and " + " in source and " - " in source
    _same(strong, x, np.float64(0.5))
    weak = fgrad.jit(lambda a, b: a * b).lower(np.ones(2), 0.5)
    assert " * " in weak.as_text()
    assert type(fgrad.jit(lambda a, b: a * b)(2.0, 0.5)) is np.float64


# --- 0-d float64 values as Python floats ------------------------------------------------
SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 7.25, 1e-300, 1e300, -1e300,
                  710.0, -745.5, math.pi, math.inf, -math.inf, math.nan]


SPECIAL_INTS = [0, 1, -1, 2, -3, 7, 3 * 2**61, -2**63, 2**63 - 1]
_DOMAINS = {  # a float rule's operands: their dtype, the values tried, the Python type standing for them
    "f": (np.dtype(np.float64), SPECIAL_FLOATS, float),
    "i": (np.dtype(np.int64), SPECIAL_INTS, int),
    "b": (np.dtype(bool), [False, True], bool),
}
_PARAMS = {
    "integer_pow": [{"y": y} for y in (-3, -1, 0, 2, 3)],
    "convert_element_type": [{"new_dtype": np.dtype(t)} for t in (np.float64, np.int64, bool)],
}


def _same_float(got, want):
    if np.isnan(want):
        return bool(np.isnan(got))
    if want == 0 or np.isinf(want):
        return bool(got == want and np.signbit(got) == np.signbit(want))
    return abs(got - want) <= 1e-15 * abs(want)  # math's functions and NumPy's differ by an ulp at most


def _arity(prim):
    if prim.name == "where":
        return 3
    return out_rules[prim].nin if prim in out_rules else 1


@pytest.mark.parametrize("prim", sorted(float_rules, key=lambda p: p.name), ids=lambda p: p.name)
def test_each_float_rule_gives_numpy_s_result_or_raises(prim):
    # On Python floats, ints and bools (where it has a rule for them), the
    # rule's expression gives NumPy's result of that dtype, or raises.
    nin = _arity(prim)
    params = _PARAMS.get(prim.name, [{}])
    computed = tried = 0
    for kw, domain in itertools.product(params, _DOMAINS):
        dtype, special, _ = _DOMAINS[domain]
        kinds = ["b", domain, domain] if prim.name == "where" else [domain] * nin
        avals = [ShapedArray((), _DOMAINS[k][0]) for k in kinds]
        expression = float_rules[prim](["a", "b", "c"][:nin], avals, **kw)
        if expression is None:
            continue
        for operands in itertools.product(*(_DOMAINS[k][1] for k in kinds)):
            tried += 1
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    want = prim.impl(*(_DOMAINS[k][0].type(x) for k, x in zip(kinds, operands)), **kw)
                except (ArithmeticError, ValueError, TypeError):
                    want = None  # NumPy's error: Python's code must raise too
            try:
                got = eval(expression, {"math": math, "checked_int64": checked_int64},
                           dict(zip("abc", operands)))
            except (ArithmeticError, ValueError):
                continue  # allowed: the generated code then computes on NumPy's scalars
            assert want is not None, (prim, kw, operands, got)
            computed += 1
            want_type = next(t for dt, _, t in _DOMAINS.values() if dt == np.asarray(want).dtype)
            assert type(got) is want_type, (prim, kw, operands, got, want)
            if want_type is float:
                assert _same_float(got, want), (prim, kw, operands, got, want)
            else:
                assert got == want, (prim, kw, operands, got, want)
    assert computed >= min(5 * len(params), tried), "the rule is hardly exercised: it raises on most values"


_EXACT_UNARY = [fnp.negative, fnp.sqrt, fnp.square, fnp.abs, fnp.reciprocal, lambda a: a * a * a,
                fnp.floor, fnp.ceil, fnp.trunc, fnp.rint, fnp.sign, lambda a: fnp.where(fnp.isnan(a), 2.0, a),
                lambda a: fnp.where(a > 0.5, a, -a)]
_EXACT_BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, fnp.maximum, fnp.minimum,
                 fnp.fmax, fnp.fmin, fnp.remainder, fnp.floor_divide, lambda a, b: fnp.where(a < b, b, a)]


@settings(deadline=None)
@given(program=st.lists(st.tuples(st.integers(0, len(_EXACT_UNARY) + len(_EXACT_BINARY) - 1), st.integers(0, 20)),
                        min_size=6, max_size=12),
       x=st.floats(), y=st.floats(allow_nan=False))
def test_scalar_programs_on_python_floats_equal_numpy_s_results_and_its_inf_and_nan(program, x, y):
    # Operations that IEEE arithmetic rounds exactly, in both math and NumPy:
    # jit's results (and gradients) are NumPy's to the bit, overflow,
    # division by zero and domain errors included.
    def f(x, y):
        vals = [x, y]
        for op, j in program:
            a = vals[j % len(vals)]
            if op < len(_EXACT_UNARY):
                vals.append(_EXACT_UNARY[op](a))
            else:
                vals.append(_EXACT_BINARY[op - len(_EXACT_UNARY)](a, vals[-1]))
        return vals[-1]

    jf = fgrad.jit(f)
    lowered = jf.lower(x, y)
    if len(lowered.jaxpr.jaxpr.eqns) >= 8:  # long enough to be worth converting: on floats
        assert "float(" in lowered.as_text()
    for fun, jitted in ((f, jf), (fgrad.grad(f, argnums=(0, 1)), fgrad.jit(fgrad.grad(f, argnums=(0, 1))))):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = fun(np.float64(x), np.float64(y))
            got = jitted(x, y)
        for g, w in zip(np.atleast_1d(got), np.atleast_1d(want)):
            assert type(g) is np.float64
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("x, y", [(1000.0, 1000.0), (-1000.0, 1000.0), (math.inf, math.inf), (-math.inf, 2.0),
                                  (math.nan, 1.0), (0.0, 0.0), (0.0, -0.0), (710.0, -3.0), (1e-320, 5e-324)])
def test_softplus_softmax_and_selections_on_floats_keep_numpy_s_inf_and_nan(x, y):
    # logaddexp as NumPy's npy_logaddexp, exp's overflow and 0/0 on NumPy's scalars (the float code
    # raises, then reruns there), maximum's and minimum's nan, comparisons and where on nan.
    def f(x, y):
        a = fnp.logaddexp(x, y) + fnp.logaddexp(x, 0.0) - fnp.maximum(x, y) * fnp.minimum(y, x)
        b = fnp.where(x > y, fnp.exp(x), x / y) + fnp.where(fnp.isfinite(a), a, -1.0)
        return fnp.fmax(a, b) - fnp.fmin(b, x), fnp.where((a == b) | (x != x), 1.0, 0.0) + fnp.sign(b)

    jf = fgrad.jit(f)
    assert "math.log1p(math.exp(" in jf.lower(0.5, 0.25).as_text()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = f(np.float64(x), np.float64(y))
        got = jf(x, y)
    for g, w in zip(got, want):
        assert type(g) is np.float64
        np.testing.assert_array_equal(g, w)
        assert np.signbit(g) == np.signbit(w)


@pytest.mark.parametrize("i, j", [(7, 3), (-7, 3), (7, -3), (2**62, 4), (-2**63, -1), (5, 0), (2**63 - 1, 1)])
def test_int64_code_on_python_ints_wraps_and_divides_by_zero_as_numpy(i, j):
    # Python's ints do not wrap: a result past int64 (or a division by zero) reruns on NumPy's
    # scalars, which wrap around (or give 0) and warn.
    def f(i, j):
        k = i * j + i - (j // 2)
        return fnp.where(k > i, k % j, fnp.maximum(k, j) // j) + fnp.abs(i) - (-j), k

    jf = fgrad.jit(f)
    i64 = np.int64
    assert "checked_int64(" in jf.lower(i64(1), i64(2)).as_text()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = f(i64(i), i64(j))
        got = jf(i64(i), i64(j))
    for g, w in zip(got, want):
        assert type(g) is np.int64
        assert g == w


def test_the_version_on_numpy_scalars_is_compiled_when_first_needed_once_across_threads():
    closed = fgrad.make_jaxpr(lambda x: fnp.log(fnp.sin(x) * x + 1.0) * fnp.exp(x))(0.5)
    compiled = compile_jaxpr(closed)
    assert "def on_numpy_scalars" not in compiled._source  # not generated yet
    assert compiled(np.float64(0.5))[0] == pytest.approx(np.log(np.sin(0.5) * 0.5 + 1.0) * np.exp(0.5))
    assert "def on_numpy_scalars" not in compiled._source
    results = []
    with np.errstate(all="ignore"):
        threads = [threading.Thread(target=lambda: results.append(compiled(np.float64(1000.0))[0]))
                   for _ in range(4)]  # exp overflows: each thread reruns on NumPy's scalars
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == [np.inf] * 4
    assert compiled.source.count("def on_numpy_scalars") == 1


@pytest.mark.parametrize("on_floats", [False, True])
def test_scalars_concatenated_are_one_np_array_and_live_until_their_last_pack(on_floats):
    from fgrad.primitives.shapes import concatenate, reshape

    def f(x, v):
        a, b = (x * 2.0 - 1.0, x * x + 3.0) if on_floats else (x, x + 1.0)
        first, second = reshape(a, new_shape=(1,)), reshape(a, new_shape=(1,))  # a's last reshape comes first
        p = concatenate(second, reshape(b, new_shape=(1,)), axis=0)
        q = concatenate(first, v, reshape(b, new_shape=(1,)), reshape(v, new_shape=(1,)), axis=0)
        return p, q

    closed = fgrad.make_jaxpr(f)(np.float64(0.5), np.ones(1))
    compiled = compile_jaxpr(closed)
    assert "np.array([" in compiled.source
    assert ("float(" in compiled.source) == on_floats
    got = compiled(np.float64(0.5), np.array([7.0]))
    want = eval_jaxpr(closed.jaxpr, closed.consts, np.float64(0.5), np.array([7.0]))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_values_read_once_are_written_where_read_identities_take_their_operand_s_name():
    from fgrad.primitives.elementwise import stop_gradient
    from fgrad.primitives.shapes import concatenate, reshape

    def f(x, y):
        s = stop_gradient(x)  # an identity of a value that is read again, after s dies
        chain = x
        for k in range(40):  # a chain of values each read once, deeper than an expression nests
            chain = fnp.sin(chain) * (y + float(k))
        t = fnp.exp(s * y) + x * 3.0
        u = fnp.cos(chain - t)  # read once, by one reshape, concatenated twice
        r = reshape(u, new_shape=(1,))
        return concatenate(r, reshape(stop_gradient(t), new_shape=(1,)), r, axis=0), x + y

    closed = fgrad.make_jaxpr(f)(0.5, 0.25)
    compiled = compile_jaxpr(closed)
    body = compiled.source.split("except")[0]
    assert "stop_gradient" not in body and body.count("\n") < len(closed.jaxpr.eqns) / 2, body
    for x, y in [(0.5, 0.25), (-3.0, 1e-3), (0.0, -0.0), (1e300, 1e300), (math.nan, 1.0)]:
        with np.errstate(all="ignore"):
            got = compiled(x, y)
            want = eval_jaxpr(closed.jaxpr, closed.consts, x, y)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_floats_meet_arrays_effects_keep_numpy_s_scalars_and_results_are_numpy_scalars(capsys):
    v = np.arange(1.0, 4.0)
    mixed = fgrad.jit(lambda s, v: fnp.sum(v * s) * s + fnp.sin(s))
    assert mixed(0.5, v) == pytest.approx(np.sum(v * 0.5) * 0.5 + np.sin(0.5), rel=1e-15)
    assert type(mixed(np.asarray(0.5), v)) is np.float64
    printing = fgrad.jit(lambda x: fgrad.debug.print("x={}", x) or fnp.exp(x) * 2.0)
    assert "float(" not in printing.lower(1.0).as_text()  # a function with effects never runs twice
    with np.errstate(all="ignore"):
        assert printing(1000.0) == np.inf
    assert capsys.readouterr().out.count("x=") == 1


def test_where_python_raises_the_code_runs_on_numpy_scalars_with_numpy_s_warnings():
    f = lambda x: fnp.log(x) + 1.0 / x + fnp.exp(x)  # noqa: E731
    jf = fgrad.jit(f)
    for x in (0.0, -1.0, 1000.0):  # ValueError, ZeroDivisionError, OverflowError in Python
        with pytest.warns(RuntimeWarning):
            want = f(np.float64(x))
        with pytest.warns(RuntimeWarning):
            got = jf(x)
        np.testing.assert_array_equal(got, want)
    assert jf(2.0) == pytest.approx(np.log(2.0) + 0.5 + np.exp(2.0), rel=1e-15)


# --- buffers: results written into dead operands' memory --------------------------------
BIG = 100_000  # 800 kB of float64: large enough to take a dead buffer


def test_large_results_take_a_dead_operand_s_buffer_but_never_an_argument_s():
    x = np.linspace(0.0, 1.0, BIG)
    before = x.copy()
    f = lambda x: fnp.exp(fnp.sin(x) * 2.0) + 1.0  # noqa: E731
    jf = fgrad.jit(f)
    np.testing.assert_array_equal(jf(x), f(x))
    np.testing.assert_array_equal(x, before)
    source = jf.lower(x).as_text()
    assert "out=" in source and "out=v0" not in source
    assert "out=" not in fgrad.jit(f).lower(x[:10]).as_text()  # small arrays: a new one is cheaper


def test_a_buffer_another_value_may_view_is_never_written():
    x = np.linspace(0.0, 1.0, BIG)

    def f(x):
        y = fnp.exp(x)
        z = fnp.reshape(y, (-1, 2))  # a view of y, alive after y's last use
        return fnp.sin(y) + 1.0, z

    w, z = fgrad.jit(f)(x)
    np.testing.assert_array_equal(z, np.exp(x).reshape(-1, 2))
    np.testing.assert_array_equal(w, np.sin(np.exp(x)) + 1.0)


def test_a_gradient_of_large_arrays_reuses_buffers_and_equals_eager():
    x = np.linspace(-1.0, 1.0, BIG)
    g = fgrad.grad(lambda x: fnp.sum(fnp.sin(x) * fnp.exp(-x ** 2)))
    jg = fgrad.jit(g)
    np.testing.assert_allclose(jg(x), g(x), rtol=1e-14)
    assert "out=" in jg.lower(x).as_text()


def test_donated_arguments_may_hold_results_and_other_arguments_never_do():
    f = fgrad.jit(lambda x, y: fnp.sin(x) * 2.0 + y, donate_argnums=0)
    x, y = np.linspace(0.0, 1.0, BIG), np.ones(BIG)
    want = np.sin(x) * 2.0 + y
    y_before = y.copy()
    out = f(x, y)
    np.testing.assert_allclose(out, want, rtol=1e-15)
    assert np.shares_memory(out, x)  # donated: its memory holds the result
    np.testing.assert_array_equal(y, y_before)
    # Donated but also passed as the other argument, or read-only: copied, never written.
    x = np.linspace(0.0, 1.0, BIG)
    before = x.copy()
    np.testing.assert_allclose(f(x, x), np.sin(before) * 2.0 + before, rtol=1e-15)
    np.testing.assert_array_equal(x, before)
    x.flags.writeable = False
    np.testing.assert_allclose(f(x, y), want, rtol=1e-15)
    # Under a transform nothing is donated.
    x = np.linspace(0.0, 1.0, BIG)
    fgrad.grad(lambda x: fnp.sum(f(x, y)))(x)
    np.testing.assert_array_equal(x, before)


_MIX = np.random.default_rng(0).standard_normal((250, 250)) / 16
_BIG_UNARY = [fnp.sin, fnp.exp, fnp.negative, fnp.square, fnp.tanh,
              lambda a: fnp.reshape(a, (-1, 2)).T.reshape(-1),  # views of a value, and a copy
              lambda a: fnp.reshape(a, (-1, 2))[:, 0].repeat(2),
              lambda a: fnp.reshape(fnp.reshape(a, (400, 250)) @ _MIX, (-1,))]
_BIG_BINARY = [operator.add, operator.mul, operator.sub]


@settings(deadline=None, max_examples=40)
@given(program=st.lists(st.tuples(st.integers(0, 10), st.integers(0, 30)), min_size=1, max_size=14),
       outputs=st.lists(st.integers(0, 30), min_size=1, max_size=3), seed=seeds)
def test_large_programs_with_views_and_several_outputs_equal_eager_and_results_stay_the_caller_s(
    program, outputs, seed
):
    # Buffers move from dead values to new results, and values that never leave
    # a call live in buffers the function keeps: neither may change a result
    # the caller holds, or a value a view still reads.
    def f(x, y):
        vals = [x, y]
        for op, j in program:
            a = vals[j % len(vals)]
            if op < len(_BIG_UNARY):
                vals.append(_BIG_UNARY[op](a))
            else:
                vals.append(_BIG_BINARY[op - len(_BIG_UNARY)](a, vals[-1]))
        return [vals[k % len(vals)] for k in outputs]

    jf = fgrad.jit(f)
    x, y = values((BIG,), "real", seed), values((BIG,), "real", seed + 1)
    first = jf(x, y)
    kept = [np.copy(r) for r in first]
    for r, w in zip(first, f(x, y)):
        np.testing.assert_array_equal(r, w)
    again = jf(y, x)  # a second call must not write into the first call's results
    for r, w in zip(again, f(y, x)):
        np.testing.assert_array_equal(r, w)
    for r, k in zip(first, kept):
        np.testing.assert_array_equal(r, k)
    np.testing.assert_array_equal(x, values((BIG,), "real", seed))


def test_values_that_never_leave_a_call_live_in_buffers_kept_between_calls_one_set_per_call():
    f = lambda x: fnp.sum(fnp.sin(x) * fnp.cos(x) + fnp.exp(x))  # noqa: E731
    jf = fgrad.jit(f)
    x = np.linspace(0.0, 1.0, BIG)
    source = jf.lower(x).as_text()
    assert "take0()" in source and "out=s0" in source and "give0(scratch)" in source
    want = f(x)
    # Threads calling at once each take their own buffers (the version is traced first).
    jf(x)
    results: list[Any] = []

    def work(k):
        results.extend(jf(x * k) == f(x * k) for _ in range(20))

    threads = [threading.Thread(target=work, args=(k,)) for k in (1.0, 2.0, 3.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 60 and all(results)
    assert jf(x) == want


def test_the_file_name_of_a_function_that_is_gone_is_taken_again_and_tracebacks_show_the_new_source():
    # compile() keeps its file name for ever (CPython interns it): a new name for each
    # function compiled would grow memory by a name at each call of a loop traced anew.
    import gc
    import linecache
    import traceback

    names = set()
    for k in range(30):
        closed = fgrad.make_jaxpr(lambda x: fnp.sin(x) + float(k))(1.0)  # a new jaxpr each time
        compiled = compile_jaxpr(closed)
        names.add(compiled.fun.__code__.co_filename)
        assert compiled(0.0)[0] == pytest.approx(float(k))
        del compiled, closed
        gc.collect()
    assert len(names) <= 2, names
    closed = fgrad.make_jaxpr(lambda x: fnp.log(x * 2.0))(1.0)
    compiled = compile_jaxpr(closed)
    filename = compiled.fun.__code__.co_filename
    assert filename in names and "".join(linecache.getlines(filename)) == compiled.source
    with pytest.raises(TypeError) as info:
        compiled("a string")
    failing = compiled.source.splitlines()[1].strip()  # the product, where the sines had their sine
    assert failing.startswith("v1 = v0 *") and failing in "".join(traceback.format_tb(info.tb))
