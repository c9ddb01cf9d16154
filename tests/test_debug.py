"""fgrad.debug: print, tap_grad and debug_nans."""

import subprocess
import sys

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import debug


def test_print_runs_with_concrete_values_now_and_when_a_jaxpr_is_evaluated(capsys):
    def f(x):
        debug.print("x = {}, twice = {t}", x, t=x * 2)
        return fnp.sin(x)

    f(1.0)
    fgrad.grad(f)(2.0)
    closed = fgrad.make_jaxpr(f)(0.0)
    assert capsys.readouterr().out == "x = 1.0, twice = 2.0\nx = 2.0, twice = 4.0\n"
    assert "debug_print[fmt=x = {}, twice = {t}" in str(closed)
    fgrad.eval_jaxpr(closed.jaxpr, closed.consts, 3.0)
    assert capsys.readouterr().out == "x = 3.0, twice = 6.0\n"


def test_tap_grad_sees_the_cotangent_and_changes_nothing():
    seen = []
    x = np.array([0.5, 1.0])

    def f(x):
        y = debug.tap_grad(x * 2.0, seen.append)
        return fnp.sum(fnp.sin(y))

    g = fgrad.grad(f)(x)
    np.testing.assert_allclose(g, 2 * np.cos(2 * x))
    np.testing.assert_allclose(seen[0], np.cos(2 * x))  # d sum(sin(y)) / dy
    assert debug.tap_grad(x, seen.append) is x  # outside transforms: identity, no call
    assert fgrad.jvp(lambda x: debug.tap_grad(x, seen.append), (x,), (x,))[1].tolist() == x.tolist()
    assert len(seen) == 1


def test_tap_grad_under_vmap_and_nested_grad():
    seen = []
    f = lambda x: fnp.sin(debug.tap_grad(x, seen.append))  # noqa: E731
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(f))(np.array([0.1, 0.2])), np.cos([0.1, 0.2]))
    assert fgrad.grad(fgrad.grad(f))(0.3) == pytest.approx(-np.sin(0.3))


def test_debug_nans_names_the_primitive_and_the_forward_operation():
    with fgrad.debug_nans():
        with pytest.raises(FloatingPointError, match="`log` produced NaN"):
            fnp.log(np.array([1.0, -1.0]))
        with pytest.raises(FloatingPointError, match="`mul` produced NaN.*\n  in the backward pass, in the derivative of `sqrt`"):
            fgrad.grad(lambda x: fnp.sqrt(x) * 0.0)(0.0)
        assert fgrad.grad(fnp.sin)(0.0) == 1.0  # no NaN: no error
    assert fnp.log(-1.0) != fnp.log(-1.0)  # off again: plain NumPy NaN


def test_debug_nans_from_the_environment_in_every_thread():
    code = ("import threading\nimport fgrad.numpy as fnp\n"
            "def check():\n    try:\n        fnp.sqrt(-1.0)\n    except FloatingPointError:\n        print('raised')\n"
            "check()\nt = threading.Thread(target=check)\nt.start()\nt.join()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"FGRAD_DEBUG_NANS": "1", "PATH": ""}, check=True)
    assert out.stdout.split() == ["raised", "raised"]


def test_debug_nans_outside_transforms_only():
    def f(x):
        with fgrad.debug_nans():
            return x

    with pytest.raises(RuntimeError, match="outside any transformation"):
        fgrad.grad(f)(1.0)
