"""Custom derivative rules and checkpointing, with JAX's names and
signatures: `custom_jvp`, `custom_vjp`, `checkpoint` (alias `remat`).

These are the public functions: each flattens its arguments and results as
pytrees, keeps `nondiff_argnums` (`static_argnums`) out of what is
differentiated, and makes one call of functions of flat lists
(`custom_jvp_call`, `custom_vjp_call`, `checkpoint_call`). The primitives,
their rules, and the eager paths where nothing is staged are in
`fgrad/higher_order/custom.py` and `checkpoint.py`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .api.arguments import describe, fun_name, to_input
from .api.pytree import PyTreeDef, tree_flatten, tree_structure, tree_unflatten
from .core.libraries import is_library_array
from .core.trace import EVAL_TRACE, Tracer, ctx
from .higher_order.checkpoint import checkpoint_call
from .higher_order.custom import check_outputs, custom_jvp_call, custom_vjp_call, zeros_for

__all__ = ["custom_jvp", "custom_vjp", "checkpoint", "remat"]

__all__ = ["custom_jvp", "custom_vjp", "checkpoint", "remat"]


def _split_nondiff(args: tuple[Any, ...], nondiff: tuple[int, ...], name: str) -> tuple[list[Any], list[Any]]:
    static, dynamic = [], []
    for i, x in enumerate(args):
        if i in nondiff:
            if isinstance(x, (Tracer, np.ndarray)) or is_library_array(x):
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
    reverse mode alike, and differentiated for higher orders. Values the
    function closes over are differentiated through its own code. Outside
    jit and make_jaxpr the function and rule run on the values at hand, so
    Python control flow in them works (under reverse mode the tangents are
    recorded, not values).
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
            return ans, (out if out is not None else zeros_for(ans))

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
        n = len(leaves)

        def flat_fun(*xs: Any) -> list[Any]:
            out_leaves, outs.tree = tree_flatten(fun(*_merge(static, tree_unflatten(in_tree, xs), nondiff)))
            return out_leaves

        def flat_jvp(*xs: Any) -> list[Any]:
            primals, tangents = tree_unflatten(in_tree, xs[:n]), tree_unflatten(in_tree, xs[n:])
            p_out, t_out = jvp(*static, primals, tangents)
            p_leaves, p_tree = tree_flatten(p_out)
            t_leaves, t_tree = tree_flatten(t_out)
            if t_tree != p_tree:
                raise TypeError(
                    f"the custom jvp rule of {name} returned a tangent of structure {t_tree}, but "
                    f"its primal output has structure {p_tree}; they must be the same"
                )
            check_outputs("the custom jvp rule", name, t_leaves, p_leaves)
            outs.tree = p_tree
            return [*p_leaves, *t_leaves]

        out_leaves = custom_jvp_call(self, name, flat_fun, flat_jvp, leaves)
        assert outs.tree is not None
        return tree_unflatten(outs.tree, out_leaves)


# --- custom_vjp ------------------------------------------------------------------


class custom_vjp:
    """A function with its own reverse-mode derivative (JAX's `custom_vjp`).

    `fwd(*args) -> (output, residuals)` runs in the forward pass; `bwd(*nondiff_args,
    residuals, cotangent) -> tuple of cotangents` (one per non-static argument)
    in the backward pass. Forward mode (jvp) of such a function is a TypeError.
    Values the function closes over are differentiated through its own code.
    Outside jit and make_jaxpr, `fwd` and `bwd` run on the values at hand (bwd
    when the backward pass runs), so Python control flow in them works, as in
    autograd's primitives and PyTorch's autograd.Function.

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

        def flat_fwd(*xs: Any) -> list[Any]:
            result = fwd(*_merge(static, tree_unflatten(in_tree, xs), nondiff))
            if not (isinstance(result, tuple) and len(result) == 2):
                raise TypeError(f"the fwd rule of {name} must return a pair (output, residuals), but it "
                                f"returned {describe(result)}")
            out_leaves, outs.tree = tree_flatten(result[0])
            res_leaves, res_tree.tree = tree_flatten(result[1])
            return [*out_leaves, *res_leaves]

        def flat_bwd(*xs: Any) -> list[Any]:
            assert outs.tree is not None and res_tree.tree is not None
            res, cts = xs[:res_tree.tree.num_leaves], xs[res_tree.tree.num_leaves:]
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
            for i, (c, x) in enumerate(zip(flat, leaves)):
                if c is not None:
                    check_outputs("the bwd rule", name, [c], [x])
                else:
                    flat[i] = zeros_for(x)
            return flat

        def n_out() -> int:
            assert outs.tree is not None, "the function or fwd has run"
            return outs.tree.num_leaves

        out_leaves = custom_vjp_call(self, name, flat_fun, flat_fwd, flat_bwd, bwd, n_out, leaves)
        assert outs.tree is not None
        return tree_unflatten(outs.tree, out_leaves)


# --- checkpoint ------------------------------------------------------------------


def checkpoint(fun: Callable[..., Any], *, prevent_cse: bool = True, policy: Any = None,
               static_argnums: int | Sequence[int] = ()) -> Callable[..., Any]:
    """`fun`, but reverse mode keeps only its inputs and recomputes its internal
    residuals during the backward pass: memory for time (alias `remat`).

    Outside jit and make_jaxpr `fun` runs on the values at hand, once forward
    and again in the backward pass, so Python control flow in it works.

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

        out_leaves = checkpoint_call(name, flat_fun, leaves, closures=True)
        assert outs.tree is not None
        return tree_unflatten(outs.tree, out_leaves)

    return remat_fun


remat = checkpoint
