"""Errors are part of the API: Python control flow on abstract values, and
the messages that say what was given, what was expected and what to do."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import ConcretizationTypeError


def branchy(x, y):
    z = x * 2.0 + 1.0
    if z > y:
        return z
    return y


def test_if_on_an_abstract_value_names_the_function_the_argument_and_the_fixes():
    with pytest.raises(ConcretizationTypeError) as e:
        fgrad.make_jaxpr(branchy)(1.0, 2.0)
    message = str(e.value)
    assert "while tracing branchy for `make_jaxpr of branchy`" in message
    assert "an `if`, `while`, `and`, `or`, `not` or bool()" in message
    assert "depends on the arguments `x`, `y` of branchy" in message
    assert "fgrad.numpy.where(cond, x, y)" in message and "grad/jvp/vjp directly" in message
    assert isinstance(e.value, TypeError)


def test_the_argument_is_named_by_its_pytree_path():
    def f(params):
        return params["w"][1] if params["w"][1] > 0 else -params["w"][1]

    with pytest.raises(ConcretizationTypeError, match=r"depends on the argument `params\['w'\]\[1\]` of f"):
        fgrad.make_jaxpr(f)({"w": [1.0, 2.0]})


@pytest.mark.parametrize("conversion", [int, float, bool, lambda x: range(x)])
def test_conversions_on_abstract_values(conversion):
    with pytest.raises(ConcretizationTypeError, match="concrete"):
        fgrad.make_jaxpr(lambda x: conversion(x))(np.int64(3))


def test_the_same_code_runs_under_grad_where_values_are_concrete():
    assert fgrad.grad(branchy)(1.0, 2.0) == 2.0
    assert fgrad.grad(branchy, argnums=1)(1.0, 5.0) == 1.0


def test_grad_inside_make_jaxpr_still_has_abstract_values():
    with pytest.raises(ConcretizationTypeError, match="while tracing branchy"):
        fgrad.make_jaxpr(fgrad.grad(branchy))(1.0, 2.0)


def test_python_control_flow_with_a_static_argument():
    def f(x, n):
        for _ in range(n):
            x = fnp.sin(x)
        return x

    assert len(fgrad.make_jaxpr(f, static_argnums=1)(1.0, 3).eqns) == 3
    with pytest.raises(ValueError, match="static_argnums=5 is out of range"):
        fgrad.make_jaxpr(f, static_argnums=5)(1.0, 3)


def test_a_numpy_function_fgrad_lacks_says_so_on_a_traced_value():
    with pytest.raises(TypeError, match=r"numpy\.i0 was called on a traced value.*fgrad\.numpy has no i0"):
        fgrad.grad(lambda x: np.i0(x))(1.0)
    with pytest.raises(TypeError, match=r"numpy\.add\.reduce was called.*fgrad\.numpy has no add\.reduce"):
        fgrad.grad(lambda x: np.add.reduce(x))(np.ones(2))


def test_a_numpy_function_fgrad_has_under_another_path_names_fgrads_function():
    from fgrad.numpy.dispatch import _unsupported

    message = str(_unsupported("the function", "linalg.solve"))
    assert "fgrad.numpy.linalg.solve exists: call it instead" in message


# --- messages that name the fgrad function to use ------------------------------------


def test_a_scipy_special_ufunc_on_a_traced_value_names_fgrads():
    special = pytest.importorskip("scipy.special")
    with pytest.raises(TypeError, match=r"^scipy\.special\.expit was called on a traced value.*"
                                        r"Call fgrad\.scipy\.special\.expit instead"):
        fgrad.grad(lambda x: np.sum(special.expit(x)))(np.ones(3))
    with pytest.raises(TypeError, match=r"scipy\.special\.ellipk.*fgrad\.scipy\.special has no ellipk"):
        fgrad.grad(lambda x: np.sum(special.ellipk(x)))(np.full(3, 0.5))


def test_scipy_code_converting_a_traced_value_names_the_fgrad_module():
    stats = pytest.importorskip("scipy.stats")
    with pytest.raises(fgrad.TracerArrayConversionError,
                       match=r"^scipy\.stats's logpdf was called on a traced value.*Use fgrad\.scipy\.stats "
                             r"instead.*In detail: Conversion to a NumPy array"):
        fgrad.grad(lambda x: np.sum(stats.norm.logpdf(x)))(np.ones(3))
    with pytest.raises(fgrad.TracerArrayConversionError) as e:  # NumPy's own conversion: no SciPy hint
        fgrad.grad(lambda x: np.sum(np.asarray(x)))(np.ones(3))
    assert "scipy" not in str(e.value)


@pytest.mark.parametrize("transform", [fgrad.grad, fgrad.jit, fgrad.vmap])
def test_formatting_a_traced_value_points_to_debug_print(transform):
    with pytest.raises(TypeError, match=r"The format '\.3f' asks for a number, but this is a traced value "
                                        r"\(f64\[\].*fgrad\.debug\.print\(\"\{:\.3f\}\", x\)"):
        transform(lambda x: (f"{x:.3f}", x * x)[1])(np.float64(1.0) if transform is not fgrad.vmap
                                                     else np.ones(2))


def test_printing_a_traced_value_says_how_to_see_its_value(capsys):
    fgrad.grad(lambda x: (print(x), print(f"x = {x}"), x * x)[2])(1.0)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("JVPTracer<f64[]>(grad of <lambda>), a traced value: fgrad.debug.print")
    assert printed[1].startswith("x = JVPTracer<f64[]>") and "fgrad.debug.print" in printed[1]
    assert repr(fgrad.make_jaxpr(lambda x: x)(1.0)).startswith("{ lambda")  # repr of jaxprs unchanged


def test_an_if_under_jit_suggests_where_cond_and_static_argnums():
    with pytest.raises(ConcretizationTypeError) as e:
        fgrad.jit(lambda x: x if x > 0 else -x)(1.0)
    for fix in ("fgrad.numpy.where(cond, x, y)", "fgrad.lax.cond(pred, true_fun, false_fun", "static_argnums"):
        assert fix in str(e.value)


def test_an_if_under_vmap_names_the_batched_argument():
    with pytest.raises(ConcretizationTypeError, match=r"It comes from the batched argument `b`\. .*"
                                                      r"fgrad\.numpy\.where.*fgrad\.lax\.cond"):
        fgrad.vmap(lambda a, b: a if b > 0 else -a, in_axes=(None, 0))(1.0, np.ones(3))
    with pytest.raises(ConcretizationTypeError, match=r"one or more of the batched arguments `p\['u'\]`, `p\['v'\]`"):
        fgrad.vmap(lambda p: p["u"] if p["u"] > 0 else p["v"])({"u": np.ones(3), "v": np.ones(3)})
    with pytest.raises(ConcretizationTypeError, match=r"the batched arguments `x`, `scale`\."):  # keywords too
        fgrad.vmap(lambda x, scale=1.0: x if scale > 0 else -x)(np.ones(3), scale=np.ones(3))


def test_grad_of_a_key_says_it_is_a_key_and_not_to_convert_it():
    import fgrad.random as fr

    with pytest.raises(TypeError, match=r"a key of fgrad\.random.*broken by a conversion to float\. "
                                        r"Leave it out of argnums") as e:
        fgrad.grad(lambda k: fnp.sum(fr.normal(k, (2,))))(fr.key(0))
    assert "fgrad.numpy.asarray(x, dtype=float)" not in str(e.value)


def test_vmap_over_one_key_says_to_split_it():
    import fgrad.random as fr

    with pytest.raises(TypeError, match=r"one word of a key: vmap over a single key maps over its two words\. "
                                        r"Map over keys made by fgrad\.random\.split\(key, n\)"):
        fgrad.vmap(lambda k: fr.normal(k))(fr.key(0))
    assert fgrad.vmap(lambda k: fr.normal(k))(fr.split(fr.key(0), 3)).shape == (3,)


def test_forward_mode_of_a_jitted_odeint_says_to_put_the_jvp_inside_the_jit():
    from fgrad.scipy.integrate import odeint

    ts = np.array([0.0, 1.0])
    f = fgrad.jit(lambda c: odeint(lambda y, t, c: -c * y, 1.0, ts, c)[-1])
    with pytest.raises(TypeError, match=r"put the jvp inside the jit"):
        fgrad.jvp(f, (2.0,), (1.0,))
    inside = fgrad.jit(lambda c, t: fgrad.jvp(lambda c: odeint(lambda y, s, c: -c * y, 1.0, ts, c)[-1], (c,), (t,)))
    y, dy = inside(2.0, 1.0)
    np.testing.assert_allclose(dy, -np.exp(-2.0), rtol=1e-5)  # d/dc exp(-c) at c = 2
