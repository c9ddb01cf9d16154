"""vmap, and what is built on it: Jacobians and Hessians from a vmapped jvp or
vjp over the standard basis (no Python loop over basis vectors).

`in_axes`/`out_axes` are pytree prefixes of the arguments/outputs with ints
(negative count from the end) or None (not mapped), as in JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from typing_extensions import ParamSpec

from ..core.avals import ShapedArray, get_aval
from ..core.fp_warnings import user_warnings
from ..core.libraries import Library, current_library, on_library
from ..primitives import indexing, shapes
from ..transforms.batching import batch_flat
from .arguments import (
    arguments_library,
    check_float_inputs,
    flatten_fun,
    fun_name,
    leaf_names,
    normalize_argnums,
    to_output,
    to_traced_input,
    where_the_data_is,
    with_args,
)
from .pytree import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path, tree_structure, tree_unflatten
from .transformations import jvp, vjp

P = ParamSpec("P")  # the parameters of the user's function, which the result keeps

__all__ = ["vmap", "jacfwd", "jacrev", "jacobian", "hessian"]

Axes = Any  # an int, None, or a pytree prefix of them


def _broadcast_prefix(prefix: Any, tree: PyTreeDef, what: str) -> list[Any]:
    """One entry of `prefix` per leaf of `tree`: the prefix's leaf above it."""
    prefix_leaves, prefix_tree = tree_flatten(prefix, is_leaf=lambda x: x is None)
    try:
        subtrees = prefix_tree.flatten_up_to(tree_unflatten(tree, [0] * tree.num_leaves))
    except ValueError as e:
        raise ValueError(
            f"vmap {what} must be a prefix of the structure it applies to ({tree}), but got "
            f"{prefix!r}: {e}"
        ) from None
    out: list[Any] = []
    for axis, sub in zip(prefix_leaves, subtrees):
        out.extend([axis] * tree_structure(sub).num_leaves)
    return out


def _check_axes_spec(axes: Axes, what: str) -> None:
    for a in tree_flatten(axes, is_leaf=lambda x: x is None)[0]:
        if a is not None and not isinstance(a, (int, np.integer)):
            raise TypeError(f"vmap {what} must hold ints or None, got {a!r}")


def vmap(
    fun: Callable[P, Any], in_axes: Axes = 0, out_axes: Axes = 0, axis_size: int | None = None
) -> Callable[P, Any]:
    """Vectorize `fun` over an axis of its arguments: `vmap(f)(xs)` is
    `stack([f(x) for x in xs])`, computed in one batched pass.

    `in_axes` gives, for each positional argument (a tuple) or for all of them
    (an int or None), the axis holding the examples, None for an argument
    shared by every example. `out_axes` places the examples in the outputs.
    Keyword arguments are mapped over their axis 0.

    >>> import fgrad.numpy as fnp
    >>> vmap(fnp.dot, in_axes=(0, None))(np.eye(2), np.array([3.0, 4.0]))
    array([3., 4.])
    """
    if isinstance(in_axes, list):
        raise TypeError(
            "vmap in_axes must be an int, None, or a tuple with one entry per positional "
            f"argument, but got a list {in_axes!r}; write it as a tuple"
        )
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    name = fun_name(fun)

    @functools.wraps(fun)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap in_axes has {len(in_axes)} entr{'y' if len(in_axes) == 1 else 'ies'} but {name} "
                f"was called with {len(args)} positional argument{'s' if len(args) != 1 else ''}; give one "
                "entry per argument"
            )
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        kw_names = sorted(kwargs)
        all_args = (*args, *(kwargs[k] for k in kw_names))
        axes = (*axes, *([0] * len(kw_names)))
        leaves, in_tree = tree_flatten(all_args)
        leaves = [to_traced_input(x) for x in leaves]
        dims = _broadcast_prefix(axes, in_tree, "in_axes")
        size = _batch_size(fun, all_args, len(args), kw_names, leaves, dims, axis_size)
        dims = [None if d is None else int(d) % max(get_aval(x).ndim, 1) for x, d in zip(leaves, dims)]

        def positional_fun(*a: Any) -> Any:
            return fun(*a[: len(args)], **dict(zip(kw_names, a[len(args):])))

        flat_fun, store = flatten_fun(positional_fun, in_tree, name=name)

        def out_dims() -> list[Any]:
            assert store.tree is not None
            return _broadcast_prefix(out_axes, store.tree, "out_axes")

        library = arguments_library(leaves)

        def run(library: Library | None) -> list[Any]:
            with on_library((), library), user_warnings():
                return batch_flat(flat_fun, leaves, dims, out_dims, size, f"vmap of {name}",
                                  lambda: _names(fun, args, kwargs, kw_names))

        outs = where_the_data_is(run, library)  # or on a closure's library
        assert store.tree is not None
        return tree_unflatten(store.tree, [to_output(x) for x in outs])

    return vmapped


def _names(fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
           kw_names: list[str]) -> list[str]:
    """A name for each leaf of the arguments, positional then keyword, for messages."""
    names = leaf_names(fun, args, range(len(args)))
    return names + [k + keystr(path) for k in kw_names for path, _ in tree_flatten_with_path(kwargs[k])[0]]


def _batch_size(fun: Callable[..., Any], args: tuple[Any, ...], n_positional: int, kw_names: list[str],
                leaves: list[Any], dims: list[Any], axis_size: int | None) -> int:
    sizes: list[tuple[int, int, ShapedArray]] = []  # (leaf index, axis, aval) of each mapped leaf
    bad_axis = None
    for i, (x, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        aval = get_aval(x)
        if not -aval.ndim <= d < aval.ndim and bad_axis is None:
            bad_axis = i
        sizes.append((i, d, aval))
    if not sizes:
        if axis_size is None:
            raise ValueError(
                "vmap needs at least one argument with an integer in_axes, or axis_size= to say "
                "how many examples there are"
            )
        return axis_size
    if bad_axis is None:
        distinct = {aval.shape[d] for _, d, aval in sizes}
        if len(distinct) == 1 and (axis_size is None or axis_size in distinct):
            return distinct.pop()
    # An error: only now name the leaves, which costs more than the checks.
    names = leaf_names(fun, args[:n_positional], range(n_positional))
    for k in kw_names:
        names += [k + path for path in _paths(args[n_positional + kw_names.index(k)])]
    if bad_axis is not None:
        aval, d = get_aval(leaves[bad_axis]), dims[bad_axis]
        raise ValueError(
            f"vmap was asked to map argument `{names[bad_axis]}` along axis {d}, but it has only "
            f"{aval.ndim} dimension{'s' if aval.ndim != 1 else ''} (shape {aval.shape})"
        )
    lines = "\n".join(
        f"  * argument `{names[i]}` ({aval.str_short()}): axis {d} has size {aval.shape[d]}"
        for i, d, aval in sizes
    )
    extra = f"\n  * axis_size={axis_size}" if axis_size is not None else ""
    raise ValueError(f"vmap got inconsistent sizes for the axes to be mapped:\n{lines}{extra}")


def _paths(tree: Any) -> list[str]:
    from .pytree import keystr, tree_flatten_with_path

    return [keystr(p) for p, _ in tree_flatten_with_path(tree)[0]]


# --- Jacobians ------------------------------------------------------------------


# A fresh identity costs more in page faults than the arithmetic of a small
# Jacobian; those of modest size are kept, read-only, for the next call.
_CACHED_IDENTITY_BYTES = 1 << 22


@functools.lru_cache(maxsize=4)
def _identity(n: int, dtype: np.dtype) -> np.ndarray:
    eye = np.eye(n, dtype=dtype)
    eye.flags.writeable = False
    return eye


def _std_basis(avals: Sequence[ShapedArray]) -> list[Any]:
    """The standard basis of the flattened, concatenated `avals`, split back
    into arrays of shape (total size, *aval.shape).

    Each piece has its own aval's dtype, not one dtype common to all: it is a
    tangent (jacfwd) or cotangent (jacrev) for that leaf, and those must have
    the leaf's dtype; a float32 input beside a float64 one gets a float32 basis.
    As in JAX, jacfwd's Jacobians then have the outputs' dtypes (by NumPy
    promotion inside the function) and jacrev's the inputs' dtypes. On another
    array library (core/libraries.py) the identities are that library's arrays.
    """
    total = sum(a.size for a in avals)
    lib = current_library()
    eyes: dict[np.dtype, Any] = {}
    out, start = [], 0
    for a in avals:
        if a.dtype not in eyes:
            eyes[a.dtype] = _eye(total, a.dtype) if lib is None else lib.asarray(_eye(total, a.dtype))
        piece = eyes[a.dtype][:, start:start + a.size]
        shape = (total, *a.shape)
        out.append(piece.reshape(shape) if lib is None else lib.xp.reshape(piece, shape))
        start += a.size
    return out


def _eye(n: int, dtype: np.dtype) -> np.ndarray:
    """An n x n identity of `dtype`: the cached, read-only one when it is small."""
    if n * n * dtype.itemsize <= _CACHED_IDENTITY_BYTES:
        return _identity(n, dtype)
    return np.eye(n, dtype=dtype)


def _split(jac: Any, axis: int, avals: Sequence[ShapedArray], lead: tuple[int, ...],
           trail: tuple[int, ...]) -> list[Any]:
    """Cut the flattened axis `axis` of `jac` into pieces shaped like `avals`,
    giving arrays of shape lead + aval.shape + trail."""
    pieces, start = [], 0
    ndim = get_aval(jac).ndim
    for a in avals:
        idx = [slice(None)] * ndim
        idx[axis] = slice(start, start + a.size)
        piece = indexing.getitem(jac, idx=indexing.StaticIndex(idx)) if len(avals) > 1 else jac
        pieces.append(shapes.reshape(piece, new_shape=lead + a.shape + trail))
        start += a.size
    return pieces


def _prepare(fun: Callable[..., Any], argnums: int | Sequence[int], args: tuple[Any, ...],
             kwargs: dict[str, Any], transform: str,
             kinds: str) -> tuple[Callable[..., Any], tuple[Any, ...], PyTreeDef, list[Any]]:
    nums = normalize_argnums(argnums, len(args), fun)
    dyn = tuple(args[i] for i in nums)
    leaves, in_tree = tree_flatten(dyn)
    leaves = [to_traced_input(x) for x in leaves]
    check_float_inputs(transform, fun, args, nums, leaves, kinds)
    return with_args(fun, args, nums, kwargs), tuple(tree_unflatten(in_tree, leaves)), in_tree, leaves


def _arg_structure(in_tree: PyTreeDef, argnums: int | Sequence[int]) -> Callable[[list[Any]], Any]:
    """Rebuild the differentiated arguments from leaves: one argument for an int argnums."""
    if isinstance(argnums, int):
        return lambda leaves: tree_unflatten(in_tree, leaves)[0]
    return lambda leaves: tree_unflatten(in_tree, leaves)


def _check_outputs(transform: str, fun: Callable[..., Any], avals: Sequence[ShapedArray],
                   holomorphic: bool) -> None:
    for a in avals:
        if holomorphic and a.dtype.kind != "c":
            raise TypeError(f"{transform}(holomorphic=True) requires complex outputs, but "
                            f"{fun_name(fun)} returns dtype {a.dtype}")
        if not holomorphic and a.dtype.kind != "f":
            raise TypeError(
                f"{transform} requires float outputs, but {fun_name(fun)} returns dtype {a.dtype}; "
                + ("pass holomorphic=True for a holomorphic function, or use fgrad.vjp directly"
                   if a.dtype.kind == "c" else "convert the output with .astype(float) or use jacfwd")
            )


def jacfwd(fun: Callable[P, Any], argnums: int | Sequence[int] = 0,
           has_aux: bool = False, holomorphic: bool = False) -> Callable[P, Any]:
    """The Jacobian of `fun` by forward mode: one vmapped jvp over the standard
    basis of the inputs. For an array input of shape S and output of shape T
    the Jacobian has shape T + S; for pytrees it is the output's structure with,
    at each leaf, the structure of the inputs.

    >>> import fgrad.numpy as fnp
    >>> jacfwd(fnp.sin)(np.zeros(2))
    array([[1., 0.],
           [0., 1.]])
    """

    @functools.wraps(fun)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        f, dyn, in_tree, leaves = _prepare(fun, argnums, args, kwargs, "jacfwd", "c" if holomorphic else "f")
        with on_library((), arguments_library(args, kwargs)):  # the vmap, its jvps, the splitting
            return _jacfwd(fun, f, dyn, in_tree, leaves, argnums, has_aux, holomorphic)

    return jacfun


def _jacfwd(fun: Callable[..., Any], f: Callable[..., Any], dyn: tuple[Any, ...], in_tree: PyTreeDef,
            leaves: list[Any], argnums: int | Sequence[int], has_aux: bool, holomorphic: bool) -> Any:
    in_avals = [get_aval(x).strip_weak_type() for x in leaves]

    def pushfwd(*basis: Any) -> Any:
        return jvp(f, dyn, tuple(tree_unflatten(in_tree, list(basis))), has_aux=has_aux)

    out_axes = (None, -1, None) if has_aux else (None, -1)
    results = vmap(pushfwd, out_axes=out_axes)(*_std_basis(in_avals))
    y, jac = results[0], results[1]
    y_leaves, y_tree = tree_flatten(y)
    if holomorphic:
        _check_outputs("jacfwd", fun, [get_aval(x) for x in y_leaves], holomorphic)
    rebuild = _arg_structure(in_tree, argnums)
    jac_leaves = []
    for yl, jl in zip(y_leaves, tree_flatten(jac)[0]):
        shape = get_aval(yl).shape
        jac_leaves.append(rebuild(_split(jl, -1, in_avals, shape, ())))
    out = tree_unflatten(y_tree, jac_leaves)
    return (out, results[2]) if has_aux else out


def jacrev(fun: Callable[P, Any], argnums: int | Sequence[int] = 0,
           has_aux: bool = False, holomorphic: bool = False) -> Callable[P, Any]:
    """The Jacobian of `fun` by reverse mode: one vjp, its pullback vmapped over
    the standard basis of the outputs. Same result structure as `jacfwd`.

    >>> import fgrad.numpy as fnp
    >>> jacrev(lambda x: x ** 2)(np.array([1.0, 3.0]))
    array([[2., 0.],
           [0., 6.]])
    """

    @functools.wraps(fun)
    def jacfun(*args: Any, **kwargs: Any) -> Any:
        f, dyn, in_tree, leaves = _prepare(fun, argnums, args, kwargs, "jacrev", "c" if holomorphic else "fc")
        with on_library((), arguments_library(args, kwargs)):  # the vjp, its pullback's vmap, the splitting
            return _jacrev(fun, f, dyn, in_tree, leaves, argnums, has_aux, holomorphic)

    return jacfun


def _jacrev(fun: Callable[..., Any], f: Callable[..., Any], dyn: tuple[Any, ...], in_tree: PyTreeDef,
            leaves: list[Any], argnums: int | Sequence[int], has_aux: bool, holomorphic: bool) -> Any:
    in_avals = [get_aval(x).strip_weak_type() for x in leaves]
    if has_aux:
        y, pullback, aux = vjp(f, *dyn, has_aux=True)
    else:
        y, pullback = vjp(f, *dyn)
    y_leaves, y_tree = tree_flatten(y)
    out_avals = [get_aval(x).strip_weak_type() for x in y_leaves]
    _check_outputs("jacrev", fun, out_avals, holomorphic)
    basis = tree_unflatten(y_tree, _std_basis(out_avals))
    cts = tree_flatten(vmap(pullback)(basis))[0]  # per input leaf: (total output size, *shape)
    rebuild = _arg_structure(in_tree, argnums)
    per_output = [_split(ct, 0, out_avals, (), a.shape) for ct, a in zip(cts, in_avals)]
    jac_leaves = [rebuild([pieces[j] for pieces in per_output]) for j in range(len(out_avals))]
    out = tree_unflatten(y_tree, jac_leaves)
    return (out, aux) if has_aux else out


jacobian = jacrev


def hessian(fun: Callable[P, Any], argnums: int | Sequence[int] = 0,
            has_aux: bool = False, holomorphic: bool = False) -> Callable[P, Any]:
    """The Hessian of a scalar `fun`: `jacfwd(jacrev(fun))`, forward over reverse.

    >>> import fgrad.numpy as fnp
    >>> hessian(lambda x: fnp.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)
