"""The public transformations: grad, value_and_grad, vjp, jvp, linearize,
make_jaxpr, stop_gradient.

Each takes a function of pytrees, flattens its arguments, checks what the user
gave, calls the flat transform below and rebuilds pytrees. This is the only
layer that knows about pytrees and argnums.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import numpy as np
from typing_extensions import ParamSpec

from ..core.avals import ShapedArray, get_aval, is_inexact_dtype
from ..core.fp_warnings import user_warnings
from ..core.libraries import ForeignConstant, Library, library_of, on_library
from ..core.trace import EVAL_TRACE, Tracer, ctx, tracing
from ..ir.evaluate import eval_jaxpr
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import StagingTrace
from ..primitives import elementwise
from ..primitives.derivatives import zeros_now
from ..transforms.forward import jvp_flat
from ..transforms.reverse import LinearFunction, linearize_flat
from ..transforms.tape import Pullback, vjp_flat
from .arguments import (
    OutStore,
    arguments_library,
    check_float_inputs,
    flatten_fun,
    fun_name,
    leaf_names,
    library_to_retry,
    normalize_argnums,
    to_input,
    to_output,
    to_traced_input,
    where_the_data_is,
    with_args,
)
from .pytree import PyTreeDef, tree_flatten, tree_map, tree_unflatten

P = ParamSpec("P")  # the parameters of the user's function, kept by grad and its kind

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "linearize", "make_jaxpr", "stop_gradient",
    "ShapeDtypeStruct",
]


def _zeros(aval: ShapedArray) -> Any:
    """Zeros of `aval` (a missing tangent or cotangent), in the array library
    the transform runs on."""
    return to_output(zeros_now(aval))


def _in_library(values: list[Any], library: Library | None) -> list[Any]:
    """`values` with NumPy's arrays and scalars made arrays of `library`, the
    one the transform runs on, if not NumPy: a caller's NumPy argument, tangent
    or cotangent (or grad's seed) beside another library's arrays, so that even
    one that passes through unchanged comes out in that library."""
    if library is None:
        return values
    return [library.take_in(v) for v in values]


def _library_for(library: Library | None, given: Sequence[Any]) -> Library | None:
    """The library a vjp or linearize function computes on: its primals'
    (`library`), else that of the `given` cotangents or tangents; TypeError
    for arrays of two libraries."""
    found = library_of(given)
    if found is None or found is library:
        return library
    if library is None:
        return found
    raise TypeError(
        f"the arguments mix arrays of {library.name} (the primals) and of {found.name}; fgrad computes "
        f"on one array library at a time. Convert them to one library first."
    )


def _check_like(
    given: Any, expected: ShapedArray, kind: str, where: str, dtype_error: type[Exception]
) -> Any:
    """`given` as a value of `expected`'s type, or a message saying what differs."""
    # A Python number (or NumPy's float64 and complex128, which subclass Python's)
    # takes the expected dtype, if that holds its kind: not a complex for a float.
    python_scalar = isinstance(given, (float, int, complex)) and not isinstance(given, bool)
    if python_scalar and not expected.shape:
        number = given.item() if isinstance(given, np.generic) else given
        if np.result_type(number, expected.dtype) == expected.dtype:
            return np.asarray(given, expected.dtype)[()]
    aval = get_aval(given)
    what = f"the {kind} {where}" if where else f"the {kind}"
    if aval.shape != expected.shape:
        raise ValueError(
            f"{what} has shape {aval.shape}, but the corresponding {_counterpart[kind]} "
            f"has shape {expected.shape} (dtype {expected.dtype}). They must match."
        )
    if python_scalar or aval.dtype != expected.dtype:
        given_type = f" (a Python {type(given).__name__})" if type(given) in (float, int, complex) else ""
        raise dtype_error(
            f"{what} has dtype {aval.dtype}{given_type}, but the corresponding {_counterpart[kind]} "
            f"has dtype {expected.dtype} (shape {expected.shape}). They must match; convert "
            f"it with .astype({expected.dtype.name!r})."
        )
    return given


_counterpart = {"cotangent": "primal output", "tangent": "primal input"}


def _leaf_position(tree: PyTreeDef, i: int) -> str:
    return "" if tree.num_leaves == 1 else f"at leaf {i} of {tree}"


# --- vjp ------------------------------------------------------------------------


def _vjp_fn(
    linear: LinearFunction | Pullback, in_tree: PyTreeDef, out_tree: PyTreeDef, primals: list[Any]
) -> Callable[[Any], tuple[Any, ...]]:
    library = library_of(primals)

    def vjp_fn(cotangent: Any) -> tuple[Any, ...]:
        lib = _library_for(library, tree_flatten(cotangent)[0])
        with on_library((), lib), user_warnings():
            return _pull_back(linear, in_tree, out_tree, cotangent, lib)

    return vjp_fn


def _pull_back(linear: LinearFunction | Pullback, in_tree: PyTreeDef, out_tree: PyTreeDef, cotangent: Any,
               library: Library | None) -> Any:
    ct_leaves, ct_tree = tree_flatten(cotangent)
    if ct_tree != out_tree:
        raise TypeError(
            f"the cotangent given to the vjp function has structure {ct_tree}, but the "
            f"function's output has structure {out_tree}; they must be the same"
        )
    cts = [
        _check_like(ct, aval, "cotangent", _leaf_position(out_tree, i), ValueError)
        for i, (ct, aval) in enumerate(zip(ct_leaves, linear.out_avals))
    ]
    cts_in = linear.transpose(_in_library(cts, library))
    leaves = [_zeros(a) if c is None else to_output(c) for c, a in zip(cts_in, linear.in_avals)]
    return tree_unflatten(in_tree, leaves)


def _linearize(
    fun: Callable[..., Any], primals: Sequence[Any], transform: str, has_aux: bool, keep: bool = True,
    flat: Callable[..., Any] = linearize_flat,
) -> tuple[list[Any], Any, PyTreeDef, OutStore, Any, PyTreeDef, list[Any]]:
    leaves, in_tree = tree_flatten(tuple(primals))
    leaves = [to_traced_input(x) for x in leaves]
    flat_fun, store = flatten_fun(fun, in_tree, has_aux)
    library = arguments_library(leaves)

    def run(library: Library | None) -> tuple[list[Any], list[Any], LinearFunction, Any]:
        with on_library((), library), user_warnings():
            ins = _in_library(leaves, library)
            return (ins, *flat(flat_fun, ins, transform, has_aux, keep))

    leaves, outs, linear, aux = where_the_data_is(run, library)  # or on a closure's library
    assert store.tree is not None
    aux_tree = None if not has_aux else tree_unflatten(store.aux_tree, [to_output(a) for a in aux])  # type: ignore[arg-type]
    return outs, linear, store.tree, store, aux_tree, in_tree, leaves


@overload
def vjp(fun: Callable[..., Any], *primals: Any,
        has_aux: Literal[False] = False) -> tuple[Any, Callable[[Any], tuple[Any, ...]]]: ...
@overload
def vjp(fun: Callable[..., Any], *primals: Any,
        has_aux: Literal[True]) -> tuple[Any, Callable[[Any], tuple[Any, ...]], Any]: ...
@overload
def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool) -> Any: ...
def vjp(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """Evaluate `fun` at `primals` and return its value and a function that maps
    an output cotangent to the cotangents of the inputs (a tuple, one per primal).

    The returned `vjp_fn` may be called any number of times.

    >>> import fgrad.numpy as fnp
    >>> y, vjp_fn = vjp(fnp.sin, 0.0)
    >>> vjp_fn(1.0)
    (np.float64(1.0),)
    """
    outs, linear, out_tree, _, aux, in_tree, leaves = _linearize(
        fun, primals, f"vjp of {fun_name(fun)}", has_aux, flat=vjp_flat
    )
    out = tree_unflatten(out_tree, [to_output(x) for x in outs])
    vjp_fn = _vjp_fn(linear, in_tree, out_tree, leaves)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


# --- grad -----------------------------------------------------------------------


def _check_scalar_output(
    fun: Callable[..., Any], out_tree: PyTreeDef, outs: list[Any], holomorphic: bool = False
) -> ShapedArray:
    if out_tree.num_leaves != 1 or out_tree.node is not None:
        raise TypeError(
            f"grad requires {fun_name(fun)} to return a single scalar, but it returned a "
            f"{out_tree}. For several outputs use fgrad.vjp; with has_aux=True, return "
            "(scalar, aux) to carry extra values out."
        )
    aval = get_aval(outs[0]).strip_weak_type()
    if aval.shape != ():
        raise TypeError(
            f"grad requires {fun_name(fun)} to return a scalar (shape ()), but it returned an "
            f"array of shape {aval.shape} and dtype {aval.dtype}. For a non-scalar output use "
            "fgrad.vjp(f, x) with a cotangent of that shape (vector-Jacobian product) or a "
            "Jacobian; or reduce the output to a scalar, e.g. with .sum()."
        )
    if holomorphic and aval.dtype.kind != "c":
        raise TypeError(
            f"grad(holomorphic=True) requires {fun_name(fun)} to return a complex scalar, but it "
            f"returned dtype {aval.dtype}"
        )
    if not holomorphic and aval.dtype.kind != "f":
        raise TypeError(
            f"grad requires {fun_name(fun)} to return a real floating-point scalar, but it "
            f"returned dtype {aval.dtype}. "
            + ("For a holomorphic function pass holomorphic=True; otherwise take the real part, "
               "abs or another real-valued function of the output." if aval.dtype.kind == "c"
               else "Make the output a float, e.g. with .astype(float).")
        )
    return aval


def _grad_pass(fun: Callable[..., Any], flat_fun: Callable[..., Any], leaves: list[Any], in_tree: PyTreeDef,
               store: OutStore, has_aux: bool, holomorphic: bool,
               library: Library | None) -> tuple[list[Any], list[Any], Any]:
    """grad's forward and backward pass: the outputs, the aux values and the
    gradient's leaves as the differentiated arguments' tree."""
    outs, linear, aux = vjp_flat(flat_fun, leaves, f"grad of {fun_name(fun)}", has_aux, keep=False)
    assert store.tree is not None
    aval = _check_scalar_output(fun, store.tree, outs, holomorphic)
    cts = linear.transpose(_in_library([aval.dtype.type(1)], library), consume=True)
    return outs, aux, tree_unflatten(in_tree, [
        _zeros(a) if c is None else to_output(c) for c, a in zip(cts, linear.in_avals)
    ])


def value_and_grad(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable[P, tuple[Any, Any]]:
    """`fun` and its gradient with respect to the arguments `argnums`, in one pass.

    Returns a function giving `(value, gradient)`, or `((value, aux), gradient)`
    with `has_aux`. The gradient has the structure of the chosen argument (a
    tuple of them when `argnums` is a tuple). For a real function of complex
    inputs it is df/dx - i df/dy (JAX's convention); with `holomorphic=True`
    (complex inputs and output) it is the complex derivative f'(z).

    >>> import fgrad.numpy as fnp
    >>> value_and_grad(lambda x: x ** 2)(3.0)
    (np.float64(9.0), np.float64(6.0))
    """
    name = fun_name(fun)

    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kwargs: Any) -> Any:
        nums = normalize_argnums(argnums, len(args), fun)
        partial_fun = with_args(fun, args, nums, kwargs)
        leaves, in_tree = tree_flatten(args if len(nums) == len(args) else tuple(args[i] for i in nums))
        leaves = [to_traced_input(x) for x in leaves]
        check_float_inputs("grad", fun, args, nums, leaves, "c" if holomorphic else "fc")
        flat_fun, store = flatten_fun(partial_fun, in_tree, has_aux, name)
        library = arguments_library(args, kwargs)
        try:
            if library is None:  # NumPy: every gradient call comes here, without a library to enter
                with user_warnings():
                    outs, aux, g = _grad_pass(fun, flat_fun, leaves, in_tree, store, has_aux, holomorphic,
                                              None)
            else:
                outs, aux, g = _grad_on(fun, flat_fun, leaves, in_tree, store, has_aux, holomorphic, library)
        except ForeignConstant as e:  # a closure over another library's array: compute there
            outs, aux, g = _grad_on(fun, flat_fun, leaves, in_tree, store, has_aux, holomorphic,
                                    library_to_retry(e, library))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        value = to_output(outs[0])
        if has_aux:
            aux = tree_unflatten(store.aux_tree, [to_output(a) for a in aux])  # type: ignore[arg-type]
            return (value, aux), g
        return value, g

    return value_and_grad_fun


def _grad_on(fun: Callable[..., Any], flat_fun: Callable[..., Any], leaves: list[Any], in_tree: PyTreeDef,
             store: OutStore, has_aux: bool, holomorphic: bool, library: Library) -> Any:
    with on_library((), library), user_warnings():
        ins = _in_library(leaves, library)
        return _grad_pass(fun, flat_fun, ins, in_tree, store, has_aux, holomorphic, library)


def grad(
    fun: Callable[P, Any], argnums: int | Sequence[int] = 0, has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable[P, Any]:
    """The gradient of a scalar-valued `fun` with respect to argument(s) `argnums`.

    `grad(f)` is a function taking the same arguments as `f` and returning the
    gradient of `f`'s output at them, computed by reverse mode: `f` runs once,
    as ordinary Python (loops, `if`, recursion on the values), while fgrad
    records its linear part, which is then transposed.

    Arguments:
      fun: a function of arrays, numbers or pytrees (tuples, lists, dicts,
        dataclasses...) of them, returning a real scalar (a 0-d array or a
        number), or `(scalar, aux)` with `has_aux`.
      argnums: which positional argument (an int) or arguments (a tuple) to
        differentiate with respect to. They must hold floating-point (or,
        with `holomorphic`, complex) values.
      has_aux: `fun` returns `(output, aux)`; `aux` comes back beside the
        gradient, without a derivative.
      holomorphic: `fun` is complex to complex and holomorphic: the gradient
        is f'(z). Otherwise a complex input gets df/dx - i df/dy (JAX's).

    Returns:
      A function returning the gradient, shaped like the argument(s) chosen
      (a tuple for a tuple `argnums`); `(gradient, aux)` with `has_aux`.

    Raises:
      TypeError: a non-scalar or integer output, an integer argument in
        `argnums`, or a traced value converted to a plain number inside `fun`
        (`float(x)`, `np.asarray(x)`), which would drop its derivative.

    >>> import fgrad.numpy as fnp
    >>> grad(fnp.sin)(0.0)
    np.float64(1.0)
    >>> grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 3.0)
    (np.float64(3.0), np.float64(2.0))
    >>> grad(lambda p: fnp.sum(p["w"] ** 2) + p["b"])({"w": np.array([1.0, 2.0]), "b": 0.5})
    {'b': np.float64(1.0), 'w': array([2., 4.])}
    >>> grad(lambda x: (x ** 2, x + 1), has_aux=True)(3.0)  # aux: x + 1, without a derivative
    (np.float64(6.0), np.float64(4.0))

    See also `value_and_grad` (the value too, in the same pass), `vjp`
    (any output, with a cotangent), `jacrev` and `hessian`.
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic)

    @functools.wraps(fun)
    def grad_fun(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_fun


# --- jvp and linearize -----------------------------------------------------------


def _check_tangents(primal_leaves: list[Any], primal_tree: PyTreeDef, tangents: Any, what: str) -> list[Any]:
    t_leaves, t_tree = tree_flatten(tangents)
    if t_tree != primal_tree:
        raise TypeError(
            f"the {what} have structure {t_tree}, but the primals have structure {primal_tree}; "
            "they must be the same"
        )
    out = []
    for i, (p, t) in enumerate(zip(primal_leaves, t_leaves)):
        aval = get_aval(p).strip_weak_type()
        t = _check_like(t, aval, "tangent", _leaf_position(primal_tree, i), TypeError)
        # An integer primal has no derivative: its tangent is ignored (zero).
        out.append(t if is_inexact_dtype(aval.dtype) else None)
    return out


@overload
def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: Literal[False] = False) -> tuple[Any, Any]: ...
@overload
def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: Literal[True]) -> tuple[Any, Any, Any]: ...
@overload
def jvp(fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool) -> Any: ...
def jvp(
    fun: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False
) -> Any:
    """Forward mode: `(fun(*primals), J @ tangents)`, the Jacobian-vector product.

    `primals` and `tangents` are tuples (or lists) with one entry per argument.

    >>> import fgrad.numpy as fnp
    >>> jvp(fnp.sin, (0.0,), (2.0,))
    (np.float64(0.0), np.float64(2.0))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError(
            "jvp takes primals and tangents as tuples or lists with one entry per argument, "
            f"got {type(primals).__name__} and {type(tangents).__name__}; "
            "write jvp(f, (x,), (t,))"
        )
    leaves, in_tree = tree_flatten(tuple(primals))
    leaves = [to_traced_input(x) for x in leaves]
    t_leaves = _check_tangents(leaves, in_tree, tuple(tangents), "tangents")
    flat_fun, store = flatten_fun(fun, in_tree, has_aux)
    library = arguments_library([*leaves, *t_leaves])

    def run(library: Library | None) -> tuple[Any, Any, Any]:
        with on_library((), library), user_warnings():
            ins, t_ins = _in_library(leaves, library), _in_library(t_leaves, library)
            outs, t_outs, aux = jvp_flat(flat_fun, ins, t_ins, f"jvp of {fun_name(fun)}", has_aux)
            assert store.tree is not None
            out = tree_unflatten(store.tree, [to_output(x) for x in outs])
            t_out = tree_unflatten(store.tree, [
                _zeros(get_aval(p).strip_weak_type()) if t is None else to_output(t)
                for p, t in zip(outs, t_outs)
            ])
            return out, t_out, aux

    out, t_out, aux = where_the_data_is(run, library)  # or on a closure's library
    if has_aux:
        return out, t_out, tree_unflatten(store.aux_tree, [to_output(a) for a in aux])  # type: ignore[arg-type]
    return out, t_out


@overload
def linearize(fun: Callable[..., Any], *primals: Any,
              has_aux: Literal[False] = False) -> tuple[Any, Callable[..., Any]]: ...
@overload
def linearize(fun: Callable[..., Any], *primals: Any,
              has_aux: Literal[True]) -> tuple[Any, Callable[..., Any], Any]: ...
@overload
def linearize(fun: Callable[..., Any], *primals: Any, has_aux: bool) -> Any: ...
def linearize(fun: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """Evaluate `fun` at `primals` and return its value and its linear
    approximation there: a function from input tangents to the output tangent.
    The primal work is done once; each call of the returned function runs only
    the recorded tangent equations.

    >>> import fgrad.numpy as fnp
    >>> y, f_jvp = linearize(fnp.sin, 0.0)
    >>> f_jvp(2.0)
    np.float64(2.0)
    """
    name = f"linearize of {fun_name(fun)}"
    outs, linear, out_tree, _, aux, in_tree, leaves = _linearize(fun, primals, name, has_aux)
    out = tree_unflatten(out_tree, [to_output(x) for x in outs])
    in_leaves = [np.zeros(a.shape, a.dtype) for a in linear.in_avals]
    library = library_of(leaves)

    def f_jvp(*tangents: Any) -> Any:
        t_in = _check_tangents(in_leaves, in_tree, tangents, "tangents")
        jaxpr = linear.jaxpr
        lib = _library_for(library, t_in)
        with on_library((), lib), user_warnings():
            filled = [_zeros(a) if t is None else t for t, a in zip(_in_library(t_in, lib), linear.in_avals)]
            t_nonzero = iter(eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *filled))
            t_outs = [next(t_nonzero) if nz else None for nz in linear.nonzero_outputs]
            return tree_unflatten(out_tree, [
                _zeros(a) if t is None else to_output(t) for t, a in zip(t_outs, linear.out_avals)
            ])

    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


# --- make_jaxpr -------------------------------------------------------------------


class ShapeDtypeStruct:
    """A stand-in argument for make_jaxpr: only a shape and a dtype.

    >>> ShapeDtypeStruct((3,), np.float32)
    ShapeDtypeStruct(shape=(3,), dtype=float32)
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence[int], dtype: Any) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct)
                and (self.shape, self.dtype) == (other.shape, other.dtype))

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))


@overload
def make_jaxpr(fun: Callable[P, Any], static_argnums: int | Sequence[int] = (),
               return_shape: Literal[False] = False) -> Callable[P, ClosedJaxpr]: ...
@overload
def make_jaxpr(fun: Callable[P, Any], static_argnums: int | Sequence[int] = (), *,
               return_shape: Literal[True]) -> Callable[P, tuple[ClosedJaxpr, Any]]: ...
@overload
def make_jaxpr(fun: Callable[P, Any], static_argnums: int | Sequence[int] = (),
               return_shape: bool = False) -> Callable[P, Any]: ...
def make_jaxpr(
    fun: Callable[..., Any], static_argnums: int | Sequence[int] = (), return_shape: bool = False
) -> Callable[..., Any]:
    """A function that traces `fun` on abstract values of its arguments and
    returns its `ClosedJaxpr` (printable, evaluable with `eval_jaxpr`).

    Arguments may be arrays, scalars, `ShapeDtypeStruct`s, or pytrees of them;
    `static_argnums` are passed through as Python values, not traced.

    >>> import fgrad.numpy as fnp
    >>> print(make_jaxpr(fnp.sin)(np.zeros(3)))
    { lambda ; a:f64[3]. let b:f64[3] = sin a in (b,) }
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    name = fun_name(fun)

    @functools.wraps(fun)
    def make_jaxpr_fun(*args: Any, **kwargs: Any) -> Any:
        static_set = {i + len(args) if i < 0 else i for i in static}
        if any(not 0 <= i < len(args) for i in static_set):
            raise ValueError(f"static_argnums={static_argnums!r} is out of range for {name} "
                             f"called with {len(args)} positional argument{'s' if len(args) != 1 else ''}")
        nums = tuple(i for i in range(len(args)) if i not in static_set)
        partial_fun = with_args(fun, args, nums, kwargs)
        leaves, in_tree = tree_flatten(tuple(args[i] for i in nums))
        avals = [get_aval(x if isinstance(x, (ShapeDtypeStruct, Tracer)) else to_input(x)).strip_weak_type()
                 for x in leaves]
        flat_fun, store = flatten_fun(partial_fun, in_tree, name=name)
        trace = StagingTrace(ctx.trace, f"make_jaxpr of {name}", stage_constants=True,
                             fun_name=name, arg_names=leaf_names(fun, args, nums))
        with tracing(trace):
            outs = flat_fun(*[trace.new_arg(a) for a in avals])
        closed = trace.to_jaxpr(outs)
        if not return_shape:
            return closed
        assert store.tree is not None
        shapes = [ShapeDtypeStruct(a.shape, a.dtype) for a in closed.out_avals]
        return closed, tree_unflatten(store.tree, shapes)

    return make_jaxpr_fun


# --- stop_gradient ------------------------------------------------------------------


def stop_gradient(x: Any) -> Any:
    """`x` unchanged, but treated as a constant by differentiation (a pytree is
    handled leaf by leaf).

    >>> grad(lambda x: stop_gradient(x) * x)(3.0)
    np.float64(3.0)
    """
    if ctx.trace is EVAL_TRACE:
        return tree_map(lambda leaf: to_output(to_input(leaf)), x)
    return tree_map(lambda leaf: elementwise.stop_gradient(to_input(leaf)), x)
