"""Faults: an exception or a KeyboardInterrupt raised while a function is being
transformed or traced (in user code, in a rule, in a `lax` body, in a custom
rule, inside a `jit` trace) leaves nothing behind. The current trace is
evaluation again, nothing half-made is cached, and the next call, of the same
function, gives the right answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax
from fgrad.core.rules import JVPFactors, batch_rules, jvp_rules, transpose_rules
from fgrad.core.trace import EVAL_TRACE, ctx, transforming
from fgrad.primitives.elementwise import mul_p, sin_p

X = 0.7
XS = np.array([0.3, -0.4, 1.1])


class Fault:
    """`fault()` raises `exc` while armed: put it where the failure should happen."""

    def __init__(self) -> None:
        self.exc: type[BaseException] | None = None
        self.hits = 0

    def __call__(self) -> None:
        if self.exc is not None:
            self.hits += 1
            raise self.exc("injected fault")


@pytest.fixture
def fault() -> Fault:
    return Fault()


@pytest.fixture
def faulty_rules(fault: Fault) -> Iterator[None]:
    """sin's jvp factor, sin's batching rule and mul's transpose rule, each
    calling `fault()` first."""
    saved = jvp_rules[sin_p], batch_rules[sin_p], transpose_rules[mul_p]
    (factor,) = saved[0].factors  # type: ignore[union-attr]

    def sin_factor(*args: Any) -> Any:
        fault()
        return factor(*args)

    def sin_batch(*args: Any, **params: Any) -> Any:
        fault()
        return saved[1](*args, **params)

    def mul_transpose(*args: Any, **params: Any) -> Any:
        fault()
        return saved[2](*args, **params)

    jvp_rules[sin_p] = JVPFactors((sin_factor,))
    batch_rules[sin_p] = sin_batch
    transpose_rules[mul_p] = mul_transpose
    try:
        yield
    finally:
        jvp_rules[sin_p], batch_rules[sin_p], transpose_rules[mul_p] = saved


def custom_vjp_square(fault: Fault, where: str) -> Any:
    @fgrad.custom_vjp
    def square(x: Any) -> Any:
        return x * x

    def fwd(x: Any) -> Any:
        if where == "fwd":
            fault()
        return x * x, x

    def bwd(x: Any, g: Any) -> Any:
        if where == "bwd":
            fault()
        return (2.0 * x * g,)

    square.defvjp(fwd, bwd)
    return square


def custom_jvp_sin(fault: Fault) -> Any:
    @fgrad.custom_jvp
    def f(x: Any) -> Any:
        return fnp.sin(x)

    @f.defjvp
    def f_jvp(primals: Any, tangents: Any) -> Any:
        fault()
        (x,), (t,) = primals, tangents
        return f(x), fnp.cos(x) * t

    return f


def user(fault: Fault) -> Callable[[Any], Any]:
    """sin(x) * x, calling `fault()` in the middle."""

    def f(x: Any) -> Any:
        y = fnp.sin(x)
        fault()
        return y * x

    return f


D_SIN_X = np.cos(X) * X + np.sin(X)  # d/dx sin(x) x at X


def cases(fault: Fault) -> dict[str, tuple[Callable[[], Any], Any]]:
    """name -> (a computation that calls `fault()` somewhere, its right result)."""
    f = user(fault)
    jitted = fgrad.jit(f)

    def while_body(c: Any) -> Any:
        fault()
        return (c[0] + 1, c[1] * 1.5)

    def scan_body(c: Any, x: Any) -> Any:
        fault()
        return c * x, c

    def cond_branch(x: Any) -> Any:
        fault()
        return fnp.sin(x)

    return {
        "grad": (lambda: fgrad.grad(f)(X), D_SIN_X),
        "value_and_grad": (lambda: fgrad.value_and_grad(f)(X)[1], D_SIN_X),
        "vjp": (lambda: fgrad.vjp(f, X)[1](1.0)[0], D_SIN_X),
        "jvp": (lambda: fgrad.jvp(f, (X,), (1.0,))[1], D_SIN_X),
        "vmap": (lambda: fgrad.vmap(f)(XS), np.sin(XS) * XS),
        "jacrev": (lambda: fgrad.jacrev(f)(XS), np.diag(np.cos(XS) * XS + np.sin(XS))),
        "hessian": (lambda: fgrad.hessian(f)(X), 2 * np.cos(X) - X * np.sin(X)),
        "jit": (lambda: jitted(X), np.sin(X) * X),
        "grad of jit": (lambda: fgrad.grad(jitted)(X), D_SIN_X),
        "vmap of grad": (lambda: fgrad.vmap(fgrad.grad(f))(XS), np.cos(XS) * XS + np.sin(XS)),
        "make_jaxpr": (lambda: str(fgrad.make_jaxpr(f)(X)).count("sin"), 1),
        "lax.cond": (lambda: fgrad.grad(lambda x: lax.cond(x > 0, cond_branch, fnp.cos, x))(X),
                     np.cos(X)),
        "lax.while_loop": (lambda: fgrad.grad(lambda x: lax.while_loop(
            lambda c: c[0] < 3, while_body, (0, x))[1])(X), 1.5 ** 3),
        "lax.scan": (lambda: fgrad.grad(lambda x: lax.scan(scan_body, x, fnp.ones(3) * x)[0])(X),
                     4 * X ** 3),
        "vmap of lax.scan": (lambda: fgrad.vmap(lambda x: lax.scan(scan_body, x, np.arange(1.0, 4.0))[0])(XS),
                             XS * 6.0),
        "custom_vjp fwd": (lambda: fgrad.grad(custom_vjp_square(fault, "fwd"))(X), 2 * X),
        "custom_vjp bwd": (lambda: fgrad.grad(custom_vjp_square(fault, "bwd"))(X), 2 * X),
        "custom_jvp rule": (lambda: fgrad.grad(custom_jvp_sin(fault))(X), np.cos(X)),
        "checkpoint": (lambda: fgrad.grad(fgrad.checkpoint(f))(X), D_SIN_X),
    }


RULE_CASES: dict[str, tuple[Callable[[], Any], Any]] = {
    "a jvp rule under jvp": (lambda: fgrad.jvp(fnp.sin, (X,), (1.0,))[1], np.cos(X)),
    "a jvp rule under grad": (lambda: fgrad.grad(lambda x: fnp.sin(x) * 2.0)(X), 2 * np.cos(X)),
    "a transpose rule": (lambda: fgrad.grad(lambda x: fnp.exp(x) * 3.0)(X), 3 * np.exp(X)),
    "a batching rule": (lambda: fgrad.vmap(fnp.sin)(XS), np.sin(XS)),
    "a batching rule under grad": (lambda: fgrad.vmap(fgrad.grad(fnp.sin))(XS), np.cos(XS)),
    "a rule inside jit of grad": (lambda: fgrad.jit(fgrad.grad(lambda x: fnp.sin(x) * x))(X), D_SIN_X),
    "a rule inside vjp_fn": (lambda: fgrad.vjp(lambda x: x * 4.0, X)[1](1.0)[0], 4.0),
}


def assert_clean() -> None:
    assert ctx.trace is EVAL_TRACE
    assert not transforming.threads  # no transform left open: fgrad.numpy's fast path is back
    assert fgrad.grad(lambda x: fnp.sin(x) * x)(0.2) == pytest.approx(np.cos(0.2) * 0.2 + np.sin(0.2))


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt])
@pytest.mark.parametrize("name", list(cases(Fault())))
def test_a_fault_in_a_transformed_function_leaves_nothing_behind(
    fault: Fault, name: str, exc: type[BaseException]
) -> None:
    run, expected = cases(fault)[name]
    fault.exc = exc
    with pytest.raises(exc, match="injected fault"):
        run()
    assert fault.hits == 1
    assert_clean()
    fault.exc = None
    np.testing.assert_allclose(run(), expected, rtol=1e-12)  # the same function, again
    assert_clean()


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt])
@pytest.mark.parametrize("name", list(RULE_CASES))
def test_a_fault_in_a_rule_leaves_nothing_behind(
    fault: Fault, faulty_rules: None, name: str, exc: type[BaseException]
) -> None:
    run, expected = RULE_CASES[name]
    fault.exc = exc
    with pytest.raises(exc, match="injected fault"):
        run()
    assert fault.hits >= 1
    assert ctx.trace is EVAL_TRACE
    fault.exc = None
    np.testing.assert_allclose(run(), expected, rtol=1e-12)
    assert_clean()


def test_a_vjp_function_whose_backward_pass_failed_can_be_called_again(fault: Fault,
                                                                       faulty_rules: None) -> None:
    _, vjp_fn = fgrad.vjp(lambda x: x * fnp.exp(x), X)
    fault.exc = KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        vjp_fn(1.0)
    fault.exc = None
    assert vjp_fn(2.0)[0] == pytest.approx(2.0 * (1.0 + X) * np.exp(X))
    assert_clean()


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt])
def test_a_jit_whose_trace_failed_caches_nothing(fault: Fault, exc: type[BaseException]) -> None:
    traces = []

    def f(x: Any) -> Any:
        traces.append(x)
        fault()
        return fnp.sin(x) * 2.0

    jitted = fgrad.jit(f)
    fault.exc = exc
    for _ in range(2):  # each call traces again: nothing was kept
        with pytest.raises(exc):
            jitted(XS)
    assert len(traces) == 2 and len(jitted._cache) == 0 and not jitted._fast
    assert_clean()
    fault.exc = None
    np.testing.assert_allclose(jitted(XS), 2.0 * np.sin(XS))
    np.testing.assert_allclose(jitted(XS + 1.0), 2.0 * np.sin(XS + 1.0))
    assert len(traces) == 3 and len(jitted._cache) == 1  # traced once, then reused


def test_a_jit_whose_trace_failed_under_grad_caches_nothing(fault: Fault) -> None:
    jitted = fgrad.jit(user(fault))
    fault.exc = ValueError
    with pytest.raises(ValueError):
        fgrad.grad(lambda x: jitted(x) * 2.0)(X)
    assert len(jitted._cache) == 0
    fault.exc = None
    assert fgrad.grad(lambda x: jitted(x) * 2.0)(X) == pytest.approx(2 * D_SIN_X)
    assert_clean()


def test_a_concretization_error_inside_jit_leaves_nothing_behind() -> None:
    def f(x: Any) -> Any:
        return x if x > 0 else -x  # a Python branch on an abstract value

    jitted = fgrad.jit(f)
    with pytest.raises(fgrad.ConcretizationTypeError):
        fgrad.grad(jitted)(X)
    assert len(jitted._cache) == 0
    assert_clean()
    assert fgrad.jit(f, static_argnums=0)(-2.0) == 2.0


def test_a_fault_while_a_transform_nests_in_another_leaves_the_outer_one_usable(fault: Fault) -> None:
    # The inner grad fails and the outer one catches the error and goes on.
    def outer(x: Any) -> Any:
        fault.exc = ValueError
        with contextlib.suppress(ValueError):
            fgrad.grad(user(fault))(x)
        fault.exc = None
        assert type(ctx.trace).__name__ == "LinearizeTrace"  # the outer grad's, current again
        return fnp.sin(x) * x

    assert fgrad.grad(outer)(X) == pytest.approx(D_SIN_X)
    assert_clean()


def test_a_traced_value_carried_out_by_an_exception_is_dead() -> None:
    def f(x: Any) -> Any:
        raise ValueError(x * 2.0)  # the exception holds a tracer (and its tangent)

    with pytest.raises(ValueError) as info:
        fgrad.grad(f)(X)
    (escaped,) = info.value.args
    assert escaped._trace.dead and escaped.tangent._trace.dead
    for value in (escaped, escaped.tangent):
        with pytest.raises(fgrad.UnexpectedTracerError, match="after that transform had returned"):
            fnp.sin(value)
    assert_clean()
