"""The custom-rule primitives: `custom_jvp_call`, `custom_vjp_call` and
`custom_vjp_bwd`, and the calls `custom_jvp_call` and `custom_vjp_call` that
bind them (the public `custom_jvp` and `custom_vjp` are in
`fgrad/custom_derivatives.py`). The user's function is staged at the call,
and the values it closes over (constants, tracers of enclosing transforms)
become leading operands (closure conversion), so every transform sees every
input:

* `custom_jvp_call`: evaluates `call_jaxpr`; its jvp is the user's rule,
  staged too (operands after the function's constants), run on the rule
  trace, so it serves forward and reverse mode and is differentiated in turn.
  What the function closes over is differentiated as its code says: the
  user's rule covers its explicit arguments.
* `custom_vjp_call`: evaluates `call_jaxpr`; reverse mode evaluates the
  staged `fwd` now and records one linear equation, `custom_vjp_bwd`, whose
  transpose evaluates the staged `bwd` on the residuals. Forward mode in the
  explicit arguments is a TypeError, as in JAX.

A rule that calls its own function (`return f(x), ...`) is staged while that
inner call is made; the inner call keeps its rules as Python functions,
staged when a transform first needs them.

Where nothing is staged (grad, jvp, vjp and vmap outside jit and
make_jaxpr), a call runs eagerly instead (`eager.py`), its Python functions
on the values at hand, so that Python control flow in them works as in
autograd: the transform with a tracer among the arguments applies the rule,
a level below itself. A custom_jvp runs its rule on the primals and
tangents; a custom_vjp under reverse mode runs `fwd` now and records one
`custom_vjp_bwd` equation holding `bwd` itself, called by the backward pass;
vmap calls the vmapped function and rules again below. A call whose
functions close over a value of a transform they would run below (the one
applying the rule, or one between it and the call) is staged, as under jit,
so that the value becomes an operand that transform sees.
"""


from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..core.avals import ShapedArray, get_aval
from ..core.errors import UnexpectedTracerError
from ..core.libraries import on_every_namespace
from ..core.rules import Linearization, batch_rules, jvp_rules, transpose_rules
from ..core.trace import Primitive, Trace, Tracer, ctx
from ..ir.check import check_operands
from ..ir.evaluate import eval_closed_now, eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import closure_convert, trace_to_jaxpr
from ..primitives import elementwise, reductions
from ..primitives.batching import batch_size, move_axis, with_batch_axis
from ..primitives.derivatives import is_linear, zeros, zeros_now
from ..transforms.batching import BatchTrace, BatchTracer, batch_flat, batch_jaxpr
from ..transforms.forward import JVPTrace, JVPTracer, jvp_jaxpr
from ..transforms.reverse import LinearizeTrace
from ._common import (
    avals_of,
    split_counts,
)
from .call import split_tangents
from .eager import STAGED, run_below, transform_of, unbatched, vmapped

__all__ = ["Flat", "custom_jvp_call", "custom_vjp_call", "custom_jvp_call_p", "custom_vjp_call_p",
           "custom_vjp_bwd_p", "Eager", "stage_flat", "zeros_for", "check_outputs"]

Flat = Callable[..., list[Any]]  # a function of flat lists of leaves


def zeros_for(x: Any) -> Any:
    """Zeros like `x`, in the array library the computation runs on."""
    return zeros_now(get_aval(x).strip_weak_type())


def check_outputs(what: str, name: str, got: Sequence[Any], expected: Sequence[Any]) -> None:
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


# --- staging the user's functions ------------------------------------------------------


def stage_flat(
    fn: Callable[..., list[Any]], avals: Sequence[ShapedArray], name: str
) -> tuple[ClosedJaxpr, list[Any]]:
    """`fn` staged at `avals` under the current trace, closure-converted: the
    jaxpr takes what `fn` closed over first, and those values."""
    closed = trace_to_jaxpr(fn, avals, f"staging of {name}", fun_name=name, advice=_ABSTRACT_ADVICE)
    return closure_convert(closed)


_ABSTRACT_ADVICE = (
    "functions given to checkpoint, custom_jvp and custom_vjp, and their rules, are traced once "
    "on abstract values (as in JAX) under jit and make_jaxpr, and where they close over a value that "
    "a transform around them traces (pass such a value as an argument instead: then they run on "
    "concrete values under grad, jvp, vjp and vmap); or decide outside the function and pass the "
    "decision in as a static argument (checkpoint's static_argnums, custom_jvp's nondiff_argnums)."
)


class _Rule:
    """A user's rule kept as a Python function, for a call made while that
    rule itself was being staged; staged when a transform first needs it.
    Printed by its name."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable[..., list[Any]], name: str) -> None:
        self.fn = fn
        self.name = name

    def stage(self, avals: Sequence[ShapedArray]) -> tuple[ClosedJaxpr, list[Any]]:
        """Stage it now, at `avals`, with its constants made values of the current context.

        A tracer it closed over that belongs to no trace enclosing the current
        one is a tracer of the very differentiation running this rule (or of
        one between it and the call): only its primal matters here, because
        its tangent would enter the rule's output, itself a tangent, at second
        order. A batched value cannot be taken apart that way, so it raises.
        """
        jaxpr, consts = stage_flat(self.fn, avals, self.name)
        live: set[Trace] = set()
        trace: Trace | None = ctx.trace
        while trace is not None:
            live.add(trace)
            trace = trace.parent
        lifted = []
        for c in consts:
            while isinstance(c, Tracer) and c._trace not in live:
                if type(c) is not JVPTracer:
                    raise TypeError(
                        f"a rule of {self.name} closes over a value of `{c._trace.transform}` "
                        f"({c.aval.str_short()}) and is needed in a place that transform cannot "
                        "see (the rule is called by the function it is the rule of). Pass the value "
                        f"to {self.name} as an argument instead of closing over it."
                    )
                c = c.primal
            lifted.append(c)
        return jaxpr, lifted

    def batched(self, size: int) -> _Rule:
        """The rule on batches of `size` along axis 0, still a Python function
        (staging it now could unfold its call of its own function forever)."""
        fn = self.fn

        def batched_rule(*xs: Any) -> list[Any]:
            n_out: list[int] = []

            def counted(*a: Any) -> list[Any]:
                out = fn(*a)
                n_out.append(len(out))
                return out

            return batch_flat(counted, xs, [0] * len(xs), lambda: [0] * n_out[0], size,
                              f"vmap of a rule of {self.name}")

        return _Rule(batched_rule, self.name)

    def __repr__(self) -> str:
        return self.name


class Eager:
    """A user's function (or rule) kept as a Python function in a parameter of
    an equation that eager reverse mode records, called when the backward pass
    (or the tangent map) runs. Printed by what it is."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Flat, name: str) -> None:
        self.fn = fn
        self.name = name

    def __call__(self, *args: Any) -> list[Any]:
        try:
            return self.fn(*args)
        except UnexpectedTracerError as e:
            raise UnexpectedTracerError(
                f"{e}\n  (in {self.name}, run after the call by the backward pass or the tangent map: "
                "a value it closes over belongs to a transform that has returned by then. Pass the "
                "value to the function as an argument instead of closing over it.)"
            ) from None

    def __repr__(self) -> str:
        return self.name


class _Staging(threading.local):
    """The custom functions whose rules this thread is staging right now."""

    def __init__(self) -> None:
        self.active: set[int] = set()


_staging = _Staging()


def _stage_rules(owner: object, stage: Callable[[], Any], lazy: Callable[[], Any]) -> Any:
    """`stage()`, unless `owner`'s rules are being staged already (its rule
    calls it): then `lazy()`, rules kept as Python functions, which ends the
    recursion."""
    key = id(owner)
    if key in _staging.active:
        return lazy()
    _staging.active.add(key)
    try:
        return stage()
    finally:
        _staging.active.discard(key)


def _as_jaxpr(
    rule: ClosedJaxpr | _Rule, consts: list[Any], avals: Sequence[ShapedArray]
) -> tuple[ClosedJaxpr, list[Any]]:
    """A rule as a jaxpr and its constants: staged now if it was kept as a function."""
    return rule.stage(avals) if isinstance(rule, _Rule) else (rule, consts)


def _closure_tangents(call_jaxpr: ClosedJaxpr, consts: list[Any], args: list[Any],
                      t_consts: list[Any]) -> list[Any] | None:
    """The tangents of the outputs from those of what the function closed
    over, by differentiating its own code (the rule covers its explicit
    arguments only); None if no closed-over value has a tangent. Evaluated on
    the current (rule) trace."""
    if all(t is None for t in t_consts):
        return None
    nonzeros = tuple(t is not None for t in t_consts) + (False,) * len(args)
    jaxpr, out_nonzeros = jvp_jaxpr(call_jaxpr, nonzeros, False)
    outs = eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *args, *(t for t in t_consts if t is not None))
    it = iter(outs[len(call_jaxpr.out_avals):])
    return [next(it) if nz else None for nz in out_nonzeros]


def _add_tangents(a: list[Any], b: list[Any] | None) -> list[Any]:
    if b is None:
        return a
    return [y if x is None else x if y is None else elementwise.add(x, y) for x, y in zip(a, b)]


def _batch_operands(args: Sequence[Any], dims: Sequence[int | None], size: int,
                    n_leading: int) -> tuple[list[Any], list[int | None]]:
    """The operands for a batched call: the leading ones (constants) keep
    their batching, moved to axis 0; the explicit arguments are all batched
    along axis 0, since their tangents and cotangents will be."""
    moved: list[Any] = []
    new_dims: list[int | None] = []
    for i, (x, d) in enumerate(zip(args, dims)):
        if i < n_leading:
            moved.append(x if d is None else move_axis(x, d, 0))
            new_dims.append(None if d is None else 0)
        else:
            moved.append(with_batch_axis(x, d, size))
            new_dims.append(0)
    return moved, new_dims


# --- custom_jvp ------------------------------------------------------------------


def custom_jvp_call(key: object, name: str, fun: Flat, jvp: Flat, leaves: list[Any]) -> list[Any]:
    """A call of a custom_jvp (`key`) as functions of flat lists: `fun(*xs)`
    and `jvp(*xs, *ts)` returning the primal outputs, then their tangents."""
    owner = transform_of(leaves)
    if owner is None:  # no transform differentiates or batches the arguments: ordinary code
        return fun(*leaves)
    if owner is not STAGED:
        out = _custom_jvp_eagerly(owner, key, name, fun, jvp, leaves)
        if out is not None:
            return out
    return _custom_jvp_staged(key, name, fun, jvp, leaves)


def _custom_jvp_eagerly(owner: Trace, key: object, name: str, fun: Flat, jvp: Flat,
                        leaves: list[Any]) -> list[Any] | None:
    """The call run on the values at hand: the rule on `owner`'s primals and
    tangents (on its rule trace: under reverse mode its tangent equations are
    recorded, its primal ones computed now); under vmap, the function and rule
    vmapped, called again below. None where their code closes over a value of
    a transform it runs below (then it is staged)."""
    if isinstance(owner, BatchTrace):  # every result batched, in the function and the rule alike
        size = owner.axis_size
        vals, dims = unbatched(owner, leaves)
        fun_b, jvp_b = vmapped(fun, size, name, dims), vmapped(jvp, size, name, dims + dims)
        out = run_below(owner, owner.parent, lambda: custom_jvp_call(key, name, fun_b, jvp_b, vals),  # type: ignore[arg-type]
                        f"the function or jvp rule of {name}")
        return None if out is None else [BatchTracer(owner, o, 0) for o in out]
    assert isinstance(owner, JVPTrace)
    primals, tangents = split_tangents(owner, leaves)

    def run_rule() -> list[Any]:
        return jvp(*primals, *(zeros_for(p) if t is None else t for p, t in zip(primals, tangents)))

    both = run_below(owner, owner.rule_trace, run_rule, f"the jvp rule of {name}")
    if both is None:
        return None
    n = len(both) // 2
    return [JVPTracer(owner, p, t) for p, t in zip(both[:n], both[n:])]


def _custom_jvp_staged(key: object, name: str, fun: Flat, jvp: Flat, leaves: list[Any]) -> list[Any]:
    """The call as one `custom_jvp_call`, its function and rule staged."""
    avals = avals_of(leaves)
    call_jaxpr, consts = stage_flat(fun, avals, name)
    rule, jvp_consts = _stage_rules(
        key, lambda: stage_flat(jvp, [*avals, *avals], name), lambda: (_Rule(jvp, name), [])
    )
    return custom_jvp_call_p.bind(
        *consts, *jvp_consts, *leaves, call_jaxpr=call_jaxpr, jvp=rule, num_consts=len(consts),
        num_jvp_consts=len(jvp_consts), name=name,
    )


def _custom_jvp_impl(*args: Any, call_jaxpr: ClosedJaxpr, num_consts: int, num_jvp_consts: int,
                     **_: Any) -> list[Any]:
    consts, _jvp_consts, xs = split_counts(args, (num_consts, num_jvp_consts))
    return eval_closed_now(call_jaxpr, [*consts, *xs])


def _custom_jvp_aval(*avals: ShapedArray, call_jaxpr: ClosedJaxpr, num_consts: int, num_jvp_consts: int,
                     name: str, **_: Any) -> list[ShapedArray]:
    consts, _jvp_consts, xs = split_counts(avals, (num_consts, num_jvp_consts))
    check_operands(f"custom_jvp_call of {name}", [*consts, *xs], call_jaxpr)
    return call_jaxpr.out_avals


custom_jvp_call_p = Primitive(
    "custom_jvp_call", on_every_namespace(_custom_jvp_impl), _custom_jvp_aval, multiple_results=True
)


def _custom_jvp_rule(primals: list[Any], tangents: list[Any], *, call_jaxpr: ClosedJaxpr,
                     jvp: ClosedJaxpr | _Rule, num_consts: int, num_jvp_consts: int, name: str) -> Any:
    consts, jvp_consts, args = split_counts(primals, (num_consts, num_jvp_consts))
    t_consts, _, t_args = split_counts(tangents, (num_consts, num_jvp_consts))
    n_out = len(call_jaxpr.out_avals)
    if any(t is not None for t in t_args):
        avals = call_jaxpr.in_avals[num_consts:]
        jvp, jvp_consts = _as_jaxpr(jvp, jvp_consts, [*avals, *avals])
        filled = [zeros_for(p) if t is None else t for p, t in zip(args, t_args)]
        both = eval_jaxpr(jvp.jaxpr, jvp.consts, *jvp_consts, *args, *filled)
        outs, t_outs = both[:n_out], both[n_out:]
    else:  # only what the function closed over has tangents
        outs = eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *consts, *args)
        t_outs = [None] * n_out
    return outs, _add_tangents(t_outs, _closure_tangents(call_jaxpr, consts, args, t_consts))


jvp_rules[custom_jvp_call_p] = _custom_jvp_rule


def _custom_jvp_batch(args: list[Any], dims: list[Any], *, call_jaxpr: ClosedJaxpr, jvp: ClosedJaxpr | _Rule,
                      num_consts: int, num_jvp_consts: int, name: str) -> Any:
    size = batch_size(args, dims)
    moved, dims = _batch_operands(args, dims, size, num_consts + num_jvp_consts)
    const_dims, jvp_dims, arg_dims = split_counts(dims, (num_consts, num_jvp_consts))
    call_b, _ = batch_jaxpr(call_jaxpr, size, (*const_dims, *arg_dims), True)
    jvp_b = jvp.batched(size) if isinstance(jvp, _Rule) else batch_jaxpr(
        jvp, size, (*jvp_dims, *arg_dims, *arg_dims), True)[0]
    out = custom_jvp_call_p.bind(*moved, call_jaxpr=call_b, jvp=jvp_b, num_consts=num_consts,
                                 num_jvp_consts=num_jvp_consts, name=name)
    return out, [0] * len(out)


batch_rules[custom_jvp_call_p] = _custom_jvp_batch


# --- custom_vjp ------------------------------------------------------------------


def custom_vjp_call(key: object, name: str, fun: Flat, fwd: Flat, bwd: Flat, user_bwd: Callable[..., Any],
                     n_out: Callable[[], int], leaves: list[Any]) -> list[Any]:
    """A call of a custom_vjp (`key`) as functions of flat lists: `fun(*xs)`,
    `fwd(*xs)` returning the outputs then the residuals (`n_out()` of the
    former, once it has run) and `bwd(*residuals, *cts)` the cotangents of
    the arguments. `user_bwd` is the user's bwd, looked into for closures."""
    owner = transform_of(leaves)
    if owner is None:
        return fun(*leaves)
    if owner is not STAGED:
        if type(owner) is JVPTrace:  # forward mode in an argument
            raise _forward_mode_error(name)
        out = _custom_vjp_eagerly(owner, key, name, fun, fwd, bwd, user_bwd, n_out, leaves)
        if out is not None:
            return out
    return _custom_vjp_staged(key, name, fun, fwd, bwd, leaves)


def _custom_vjp_eagerly(owner: Trace, key: object, name: str, fun: Flat, fwd: Flat, bwd: Flat,
                        user_bwd: Callable[..., Any], n_out: Callable[[], int],
                        leaves: list[Any]) -> list[Any] | None:
    """The call run on the values at hand. Reverse mode runs `fwd` on the
    primals now and records one `custom_vjp_bwd` equation whose transpose
    calls `bwd` when the backward pass runs, on whatever values it gets then
    (so its Python control flow works too); under vmap the three are vmapped
    and called again below. None where their code closes over a value of a
    transform it runs below (then it is staged)."""
    if isinstance(owner, BatchTrace):
        # Every output batched, in the function and fwd alike; residuals only where they vary (bwd's
        # Python control flow may need one that does not), and bwd's cotangents as the arguments.
        size = owner.axis_size
        vals, dims = unbatched(owner, leaves)
        fwd_dims: list[int | None] = []

        def bwd_b(*xs: Any) -> list[Any]:
            k = n_out()
            ct_dims: list[int | None] = []
            cts = vmapped(bwd, size, name, fwd_dims[k:] + [0] * k, ct_dims)(*xs)
            # An argument the same for every example gets the sum of theirs.
            return [reductions.reduce_sum(ct, axes=(0,)) if d is None and c is not None
                    else with_batch_axis(ct, None, size) if d is not None and c is None else ct
                    for ct, d, c in zip(cts, dims, ct_dims)]

        fun_b, fwd_b = vmapped(fun, size, name, dims), vmapped(fwd, size, name, dims, fwd_dims, n_out)
        out = run_below(owner, owner.parent,  # type: ignore[arg-type]
                        lambda: custom_vjp_call(key, name, fun_b, fwd_b, bwd_b, user_bwd, n_out, vals),
                        f"the function or a rule of {name}")
        return None if out is None else [BatchTracer(owner, o, 0) for o in out]
    assert isinstance(owner, LinearizeTrace)
    primals, tangents = split_tangents(owner, leaves)

    both = run_below(owner, owner.parent, lambda: fwd(*primals), f"the fwd rule of {name}",  # type: ignore[arg-type]
                     later=user_bwd)
    if both is None:
        return None
    k = n_out()
    outs, res = both[:k], both[k:]
    linear_in = [zeros_for(p) if t is None else t for p, t in zip(primals, tangents)]
    t_outs = owner.stage(custom_vjp_bwd_p, [*res, *linear_in], {
        "bwd": Eager(bwd, f"the bwd rule of {name}"), "num_res": len(res), "name": name,
        "out_avals": tuple(avals_of(outs)),
    })
    return [JVPTracer(owner, o, t) for o, t in zip(outs, t_outs)]


def _custom_vjp_staged(key: object, name: str, fun: Flat, fwd: Flat, bwd: Flat,
                       leaves: list[Any]) -> list[Any]:
    """The call as one `custom_vjp_call`, its function and rules staged."""
    avals = avals_of(leaves)
    call_jaxpr, consts = stage_flat(fun, avals, name)
    n_out = len(call_jaxpr.out_avals)

    def stage_rules() -> tuple[ClosedJaxpr, list[Any], ClosedJaxpr, list[Any]]:
        fwd_jaxpr, fwd_consts = stage_flat(fwd, avals, name)
        res_avals = fwd_jaxpr.out_avals[n_out:]
        bwd_jaxpr, bwd_consts = stage_flat(bwd, [*res_avals, *call_jaxpr.out_avals], name)
        return fwd_jaxpr, fwd_consts, bwd_jaxpr, bwd_consts

    fwd_rule, fwd_consts, bwd_rule, bwd_consts = _stage_rules(
        key, stage_rules, lambda: (_Rule(fwd, name), [], _Rule(bwd, name), [])
    )
    return custom_vjp_call_p.bind(
        *consts, *fwd_consts, *bwd_consts, *leaves, call_jaxpr=call_jaxpr, fwd=fwd_rule, bwd=bwd_rule,
        num_consts=len(consts), num_fwd_consts=len(fwd_consts), num_bwd_consts=len(bwd_consts), name=name,
    )


def _custom_vjp_impl(*args: Any, call_jaxpr: ClosedJaxpr, num_consts: int, num_fwd_consts: int,
                     num_bwd_consts: int, **_: Any) -> list[Any]:
    consts, _fwd_consts, _bwd_consts, xs = split_counts(args, (num_consts, num_fwd_consts, num_bwd_consts))
    return eval_closed_now(call_jaxpr, [*consts, *xs])


def _custom_vjp_aval(*avals: ShapedArray, call_jaxpr: ClosedJaxpr, num_consts: int, num_fwd_consts: int,
                     num_bwd_consts: int, name: str, **_: Any) -> list[ShapedArray]:
    consts, _fwd_consts, _bwd_consts, xs = split_counts(avals, (num_consts, num_fwd_consts, num_bwd_consts))
    check_operands(f"custom_vjp_call of {name}", [*consts, *xs], call_jaxpr)
    return call_jaxpr.out_avals


custom_vjp_call_p = Primitive(
    "custom_vjp_call", on_every_namespace(_custom_vjp_impl), _custom_vjp_aval, multiple_results=True
)


def _forward_mode_error(name: str) -> TypeError:
    return TypeError(
        f"forward-mode differentiation (jvp, jacfwd) of {name} is not possible here: it is a "
        "custom_vjp, which defines reverse mode only. Use grad, vjp or jacrev; or put the jvp "
        "inside the jit, jit(lambda x, t: jvp(f, (x,), (t,))) rather than jvp(jit(f), ...), so that "
        "forward mode sees the function before it is staged; for a custom_vjp of your own, give "
        "it a custom_jvp instead."
    )


def _custom_vjp_forward_mode(primals: list[Any], tangents: list[Any], *, call_jaxpr: ClosedJaxpr,
                             num_consts: int, num_fwd_consts: int, num_bwd_consts: int, name: str,
                             **_: Any) -> Any:
    counts = (num_consts, num_fwd_consts, num_bwd_consts)
    consts, _fwd_consts, _bwd_consts, args = split_counts(primals, counts)
    t_consts, _t_fwd, _t_bwd, t_args = split_counts(tangents, counts)
    if any(t is not None for t in t_args):
        raise _forward_mode_error(name)
    outs = eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *consts, *args)
    return outs, _closure_tangents(call_jaxpr, consts, args, t_consts)


def _custom_vjp_linearize(trace: LinearizeTrace, primals: list[Any], tangents: list[Any], *,
                          call_jaxpr: ClosedJaxpr, fwd: ClosedJaxpr | _Rule, bwd: ClosedJaxpr | _Rule,
                          num_consts: int, num_fwd_consts: int, num_bwd_consts: int,
                          name: str) -> tuple[list[Any], list[Any]]:
    consts, fwd_consts, bwd_consts, args = split_counts(primals, (num_consts, num_fwd_consts, num_bwd_consts))
    t_consts, _, _, t_args = split_counts(tangents, (num_consts, num_fwd_consts, num_bwd_consts))
    n_out = len(call_jaxpr.out_avals)
    fwd, fwd_consts = _as_jaxpr(fwd, fwd_consts, call_jaxpr.in_avals[num_consts:])
    both = eval_jaxpr(fwd.jaxpr, fwd.consts, *fwd_consts, *args)
    outs, res = both[:n_out], both[n_out:]
    t_outs: list[Any] = [None] * n_out
    if any(t is not None for t in t_args):
        bwd, bwd_consts = _as_jaxpr(bwd, bwd_consts, [*fwd.out_avals[n_out:], *call_jaxpr.out_avals])
        linear_in = [zeros_for(p) if t is None else t for p, t in zip(args, t_args)]
        t_outs = trace.stage(custom_vjp_bwd_p, [*bwd_consts, *res, *linear_in], {
            "bwd": bwd, "num_res": len(bwd_consts) + len(res), "name": name,
            "out_avals": tuple(call_jaxpr.out_avals),
        })
    prev = ctx.trace
    ctx.trace = trace.rule_trace
    try:
        return outs, _add_tangents(t_outs, _closure_tangents(call_jaxpr, consts, args, t_consts))
    finally:
        ctx.trace = prev


jvp_rules[custom_vjp_call_p] = Linearization(_custom_vjp_forward_mode, _custom_vjp_linearize)


def _custom_vjp_batch(args: list[Any], dims: list[Any], *, call_jaxpr: ClosedJaxpr, fwd: ClosedJaxpr | _Rule,
                      bwd: ClosedJaxpr | _Rule, num_consts: int, num_fwd_consts: int, num_bwd_consts: int,
                      name: str) -> Any:
    size = batch_size(args, dims)
    nc, nf, nb = num_consts, num_fwd_consts, num_bwd_consts
    moved, new_dims = _batch_operands(args, dims, size, nc + nf + nb)
    c_dims, f_dims, b_dims, x_dims = split_counts(new_dims, (nc, nf, nb))
    call_b, _ = batch_jaxpr(call_jaxpr, size, (*c_dims, *x_dims), True)
    if isinstance(fwd, _Rule) or isinstance(bwd, _Rule):  # both are, or neither
        fwd_b: ClosedJaxpr | _Rule = fwd.batched(size)  # type: ignore[union-attr]
        bwd_b: ClosedJaxpr | _Rule = bwd.batched(size)  # type: ignore[union-attr]
    else:
        n_ct = len(call_jaxpr.out_avals) + len(fwd.out_avals) - len(call_jaxpr.out_avals)
        fwd_b = batch_jaxpr(fwd, size, (*f_dims, *x_dims), True)[0]
        bwd_b = batch_jaxpr(bwd, size, (*b_dims, *[0] * n_ct), True)[0]
    out = custom_vjp_call_p.bind(*moved, call_jaxpr=call_b, fwd=fwd_b, bwd=bwd_b, num_consts=nc,
                                 num_fwd_consts=nf, num_bwd_consts=nb, name=name)
    return out, [0] * len(out)


batch_rules[custom_vjp_call_p] = _custom_vjp_batch


def _custom_vjp_bwd_impl(*args: Any, name: str, **_: Any) -> list[Any]:
    raise TypeError(
        f"the linear map of {name} can only be transposed (reverse mode): {name} has a "
        "custom_vjp, so its jvp (e.g. from linearize) is not defined"
    )


custom_vjp_bwd_p = Primitive(
    "custom_vjp_bwd", on_every_namespace(_custom_vjp_bwd_impl),  # it raises the same error on every library
    lambda *a, out_avals, **_: list(out_avals), multiple_results=True,
)


def _custom_vjp_bwd_transpose(cts: list[Any], *args: Any, bwd: ClosedJaxpr | Eager, num_res: int,
                              out_avals: tuple[ShapedArray, ...], name: str) -> list[Any]:
    res, linear = args[:num_res], args[num_res:]
    filled = [zeros(a) if ct is None else ct for ct, a in zip(cts, out_avals)]
    if isinstance(bwd, Eager):  # the user's bwd itself, on the values the backward pass has
        cts_in = bwd(*res, *filled)
    else:
        cts_in = eval_jaxpr(bwd.jaxpr, bwd.consts, *res, *filled)
    return [None] * num_res + [c if is_linear(x) else None for x, c in zip(linear, cts_in)]


transpose_rules[custom_vjp_bwd_p] = _custom_vjp_bwd_transpose
# Applied forward, the linear map of a custom_vjp does not exist: every
# transform of it says so, as its evaluation does.
jvp_rules[custom_vjp_bwd_p] = lambda primals, tangents, **params: _custom_vjp_bwd_impl(**params)
batch_rules[custom_vjp_bwd_p] = lambda args, dims, **params: _custom_vjp_bwd_impl(**params)
