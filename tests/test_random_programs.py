"""Property tests of the whole system: random programs, the transforms checked
against each other.

Hypothesis builds small straight-line programs from fgrad's primitives
(tests/programs.py: elementwise ops on safe domains, broadcasting, reductions,
sorting, indexing, linear algebra on well-conditioned matrices, lax control
flow nested in itself, custom_vjp, checkpoint, and grad, jit and vmap inside
the program) on one or two float64 inputs of drawn shapes, 0-d included, and
each test checks one relation that must hold for every program: eager fgrad
against NumPy, grad against central differences, forward against reverse mode
(<u, J v> = <Jᵀu, v>), vmap against a Python loop, jit against eager, a jaxpr
of make_jaxpr evaluated by eval_jaxpr against eager, and the symmetry of the
Hessian. Points near a kink of the program are skipped (`_valid`); programs
with a custom_vjp stay out of forward-mode checks, where it is a TypeError.

`make test` runs about 400 programs. Each test has a `_slow` twin on ten times
as many, twice as long, marked `slow`: those are skipped unless selected with
``python -m pytest -m slow`` (``make test-slow``), e.g.
``python -m pytest -m slow tests/test_random_programs.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads, numerical_jvp

from .programs import (
    FORWARD_KINDS,
    HESSIAN_KINDS,
    Program,
    inputs_for,
    numpy_backend,
    programs,
    run,
    scalar_fn,
    soft_sign,
    vector_fn,
)

seeds = st.integers(0, 2**32 - 1)
_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
# The least distance a point keeps from the program's kinks (ties of max and
# sort, the switch of cond, where and a loop's trip count): far enough for
# finite differences, or (`_ROUNDING`) for the same branch to be taken
# whatever the order of a sum's terms.
_MARGIN = 1e-2
_ROUNDING = 1e-9


def _valid(program: Program, xs: list[np.ndarray], margin: float = _MARGIN) -> None:
    """Skip the example unless the program is finite at `xs` and `margin` away
    from its kinks, so that a failure is a bug of fgrad, not of the program."""
    be = numpy_backend()
    with np.errstate(all="raise"):
        regs = run(program, be, *xs)
    assert all(np.all(np.isfinite(r)) for r in regs), program
    assume(min(be.margins, default=np.inf) > margin)


def _argnums(program: Program) -> tuple[int, ...]:
    return tuple(range(len(program.in_shapes)))


def _close(actual: Any, expected: Any, rtol: float, what: str) -> None:
    """Leafwise, within rtol of the largest expected magnitude (and of each entry)."""
    a_leaves, e_leaves = fgrad.tree_util.tree_leaves(actual), fgrad.tree_util.tree_leaves(expected)
    assert len(a_leaves) == len(e_leaves), what
    for a, e in zip(a_leaves, e_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{what}: shape {a.shape}, expected {e.shape}"
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * scale, err_msg=what)


# ---------------------------------------------------------------- the checks


def check_eager_matches_numpy(program: Program, seed: int) -> None:
    xs = inputs_for(program, seed)
    _valid(program, xs, _ROUNDING)
    _close(vector_fn(program)(*xs), vector_fn(program, numpy_backend())(*xs), 1e-12, "eager vs NumPy")


def check_grad_matches_finite_differences(program: Program, seed: int) -> None:
    xs = inputs_for(program, seed)
    _valid(program, xs)
    f = scalar_fn(program)
    modes = ("rev",) if program.has_custom_vjp else ("fwd", "rev")
    check_grads(f, xs, order=1, modes=modes)
    grads = fgrad.grad(f, argnums=_argnums(program))(*xs)
    direction = list(np.random.default_rng(seed + 1).standard_normal(np.shape(x)) for x in xs)
    got = sum(float(np.sum(g * t)) for g, t in zip(grads, direction))
    expected = float(numerical_jvp(f, xs, direction, 1e-5))
    assert abs(got - expected) <= 1e-6 * max(1.0, abs(expected)), (got, expected)


def check_forward_matches_reverse(program: Program, seed: int) -> None:
    """jvp against vjp (and linearize, jit of each, jacfwd against jacrev)."""
    xs = inputs_for(program, seed)
    _valid(program, xs, _ROUNDING)  # both modes differentiate the same branch
    f = vector_fn(program)
    rng = np.random.default_rng(seed + 1)
    v = tuple(rng.standard_normal(np.shape(x)) for x in xs)
    out, jv = fgrad.jvp(f, tuple(xs), v)
    u = rng.standard_normal(np.shape(out))
    out_r, f_vjp = fgrad.vjp(f, *xs)
    jtu = f_vjp(u)
    _close(out_r, out, 1e-12, "primal of vjp vs jvp")
    lhs = float(np.dot(u, jv))
    rhs = sum(float(np.sum(a * b)) for a, b in zip(jtu, v))
    assert abs(lhs - rhs) <= 1e-10 * max(1.0, abs(lhs)), f"<u, J v> = {lhs} but <J^T u, v> = {rhs}"
    _close(fgrad.jvp(fgrad.jit(f), tuple(xs), v), (out, jv), 1e-12, "jvp(jit) vs jvp")
    _close(fgrad.vjp(fgrad.jit(f), *xs)[1](u), jtu, 1e-12, "vjp(jit) vs vjp")
    _close(fgrad.linearize(f, *xs)[1](*v), jv, 1e-12, "linearize vs jvp")
    argnums = _argnums(program)
    _close(fgrad.jacrev(f, argnums=argnums)(*xs), fgrad.jacfwd(f, argnums=argnums)(*xs), 1e-10,
           "jacrev vs jacfwd")


def check_vmap_matches_loop(program: Program, seed: int) -> None:
    """vmap, jit of vmap, vmap of grad and grad of vmap against a loop over a
    batch of 3, batched along a drawn axis (first, last, none) of each input."""
    rng = np.random.default_rng(seed)
    unbatched = inputs_for(program, seed)
    in_axes = [rng.choice([0, x.ndim, None]) for x in unbatched]
    if all(axis is None for axis in in_axes):
        in_axes[0] = 0
    in_axes = tuple(None if a is None else int(a) for a in in_axes)
    xs = [x if axis is None else rng.uniform(-1, 1, x.shape[:axis] + (3,) + x.shape[axis:])
          for x, axis in zip(unbatched, in_axes)]
    examples = [[x if axis is None else np.take(x, k, axis=axis) for x, axis in zip(xs, in_axes)]
                for k in range(3)]
    for example in examples:
        _valid(program, example, _ROUNDING)
    f, s = vector_fn(program), scalar_fn(program)
    g = fgrad.grad(s, argnums=_argnums(program))
    expected = np.stack([f(*example) for example in examples])
    _close(fgrad.vmap(f, in_axes=in_axes)(*xs), expected, 1e-10, "vmap vs loop")
    _close(fgrad.jit(fgrad.vmap(f, in_axes=in_axes))(*xs), expected, 1e-10, "jit(vmap) vs loop")
    per_example = [g(*example) for example in examples]
    _close(list(fgrad.vmap(g, in_axes=in_axes)(*xs)), [np.stack(gs) for gs in zip(*per_example)], 1e-10,
           "vmap(grad) vs loop")
    total = fgrad.grad(lambda *xs: fnp.sum(fgrad.vmap(s, in_axes=in_axes)(*xs)), argnums=_argnums(program))
    expected_total = [np.sum(gs, axis=0) if axis is None else np.stack(gs, axis=axis)
                      for gs, axis in zip(zip(*per_example), in_axes)]
    _close(list(total(*xs)), expected_total, 1e-10, "grad(sum(vmap)) vs loop")


def check_jit_matches_eager(program: Program, seed: int) -> None:
    """jit against eager, values and gradients, on the inputs it was compiled
    for and on others of the same shapes (nothing data-dependent baked in)."""
    xs, others = inputs_for(program, seed), inputs_for(program, seed + 1)
    _valid(program, xs, _ROUNDING)
    _valid(program, others, _ROUNDING)
    f, s = vector_fn(program), scalar_fn(program)
    g = fgrad.grad(s, argnums=_argnums(program))
    jf, jg, gj = fgrad.jit(f), fgrad.jit(g), fgrad.grad(fgrad.jit(s), argnums=_argnums(program))
    for args in (xs, others):
        _close(jf(*args), f(*args), 1e-12, "jit vs eager")
        grads = g(*args)
        _close(jg(*args), grads, 1e-12, "jit(grad) vs grad")
        _close(gj(*args), grads, 1e-12, "grad(jit) vs grad")


def check_jaxpr_matches_eager(program: Program, seed: int) -> None:
    """A jaxpr staged at some inputs, evaluated there and at others."""
    xs, others = inputs_for(program, seed), inputs_for(program, seed + 1)
    _valid(program, xs, _ROUNDING)
    _valid(program, others, _ROUNDING)
    for what, fn in [("value", vector_fn(program)),
                     ("grad", fgrad.grad(scalar_fn(program), argnums=_argnums(program)))]:
        closed = fgrad.make_jaxpr(fn)(*xs)
        for args in (xs, others):
            leaves = fgrad.eval_jaxpr(closed.jaxpr, closed.consts, *args)
            _close(leaves, fgrad.tree_util.tree_leaves(fn(*args)), 1e-12, f"eval_jaxpr of the {what}")


def check_hessian_is_symmetric(program: Program, seed: int) -> None:
    xs = inputs_for(program, seed)
    _valid(program, xs)
    f = scalar_fn(program)
    sizes = [x.size for x in xs]
    cuts = np.cumsum(sizes)[:-1].tolist()

    def on_flat(z: Any) -> Any:
        parts = fgrad.numpy.split(z, cuts)
        return f(*(fgrad.numpy.reshape(p, x.shape) for p, x in zip(parts, xs)))

    z = np.concatenate([x.ravel() for x in xs])
    hess = np.asarray(fgrad.hessian(on_flat)(z))
    scale = max(1.0, float(np.max(np.abs(hess))))
    asym = float(np.max(np.abs(hess - hess.T)))
    assert asym <= 1e-8 * scale, f"Hessian asymmetric by {asym} (scale {scale})"
    v = np.random.default_rng(seed + 1).standard_normal(z.shape)
    expected = numerical_jvp(fgrad.grad(on_flat), [z], [v], 1e-5)
    _close(hess @ v, expected, 1e-5, "Hessian-vector product vs differences of grad")


# ---------------------------------------------------------------- the tests


def _pair(check: Callable[[Program, int], None], fast: int, kinds: Any = None
          ) -> tuple[Callable[..., None], Callable[..., None]]:
    """A test of `check` on `fast` programs of up to 8 ops, and its slow twin
    on ten times as many, up to 16 ops long."""
    extra = {} if kinds is None else {"kinds": kinds}

    def test(examples: int, max_ops: int, suffix: str) -> Callable[..., None]:
        def test(program: Program, seed: int) -> None:
            check(program, seed)

        test.__name__ = test.__qualname__ = check.__name__.replace("check_", "test_") + suffix
        return settings(max_examples=examples, deadline=None, suppress_health_check=_HEALTH)(
            given(programs(max_ops=max_ops, **extra), seeds)(test))

    return test(fast, 8, ""), pytest.mark.slow(test(10 * fast, 16, "_slow"))


test_eager_matches_numpy, test_eager_matches_numpy_slow = _pair(check_eager_matches_numpy, 60)
test_grad_matches_finite_differences, test_grad_matches_finite_differences_slow = _pair(
    check_grad_matches_finite_differences, 60)
test_forward_matches_reverse, test_forward_matches_reverse_slow = _pair(
    check_forward_matches_reverse, 60, kinds=FORWARD_KINDS)
test_vmap_matches_loop, test_vmap_matches_loop_slow = _pair(check_vmap_matches_loop, 60)
test_jit_matches_eager, test_jit_matches_eager_slow = _pair(check_jit_matches_eager, 60)
test_jaxpr_matches_eager, test_jaxpr_matches_eager_slow = _pair(check_jaxpr_matches_eager, 60)
test_hessian_is_symmetric, test_hessian_is_symmetric_slow = _pair(
    check_hessian_is_symmetric, 40, kinds=HESSIAN_KINDS)


# ---------------------------------------------------------------- what the programs found


def _cond_times_input(v: Any) -> Any:
    return fgrad.lax.cond(v > 0, fnp.sin, fnp.cos, v) * v


# Found by the programs above: checkpoint's reverse mode staged the jvp of its
# body (jvp_jaxpr) and transposed it, which failed for every body whose jvp is
# not itself linear in the tangents: a custom_vjp (no forward mode), the loops
# (their jvp carries primals and tangents together, and has no transpose rule)
# and a cond whose result is multiplied after it. It now linearizes the body.
_IN_CHECKPOINT = {
    "custom_vjp": (soft_sign, lambda x: (1 - x * x) / (1 + x * x) ** 2),
    "fori_loop": (lambda v: fgrad.lax.fori_loop(0, 2, lambda i, v: fnp.sin(v), v),
                  lambda x: np.cos(np.sin(x)) * np.cos(x)),
    "scan": (lambda v: fgrad.lax.scan(lambda c, x: (fnp.sin(c * x), c), v, fnp.ones(2))[0],
             lambda x: np.cos(np.sin(x)) * np.cos(x)),
    "while_loop": (lambda v: fgrad.lax.while_loop(lambda s: s[0] < 2, lambda s: (s[0] + 1, fnp.sin(s[1])),
                                                  (0, v))[1],
                   lambda x: np.cos(np.sin(x)) * np.cos(x)),
    "cond_times_input": (_cond_times_input, lambda x: np.cos(x) * x + np.sin(x)),
}


@pytest.mark.parametrize("body", sorted(_IN_CHECKPOINT))
def test_regression_grad_of_checkpoint_of(body):
    fun, derivative = _IN_CHECKPOINT[body]
    x = 0.5
    np.testing.assert_allclose(fgrad.grad(fgrad.checkpoint(fun))(x), derivative(x), rtol=1e-12)
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(fgrad.checkpoint(fun)))(x), derivative(x), rtol=1e-12)
