"""Custom derivative rules and checkpointing: custom_jvp, custom_vjp, checkpoint.

Each is a primitive whose parameters carry the user's functions (flattened to
lists of arrays):

* `custom_jvp_call`: evaluates `fun`; its jvp is the user's jvp, run like any
  jvp rule (on the rule trace), so it works in forward and reverse mode and
  is itself differentiable.
* `custom_vjp_call`: evaluates `fun`; reverse mode runs the user's `fwd` now
  and records one linear equation, `custom_vjp_bwd`, whose transpose calls the
  user's `bwd` with the residuals. Forward mode is a TypeError, as in JAX.
* `checkpoint`: evaluates `fun`; reverse mode records one linear equation,
  `checkpoint_vjp`, holding only the inputs: its transpose recomputes `fun`'s
  linearization and transposes it, so `fun`'s internal residuals are never
  kept between the passes.

Under vmap each re-binds itself with vmapped functions, so the custom rule
survives batching. Under make_jaxpr each shows as one equation with its
sub-jaxpr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .api.arguments import describe, fun_name, to_input
from .api.pytree import PyTreeDef, tree_flatten, tree_structure, tree_unflatten
from .core.avals import ShapedArray, get_aval
from .core.rules import Linearization, batch_rules, jvp_rules, transpose_rules
from .core.trace import EVAL_TRACE, Primitive, Tracer, ctx, tracing
from .ir.jaxpr import ClosedJaxpr
from .ir.staging import StagingTrace
from .primitives.batching import batch_size, with_batch_axis
from .primitives.derivatives import is_linear
from .transforms.batching import batch_flat
from .transforms.forward import jvp_flat
from .transforms.reverse import LinearizeTrace, linearize_flat

__all__ = ["custom_jvp", "custom_vjp", "checkpoint", "remat"]


class FlatFunction:
    """A user function on flat lists of arrays, as a primitive parameter: it is
    called by the rules, traced for shapes when staged, and printed as its jaxpr."""

    __slots__ = ("fun", "name", "jaxpr")

    def __init__(self, fun: Callable[..., list[Any]], name: str) -> None:
        self.fun = fun
        self.name = name
        self.jaxpr: ClosedJaxpr | None = None

    def __call__(self, *args: Any) -> list[Any]:
        return self.fun(*args)

    def out_avals(self, in_avals: Sequence[ShapedArray]) -> list[ShapedArray]:
        trace = StagingTrace(ctx.trace, f"staging of {self.name}", fun_name=self.name)
        with tracing(trace):
            outs = self.fun(*[trace.new_arg(a) for a in in_avals])
        self.jaxpr = trace.to_jaxpr(outs)
        return self.jaxpr.out_avals

    def __repr__(self) -> str:
        return self.name if self.jaxpr is None else str(self.jaxpr)


def _call_aval(*avals: ShapedArray, fun: FlatFunction, **_: Any) -> list[ShapedArray]:
    return fun.out_avals(avals)


def _zeros_for(x: Any) -> Any:
    aval = get_aval(x).strip_weak_type()
    return np.zeros(aval.shape, aval.dtype)


def _check_outputs(what: str, name: str, got: Sequence[Any], expected: Sequence[Any]) -> None:
    """The user's rule returned arrays of the primal outputs' shapes and dtypes."""
    for i, (g, e) in enumerate(zip(got, expected)):
        ga, ea = get_aval(g).strip_weak_type(), get_aval(e).strip_weak_type()
        if ga.shape != ea.shape:
            raise ValueError(
                f"{what} of {name} returned a value of shape {ga.shape} for output {i}, but the "
                f"output has shape {ea.shape}; they must match"
            )
        if ga.dtype != ea.dtype and not (ea.dtype.kind in "fc" and ga.dtype.kind in "fc"):
            raise TypeError(
                f"{what} of {name} returned dtype {ga.dtype} for output {i}, but the output has "
                f"dtype {ea.dtype}"
            )


def _batched_function(fun: Callable[..., list[Any]], n_out: int, size: int) -> Callable[..., list[Any]]:
    """`fun` on flat arguments that all carry the batch along axis 0."""

    def batched(*args: Any) -> list[Any]:
        return batch_flat(fun, args, [0] * len(args), lambda: [0] * n_out, size, "vmap of a custom rule")

    return batched


def _to_front(args: Sequence[Any], dims: Sequence[int | None]) -> tuple[list[Any], int, list[ShapedArray]]:
    """The arguments with their batch in front, the batch size, and one example's avals."""
    size = batch_size(args, dims)
    moved = [with_batch_axis(x, d, size) for x, d in zip(args, dims)]
    examples = [ShapedArray(get_aval(x).shape[1:], get_aval(x).dtype) for x in moved]
    return moved, size, examples


def _count_outputs(fn: Callable[..., Any], avals: Sequence[ShapedArray]) -> list[int]:
    """How many flat arrays each of `fn`'s results holds, by tracing it abstractly."""
    trace = StagingTrace(ctx.trace, "shape inference of a custom rule")
    with tracing(trace):
        result = fn(*[trace.new_arg(a) for a in avals])
    return [len(part) for part in result] if isinstance(result, tuple) else [len(result)]


def _split_nondiff(args: tuple[Any, ...], nondiff: tuple[int, ...], name: str) -> tuple[list[Any], list[Any]]:
    static, dynamic = [], []
    for i, x in enumerate(args):
        if i in nondiff:
            if isinstance(x, (Tracer, np.ndarray)):
                raise TypeError(
                    f"argument {i} of {name} is in nondiff_argnums but is an array or a traced "
                    f"value ({type(x).__name__}); nondiff_argnums is for Python values such as "
                    "functions, ints or strings. Pass arrays as ordinary arguments (their "
                    "cotangent may be None or zeros) or close over them."
                )
            static.append(x)
        else:
            dynamic.append(x)
    return static, dynamic


def _merge(static: list[Any], dynamic: Sequence[Any], nondiff: tuple[int, ...]) -> list[Any]:
    out, s, d = [], iter(static), iter(dynamic)
    for i in range(len(static) + len(dynamic)):
        out.append(next(s) if i in nondiff else next(d))
    return out


class _Rule:
    """A user's rule on flat arrays, as a primitive parameter printed by its name."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable[..., Any], user_fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fun_name(user_fn)

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def __repr__(self) -> str:
        return self.name


class _Outs:
    __slots__ = ("tree",)

    def __init__(self) -> None:
        self.tree: PyTreeDef | None = None


# --- custom_jvp ------------------------------------------------------------------


class custom_jvp:
    """A function with its own forward-mode derivative (JAX's `custom_jvp`).

    >>> import fgrad, fgrad.numpy as fnp
    >>> @custom_jvp
    ... def f(x):
    ...     return fnp.sin(x)
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return f(x), 2.0 * t
    >>> fgrad.grad(f)(0.0)
    np.float64(2.0)

    The jvp rule must be linear in the tangents; it is used by forward and
    reverse mode alike, and differentiated for higher orders.
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Callable[..., Any] | None = None

    def defjvp(self, jvp: Callable[..., Any]) -> Callable[..., Any]:
        """Set the rule `jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`."""
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Callable[..., Any] | None) -> None:
        """Set the rule from one function per argument, `jvp_i(tangent_i, primal_out,
        *primals) -> contribution`, summed (None: no dependence on that argument)."""

        def jvp(*args: Any) -> tuple[Any, Any]:
            *static, primals, tangents = args
            ans = self.fun(*_merge(list(static), primals, self.nondiff_argnums))
            out = None
            for rule, t in zip(jvps, tangents):
                if rule is not None:
                    c = rule(t, ans, *primals)
                    out = c if out is None else out + c
            return ans, (out if out is not None else np.zeros_like(ans))

        self.jvp = jvp

    def __call__(self, *args: Any) -> Any:
        name = fun_name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"no JVP defined for the custom_jvp function {name}; use .defjvp")
        static, dynamic = _split_nondiff(args, self.nondiff_argnums, name)
        if ctx.trace is EVAL_TRACE:
            return self.fun(*args)
        leaves, in_tree = tree_flatten(tuple(dynamic))
        leaves = [to_input(x) for x in leaves]
        outs = _Outs()
        fun, jvp, nondiff = self.fun, self.jvp, self.nondiff_argnums

        def flat_fun(*xs: Any) -> list[Any]:
            out_leaves, outs.tree = tree_flatten(fun(*_merge(static, tree_unflatten(in_tree, xs), nondiff)))
            return out_leaves

        def flat_jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
            p_out, t_out = jvp(*static, tree_unflatten(in_tree, primals), tree_unflatten(in_tree, tangents))
            p_leaves, p_tree = tree_flatten(p_out)
            t_leaves, t_tree = tree_flatten(t_out)
            if t_tree != p_tree:
                raise TypeError(
                    f"the custom jvp rule of {name} returned a tangent of structure {t_tree}, but "
                    f"its primal output has structure {p_tree}; they must be the same"
                )
            _check_outputs("the custom jvp rule", name, t_leaves, p_leaves)
            outs.tree = p_tree
            return p_leaves, t_leaves

        out_leaves = custom_jvp_call_p.bind(
            *leaves, fun=FlatFunction(flat_fun, name), jvp=_Rule(flat_jvp, jvp), name=name
        )
        assert outs.tree is not None
        return tree_unflatten(outs.tree, out_leaves)


def _custom_jvp_impl(*args: Any, fun: FlatFunction, **_: Any) -> list[Any]:
    return fun(*args)


custom_jvp_call_p = Primitive("custom_jvp_call", _custom_jvp_impl, _call_aval, multiple_results=True)


def _custom_jvp_rule(primals: list[Any], tangents: list[Any], *, fun: Any, jvp: Any, name: str) -> Any:
    filled = [_zeros_for(p) if t is None else t for p, t in zip(primals, tangents)]
    return jvp(primals, filled)


jvp_rules[custom_jvp_call_p] = _custom_jvp_rule


def _custom_jvp_batch(args: list[Any], dims: list[Any], *, fun: FlatFunction, jvp: Any, name: str) -> Any:
    moved, size, examples = _to_front(args, dims)
    (n_out,) = _count_outputs(fun, examples)

    def both(*a: Any) -> list[Any]:
        p_out, t_out = jvp(a[: len(a) // 2], a[len(a) // 2:])
        return [*p_out, *t_out]

    def jvp_b(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        flat = batch_flat(both, [*primals, *tangents], [0] * (2 * len(primals)), lambda: [0] * (2 * n_out),
                          size, "vmap of a custom jvp rule")
        return flat[:n_out], flat[n_out:]

    out = custom_jvp_call_p.bind(*moved, fun=FlatFunction(_batched_function(fun, n_out, size), name),
                                 jvp=jvp_b, name=name)
    return out, [0] * len(out)


batch_rules[custom_jvp_call_p] = _custom_jvp_batch


# --- custom_vjp ------------------------------------------------------------------


class custom_vjp:
    """A function with its own reverse-mode derivative (JAX's `custom_vjp`).

    `fwd(*args) -> (output, residuals)` runs in the forward pass; `bwd(*nondiff_args,
    residuals, cotangent) -> tuple of cotangents` (one per non-static argument)
    in the backward pass. Forward mode (jvp) of such a function is a TypeError.

    >>> import fgrad
    >>> @custom_vjp
    ... def f(x):
    ...     return 0.5 * (5 * x**3 - 3 * x)
    >>> f.defvjp(lambda x: (f(x), x), lambda x, g: (g * 1.5 * (5 * x**2 - 1),))
    >>> fgrad.grad(f)(1.0)
    np.float64(6.0)
    """

    def __init__(self, fun: Callable[..., Any], nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any) -> Any:
        name = fun_name(self.fun)
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"no VJP defined for the custom_vjp function {name}; use .defvjp")
        static, dynamic = _split_nondiff(args, self.nondiff_argnums, name)
        if ctx.trace is EVAL_TRACE:
            return self.fun(*args)
        leaves, in_tree = tree_flatten(tuple(dynamic))
        leaves = [to_input(x) for x in leaves]
        outs, res_tree = _Outs(), _Outs()
        fun, fwd, bwd, nondiff = self.fun, self.fwd, self.bwd, self.nondiff_argnums

        def flat_fun(*xs: Any) -> list[Any]:
            out_leaves, outs.tree = tree_flatten(fun(*_merge(static, tree_unflatten(in_tree, xs), nondiff)))
            return out_leaves

        def flat_fwd(*xs: Any) -> tuple[list[Any], list[Any]]:
            result = fwd(*_merge(static, tree_unflatten(in_tree, xs), nondiff))
            if not (isinstance(result, tuple) and len(result) == 2):
                raise TypeError(f"the fwd rule of {name} must return a pair (output, residuals)")
            out_leaves, outs.tree = tree_flatten(result[0])
            res_leaves, res_tree.tree = tree_flatten(result[1])
            return out_leaves, res_leaves

        def flat_bwd(res: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
            assert outs.tree is not None and res_tree.tree is not None
            cts_in = bwd(*static, tree_unflatten(res_tree.tree, res), tree_unflatten(outs.tree, cts))
            if not isinstance(cts_in, tuple) or len(cts_in) != len(dynamic):
                raise TypeError(
                    f"the bwd rule of {name} must return a tuple with one cotangent per "
                    f"differentiable argument ({len(dynamic)}), but returned {describe(cts_in)}"
                )
            flat: list[Any] = []
            for arg_ct, arg in zip(cts_in, dynamic):
                arg_tree = tree_structure(arg)
                if arg_ct is None:  # a zero cotangent for the whole argument
                    flat.extend([None] * arg_tree.num_leaves)
                    continue
                got_leaves, got_tree = tree_flatten(arg_ct)
                if got_tree != arg_tree:
                    raise TypeError(
                        f"the bwd rule of {name} returned a cotangent of structure {got_tree} for "
                        f"an argument of structure {arg_tree}; they must be the same"
                    )
                flat.extend(got_leaves)
            return flat

        out_leaves = custom_vjp_call_p.bind(
            *leaves, fun=FlatFunction(flat_fun, name), fwd=_Rule(flat_fwd, fwd), bwd=_Rule(flat_bwd, bwd),
            name=name,
        )
        assert outs.tree is not None
        return tree_unflatten(outs.tree, out_leaves)


def _custom_vjp_impl(*args: Any, fun: FlatFunction, **_: Any) -> list[Any]:
    return fun(*args)


custom_vjp_call_p = Primitive("custom_vjp_call", _custom_vjp_impl, _call_aval, multiple_results=True)


def _custom_vjp_forward_mode(primals: list[Any], tangents: list[Any], *, name: str, **_: Any) -> Any:
    raise TypeError(
        f"forward-mode differentiation (jvp, jacfwd, hessian's outer pass) of {name} is not "
        "possible: it has a custom_vjp, which defines reverse mode only. Use grad, vjp or "
        "jacrev, or give it a custom_jvp instead."
    )


def _custom_vjp_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                          fun: Any, fwd: Any, bwd: Any, name: str) -> tuple[list[Any], list[Any]]:
    outs, res = fwd(*primals)
    linear_in = [_zeros_for(p) if t is None else t for p, t in zip(primals, tangents)]
    out_avals = tuple(get_aval(o).strip_weak_type() for o in outs)
    t_outs = trace.stage(custom_vjp_bwd_p, [*res, *linear_in],
                         {"bwd": bwd, "num_res": len(res), "out_avals": out_avals, "name": name})
    return outs, t_outs


jvp_rules[custom_vjp_call_p] = Linearization(_custom_vjp_forward_mode, _custom_vjp_linearize)


def _custom_vjp_bwd_impl(*args: Any, name: str, **_: Any) -> list[Any]:
    raise TypeError(
        f"the linear map of {name} can only be transposed (reverse mode): {name} has a "
        "custom_vjp, so its jvp (e.g. from linearize) is not defined"
    )


custom_vjp_bwd_p = Primitive(
    "custom_vjp_bwd", _custom_vjp_bwd_impl, lambda *a, out_avals, **_: list(out_avals), multiple_results=True
)


def _custom_vjp_bwd_transpose(cts: list[Any], *args: Any, bwd: Any, num_res: int,
                              out_avals: tuple[ShapedArray, ...], name: str) -> list[Any]:
    res, linear = args[:num_res], args[num_res:]
    filled = [np.zeros(a.shape, a.dtype) if ct is None else ct for ct, a in zip(cts, out_avals)]
    cts_in = bwd(res, filled)
    out: list[Any] = [None] * num_res
    for x, c in zip(linear, cts_in):
        if c is None or not is_linear(x):
            out.append(None)
            continue
        _check_outputs("the bwd rule", name, [c], [np.zeros(x.aval.shape, x.aval.dtype)])
        out.append(c)
    return out


transpose_rules[custom_vjp_bwd_p] = _custom_vjp_bwd_transpose


def _custom_vjp_batch(args: list[Any], dims: list[Any], *, fun: FlatFunction, fwd: Any, bwd: Any,
                      name: str) -> Any:
    moved, size, examples = _to_front(args, dims)
    n_out, n_res = _count_outputs(fwd, examples)

    def fwd_both(*a: Any) -> list[Any]:
        outs, res = fwd(*a)
        return [*outs, *res]

    def fwd_b(*xs: Any) -> tuple[list[Any], list[Any]]:
        flat = batch_flat(fwd_both, xs, [0] * len(xs), lambda: [0] * (n_out + n_res), size,
                          "vmap of a custom fwd rule")
        return flat[:n_out], flat[n_out:]

    def bwd_filled(*a: Any) -> list[Any]:
        cts = bwd(a[:n_res], a[n_res:])
        return [np.zeros(e.shape, e.dtype) if c is None else c for c, e in zip(cts, examples)]

    def bwd_b(res: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
        return batch_flat(bwd_filled, [*res, *cts], [0] * (n_res + len(cts)), lambda: [0] * len(examples),
                          size, "vmap of a custom bwd rule")

    out = custom_vjp_call_p.bind(*moved, fun=FlatFunction(_batched_function(fun, n_out, size), name),
                                 fwd=fwd_b, bwd=bwd_b, name=name)
    return out, [0] * len(out)


batch_rules[custom_vjp_call_p] = _custom_vjp_batch


# --- checkpoint ------------------------------------------------------------------


def checkpoint(fun: Callable[..., Any], *, prevent_cse: bool = True, policy: Any = None,
               static_argnums: int | Sequence[int] = ()) -> Callable[..., Any]:
    """`fun`, but reverse mode keeps only its inputs and recomputes its internal
    residuals during the backward pass: memory for time (alias `remat`).

    >>> import fgrad, fgrad.numpy as fnp
    >>> layer = checkpoint(lambda h: fnp.tanh(h * 2.0))
    >>> fgrad.grad(lambda x: fnp.sum(layer(layer(x))))(np.zeros(2))
    array([4., 4.])
    """
    if policy is not None:
        raise NotImplementedError("checkpoint policies are not supported: everything inside is recomputed")
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    name = fun_name(fun)

    @functools.wraps(fun)
    def remat_fun(*args: Any) -> Any:
        if ctx.trace is EVAL_TRACE:
            return fun(*args)
        fixed = [a for i, a in enumerate(args) if i in static]
        dynamic = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_flatten(tuple(dynamic))
        leaves = [to_input(x) for x in leaves]
        outs = _Outs()

        def flat_fun(*xs: Any) -> list[Any]:
            out_leaves, outs.tree = tree_flatten(fun(*_merge(fixed, tree_unflatten(in_tree, xs), static)))
            return out_leaves

        out_leaves = checkpoint_p.bind(*leaves, fun=FlatFunction(flat_fun, name), name=name)
        assert outs.tree is not None
        return tree_unflatten(outs.tree, out_leaves)

    return remat_fun


remat = checkpoint


def _checkpoint_impl(*args: Any, fun: FlatFunction, **_: Any) -> list[Any]:
    return fun(*args)


checkpoint_p = Primitive("checkpoint", _checkpoint_impl, _call_aval, multiple_results=True)


def _checkpoint_jvp(primals: list[Any], tangents: list[Any], *, fun: FlatFunction, name: str) -> Any:
    outs, t_outs, _ = jvp_flat(fun, primals, tangents, f"jvp of checkpointed {name}")
    return outs, t_outs


def _checkpoint_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                          fun: FlatFunction, name: str) -> tuple[list[Any], list[Any]]:
    outs = fun(*primals)  # no residuals kept: the backward pass recomputes them
    linear_in = [_zeros_for(p) if t is None else t for p, t in zip(primals, tangents)]
    out_avals = tuple(get_aval(o).strip_weak_type() for o in outs)
    t_outs = trace.stage(checkpoint_vjp_p, [*primals, *linear_in],
                         {"fun": fun, "num_primals": len(primals), "out_avals": out_avals, "name": name})
    return outs, t_outs


jvp_rules[checkpoint_p] = Linearization(_checkpoint_jvp, _checkpoint_linearize)


def _checkpoint_batch(args: list[Any], dims: list[Any], *, fun: FlatFunction, name: str) -> Any:
    moved, size, examples = _to_front(args, dims)
    (n_out,) = _count_outputs(fun, examples)
    out = checkpoint_p.bind(*moved, fun=FlatFunction(_batched_function(fun, n_out, size), name), name=name)
    return out, [0] * len(out)


batch_rules[checkpoint_p] = _checkpoint_batch


def _checkpoint_vjp_impl(*args: Any, fun: FlatFunction, num_primals: int,
                         out_avals: tuple[ShapedArray, ...], **_: Any) -> list[Any]:
    # Forward evaluation of the linear map (linearize's f_jvp): recompute a jvp.
    t_outs = jvp_flat(fun, args[:num_primals], args[num_primals:])[1]
    return [np.zeros(a.shape, a.dtype) if t is None else t for t, a in zip(t_outs, out_avals)]


def _checkpoint_vjp_aval(
    *avals: ShapedArray, out_avals: tuple[ShapedArray, ...], **_: Any
) -> list[ShapedArray]:
    return list(out_avals)


checkpoint_vjp_p = Primitive(
    "checkpoint_vjp", _checkpoint_vjp_impl, _checkpoint_vjp_aval, multiple_results=True
)


def _checkpoint_vjp_transpose(cts: list[Any], *args: Any, fun: FlatFunction, num_primals: int,
                              out_avals: tuple[ShapedArray, ...], name: str) -> list[Any]:
    primals = args[:num_primals]
    _, linear, _ = linearize_flat(fun, primals, f"recomputation of checkpointed {name}", keep=False)
    return [None] * num_primals + linear.transpose(list(cts), consume=True)


transpose_rules[checkpoint_vjp_p] = _checkpoint_vjp_transpose


def _checkpoint_vjp_jvp(primals: list[Any], tangents: list[Any], *, fun: FlatFunction, num_primals: int,
                        out_avals: Any, name: str) -> Any:
    def linear_map(*a: Any) -> list[Any]:
        return _checkpoint_vjp_impl(*a, fun=fun, num_primals=num_primals, out_avals=out_avals)

    outs, t_outs, _ = jvp_flat(linear_map, primals, tangents)
    return outs, t_outs


jvp_rules[checkpoint_vjp_p] = _checkpoint_vjp_jvp
