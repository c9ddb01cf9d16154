"""Staging flat functions into jaxprs (`trace_to_jaxpr`), turning their
constants into inputs (`closure_convert`), and the per-jaxpr cache the
jaxpr-to-jaxpr transforms are built on (`cached_per_jaxpr`)."""

import gc
import threading
import weakref

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.core.avals import ShapedArray
from fgrad.core.errors import ConcretizationTypeError
from fgrad.core.trace import EVAL_TRACE, Tracer, ctx
from fgrad.ir.cache import cached_per_jaxpr
from fgrad.ir.check import check_jaxpr
from fgrad.ir.evaluate import eval_jaxpr
from fgrad.ir.jaxpr import Literal
from fgrad.ir.staging import closure_convert, trace_to_jaxpr
from fgrad.transforms.forward import jvp_jaxpr
from tests.threads import run_threads

F64 = ShapedArray((), np.float64)
F64_3 = ShapedArray((3,), np.float64)
F32_2x3 = ShapedArray((2, 3), np.float32)


def _run(closed, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- trace_to_jaxpr -----------------------------------------------------------------


def test_trace_to_jaxpr_stages_flat_inputs_and_outputs():
    closed = trace_to_jaxpr(lambda x, y: [fnp.sin(x) * y, fnp.sum(y, axis=0)], [F64_3, F32_2x3], "test")
    check_jaxpr(closed)
    assert closed.in_avals == [F64_3, F32_2x3]
    assert [a.str_short() for a in closed.out_avals] == ["f64[2,3]", "f32[3]"]
    x, y = np.array([0.1, 0.2, 0.3]), np.arange(6, dtype=np.float32).reshape(2, 3)
    got = _run(closed, x, y)
    np.testing.assert_allclose(got[0], np.sin(x) * y)
    np.testing.assert_allclose(got[1], y.sum(axis=0))
    assert got[1].dtype == np.float32


def test_trace_to_jaxpr_records_every_equation_and_makes_arrays_constants_and_scalars_literals():
    w = np.arange(3.0)
    closed = trace_to_jaxpr(lambda x: [x * w + 2.0, fnp.sin(w)], [F64_3], "test")
    assert [e.primitive.name for e in closed.eqns] == ["mul", "add", "sin"]  # even the constant-only sin
    assert len(closed.consts) == 1 and closed.consts[0] is w
    assert isinstance(closed.eqns[1].invars[1], Literal) and closed.eqns[1].invars[1].val == 2.0
    got = _run(closed, np.ones(3))
    np.testing.assert_allclose(got[0], w + 2.0)
    np.testing.assert_allclose(got[1], np.sin(w))


def test_trace_to_jaxpr_of_a_function_returning_an_input_and_a_constant():
    w = np.ones((2, 2))
    closed = trace_to_jaxpr(lambda x: [x, w, 3.0], [F64], "test")
    check_jaxpr(closed)
    assert closed.eqns == []
    x, got_w, three = _run(closed, 5.0)
    assert x == 5.0 and got_w is w and three == 3.0


def test_trace_to_jaxpr_names_the_function_and_transform_in_concretization_errors():
    def branchy(x):
        return [x if x > 0 else -x]

    with pytest.raises(ConcretizationTypeError,
                       match=r"(?s)while tracing my_fun for `my transform`.*argument `#0` of my_fun"):
        trace_to_jaxpr(branchy, [F64], "my transform", fun_name="my_fun")


def test_each_concretization_error_of_a_trace_names_the_arguments_behind_its_value():
    # Messages caught one after another (as lax.cond's probe of its predicate
    # does), each for a value made after the last message was written.
    messages = []

    def f(x, y, z):
        total = y
        for v in [x * 2.0, fnp.sin(y), x * z]:
            try:
                bool(v > 0)
            except ConcretizationTypeError as e:
                messages.append(str(e))
            total = total + v  # equations after each message
        return [total]

    trace_to_jaxpr(f, [F64, F64, F64], "test", fun_name="f")
    assert [m.split("It depends on ")[1].split(" of f")[0] for m in messages] == [
        "the argument `#0`", "the argument `#1`", "the arguments `#0`, `#2`"]


def test_trace_to_jaxpr_restores_the_current_trace():
    assert ctx.trace is EVAL_TRACE
    with pytest.raises(ZeroDivisionError):
        trace_to_jaxpr(lambda x: [1 / 0], [F64], "test")
    assert ctx.trace is EVAL_TRACE
    trace_to_jaxpr(lambda x: [x], [F64], "test")
    assert ctx.trace is EVAL_TRACE


def test_fresh_stages_below_evaluation_not_below_the_callers_transform():
    parents = {}

    def f(w):
        for fresh in (False, True):
            def fun(x, fresh=fresh):
                parents[fresh] = ctx.trace.parent
                return [fnp.sin(x)]

            closed = trace_to_jaxpr(fun, [F64], "test", fresh=fresh)
            assert str(closed) == "{ lambda ; a:f64[]. let b:f64[] = sin a in (b,) }"
        parents["caller"] = ctx.trace
        return w * w

    assert fgrad.grad(f)(3.0) == 6.0
    assert parents[True] is EVAL_TRACE
    assert parents[False] is parents["caller"] and parents["caller"] is not EVAL_TRACE


# --- closure_convert ----------------------------------------------------------------


def test_closure_convert_makes_constants_leading_inputs():
    a, b = np.arange(3.0), np.array([[1.0], [2.0]])
    closed = trace_to_jaxpr(lambda x: [x * a + b, fnp.sin(x)], [F64_3], "test")
    assert len(closed.consts) == 2
    converted, consts = closure_convert(closed)
    check_jaxpr(converted)
    assert converted.consts == [] and converted.jaxpr.constvars == []
    assert consts[0] is a and consts[1] is b
    assert converted.in_avals == [ShapedArray((3,), np.float64), ShapedArray((2, 1), np.float64), F64_3]
    x = np.array([0.5, -1.0, 2.0])
    got = _run(converted, *consts, x)
    np.testing.assert_allclose(got[0], x * a + b)
    np.testing.assert_allclose(got[1], np.sin(x))
    # the converted jaxpr is a function of its constants: other values give other results
    np.testing.assert_allclose(_run(converted, 2 * a, 0 * b, x)[0], np.broadcast_to(x * 2 * a, (2, 3)))


def test_closure_convert_of_a_jaxpr_without_constants():
    closed = trace_to_jaxpr(lambda x: [fnp.cos(x)], [F64], "test")
    converted, consts = closure_convert(closed)
    assert consts == [] and converted.in_avals == [F64]
    assert _run(converted, 0.0) == [1.0]


def test_closing_over_a_tracer_of_an_enclosing_grad_puts_it_in_the_constants():
    x0 = np.array([0.3, -0.7, 1.2])
    found = {}

    def f(w):
        closed = trace_to_jaxpr(lambda x: [fnp.sin(x * w) + x * w ** 2], [F64_3], "test")
        converted, consts = closure_convert(closed)
        found["consts"] = consts
        found["w"] = w
        assert converted.jaxpr.constvars == []
        # every value the function closed over is an explicit operand, so
        # evaluating it with them differentiates through w
        (out,) = eval_jaxpr(converted.jaxpr, [], *consts, x0)
        return fnp.sum(out * x0)

    w = 0.8
    g = fgrad.grad(f)(w)
    tracers = [c for c in found["consts"] if isinstance(c, Tracer)]
    assert tracers and all(c is found["w"] for c in tracers)
    expected = np.sum((np.cos(x0 * w) * x0 + 2 * x0 * w) * x0)
    np.testing.assert_allclose(g, expected)
    eps = 1e-6
    fd = (np.sum((np.sin(x0 * (w + eps)) + x0 * (w + eps) ** 2) * x0)
          - np.sum((np.sin(x0 * (w - eps)) + x0 * (w - eps) ** 2) * x0)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-7)


def test_closing_over_a_tracer_of_an_enclosing_vmap():
    xs = np.array([0.5, 1.0, 2.0])

    def f(w):
        converted, consts = closure_convert(trace_to_jaxpr(lambda x: [x * w], [F64], "test"))
        assert len(consts) == 1 and isinstance(consts[0], Tracer)
        return eval_jaxpr(converted.jaxpr, [], *consts, 3.0)[0]

    np.testing.assert_allclose(fgrad.vmap(f)(xs), 3.0 * xs)


# --- cached_per_jaxpr ---------------------------------------------------------------


class _Result:
    """A result object that can be weakly referenced."""

    def __init__(self, value):
        self.value = value


def _counting(calls):
    @cached_per_jaxpr
    def transform(closed, k, flags):
        calls.append((closed, k, flags))
        return _Result((len(closed.eqns), k, flags))

    return transform


def _closed():
    return fgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(1.0)


def test_the_same_jaxpr_and_arguments_give_the_same_result_object():
    calls = []
    transform = _counting(calls)
    closed = _closed()
    first = transform(closed, 3, (True, False))
    assert transform(closed, 3, (True, False)) is first
    assert len(calls) == 1
    assert first.value == (2, 3, (True, False))


def test_other_arguments_or_another_jaxpr_give_another_result():
    calls = []
    transform = _counting(calls)
    closed, twin = _closed(), _closed()
    r = transform(closed, 3, (True,))
    assert transform(closed, 4, (True,)) is not r
    assert transform(closed, 3, (False,)) is not r
    assert transform(twin, 3, (True,)) is not r  # a jaxpr printing the same is another key
    assert len(calls) == 4
    assert transform(closed, 4, (True,)).value == (2, 4, (True,))
    assert len(calls) == 4  # all cached now


def test_the_decorated_function_keeps_its_name_and_docstring():
    def my_transform(closed):
        """Doc."""
        return closed

    cached = cached_per_jaxpr(my_transform)
    assert cached.__name__ == "my_transform" and cached.__doc__ == "Doc."


def test_entries_go_when_their_jaxpr_is_garbage_collected():
    calls = []
    transform = _counting(calls)
    closed = _closed()
    result = transform(closed, 1, ())
    jaxpr_ref, result_ref = weakref.ref(closed), weakref.ref(result)
    del closed, result, calls[:]
    gc.collect()
    assert jaxpr_ref() is None, "the cache keeps the jaxpr alive"
    assert result_ref() is None, "the cache keeps the result of a dead jaxpr"


def test_a_real_transform_does_not_keep_its_jaxpr_alive():
    closed = fgrad.make_jaxpr(lambda x, y: (fnp.sin(x) * y, fnp.exp(y)))(np.ones(3), 2.0)
    jvp, _ = jvp_jaxpr(closed, (True, True), False)
    assert jvp_jaxpr(closed, (True, True), False)[0] is jvp
    jaxpr_ref, jvp_ref = weakref.ref(closed), weakref.ref(jvp)
    del closed, jvp
    gc.collect()
    assert jaxpr_ref() is None and jvp_ref() is None


def test_threads_calling_at_once_get_equal_results():
    calls = []

    @cached_per_jaxpr
    def slow(closed, k):
        calls.append(k)
        return tuple(np.asarray(_run(closed, float(k))[0]).tolist() for _ in range(50))

    closed = _closed()
    results = run_threads(lambda i: [slow(closed, k) for k in range(5)], 8)
    expected = [tuple([np.sin(float(k)) * 2.0] * 50) for k in range(5)]
    for r in results:
        assert r == expected
    assert set(calls) == set(range(5))
    # once every thread is done, a call is a hit
    n = len(calls)
    assert slow(closed, 2) == expected[2] and len(calls) == n


def test_threads_that_miss_together_get_the_one_result_stored():
    import time

    from fgrad.ir.cache import cached_per_jaxpr

    @cached_per_jaxpr
    def slow(closed, k):
        time.sleep(0.05)
        return object()

    closed = fgrad.make_jaxpr(fnp.sin)(1.0)
    got = [None, None]
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(i, slow(closed, 0))) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got[0] is got[1] is slow(closed, 0)
