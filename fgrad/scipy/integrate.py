"""fgrad.scipy.integrate: integration of samples (SciPy's `trapezoid`,
`cumulative_trapezoid`) and of ordinary differential equations (JAX's
`odeint`), differentiable.

`odeint` has the signature and semantics of `jax.experimental.ode.odeint`, not
of `scipy.integrate.odeint`: `odeint(func, y0, t, *args, rtol, atol, mxstep,
hmax)` calls `func(y, t, *args)` (the order of SciPy's odeint, not of
solve_ivp's `fun(t, y)`), takes the extra arguments one by one after `t`
(SciPy: `args=(...)`), `y0` as any pytree of arrays (SciPy: a flat array) and
solves by adaptive Dormand-Prince 5(4) with JAX's step-size control (SciPy:
LSODA). Its parts, each written once on `fgrad.numpy`:

* `_solve` is the solver. With no transform active it is a Python loop on
  NumPy; under a transform its loops are `fgrad.lax.scan` (over the output
  times) and `fgrad.lax.while_loop` (the steps between two of them), so that it
  runs under jit and vmap (each example of a batch takes its own steps). The
  step-size control sees no tangent (`stop_gradient`): a derivative of the
  solver is one of its steps, never of the choice of them.
* reverse mode is the adjoint method (Chen et al. 2018, appendix C, as JAX
  does): a `custom_vjp` whose backward pass solves the augmented system
  [y, a, a_t, a_args] backwards between consecutive output times with the same
  solver, the vector-Jacobian products of `func` coming from `fgrad.vjp`.
  Values `func` closes over that a transform traces are made explicit
  arguments first (closure conversion), so they get their adjoint too. A
  second reverse pass differentiates the backward pass's solver.
* forward mode (jvp, jacfwd, hessian's outer pass) differentiates the solver's
  steps, whose sizes it does not perturb: where forward-mode differentiation
  is running around the call, `odeint` is the plain solver, and every
  transform under it (reverse mode too) differentiates its steps. Forward
  mode of a jit holding `odeint` (`jvp(jit(f))`) meets the custom_vjp instead,
  and is a TypeError telling to use reverse mode (or to jit the jvp).
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import numpy as fnp
from ..api.pytree import PyTreeDef, tree_flatten, tree_unflatten
from ..api.transformations import stop_gradient, vjp
from ..core.avals import ShapedArray, get_aval
from ..core.optional import require
from ..core.trace import EVAL_TRACE, Trace, Tracer, ctx
from ..custom_derivatives import custom_vjp
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import Jaxpr
from ..ir.staging import trace_to_jaxpr
from ..numpy.operands import Array, ArrayLike, normalize_axes, shape_of
from ..transforms.forward import JVPTrace

__all__ = ["trapezoid", "cumulative_trapezoid", "odeint"]


# --- samples ------------------------------------------------------------------------


def trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: ArrayLike = 1.0, axis: int = -1) -> Array:
    """scipy.integrate.trapezoid: the integral of `y` along `axis` by the
    trapezoidal rule, at sample points `x` or spaced `dx`.

    >>> trapezoid([1.0, 2.0, 3.0], x=[0.0, 1.0, 3.0])
    np.float64(6.5)
    """
    return fnp.trapezoid(y, x, dx, axis)


def cumulative_trapezoid(y: ArrayLike, x: ArrayLike | None = None, dx: ArrayLike = 1.0, axis: int = -1,
                         initial: ArrayLike | None = None) -> Array:
    """scipy.integrate.cumulative_trapezoid: the running integral of `y` along
    `axis` by the trapezoidal rule; one value fewer than `y` along `axis`, or
    as many with `initial=0` put first (SciPy allows no other value).

    >>> cumulative_trapezoid([1.0, 2.0, 3.0], initial=0)
    array([0. , 1.5, 4. ])
    """
    if ctx.trace is EVAL_TRACE:
        return require("scipy.integrate", "scipy", "fgrad.scipy.integrate.cumulative_trapezoid"
                       ).cumulative_trapezoid(y, x, dx=dx, axis=axis, initial=initial)
    y = fnp.asarray(y)
    nd = len(shape_of(y))
    (ax,) = normalize_axes(operator.index(axis), nd)
    n = shape_of(y)[ax]
    if n == 0:
        raise ValueError("At least one point is required along `axis`.")
    d: Any = dx
    if x is not None:
        x = fnp.asarray(x)
        if len(shape_of(x)) == 1:
            shape = [1] * nd
            shape[ax] = -1
            d = fnp.reshape(fnp.diff(x), shape)
        elif len(shape_of(x)) != nd:
            raise ValueError("If given, shape of x must be 1-D or the same as y.")
        else:
            d = fnp.diff(x, axis=ax)
        if shape_of(d)[ax] != n - 1:
            raise ValueError("If given, length of x along axis must be the same as y.")
    upper = [slice(None)] * nd
    lower = [slice(None)] * nd
    upper[ax], lower[ax] = slice(1, None), slice(None, -1)
    res = fnp.cumsum(d * (y[tuple(upper)] + y[tuple(lower)]) / 2.0, axis=ax)
    if initial is None:
        return res
    if isinstance(initial, Tracer) or initial != 0:
        raise ValueError("`initial` must be `None` or `0`.")
    if not np.isscalar(initial):
        raise ValueError("`initial` parameter should be a scalar.")
    shape = list(shape_of(res))
    shape[ax] = 1
    return fnp.concatenate([fnp.zeros(shape, fnp.result_type(res)), res], axis=ax)


# --- Dormand-Prince 5(4) ----------------------------------------------------------------

_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0]  # Python floats: they keep a float32 state float32
_BETA = [
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
    [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
]
_C_ERROR = [35 / 384 - 1951 / 21600, 0.0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
            -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1.0 / 60.0]
# The solution at the middle of a step, for the interpolating polynomial.
_C_MID = [6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2, -2691868925 / 45128329728 / 2,
          187940372067 / 1594534317056 / 2, -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2]

Flat = Callable[..., Any]  # func(y, t, *params) on flat 1-d states


def _combine(coefs: Sequence[float], ks: Sequence[Any]) -> Any:
    """sum(c * k) over the nonzero coefficients."""
    out = None
    for c, k in zip(coefs, ks):
        if c != 0.0:
            out = c * k if out is None else out + c * k
    return out


def _rk_step(fun: Callable[[Any, Any], Any], y0: Any, f0: Any, t0: Any, dt: Any) -> tuple[Any, Any, Any, Any]:
    """One Dormand-Prince step: the solution, its derivative (FSAL), the error
    estimate and the coefficients of the interpolating quartic."""
    ks = [f0]
    for i, row in enumerate(_BETA):
        ks.append(fun(y0 + dt * _combine(row, ks), t0 + dt * _ALPHA[i]))
    y1 = y0 + dt * _combine(_BETA[-1], ks)  # = the last stage's state
    f1 = ks[-1]
    error = dt * _combine(_C_ERROR, ks)
    y_mid = y0 + dt * _combine(_C_MID, ks)
    dy0, dy1 = dt * f0, dt * f1
    coeff = fnp.stack([
        -2.0 * dy0 + 2.0 * dy1 - 8.0 * y0 - 8.0 * y1 + 16.0 * y_mid,
        5.0 * dy0 - 3.0 * dy1 + 18.0 * y0 + 14.0 * y1 - 32.0 * y_mid,
        -4.0 * dy0 + dy1 - 11.0 * y0 - 5.0 * y1 + 16.0 * y_mid,
        dy0,
        y0,
    ])
    return y1, f1, error, coeff


def _norm(x: Any) -> Any:
    return fnp.sqrt(fnp.sum(x * x))


def _initial_step(fun: Callable[[Any, Any], Any], t0: Any, y0: Any, f0: Any, rtol: float,
                  atol: float) -> Any:
    """Hairer, Norsett and Wanner's first step (Solving ODEs I, II.4), as JAX takes it."""
    t0, y0, f0 = stop_gradient((t0, y0, f0))
    scale = atol + fnp.abs(y0) * rtol
    d0, d1 = _norm(y0 / scale), _norm(f0 / scale)
    small = (d0 < 1e-5) | (d1 < 1e-5)
    h0 = fnp.where(small, 1e-6, 0.01 * d0 / fnp.where(small, 1.0, d1))
    f1 = stop_gradient(fun(y0 + h0 * f0, t0 + h0))
    d2 = _norm((f1 - f0) / scale) / h0
    flat = (d1 <= 1e-15) & (d2 <= 1e-15)
    h1 = fnp.where(flat, fnp.maximum(1e-6, h0 * 1e-3), (0.01 / fnp.where(flat, 1.0, d1 + d2)) ** 0.2)
    return fnp.minimum(100.0 * h0, h1)


def _error_ratio(error: Any, y0: Any, y1: Any, rtol: float, atol: float) -> Any:
    tol = atol + rtol * fnp.maximum(fnp.abs(y0), fnp.abs(y1))
    return fnp.sqrt(fnp.mean((error / tol) ** 2))


def _next_step(dt: Any, ratio: Any) -> Any:
    """JAX's step-size update: by ratio**(-1/5) with safety 0.9, at most 10
    times larger, and (after a rejected step) at least 5 times smaller."""
    shrink = fnp.where(ratio < 1.0, 1.0, 0.2)
    factor = fnp.minimum(10.0, fnp.maximum(0.9 * fnp.where(ratio == 0.0, 1.0, ratio) ** -0.2, shrink))
    return fnp.where(ratio == 0.0, 10.0 * dt, dt * factor).astype(fnp.result_type(dt))


def _while(cond: Callable[[Any], Any], body: Callable[[Any], Any], carry: Any) -> Any:
    """A Python loop with no transform active, else fgrad.lax.while_loop."""
    if ctx.trace is EVAL_TRACE:
        while cond(carry):
            carry = body(carry)
        return carry
    from ..lax import while_loop

    return while_loop(cond, body, carry)


def _select(pred: Any, new: tuple[Any, ...], old: tuple[Any, ...]) -> tuple[Any, ...]:
    if isinstance(pred, Tracer):
        return tuple(fnp.where(pred, a, b) for a, b in zip(new, old))
    return new if pred else old


def _solve(func: Flat, y0: Any, ts: Any, params: Sequence[Any], rtol: float, atol: float, mxstep: float,
           hmax: float) -> Any:
    """The solution of dy/dt = func(y, t, *params), y(ts[0]) = y0 (flat), at
    each of `ts`, stacked along axis 0."""

    def fun(y: Any, t: Any) -> Any:
        return func(y, t, *params)

    t0 = ts[0]
    f0 = fun(y0, t0)
    dt = fnp.clip(_initial_step(fun, t0, y0, f0, rtol, atol), 0.0, hmax).astype(fnp.result_type(ts))

    def step_to(carry: tuple[Any, ...], target: Any) -> tuple[tuple[Any, ...], Any]:
        def goes_on(state: tuple[Any, ...]) -> Any:
            i, _, _, t, dt, _, _ = state
            return (t < target) & (i < mxstep) & (dt > 0.0)

        def step(state: tuple[Any, ...]) -> tuple[Any, ...]:
            i, y, f, t, dt, last_t, coeff = state
            y1, f1, error, coeff1 = _rk_step(fun, y, f, t, dt)
            # The control sees no tangent (stop_gradient before, so none is even computed).
            seen = stop_gradient((error, y, y1))
            ratio = _error_ratio(seen[0], seen[1], seen[2], rtol, atol)
            dt1 = fnp.clip(_next_step(dt, ratio), 0.0, hmax)
            return _select(ratio <= 1.0, (i + 1, y1, f1, t + dt, dt1, t, coeff1),
                           (i + 1, y, f, t, dt1, last_t, coeff))

        _, *rest = _while(goes_on, step, (np.int64(0), *carry))
        _, _, t, _, last_t, coeff = rest
        if not isinstance(t, Tracer) and t < target:
            missed.append(target)
        s = (target - last_t) / (t - last_t)
        y = coeff[0]
        for k in range(1, 5):
            y = y * s + coeff[k]
        return tuple(rest), y

    missed: list[Any] = []  # output times not reached (known eagerly)
    carry = (y0, f0, t0, dt, t0, fnp.stack([y0] * 5))
    targets = ts[1:]
    n = shape_of(targets)[0]
    if n == 0:
        return fnp.reshape(y0, (1, -1))
    if n == 1:
        ys = fnp.reshape(step_to(carry, targets[0])[1], (1, -1))
    elif ctx.trace is EVAL_TRACE:
        rows = []
        for target in targets:
            carry, y = step_to(carry, target)
            rows.append(y)
        ys = np.stack(rows)
    else:
        from ..lax import scan

        _, ys = scan(step_to, carry, targets)
    if missed:
        warnings.warn(f"odeint: the solver stopped before t={missed[0]} (mxstep={mxstep} steps taken, or "
                      "the step size fell to 0); the solution there and after is inaccurate. Raise mxstep "
                      "or hmax.", RuntimeWarning, stacklevel=3)
    return fnp.concatenate([fnp.reshape(y0, (1, -1)), ys])


# --- reverse mode: the adjoint system -------------------------------------------------------


def _odeint_fun(func: Flat, rtol: float, atol: float, mxstep: float, hmax: float, y0: Any, ts: Any,
                *params: Any) -> Any:
    return _solve(func, y0, ts, params, rtol, atol, mxstep, hmax)


def _odeint_fwd(func: Flat, rtol: float, atol: float, mxstep: float, hmax: float, y0: Any, ts: Any,
                *params: Any) -> tuple[Any, Any]:
    ys = _solve(func, y0, ts, params, rtol, atol, mxstep, hmax)
    return ys, (ys, ts, params)


def _is_float(x: Any) -> bool:
    return get_aval(x).dtype.kind == "f"


def _odeint_bwd(func: Flat, rtol: float, atol: float, mxstep: float, hmax: float, res: Any,
                g: Any) -> tuple[Any, ...]:
    """The adjoint a(t) = dL/dy(t), solved backwards from each output time to
    the one before (in negated time, so the solver runs forwards), together with
    the state itself and the integrals giving dL/dt0 and dL/dparams."""
    ys, ts, params = res
    n_times, n = shape_of(ys)
    diff = [_is_float(p) for p in params]
    p_shapes = [shape_of(p) for p, d in zip(params, diff) if d]
    p_sizes = [int(np.prod(s)) for s in p_shapes]
    dtype = fnp.result_type(ys)

    def aug(z: Any, s: Any, *params: Any) -> Any:
        y, a = z[:n], z[n:2 * n]

        def f_of(y: Any, t: Any, *dp: Any) -> Any:
            it = iter(dp)
            return func(y, t, *[next(it) if d else p for p, d in zip(params, diff)])

        y_dot, pull = vjp(f_of, y, -s, *[p for p, d in zip(params, diff) if d])
        ct_y, ct_t, *ct_p = pull(a)
        return fnp.concatenate([-y_dot, ct_y, fnp.reshape(ct_t, (1,)),
                                *[fnp.ravel(c).astype(dtype) for c in ct_p]])

    def back(carry: tuple[Any, Any, Any], x: tuple[Any, ...]) -> tuple[tuple[Any, Any, Any], Any]:
        a, t0_bar, p_bar = carry
        y_i, t_i, t_prev, g_i, g_prev = x
        t_bar = fnp.sum(func(y_i, t_i, *params) * g_i)  # the effect of moving t_i
        z0 = fnp.concatenate([y_i, a, fnp.reshape(t0_bar - t_bar, (1,)), p_bar])
        z1 = _solve(aug, z0, fnp.stack([-t_i, -t_prev]), params, rtol, atol, mxstep, hmax)[1]
        return (z1[n:2 * n] + g_prev, z1[2 * n], z1[2 * n + 1:]), t_bar

    carry = (g[-1], fnp.zeros((), dtype), fnp.zeros((sum(p_sizes),), dtype))
    if n_times == 1:
        t_bars = fnp.zeros((0,), dtype)
    else:
        xs = (ys[1:][::-1], ts[1:][::-1], ts[:-1][::-1], g[1:][::-1], g[:-1][::-1])
        if n_times == 2:
            carry, t_bar = back(carry, tuple(x[0] for x in xs))
            t_bars = fnp.reshape(t_bar, (1,))
        else:
            from ..lax import scan

            carry, t_bars = scan(back, carry, xs)
    a, t0_bar, p_bar = carry
    ts_bar = fnp.concatenate([fnp.reshape(t0_bar, (1,)), t_bars[::-1]]).astype(fnp.result_type(ts))
    p_cts: list[Any] = []
    start = 0
    flat_cts = iter(range(len(p_sizes)))
    for p, d in zip(params, diff):
        if not d:
            p_cts.append(None)
            continue
        k = next(flat_cts)
        p_cts.append(fnp.reshape(p_bar[start:start + p_sizes[k]], p_shapes[k]).astype(fnp.result_type(p)))
        start += p_sizes[k]
    return (a, ts_bar, *p_cts)


_odeint_fun.__name__ = "odeint"  # as the custom_vjp's messages name it
_odeint = custom_vjp(_odeint_fun, nondiff_argnums=(0, 1, 2, 3, 4))
_odeint.defvjp(_odeint_fwd, _odeint_bwd)


# --- the function ---------------------------------------------------------------------------


def _forward_mode_active() -> bool:
    """Whether forward-mode differentiation (not linearization) is running around this call."""
    trace: Trace | None = ctx.trace
    while trace is not None:
        if type(trace) is JVPTrace:
            return True
        trace = trace.parent
    return False


def _known(x: Any) -> Any:
    """The value of `x` if it is known now, else None."""
    from ..higher_order._common import concrete

    return concrete(x)


class _Raveled:
    """y0's leaves as one flat vector of one floating dtype, and back."""

    def __init__(self, leaves: list[Any], tree: PyTreeDef, t_dtype: np.dtype) -> None:
        self.tree = tree
        self.shapes = [shape_of(x) for x in leaves]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.dtypes = [np.dtype(np.float64) if get_aval(x).dtype.kind in "biu" else get_aval(x).dtype
                       for x in leaves]
        self.dtype = np.result_type(*self.dtypes, t_dtype)

    def ravel(self, leaves: Sequence[Any]) -> Any:
        parts = [fnp.ravel(fnp.asarray(x)).astype(self.dtype) for x in leaves]
        return parts[0] if len(parts) == 1 else fnp.concatenate(parts)

    def unravel(self, flat: Any, lead: tuple[int, ...] = ()) -> Any:
        """`flat` (with leading axes `lead`) as y0's pytree."""
        leaves, start = [], 0
        for shape, size, dtype in zip(self.shapes, self.sizes, self.dtypes):
            part = flat[(slice(None),) * len(lead) + (slice(start, start + size),)]
            leaves.append(fnp.reshape(part, (*lead, *shape)).astype(dtype))
            start += size
        return tree_unflatten(self.tree, leaves)

    def check(self, out: Any, name: str) -> list[Any]:
        """The leaves of func's result, if it has y0's structure and shapes."""
        leaves, tree = tree_flatten(out)
        if tree != self.tree:
            raise TypeError(f"odeint: {name} must return the time derivative of y with y0's structure "
                            f"{self.tree}, but it returned {tree}")
        for k, (x, shape) in enumerate(zip(leaves, self.shapes)):
            aval = get_aval(x)
            if aval.shape != shape:
                raise ValueError(f"odeint: {name} returned a value of shape {aval.shape} for leaf {k} of y, "
                                 f"whose shape is {shape}; they must be the same")
            if aval.dtype.kind not in "biuf":
                raise TypeError(f"odeint: {name} returned dtype {aval.dtype} for leaf {k} of y; it must "
                                "return real numbers")
        return leaves


def _check_y0(leaves: list[Any]) -> None:
    if not leaves:
        raise ValueError("odeint: y0 has no arrays in it; give the initial state as an array or a "
                         "pytree of arrays")
    for k, x in enumerate(leaves):
        try:
            kind = get_aval(x).dtype.kind
        except TypeError:
            kind = "O"
        if kind not in "biuf":
            raise TypeError(
                f"odeint: leaf {k} of y0 is {x!r}, not an array of real numbers; y0 must be an "
                "array (or a pytree of arrays) of real floating or integer values"
                + (" (complex states are not supported)" if kind == "c" else ""))


def _check_times(t: Any) -> Any:
    shape = shape_of(t)
    if len(shape) != 1 or shape[0] == 0:
        raise ValueError(f"odeint: t must be a 1-d array of at least one time, but it has shape {shape}")
    kind = get_aval(t).dtype.kind
    if kind not in "iuf":
        raise TypeError(f"odeint: t must hold real times, not dtype {get_aval(t).dtype}")
    if kind != "f":
        t = fnp.asarray(t, np.float64)
    known = _known(t)
    if known is not None and shape[0] > 1 and not np.all(np.diff(known) > 0):
        raise ValueError(f"odeint: the times t must be strictly increasing, but got {known}; sort them "
                         "(and drop repeated ones)")
    return t


def _static_number(name: str, value: Any) -> float:
    if isinstance(value, Tracer) or np.ndim(value) != 0:
        raise TypeError(f"odeint: {name} must be a Python number (a static setting of the solver), "
                        f"not {value!r}")
    return float(value)


def odeint(func: Callable[..., Any], y0: Any, t: ArrayLike, *args: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: float = np.inf, hmax: float = np.inf) -> Any:
    """The solution of dy/dt = func(y, t, *args), y(t[0]) = y0, at each time of
    `t` (JAX's `jax.experimental.ode.odeint`): adaptive Dormand-Prince 5(4).

    `y0` is an array or a pytree of arrays and `func` returns its derivative
    with the same structure; `t` is a 1-d array of strictly increasing times.
    The result has y0's structure, each leaf with a new leading axis of
    len(t). `rtol`, `atol` bound the local error of each step, `mxstep` the
    number of steps between two consecutive times, `hmax` their size.
    Differentiable in y0, t, args and whatever `func` closes over: reverse
    mode by the adjoint method, forward mode through the solver's steps (see
    the module's docstring). Unlike SciPy's odeint, extra arguments follow
    `t` one by one and `y0` may be any pytree. Under a transform `func` is
    traced once on abstract values, as in JAX (no Python `if` on them).

    >>> import fgrad, fgrad.numpy as fnp
    >>> ys = odeint(lambda y, t, k: -k * y, 1.0, fnp.array([0.0, 1.0]), 2.0)
    >>> bool(abs(ys[1] - fnp.exp(-2.0)) < 1e-7)
    True
    >>> dk = fgrad.grad(lambda k: odeint(lambda y, t, k: -k * y, 1.0, fnp.array([0.0, 1.0]), k)[1])(2.0)
    >>> bool(abs(dk + fnp.exp(-2.0)) < 1e-6)  # d/dk exp(-k) = -exp(-k)
    True
    """
    name = getattr(func, "__name__", "func")
    rtol, atol = _static_number("rtol", rtol), _static_number("atol", atol)
    mxstep, hmax = _static_number("mxstep", mxstep), _static_number("hmax", hmax)
    for what, value, least in (("rtol", rtol, 0.0), ("atol", atol, 0.0), ("mxstep", mxstep, 1.0)):
        if not value >= least:
            raise ValueError(f"odeint: {what} must be at least {least:g}, but it is {value:g}")
    if not hmax > 0.0:
        raise ValueError(f"odeint: hmax must be positive, but it is {hmax:g}")
    y_leaves, y_tree = tree_flatten(y0)
    y_leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in y_leaves]
    _check_y0(y_leaves)
    t = _check_times(t if isinstance(t, Tracer) else fnp.asarray(t))
    shape = _Raveled(y_leaves, y_tree, get_aval(t).dtype)
    y0_flat = shape.ravel(y_leaves)

    if ctx.trace is EVAL_TRACE:
        def raveled(y: Any, s: Any, *a: Any) -> Any:
            return shape.ravel(shape.check(func(shape.unravel(y), s, *a), name))

        ys = _solve(raveled, y0_flat, t, args, rtol, atol, mxstep, hmax)
        return shape.unravel(ys, (shape_of(ys)[0],))

    arg_leaves, arg_tree = tree_flatten(args)
    arg_leaves = [x if isinstance(x, Tracer) else np.asarray(x) for x in arg_leaves]
    staged, params = _closure_converted(func, name, shape, y0_flat, t, arg_leaves, arg_tree)
    if _forward_mode_active():
        ys = _solve(staged, y0_flat, t, params, rtol, atol, mxstep, hmax)
    else:
        ys = _odeint(staged, rtol, atol, mxstep, hmax, y0_flat, t, *params)
    return shape.unravel(ys, (shape_of(ys)[0],))


def _aval(x: Any) -> ShapedArray:
    return get_aval(x).strip_weak_type()


def _closure_converted(func: Callable[..., Any], name: str, shape: _Raveled, y0: Any, t: Any,
                       arg_leaves: list[Any], arg_tree: PyTreeDef) -> tuple[Flat, list[Any]]:
    """`func` on flat states, staged once, taking the traced values it closes
    over as explicit arguments after `args`' leaves; and those arguments."""

    def raveled(y: Any, s: Any, *a: Any) -> list[Any]:
        out = func(shape.unravel(y), s, *tree_unflatten(arg_tree, list(a)))
        return [shape.ravel(shape.check(out, name))]

    t_aval = ShapedArray((), _aval(t).dtype)
    closed = trace_to_jaxpr(raveled, [_aval(y0), t_aval, *map(_aval, arg_leaves)], "odeint",
                            fun_name=name, advice="write func without Python control flow on its "
                            "arguments (use fgrad.numpy.where or fgrad.lax.cond), as for jax's odeint.")
    j = closed.jaxpr
    traced = [isinstance(c, Tracer) for c in closed.consts]
    jaxpr = Jaxpr([v for v, tr in zip(j.constvars, traced) if not tr],
                  [*j.invars, *(v for v, tr in zip(j.constvars, traced) if tr)], j.outvars, j.eqns)
    consts = [c for c, tr in zip(closed.consts, traced) if not tr]

    def staged(y: Any, s: Any, *params: Any) -> Any:
        return eval_jaxpr(jaxpr, consts, y, s, *params)[0]

    staged.__name__ = name
    return staged, [*arg_leaves, *(c for c, tr in zip(closed.consts, traced) if tr)]
