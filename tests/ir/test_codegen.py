"""Code generation: the generated function equals eval_jaxpr of its jaxpr, its
source is fgrad's own text, and values are released after their last use."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
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
    compiled = compile_jaxpr(fgrad.make_jaxpr(lambda weird_name: fnp.exp(fnp.sin(weird_name)))(1.0))
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
    weak = fgrad.jit(lambda a, b: a * b).lower(2.0, 0.5)
    assert " * " not in weak.as_text()
    assert type(fgrad.jit(lambda a, b: a * b)(2.0, 0.5)) is np.float64
