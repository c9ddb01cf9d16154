"""Random programs built from fgrad's primitives, for the property tests of
tests/test_random_programs.py.

A `Program` is a list of `Op`s on registers: registers 0 (and 1) are the
inputs, each op reads earlier registers and appends one. `run` interprets a
program on a `Backend`: `numpy_backend()` runs it with NumPy (control flow as
Python control flow, a nested grad written out), `FGRAD` with fgrad.numpy and
fgrad.lax, so the same program has a NumPy reference and can be transformed.
`programs()` is the hypothesis strategy; ops are drawn by family (`FAMILIES`)
and control flow takes nested bodies (`_bodies`).

Domains are safe by construction: every register carries a bound on its
absolute value, ops whose domain is restricted shift their argument by that
bound (log and sqrt of `bound + 1 + a`, division by `bound + 1 + b`), exp only
takes small registers, and a register whose bound grows past `_CAP` is scaled
back. Matrices are made well conditioned where they are built (diagonally
dominant for solve, inv and det, `B Bᵀ + n I` for cholesky). Repeated entries
are shifted apart before max and sort; the kinks that remain (near-ties, the
switch of cond and where, a loop's data-dependent trip count) are measured on
the NumPy run (`Backend.margins`), so that a test keeps only points away from
them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp

_CAP = 4.0  # registers are kept within [-_CAP, _CAP] (by their bound)


@dataclass(frozen=True)
class Op:
    kind: str
    ins: tuple[int, ...]
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, name: str) -> Any:
        return dict(self.params)[name]

    def __repr__(self) -> str:
        args = ", ".join(f"r{i}" for i in self.ins)
        shown = ", ".join(f"{k}={_short(v)}" for k, v in self.params)
        return f"{self.kind}({args}{', ' if shown and args else ''}{shown})"


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array({np.array2string(v, precision=3, separator=',')})"
    return repr(v)


@dataclass
class Program:
    """Inputs of `in_shapes`; `ops` each append a register; `bounds` bound them."""

    in_shapes: tuple[tuple[int, ...], ...]
    ops: list[Op] = field(default_factory=list)
    shapes: list[tuple[int, ...]] = field(default_factory=list)
    bounds: list[float] = field(default_factory=list)

    @property
    def features(self) -> set[str]:
        kinds = {op.kind for op in self.ops}
        for op in self.ops:
            for k, v in op.params:
                if k in ("body", "other"):
                    kinds |= _names_in(v)
        return kinds

    @property
    def has_custom_vjp(self) -> bool:
        """Forward mode of a custom_vjp function is a TypeError (as in JAX)."""
        return bool(self.features & {"soft_sign", "scaled_sin"})

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # how hypothesis shows it
        printer.text(repr(self))

    def __repr__(self) -> str:
        lines = [f"Program(inputs {', '.join(f'r{i}: {s}' for i, s in enumerate(self.in_shapes))}"]
        n = len(self.in_shapes)
        for i, (op, shape) in enumerate(zip(self.ops, self.shapes[n:])):
            lines.append(f"  r{n + i}: {shape} = {op!r}")
        return "\n".join(lines) + ")"


# ---------------------------------------------------------------- backends


@dataclass
class Backend:
    """What a program runs on: an array module and control flow."""

    np: Any
    cond: Callable[..., Any]
    scan: Callable[..., Any]
    while_loop: Callable[..., Any]
    fori_loop: Callable[..., Any]
    checkpoint: Callable[..., Any]
    soft_sign: Callable[[Any], Any]
    scaled_sin: Callable[[Any, Any], Any]
    margins: list[float] | None = None  # kinks measured, on the NumPy backend

    def record(self, margin: Any) -> None:
        if self.margins is not None:
            self.margins.append(float(margin))


def _np_scan(f: Callable[..., Any], init: Any, xs: Any, reverse: bool) -> tuple[Any, Any]:
    carry, ys = init, []
    for x in (xs[::-1] if reverse else xs):
        carry, y = f(carry, x)
        ys.append(y)
    return carry, np.stack(ys[::-1] if reverse else ys)


def _np_while(cond: Callable[..., Any], body: Callable[..., Any], val: Any) -> Any:
    while cond(val):
        val = body(val)
    return val


def _np_fori(lo: int, hi: int, body: Callable[..., Any], val: Any) -> Any:
    for i in range(lo, hi):
        val = body(i, val)
    return val


def _soft_sign_np(x: Any) -> Any:
    return x / (1 + x * x)


def _scaled_sin_np(a: Any, b: Any) -> Any:
    return a * np.sin(b)


@fgrad.custom_vjp
def soft_sign(x: Any) -> Any:
    """x / (1 + x²), with a hand-written reverse rule."""
    return x / (1 + x * x)


def _soft_sign_fwd(x: Any) -> tuple[Any, Any]:
    return soft_sign(x), x


def _soft_sign_bwd(x: Any, g: Any) -> tuple[Any]:
    d = 1 + x * x
    return (g * (1 - x * x) / (d * d),)


soft_sign.defvjp(_soft_sign_fwd, _soft_sign_bwd)


@fgrad.custom_vjp
def scaled_sin(a: Any, b: Any) -> Any:
    """a * sin(b) for a and b of one shape, with a hand-written reverse rule."""
    return a * fnp.sin(b)


def _scaled_sin_fwd(a: Any, b: Any) -> tuple[Any, Any]:
    return scaled_sin(a, b), (a, b)


def _scaled_sin_bwd(res: Any, g: Any) -> tuple[Any, Any]:
    a, b = res
    return g * fnp.sin(b), g * a * fnp.cos(b)


scaled_sin.defvjp(_scaled_sin_fwd, _scaled_sin_bwd)


def numpy_backend() -> Backend:
    return Backend(np, lambda p, t, f, *ops: t(*ops) if p else f(*ops), _np_scan, _np_while, _np_fori,
                   lambda fn: fn, _soft_sign_np, _scaled_sin_np, margins=[])


FGRAD = Backend(fnp, lambda *a: fgrad.lax.cond(*a),
                lambda f, init, xs, reverse: fgrad.lax.scan(f, init, xs, reverse=reverse),
                lambda *a: fgrad.lax.while_loop(*a), lambda *a: fgrad.lax.fori_loop(*a),
                fgrad.checkpoint, soft_sign, scaled_sin)


# ---------------------------------------------------------------- ops

# Unary ops: (function of (module, a, bound of a), bound of the result).
_UNARY: dict[str, tuple[Callable[[Any, Any, float], Any], Callable[[float], float]]] = {
    "log": (lambda m, a, b: m.log(b + 1.0 + a), lambda b: math.log(2 * b + 1) + 1e-9),
    "sin": (lambda m, a, b: m.sin(a), lambda b: 1.0),
    "exp": (lambda m, a, b: m.exp(a), lambda b: math.exp(b)),
    "cos": (lambda m, a, b: m.cos(a), lambda b: 1.0),
    "sqrt": (lambda m, a, b: m.sqrt(b + 1.0 + a), lambda b: math.sqrt(2 * b + 1)),
    "tanh": (lambda m, a, b: m.tanh(a), lambda b: 1.0),
    "square": (lambda m, a, b: a * a, lambda b: b * b),
    "neg": (lambda m, a, b: -a, lambda b: b),
    "pow3": (lambda m, a, b: a ** 3, lambda b: b ** 3),
}
# The functions inside control flow ("bodies"): arrays to arrays of the same
# shape, bounded by 1. A leaf is a unary op (soft_sign is a custom_vjp); a
# tuple nests control flow: ("cond", true body, false body) on the sign of the
# sum, ("fori" | "while" | "scan" | "checkpoint" | "jit", body).
_BODY_UNARY = ("sin", "cos", "tanh", "soft_sign")
_PLAIN = ("sin", "cos", "tanh")


def _names_in(spec: Any) -> set[str]:
    if isinstance(spec, str):
        return {spec}
    return {spec[0]}.union(*(_names_in(s) for s in spec[1:]))


def _body(be: Backend, spec: Any, a: Any) -> Any:
    m = be.np
    if isinstance(spec, str):
        return be.soft_sign(a) if spec == "soft_sign" else _UNARY[spec][0](m, a, 1.0)
    kind, inner = spec[0], spec[1]
    if kind == "cond":
        total = m.sum(a)
        be.record(abs(total) if be.margins is not None else 0.0)
        return be.cond(total > 0, lambda v: _body(be, inner, v), lambda v: _body(be, spec[2], v), a)
    if kind == "fori":
        return be.fori_loop(0, 2, lambda i, v: _body(be, inner, v + 0.1 * i), a)
    if kind == "while":
        return be.while_loop(lambda val: val[0] < 2, lambda val: (val[0] + 1, _body(be, inner, val[1])),
                             (0, a))[1]
    if kind == "scan" and np.ndim(a) > 0:
        def step(carry: Any, x: Any) -> tuple[Any, Any]:
            new = _body(be, inner, 0.5 * carry + x)
            return new, new

        return be.scan(step, a[0] * 0.0, a, False)[1]
    if kind == "checkpoint":
        return be.checkpoint(lambda v: _body(be, inner, v))(a)
    if kind == "jit":
        return _body(be, inner, a) if m is np else fgrad.jit(lambda v: _body(be, inner, v))(a)
    return _body(be, inner, a)  # a scan of a 0-d value: its body


def _offsets(n: int) -> np.ndarray:
    """Distinct shifts along an axis before a max, so that repeated entries
    (broadcasting, repeated indices) do not tie."""
    return np.linspace(0.0, 0.5, n) if n > 1 else np.zeros(n)


def _max_margin(v: np.ndarray, axis: int | None) -> float:
    """The gap between the two largest entries of each reduced slice."""
    flat = v.reshape(1, -1) if axis is None else np.moveaxis(v, axis, -1).reshape(-1, v.shape[axis])
    if flat.shape[-1] < 2:
        return math.inf
    top = np.sort(flat, axis=-1)
    return float(np.min(top[:, -1] - top[:, -2]))


def _apply(op: Op, be: Backend, regs: list[Any], bounds: list[float]) -> Any:
    m, kind = be.np, op.kind
    a = regs[op.ins[0]] if op.ins else None
    ba = bounds[op.ins[0]] if op.ins else 0.0
    if kind in _UNARY:
        return _UNARY[kind][0](m, a, ba)
    b = regs[op.ins[1]] if len(op.ins) > 1 else None
    bb = bounds[op.ins[1]] if len(op.ins) > 1 else 0.0
    if kind == "add":
        return a + b
    if kind == "sub":
        return a - b
    if kind == "mul":
        return a * b
    if kind == "div":
        return a / (bb + 1.0 + b)
    if kind == "maximum":
        if be.margins is not None:
            be.record(np.min(np.abs(np.asarray(a) - np.asarray(b)), initial=math.inf))
        return m.maximum(a, b)
    if kind == "soft_sign":
        return be.soft_sign(a)
    if kind == "scaled_sin":
        return be.scaled_sin(a, b)
    if kind in ("sum", "mean"):
        return getattr(m, kind)(a, axis=op.param("axis"), keepdims=op.param("keepdims"))
    if kind == "max":
        axis = op.param("axis")
        n = np.size(a) if axis is None else np.shape(a)[axis]
        shape = [1] * np.ndim(a)
        if axis is not None:
            shape[axis] = n
        shifts = _offsets(n).reshape(shape if axis is not None else np.shape(a))
        v = a + shifts
        if be.margins is not None:
            be.record(_max_margin(np.asarray(v), axis))
        return m.max(v, axis=axis, keepdims=op.param("keepdims"))
    if kind == "cumsum":
        return m.cumsum(a, axis=op.param("axis"))
    if kind == "prod":  # of factors in [0.5, 1.5]
        return m.prod(1.0 + 0.5 * m.tanh(a), axis=op.param("axis"), keepdims=op.param("keepdims"))
    if kind == "sort":  # shifted as for max, so that repeated entries do not tie
        axis = op.param("axis")
        shape = [1] * np.ndim(a)
        shape[axis] = np.shape(a)[axis]
        v = a + _offsets(shape[axis]).reshape(shape)
        if be.margins is not None:
            gaps = np.diff(np.sort(np.asarray(v), axis=axis), axis=axis)
            be.record(np.min(gaps, initial=math.inf))
        return m.sort(v, axis=axis)
    if kind == "concatenate":
        return m.concatenate([a, b], axis=op.param("axis"))
    if kind == "stack":
        return m.stack([a, b], axis=op.param("axis"))
    if kind == "reshape":
        return m.reshape(a, np.shape(a)[::-1])
    if kind == "flip":
        return m.flip(a, axis=op.param("axis"))
    if kind in ("det", "inv", "slogdet"):
        if op.param("outer"):  # a matrix from a register that is none: v ⊗ reversed v
            v = m.ravel(a)[:3]
            a = m.outer(v, v[::-1])
        n = np.shape(a)[-1]
        mat = (n + 1.0) * np.eye(n) + m.tanh(a)
        if kind == "det":  # |det| <= (n + 2)^n by Hadamard's inequality
            return m.linalg.det(mat) / (n + 2.0) ** n
        if kind == "inv":
            return m.linalg.inv(mat)
        return m.linalg.slogdet(mat)[1]
    if kind == "scale":
        return a * op.param("c")
    if kind == "transpose":
        return m.transpose(a)
    if kind == "ravel":
        return m.ravel(a)
    if kind == "broadcast":
        return m.broadcast_to(a, op.param("shape"))
    if kind == "slice":
        return a[op.param("index")]
    if kind == "getitem_int":
        return a[op.param("idx")]
    if kind == "take":
        return m.take(a, op.param("idx"), axis=op.param("axis"))
    if kind == "matmul":
        return m.matmul(a, b)
    if kind == "matmul_const":
        return m.matmul(a, op.param("c"))
    if kind == "solve":
        n = np.shape(a)[0]
        mat = a if np.ndim(a) == 2 else m.outer(a, a[::-1])
        return m.linalg.solve((n + 1.0) * np.eye(n) + m.tanh(mat), b)
    if kind == "cholesky":
        n = np.shape(a)[0]
        f = m.tanh(m.reshape(a, (n, -1)))
        return m.linalg.cholesky(m.matmul(f, m.transpose(f)) + n * np.eye(n))
    if kind == "cond":
        p, w, c = regs[op.ins[0]], regs[op.ins[1]], regs[op.ins[2]]
        pred = m.sum(p) - op.param("shift")
        be.record(abs(pred) if be.margins is not None else 0.0)
        scale = m.mean(c)  # closed over by both branches
        body, other = op.param("body"), op.param("other")
        return be.cond(pred > 0, lambda w: _body(be, body, w) * scale,
                       lambda w: _body(be, other, w) - 0.5 * w, w)
    if kind == "scan":
        xs, c = regs[op.ins[0]], regs[op.ins[1]]
        scale, body = m.mean(c), op.param("body")

        def step(carry: Any, x: Any) -> tuple[Any, Any]:
            return m.tanh(0.8 * carry + _body(be, body, x) * scale), carry * x

        carry, ys = be.scan(step, xs[0] * 0.5, xs, op.param("reverse"))
        return carry if op.param("carry") else ys
    if kind == "while":
        w, c = regs[op.ins[0]], regs[op.ins[1]]
        scale, body, n = m.mean(c), op.param("body"), _trip_count(op, be, regs)

        def while_body(val: tuple[Any, Any]) -> tuple[Any, Any]:
            i, v = val
            return i + 1, 0.5 * v + _body(be, body, v * scale)

        return be.while_loop(lambda val: val[0] < n, while_body, (0, w))[1]
    if kind == "fori":
        w, c = regs[op.ins[0]], regs[op.ins[1]]
        scale, body = m.mean(c), op.param("body")
        return be.fori_loop(0, _trip_count(op, be, regs),
                            lambda i, v: 0.5 * v + _body(be, body, v + 0.25 * i) * scale, w)
    if kind == "where":
        p, x, y = (regs[i] for i in op.ins)
        if be.margins is not None:
            be.record(np.min(np.abs(np.asarray(p) - 0.1), initial=math.inf))
        return m.where(p > 0.1, x, y)
    if kind in ("inner_grad", "inner_jit", "inner_vmap"):
        return _nested(op, be, regs[op.ins[0]], regs[op.ins[1]])
    if kind == "checkpoint":
        w, c = regs[op.ins[0]], regs[op.ins[1]]
        body, other = op.param("body"), op.param("other")

        def inner(w: Any, c: Any) -> Any:
            return _body(be, other, _body(be, body, w) * m.mean(c)) * w

        return be.checkpoint(inner)(w, c)
    raise AssertionError(f"unknown op {kind}")


def _trip_count(op: Op, be: Backend, regs: list[Any]) -> Any:
    """The loop's bound: `n`, or (given a third register p) n or n + 2 as
    sum(p) > 0, traced, so that examples of a batch run different numbers of
    iterations."""
    n = op.param("n")
    if len(op.ins) < 3:
        return n
    total = be.np.sum(regs[op.ins[2]])
    if be.margins is not None:
        be.record(abs(total))
        return n if total > 0 else n + 2
    return be.np.where(total > 0, n, n + 2)


_DERIVATIVES = {"sin": np.cos, "cos": lambda a: -np.sin(a), "tanh": lambda a: 1 - np.tanh(a) ** 2}


def _nested(op: Op, be: Backend, w: Any, c: Any) -> Any:
    """A transform inside the program, closing over the outer program's values
    (`c`, perhaps `w` itself): with NumPy, its result written out."""
    m, body = be.np, op.param("body")
    if op.kind == "inner_grad":  # d/dw sum(body(w) * mean(c)), c held constant
        if m is np:
            return _DERIVATIVES[body](w) * np.mean(c)
        return fgrad.grad(lambda w: m.sum(_body(be, body, w) * m.mean(c)))(w)
    if op.kind == "inner_jit":
        fn = lambda w: _body(be, body, w) * m.mean(c) + 0.5 * w  # noqa: E731
        return fn(w) if m is np else fgrad.jit(fn)(w)
    # inner_vmap: each row scaled by its own mean
    if m is np:
        rows = np.mean(w, axis=tuple(range(1, np.ndim(w))), keepdims=True)
        return _body(be, body, w) * rows * np.mean(c)
    return fgrad.vmap(lambda row: _body(be, body, row) * m.mean(row) * m.mean(c))(w)


def run(program: Program, be: Backend, *inputs: Any) -> list[Any]:
    """All registers of `program` on `inputs` (the inputs first)."""
    regs = list(inputs)
    for op in program.ops:
        regs.append(_apply(op, be, regs, program.bounds))
    return regs


def outputs(program: Program, regs: list[Any]) -> list[Any]:
    """The registers the program computed (the inputs if none)."""
    n = len(program.in_shapes)
    return regs[n:] or regs


def scalar_fn(program: Program, be: Backend = FGRAD) -> Callable[..., Any]:
    """The program as a function to a scalar: a weighted sum of its registers'
    entries, each entry its own weight (a plain sum would not see a wrong
    permutation, of sort for one)."""

    def f(*inputs: Any) -> Any:
        regs = outputs(program, run(program, be, *inputs))
        total = 0.0
        for k, r in enumerate(regs):
            size = max(1, math.prod(np.shape(r)))
            weights = np.linspace(0.5, 1.5, size).reshape(np.shape(r)) * (1 + 0.25 * k)
            total = total + be.np.sum(r * weights)
        return total

    return f


def vector_fn(program: Program, be: Backend = FGRAD) -> Callable[..., Any]:
    """The program as a function to a vector: its registers, raveled and joined."""

    def f(*inputs: Any) -> Any:
        regs = outputs(program, run(program, be, *inputs))
        return be.np.concatenate([be.np.ravel(r) for r in regs])

    return f


def inputs_for(program: Program, seed: int, batch: int | None = None) -> list[np.ndarray]:
    """Inputs in [-1, 1] of the program's shapes (with a leading batch axis if given)."""
    rng = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    return [rng.uniform(-1.0, 1.0, size=lead + s) for s in program.in_shapes]


# ---------------------------------------------------------------- strategy

# Kinds of op by family: the strategy draws a family, then a member, so that
# each family is as likely as the others whatever its size.
FAMILIES: dict[str, tuple[str, ...]] = {
    "unary": tuple(_UNARY),
    "binary": ("add", "sub", "mul", "div", "maximum", "where"),
    "reduction": ("sum", "mean", "max", "prod", "cumsum", "sort"),
    "shaping": ("transpose", "ravel", "broadcast", "reshape", "flip", "concatenate", "stack"),
    "indexing": ("slice", "getitem_int", "take"),
    "linalg": ("matmul", "matmul_const", "solve", "cholesky", "det", "inv", "slogdet"),
    "control": ("cond", "scan", "while", "fori"),
    "custom": ("checkpoint", "soft_sign", "scaled_sin"),
    "nested": ("inner_grad", "inner_jit", "inner_vmap"),
}
_ALL_KINDS = tuple(k for family in FAMILIES.values() for k in family)
#: Ops without custom_vjp (whose forward mode is a TypeError).
FORWARD_KINDS = tuple(k for k in _ALL_KINDS if k not in ("soft_sign", "scaled_sin"))
#: Ops with second derivatives: all with forward mode (a while_loop's tape has every rule).
HESSIAN_KINDS = FORWARD_KINDS

_input_shapes = st.sampled_from([(), (1,), (3,), (2,), (2, 3), (3, 3), (2, 2), (1, 3), (3, 1), (2, 1, 3)])


def _shape_of(op: Op, program: Program) -> tuple[int, ...] | None:
    """The op's output shape, by running it with NumPy on zeros (None if invalid)."""
    regs = [np.zeros(s) for s in program.shapes]
    try:
        with np.errstate(all="ignore"):
            out = _apply(op, numpy_backend(), regs, program.bounds)
    except (ValueError, IndexError, np.linalg.LinAlgError):
        return None
    return np.shape(out)


def _reduced_size(shape: tuple[int, ...], axis: int | tuple[int, ...] | None) -> int:
    if axis is None:
        return math.prod(shape)
    return math.prod(shape[a] for a in (axis if isinstance(axis, tuple) else (axis,)))


def _bound(op: Op, program: Program) -> float:
    b = [program.bounds[i] for i in op.ins]
    shapes = [program.shapes[i] for i in op.ins]
    kind = op.kind
    if kind in _UNARY:
        return _UNARY[kind][1](b[0])
    if kind in ("add", "sub"):
        return b[0] + b[1]
    if kind == "mul":
        return b[0] * b[1]
    if kind in ("div", "maximum", "mean", "transpose", "ravel", "broadcast", "slice", "getitem_int",
                "take"):
        return max(b[0], b[1]) if kind == "maximum" else b[0]
    if kind == "max":
        return b[0] + 0.5
    if kind == "sum":
        axis = op.param("axis")
        return b[0] * _reduced_size(shapes[0], axis)
    if kind == "scale":
        return b[0] * abs(op.param("c"))
    if kind in ("reshape", "flip"):
        return b[0]
    if kind == "sort":
        return b[0] + 0.5
    if kind in ("concatenate", "stack"):
        return max(b)
    if kind == "cumsum":
        axis = op.param("axis")
        return b[0] * _reduced_size(shapes[0], axis)
    if kind == "prod":
        axis = op.param("axis")
        return 1.5 ** _reduced_size(shapes[0], axis)
    if kind == "det":
        return 1.0
    if kind == "inv":
        return 1.0  # |A⁻¹|∞ <= 1, as for solve
    if kind == "slogdet":
        n = min(3, math.prod(shapes[0])) if op.param("outer") else shapes[0][-1]
        return n * math.log(n + 2.0)
    if kind == "matmul":
        return b[0] * b[1] * shapes[0][-1]
    if kind == "matmul_const":
        return b[0] * shapes[0][-1]
    if kind == "solve":
        return b[1]  # |A⁻¹|∞ <= 1: A's diagonal exceeds its row's off-diagonal sum by 1
    if kind == "cholesky":
        return math.sqrt(2 * shapes[0][0] + math.prod(shapes[0]))
    if kind in ("soft_sign",):
        return 0.5
    if kind == "scaled_sin":
        return b[0]
    if kind == "cond":
        return max(b[2], 1 + 0.5 * b[1])
    if kind == "scan":
        return 1.0 if op.param("carry") else b[0] * max(1.0, 0.5 * b[0])
    if kind == "while":
        return max(b[0], 2.0)
    if kind == "fori":
        return max(b[0], 2 * b[1])
    if kind == "checkpoint":
        return b[0]
    if kind == "where":
        return max(b[1], b[2])
    if kind == "inner_grad":
        return b[1]
    if kind == "inner_jit":
        return b[1] + 0.5 * b[0]
    if kind == "inner_vmap":
        return b[0] * b[1]
    raise AssertionError(kind)


@st.composite
def _op(draw: Any, program: Program, kinds: Sequence[str]) -> Op:
    n = len(program.shapes)
    reg = st.integers(0, n - 1)
    families = [f for f in FAMILIES.values() if set(f) & set(kinds)]
    kind = draw(st.sampled_from([k for k in draw(st.sampled_from(families)) if k in kinds]))
    i = draw(reg)
    shape, bound = program.shapes[i], program.bounds[i]
    if kind == "exp" and bound > 2.0:
        kind = "tanh"
    if kind in _UNARY or kind in ("transpose", "ravel", "soft_sign"):
        return Op(kind, (i,))
    if kind == "scaled_sin":  # a custom_vjp on arrays of one shape
        return Op(kind, (i, draw(st.sampled_from([j for j in range(n) if program.shapes[j] == shape]))))
    if kind in ("add", "sub", "mul", "div", "maximum", "matmul"):
        return Op(kind, (i, draw(reg)))
    if kind in ("sum", "mean", "max", "prod"):
        axes = st.none() | st.integers(-len(shape), len(shape) - 1) if shape else st.none()
        if kind in ("sum", "mean") and len(shape) >= 2:
            axes = axes | st.permutations(range(len(shape))).map(lambda p: tuple(p[:2]))
        return Op(kind, (i,), (("axis", draw(axes)), ("keepdims", draw(st.booleans()))))
    if kind in ("cumsum", "sort", "flip") and shape:
        axis = draw(st.integers(-len(shape), len(shape) - 1) | (st.none() if kind != "sort" else st.nothing()))
        return Op(kind, (i,), (("axis", axis),))
    if kind in ("concatenate", "stack"):
        rank = len(shape) + (kind == "stack")
        if rank:
            return Op(kind, (i, draw(reg)), (("axis", draw(st.integers(-rank, rank - 1))),))
    if kind == "reshape":
        return Op(kind, (i,))
    if kind in ("det", "inv", "slogdet"):
        return Op(kind, (i,), (("outer", len(shape) < 2 or shape[-1] != shape[-2]),))
    if kind == "broadcast":
        lead = draw(st.sampled_from([(2,), (3,), (2, 1)]))
        return Op(kind, (i,), (("shape", lead + shape),))
    if kind == "slice" and shape:
        axis = draw(st.integers(0, len(shape) - 1))
        piece = draw(st.sampled_from([slice(1, None), slice(None, None, 2), slice(None, -1),
                                      slice(None, None, -1), 0, -1, None]))
        index = (slice(None),) * axis + (piece,)
        if axis == len(shape) - 1 and draw(st.booleans()):
            index = (Ellipsis, piece)
        return Op(kind, (i,), (("index", index),))
    if kind in ("getitem_int", "take") and shape:
        axis = 0 if kind == "getitem_int" else draw(st.integers(-len(shape), len(shape) - 1))
        size = shape[axis]
        idx = np.array(draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=4)))
        params: tuple[tuple[str, Any], ...] = (("idx", idx),)
        return Op(kind, (i,), params + ((("axis", axis),) if kind == "take" else ()))
    if kind == "matmul_const" and shape:
        cols = draw(st.integers(1, 3))
        c = np.random.default_rng(draw(st.integers(0, 2**16))).uniform(-1, 1, (shape[-1], cols))
        return Op(kind, (i,), (("c", c),))
    if kind in ("solve", "cholesky") and len(shape) in (1, 2) and (len(shape) == 1 or kind == "cholesky"
                                                                    or shape[0] == shape[1]):
        if kind == "cholesky":
            return Op(kind, (i,))
        rhs = [j for j, s in enumerate(program.shapes) if s[:1] == shape[:1] and len(s) in (1, 2)]
        return Op(kind, (i, draw(st.sampled_from(rhs))))
    if kind == "cond":
        shift = draw(st.sampled_from([0.0, 0.3, -0.3]))
        return Op(kind, (draw(reg), i, draw(reg)),
                  (("shift", shift), ("body", draw(_bodies(kinds))),
                   ("other", draw(_bodies(kinds)))))
    if kind == "scan" and shape:
        return Op(kind, (i, draw(reg)), (("body", draw(_bodies(kinds))),
                                         ("carry", draw(st.booleans())), ("reverse", draw(st.booleans()))))
    if kind in ("while", "fori"):
        traced = (draw(reg),) if draw(st.booleans()) else ()
        return Op(kind, (i, draw(reg), *traced), (("body", draw(_bodies(kinds))),
                                         ("n", draw(st.integers(0, 3)))))
    if kind == "where":
        return Op(kind, (draw(reg), i, draw(reg)))
    if kind in ("inner_grad", "inner_jit", "inner_vmap") and (shape or kind != "inner_vmap"):
        return Op(kind, (i, draw(reg)), (("body", draw(st.sampled_from(("sin", "cos", "tanh")))),))
    if kind == "checkpoint":
        bodies = _bodies(kinds)
        return Op(kind, (i, draw(reg)), (("body", draw(bodies)), ("other", draw(bodies))))
    return Op(draw(st.sampled_from(["sin", "tanh", "square"])), (i,))


def _bodies(kinds: Sequence[str]) -> st.SearchStrategy[Any]:
    """Bodies of control flow, nested up to a few levels; no jit unless
    "inner_jit" is among `kinds`."""
    leaves = st.sampled_from(tuple(u for u in _BODY_UNARY if u != "soft_sign" or "soft_sign" in kinds))
    wrappers = ["fori", "while", "scan"] + (["jit"] if "inner_jit" in kinds else [])

    def nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return (st.tuples(st.just("cond"), inner, inner) | st.tuples(st.sampled_from(wrappers), inner)
                | st.tuples(st.just("checkpoint"), inner))

    return st.recursive(leaves, nest, max_leaves=3)


@st.composite
def programs(draw: Any, kinds: Sequence[str] = _ALL_KINDS, max_ops: int = 8,
             max_inputs: int = 2) -> Program:
    """Random programs of 1 to `max_ops` ops from `kinds` on one or two inputs."""
    n_in = draw(st.integers(1, max_inputs))
    program = Program(tuple(draw(_input_shapes) for _ in range(n_in)))
    program.shapes = list(program.in_shapes)
    program.bounds = [1.0] * n_in
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(_op(program, kinds))
        shape = _shape_of(op, program)
        if shape is None or not 0 < math.prod(shape) <= 64:
            op = Op("tanh", (op.ins[-1],))
            shape = program.shapes[op.ins[0]]
        bound = _bound(op, program)
        program.ops.append(op)
        program.shapes.append(shape)
        program.bounds.append(bound)
        if bound > _CAP:
            c = 1.0 / bound
            program.ops.append(Op("scale", (len(program.shapes) - 1,), (("c", c),)))
            program.shapes.append(shape)
            program.bounds.append(1.0)
    return program
