"""jit's generated code on other array libraries (`compile_jaxpr(...,
library=...)`): one line per equation calling the primitive's implementation
with the namespace bound once, the jaxpr's NumPy constants moved into the
library once, NumPy inputs moved on entry, and control-flow bodies generated
the same way."""

import gc

import array_api_strict as xp
import dask.array as da
import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.core.libraries import library_of
from fgrad.ir.codegen import _compiled, compile_jaxpr

STRICT = library_of([xp.asarray(1.0)])
DASK = library_of([da.ones(1)])
W = np.array([[1.0, 2.0], [3.0, 4.0]])


def test_one_line_per_equation_and_constants_in_the_library():
    closed = fgrad.make_jaxpr(lambda x: fnp.tanh(W @ x) + 1.0)(np.ones(2))
    compiled = compile_jaxpr(closed, library=STRICT)
    calls = [line for line in compiled.source.splitlines() if "= f" in line]
    assert len(calls) == len(closed.jaxpr.eqns)
    assert all("(xp, " in line for line in calls)  # the namespace, bound once
    constants = [v for k, v in compiled.fun.__globals__.items() if k[0] == "v" and k[1:].isdigit()]
    assert constants and all(type(c) is type(xp.asarray(1.0)) for c in constants)
    out = compiled(np.array([0.5, -0.5]))[0]  # a NumPy input is moved into the library
    assert type(out) is type(xp.asarray(1.0))
    np.testing.assert_allclose(np.asarray(out), np.tanh(W @ [0.5, -0.5]) + 1.0, rtol=1e-15)


def test_compiled_once_per_jaxpr_and_library():
    closed = fgrad.make_jaxpr(fnp.sin)(np.ones(3))
    assert compile_jaxpr(closed, library=STRICT) is compile_jaxpr(closed, library=STRICT)
    assert compile_jaxpr(closed, library=STRICT) is not compile_jaxpr(closed, library=DASK)


def test_jit_with_control_flow_runs_generated_code_on_dask():
    def f(x):
        y = lax.cond(fnp.sum(x) > 0, lambda v: v * 2.0, lambda v: -v, x)
        return lax.fori_loop(0, 3, lambda i, c: c + fnp.sin(c), y)

    gc.collect()  # (what other tests left to the collector goes now, not while this one counts)
    before = _compiled.cache_size()
    x = da.from_array(np.linspace(-0.5, 1.0, 6), chunks=3)
    jitted = fgrad.jit(f)  # held: its jaxprs, and so their compiled code, live as long as it does
    out = jitted(x)
    assert isinstance(out, da.Array) and out.chunks == x.chunks
    assert _compiled.cache_size() > before + 1  # the jaxpr and its bodies
    expected = np.linspace(-0.5, 1.0, 6) * 2.0
    for _ in range(3):
        expected = expected + np.sin(expected)
    np.testing.assert_allclose(out.compute(), expected, rtol=1e-14)


def test_a_primitive_without_an_implementation_raises_when_run():
    closed = fgrad.make_jaxpr(fnp.linalg.eigvals)(np.eye(2))
    compiled = compile_jaxpr(closed, library=STRICT)
    with pytest.raises(NotImplementedError, match=r"`eigvals` has no implementation for arrays of "
                                                  r"array_api_strict"):
        compiled(xp.eye(2))
