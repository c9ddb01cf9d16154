"""fgrad.test_util: numerical checks of derivatives.

`check_grads(f, args, order)` compares forward mode (`jvp`) and reverse mode
(`vjp`) with central finite differences along a random direction, and
recursively does the same for their derivatives up to `order`. It is how every
derivative rule in fgrad is tested, and how users test their own rules.

>>> import fgrad.numpy as fnp
>>> check_grads(fnp.sin, (0.5,), order=2)  # raises AssertionError if a rule is wrong
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .api import jvp, vjp
from .api.pytree import tree_flatten, tree_map

__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp"]

# Finite-difference step and tolerances, by the precision of the inputs.
_EPS = {np.dtype("float64"): 1e-5, np.dtype("float32"): 3e-3, np.dtype("float16"): 1e-1}
_TOL = {np.dtype("float64"): 1e-5, np.dtype("float32"): 2e-2, np.dtype("float16"): 1e-1}


def _dtypes(tree: Any) -> list[np.dtype]:
    return [np.asarray(x).dtype for x in tree_flatten(tree)[0]]


def _lowest_precision(tree: Any) -> np.dtype:
    floats = [d for d in _dtypes(tree) if d.kind in "fc"]
    if not floats:
        return np.dtype("float64")
    real = [np.dtype(f"f{d.itemsize // 2}") if d.kind == "c" else d for d in floats]
    return min(real, key=lambda d: d.itemsize)


def _tolerances(values: Any, atol: float | None, rtol: float | None, eps: float | None
                ) -> tuple[float, float, float]:
    """The tolerances and step given, each None replaced by the default for the lowest
    precision among `values` (rtol's default is atol). A given 0.0 stays 0.0."""
    precision = _lowest_precision(values)
    eps = _EPS.get(precision, 1e-5) if eps is None else eps
    if not eps > 0:
        raise ValueError(f"eps, the finite-difference step, must be positive, got {eps!r}")
    atol = _TOL.get(precision, 1e-5) if atol is None else atol
    rtol = atol if rtol is None else rtol
    return atol, rtol, eps


def _random_like(tree: Any, rng: np.random.Generator) -> Any:
    """A random direction with the structure, shapes and dtypes of `tree`
    (zero for integer leaves, which have no derivative)."""

    def one(x: Any) -> Any:
        x = np.asarray(x)
        if x.dtype.kind == "c":
            return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
        if x.dtype.kind != "f":
            return np.zeros(x.shape, x.dtype)
        return rng.standard_normal(x.shape).astype(x.dtype)

    return tree_map(one, tree)


def _axpy(a: float, x: Any, y: Any) -> Any:
    """y + a * x on pytrees, integer leaves left alone."""

    def one(xi: Any, yi: Any) -> Any:
        yi = np.asarray(yi)
        return yi + a * np.asarray(xi) if yi.dtype.kind in "fc" else yi

    return tree_map(one, x, y)


def _inner(x: Any, y: Any) -> float:
    return float(sum(
        np.real(np.vdot(np.asarray(a, dtype=complex), np.asarray(b, dtype=complex)))
        for a, b in zip(tree_flatten(x)[0], tree_flatten(y)[0])
        if np.asarray(a).dtype.kind in "fc" and np.asarray(b).dtype.kind in "fc"
    ))


def numerical_jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
                  eps: float) -> Any:
    """(f(x + eps t) - f(x - eps t)) / (2 eps): the derivative of f along t."""
    up = f(*_axpy(eps, tangents, primals))
    down = f(*_axpy(-eps, tangents, primals))
    return tree_map(lambda u, d: (np.asarray(u) - np.asarray(d)) / (2 * eps), up, down)


def _assert_close(actual: Any, expected: Any, atol: float, rtol: float, what: str) -> None:
    a_leaves, a_tree = tree_flatten(actual)
    e_leaves, e_tree = tree_flatten(expected)
    if a_tree != e_tree:
        raise AssertionError(f"{what}: structure {a_tree} differs from the expected {e_tree}")
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape:
            raise AssertionError(f"{what}: leaf {i} has shape {a.shape}, expected {e.shape}")
        if e.dtype.kind not in "fc":
            continue
        if not np.allclose(a, e, atol=atol, rtol=rtol, equal_nan=True):
            err = np.max(np.abs(a - e)) if a.size else 0.0
            raise AssertionError(
                f"{what} does not match finite differences (leaf {i}, max abs error {err:.3g}, "
                f"atol={atol}, rtol={rtol}):\n  got      {a!r}\n  expected {e!r}"
            )


def check_jvp(f: Callable[..., Any], args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float | None = None, seed: int = 0,
              what: str = "JVP") -> None:
    """Forward mode against finite differences along a random tangent."""
    args = tuple(args)
    atol, rtol, eps = _tolerances((args, f(*args)), atol, rtol, eps)
    tangents = _random_like(tuple(args), np.random.default_rng(seed))
    _, t_out = jvp(f, tuple(args), tangents)
    _assert_close(t_out, numerical_jvp(f, args, tangents, eps), atol, rtol, what)


def check_vjp(f: Callable[..., Any], args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float | None = None, seed: int = 0,
              what: str = "VJP") -> None:
    """Reverse mode against finite differences: <vjp(u), t> must equal <u, J t>
    for a random tangent t and a random cotangent u."""
    args = tuple(args)
    atol, rtol, eps = _tolerances((args, f(*args)), atol, rtol, eps)
    rng = np.random.default_rng(seed)
    tangents = _random_like(tuple(args), rng)
    out, vjp_fn = vjp(f, *args)
    cotangent = _random_like(out, rng)
    # JAX's convention: cotangents are not conjugated by transposes, so the
    # adjoint of the linear map is conj(vjp(conj(u))).
    ct_in = tree_map(np.conj, vjp_fn(tree_map(np.conj, cotangent)))
    got = _inner(ct_in, tangents)
    expected = _inner(cotangent, numerical_jvp(f, args, tangents, eps))
    scale = max(1.0, abs(expected))
    if not abs(got - expected) <= atol * scale + rtol * abs(expected):
        raise AssertionError(
            f"{what} does not match finite differences: <vjp(u), t> = {got!r} but "
            f"<u, J t> = {expected!r} (atol={atol}, rtol={rtol})"
        )


def check_grads(
    f: Callable[..., Any],
    args: Sequence[Any],
    order: int,
    modes: Sequence[str] = ("fwd", "rev"),
    atol: float | None = None,
    rtol: float | None = None,
    eps: float | None = None,
) -> None:
    """Check the derivatives of `f` at `args`, up to `order`, in forward
    (``"fwd"``) and reverse (``"rev"``) mode, against finite differences.

    Raises AssertionError naming the mode and order that disagree. Higher
    orders check the derivative functions themselves: `jvp(f)` as a function
    of primals and tangents, and `x -> vjp(f, x)(f(x))`. `atol`, `rtol` and
    the step `eps` left None are chosen by the precision of the inputs and
    outputs (`rtol` then equals `atol`); values given, 0.0 included, are used.
    """
    args = tuple(args)
    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"modes must be 'fwd' and/or 'rev', got {sorted(unknown)}")
    if order < 1:
        raise ValueError(f"order must be at least 1, got {order}")

    def check(f: Callable[..., Any], args: tuple[Any, ...], order: int, prefix: str) -> None:
        if "fwd" in modes:
            what = f"JVP of {prefix}" if prefix else "JVP"
            check_jvp(f, args, atol, rtol, eps, what=what)
            if order > 1:
                tangents = _random_like(args, np.random.default_rng(order))

                def f_jvp(primals: Any, tangents: Any) -> Any:
                    return jvp(f, tuple(primals), tuple(tangents))

                check(f_jvp, (args, tangents), order - 1, what)
        if "rev" in modes:
            what = f"VJP of {prefix}" if prefix else "VJP"
            check_vjp(f, args, atol, rtol, eps, what=what)
            if order > 1:

                def f_vjp(*primals: Any) -> Any:
                    out, vjp_fn = vjp(f, *primals)
                    return vjp_fn(out)

                check(f_vjp, args, order - 1, what)

    check(f, args, order, "")

