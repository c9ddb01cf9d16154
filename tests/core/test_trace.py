"""The trace machinery: the eval fast path, stackless nesting, escaped tracers,
missing rules."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.core import EVAL_TRACE, Primitive, ShapedArray, UnexpectedTracerError, ctx


def test_no_transform_means_the_eval_trace_and_numpy_results():
    assert ctx.trace is EVAL_TRACE
    out = fnp.sin(np.array([0.0, 1.0]))
    assert type(out) is np.ndarray
    assert type(fnp.add(np.array(1.0), np.array(2.0))) is np.float64  # NumPy scalars for 0-d
    assert type(fnp.sum(np.ones(3))) is np.float64


def test_the_current_trace_is_restored_after_transforms_and_errors():
    fgrad.grad(fnp.sin)(1.0)
    assert ctx.trace is EVAL_TRACE
    with pytest.raises(ZeroDivisionError):
        fgrad.grad(lambda x: 1 / 0)(1.0)
    assert ctx.trace is EVAL_TRACE


def test_nested_grad_has_no_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1
    assert fgrad.grad(lambda x: x * fgrad.grad(lambda y: x + y)(1.0))(2.0) == 1.0
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x
    assert fgrad.grad(lambda x: x * fgrad.grad(lambda y: x * y)(1.0))(3.0) == 6.0


leaked = []


def _leak(x):
    leaked.append(x)
    return x * 2.0


@pytest.mark.parametrize(
    "transform, name",
    [
        (lambda f: fgrad.grad(f)(1.0), "grad of _leak"),
        (lambda f: fgrad.jvp(f, (1.0,), (1.0,)), "jvp of _leak"),
        (lambda f: fgrad.make_jaxpr(f)(1.0), "make_jaxpr of _leak"),
    ],
)
def test_escaped_tracers_raise_and_name_their_transform(transform, name):
    leaked.clear()
    transform(_leak)
    (x,) = leaked
    for use in (lambda: x + 1.0, lambda: fnp.sin(x), lambda: np.sin(x), lambda: np.sum(x),
                lambda: float(x), lambda: x[None], lambda: fgrad.grad(lambda y: y * x)(1.0),
                lambda: np.asarray(x)):
        with pytest.raises(UnexpectedTracerError, match=f"created by `{name}`.*escaped"):
            use()
    assert "dead" in repr(x)


def test_a_primitive_without_a_jvp_rule_names_itself_and_the_transform():
    no_rule_p = Primitive("no_rule", lambda xp, x: xp.sin(x), lambda x: x)
    with pytest.raises(NotImplementedError, match="`no_rule` has no jvp rule, which `grad of <lambda>` needs"):
        fgrad.grad(lambda x: no_rule_p.bind(x))(1.0)
    assert no_rule_p.bind(0.0) == 0.0  # evaluation needs no rule
    assert str(fgrad.make_jaxpr(lambda x: no_rule_p.bind(x))(1.0)) == (
        "{ lambda ; a:f64[]. let b:f64[] = no_rule a in (b,) }"
    )


def test_a_nonlinear_primitive_in_a_linear_jaxpr_has_no_transpose_rule():
    from fgrad.core import jvp_rules

    cube_p = Primitive("cube", lambda xp, x: x**3, lambda x: x)
    jvp_rules[cube_p] = lambda primals, tangents: (cube_p.bind(*primals), cube_p.bind(*tangents))
    assert fgrad.jvp(lambda x: cube_p.bind(x), (2.0,), (1.0,)) == (8.0, 1.0)
    with pytest.raises(NotImplementedError, match="`cube` has no transpose"):
        fgrad.grad(lambda x: cube_p.bind(x))(2.0)


def test_tracer_attributes():
    def f(x):
        assert (x.shape, x.ndim, x.size, x.dtype, len(x)) == ((2, 3), 2, 6, np.float64, 2)
        assert x.aval is ShapedArray((2, 3), np.float64)
        return fnp.sum(x)

    fgrad.grad(f)(np.ones((2, 3)))
    fgrad.make_jaxpr(f)(np.ones((2, 3)))
