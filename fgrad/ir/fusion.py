"""Fusion: clusters of elementwise equations on large arrays, run in blocks.

On arrays of millions of elements each NumPy call of jit's code reads and
writes whole arrays from memory, and each result is a full-size temporary.
`fuse_clusters` groups clusters of two or more equations of one result
shape that NumPy computes element by element (`core.rules.blockwise`:
ufuncs, `where`, casts; operands may broadcast), as large as program order
allows (a cluster grows until another equation reads one of its values),
each optionally ending in reductions of its values (`core.rules.reduce_rules`:
a sum, max or min over all axes, or over trailing axes that a block holds
whole), and replaces each by one `fused` equation. Its code (`Cluster`) runs the cluster's equations
on one block of the arrays at a time: a block is about
`jit_fusion_block_size` elements, so its temporaries stay in the cache and
are written over from block to block (`out=`), and the blocks run across a
few threads (ir/blocks.py). Only values used outside the cluster are
computed in full.

Results: each element of an elementwise result is computed by the same
NumPy function on the same elements as without fusion, so it has the same
bits. A reduction over all axes is the reduction of each block's partial
result, which rounds differently from NumPy's pairwise sum of the whole
array (equal to rounding; max and min are exact); a reduction over trailing
axes reduces whole rows in each block, as NumPy does. Only the code runs in
blocks: the jaxpr jit shows (`Lowered.jaxpr`) is the unfused one, and the
generated source (`as_text()`) shows each block function.

The pass is static: it reads avals and the rule tables, never values. A
cluster keeps the order of effects: it never spans an equation with one.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..core.rules import blockwise, out_rules, reduce_rules
from ..core.trace import Primitive
from .blocks import run_blocks, thread_count
from .jaxpr import Jaxpr, JaxprEqn, Literal, Var
from .passes import has_effects

__all__ = ["fused_p", "Fused", "Cluster", "fuse_clusters"]


class Fused:
    """What a `fused` equation applies: its `cluster` parameter to the
    equation's operands. Not a Primitive: such equations exist only in the
    jaxpr that jit's code is written from, which no transform ever sees."""

    __slots__ = ()
    name = "fused"
    multiple_results = True

    @staticmethod
    def impl(*args: Any, cluster: Cluster) -> list[Any]:
        return cluster(*args)

    def __repr__(self) -> str:
        return self.name


fused_p = Fused()


def _split_axis(shape: tuple[int, ...], block: int) -> int:
    """The axis blocks are cut along: the first whose trailing axes hold at most `block` elements."""
    k = 0
    while math.prod(shape[k + 1:]) > block:
        k += 1
    return k


class Cluster:
    """A cluster's equations as code that runs them block by block.

    `jaxpr` takes the values the cluster reads (`invars`) and gives the
    values used outside it: first those of the full `shape`, then the
    reductions' results. Called with the inputs (and with `out`, a buffer
    for its single output when it has one and no reduction), it returns the
    outputs. `source` is the text of its block function.
    """

    __slots__ = ("jaxpr", "shape", "n_blocks", "geometry", "reductions", "n_full", "work",
                 "source", "namespace", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, shape: tuple[int, ...], block: int) -> None:
        self.jaxpr = jaxpr
        self.shape = shape
        k = _split_axis(shape, block)
        rows = max(1, block // math.prod(shape[k + 1:]))
        part = -(-shape[k] // -(-shape[k] // rows))  # equal parts, none much smaller than the others
        spans = [(lo, min(lo + part, shape[k])) for lo in range(0, shape[k], part)]
        self.geometry = [(*o, lo, hi) for o in itertools.product(*map(range, shape[:k])) for lo, hi in spans]
        self.n_blocks = len(self.geometry)
        reducing: dict[Any, JaxprEqn] = {e.outvars[0]: e for e in jaxpr.eqns if e.primitive in reduce_rules}
        self.n_full = sum(v not in reducing for v in jaxpr.outvars)
        # Per reduction: its ufunc, and whether it is over all axes
        self.reductions = [(reduce_rules[e.primitive], len(e.params["axes"]) == len(shape))
                           for e in (reducing[v] for v in jaxpr.outvars[self.n_full:])]
        self.source, self.namespace = _BlockWriter(self, k, part, shape[k] % part != 0).write()
        self.work: Callable[..., None] | None = None

    @property
    def takes_out(self) -> bool:
        """Whether a buffer may be given for its one output: every block reads an
        input's elements before it writes that output's, which can then be an
        input's buffer that dies here."""
        jaxpr = self.jaxpr
        return len(jaxpr.outvars) == self.n_full == 1 and jaxpr.eqns[-1].outvars[0] is jaxpr.outvars[0]

    def compile(self, filename: str) -> None:
        exec(compile(self.source, filename, "exec"), self.namespace)
        self.work = self.namespace["fused"]

    def __call__(self, *ins: Any, out: np.ndarray | None = None) -> list[Any]:
        outvars = self.jaxpr.outvars
        outs = [np.empty(self.shape, v.aval.dtype) for v in outvars[:self.n_full]] if out is None else [out]
        reduced = [np.empty(self.n_blocks if whole else v.aval.shape, v.aval.dtype)
                   for v, (_, whole) in zip(outvars[self.n_full:], self.reductions)]
        assert self.work is not None, "a cluster is compiled before it runs"
        run_blocks(self.work, self.n_blocks, (self.geometry, *ins, *outs, *reduced))
        for i, (ufunc, whole) in enumerate(self.reductions):
            if whole:  # the blocks' partial results, in block order whichever thread computed each
                reduced[i] = ufunc.reduce(reduced[i])
        return [*outs, *reduced]

    def describe(self) -> str:
        names = ", ".join(dict.fromkeys(e.primitive.name for e in self.jaxpr.eqns))
        n = len(self.jaxpr.eqns)
        shape = ",".join(map(str, self.shape))
        return (f"{n} equation{'s' if n != 1 else ''} ({names}) on arrays [{shape}] fused: "
                f"{self.n_blocks} block{'s' if self.n_blocks != 1 else ''} on up to {thread_count()} threads")

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


class _BlockWriter:
    """The source of a cluster's block function, `fused(claim, geometry, *ins, *outs, *reduced)`:
    it takes block numbers from `claim()` and computes each block's equations."""

    def __init__(self, cluster: Cluster, k: int, part: int, ragged: bool) -> None:
        self.cluster = cluster
        self.k = k
        self.part = part
        self.ragged = ragged
        self.namespace: dict[str, Any] = {"empty": np.empty}
        self.seen: dict[int, str] = {}

    def glob(self, value: Any, prefix: str) -> str:
        name = self.seen.get(id(value))
        if name is None:
            name = self.seen[id(value)] = f"{prefix}{len(self.seen)}"
            self.namespace[name] = value
        return name

    def index(self, shape: tuple[int, ...]) -> str | None:
        """The subscript of a block of an array of `shape` (broadcast to the
        cluster's), or None for the whole array (it broadcasts as it is)."""
        n, k = len(self.cluster.shape), self.k
        parts = []
        for j, size in enumerate(shape):
            axis = n - len(shape) + j
            if axis < k:
                parts.append("0" if size == 1 else f"i{axis}")
            elif axis == k:
                parts.append(":" if size == 1 else "lo:hi")
            else:
                parts.append(":")
        while parts and parts[-1] == ":":
            parts.pop()
        return ", ".join(parts) if parts else None

    def write(self) -> tuple[str, dict[str, Any]]:
        cluster, k = self.cluster, self.k
        jaxpr = cluster.jaxpr
        n_in, n_full = len(jaxpr.invars), cluster.n_full
        ins = [f"a{i}" for i in range(n_in)]
        outs = [f"o{i}" for i in range(n_full)]
        reduced = [f"r{i}" for i in range(len(jaxpr.outvars) - n_full)]
        block_shape = (self.part, *cluster.shape[k + 1:])
        body: list[str] = []  # the lines of one block
        where: dict[Any, str] = {}
        for v, name in zip(jaxpr.invars, ins):
            sub = self.index(v.aval.shape)
            if sub is None:
                where[v] = name
            else:
                where[v] = f"x{len(where)}"
                body.append(f"{where[v]} = {name}[{sub}]")
        full = self.index(cluster.shape) or ":"
        for out, name in zip(jaxpr.outvars[:n_full], outs):
            where[out] = f"u{name[1:]}"
            body.append(f"{where[out]} = {name}[{full}]")
        last: dict[Var, int] = {}
        for i, eqn in enumerate(jaxpr.eqns):
            for a in eqn.invars:
                if type(a) is Var:
                    last[a] = i
        buffers: list[np.dtype] = []  # the block buffers, by slot
        free: dict[np.dtype, list[int]] = {}
        reductions = iter(zip(reduced, cluster.reductions))

        def atom(a: Any) -> str:
            return self.glob(a.val, "k") if type(a) is Literal else where[a]

        for i, eqn in enumerate(jaxpr.eqns):
            args = [atom(a) for a in eqn.invars]
            for a in dict.fromkeys(eqn.invars):  # a buffer whose value dies here may take the result
                if type(a) is Var and last.get(a) == i and where[a][0] == "t":
                    free.setdefault(a.aval.dtype, []).append(int(where[a][1:]))
            out = eqn.outvars[0]
            if eqn.primitive in reduce_rules:
                name, (reducer, whole) = next(reductions)
                reduce = self.glob(reducer.reduce, "f")
                if whole:
                    body.append(f"{name}[b] = {reduce}({args[0]}, axis=None)")
                else:  # whole rows of the result: its axes are the block's outer ones
                    rows = ", ".join([*(f"i{a}" for a in range(k)), "lo:hi"])
                    axes = tuple(a - k for a in eqn.params["axes"])
                    body.append(f"{reduce}({args[0]}, axis={axes}, out={name}[{rows}])")
                continue
            ufunc = out_rules.get(eqn.primitive)
            if ufunc is not None and not eqn.params:
                f = self.glob(ufunc, "f")
                if out not in where:
                    dtype = out.aval.dtype
                    slots = free.get(dtype)
                    slot = slots.pop() if slots else None
                    if slot is None:
                        slot = len(buffers)
                        buffers.append(dtype)
                    where[out] = f"t{slot}"
                body.append(f"{where[out]} = {f}({', '.join(args)}, out={where[out]})")
                continue
            impl = eqn.primitive.impl
            f = self.glob(functools.partial(impl, **eqn.params) if eqn.params else impl, "f")
            if out in where:  # an output: into its block
                body.append(f"{where[out]}[...] = {f}({', '.join(args)})")
            else:  # a new array of the block's size
                where[out] = f"v{i}"
                body.append(f"{where[out]} = {f}({', '.join(args)})")
        unpack = ", ".join([*(f"i{a}" for a in range(k)), "lo", "hi"])
        dtypes = [self.glob(d, "d") for d in buffers]
        legend = ", ".join(f"{name} = {_shown(self.namespace[name])}" for name in self.seen.values())
        lines = [f"# aN: inputs, oN: results, rN: reductions (per block where over all axes); {legend}",
                 f"def fused(claim, geometry, {', '.join([*ins, *outs, *reduced])}):",
                 "    b = claim()",
                 f"    if b >= {cluster.n_blocks}:",
                 "        return",
                 *(f"    T{s} = empty({block_shape}, {d})" for s, d in enumerate(dtypes)),
                 f"    while b < {cluster.n_blocks}:",
                 f"        {unpack} = geometry[b]"]
        if self.ragged and buffers:
            lines.append("        m = hi - lo")
            lines.extend(f"        t{s} = T{s}[:m]" for s in range(len(buffers)))
        else:
            lines.extend(f"        t{s} = T{s}" for s in range(len(buffers)))
        lines.extend("        " + line for line in body)
        lines.append("        b = claim()")
        return "\n".join(lines), self.namespace


def _shown(value: Any) -> str:
    """A global of a block function, for the comment above it."""
    if isinstance(value, functools.partial):
        params = ", ".join(f"{k}={v!r}" for k, v in value.keywords.items())
        return f"{_shown(value.func)} with {params}"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, np.ufunc):
        return f"numpy.{value.__name__}"
    owner = getattr(value, "__self__", None)
    if isinstance(owner, np.ufunc):  # its reduce
        return f"numpy.{owner.__name__}.{value.__name__}"
    if callable(value):
        return f"{getattr(value, '__module__', None) or 'numpy'}.{getattr(value, '__qualname__', value)}"
    return repr(value)


def _member_shape(eqn: JaxprEqn, least: int) -> tuple[int, ...] | None:
    """The result shape of an equation that can be a cluster's member, else None."""
    if eqn.primitive not in blockwise or len(eqn.outvars) != 1:
        return None
    out = eqn.outvars[0].aval
    if not out.shape or math.prod(out.shape) < least or out.dtype.kind not in "biufc":
        return None
    if any(a.aval.dtype.kind not in "biufc" for a in eqn.invars):
        return None
    return out.shape


def _reduces_blocks(eqn: JaxprEqn, shape: tuple[int, ...], block: int) -> bool:
    """Whether a reduction (`reduce_rules`) of a value of the cluster's `shape`
    can be computed from its blocks: over all axes (partial results combined),
    or over trailing axes that every block holds whole."""
    axes = eqn.params.get("axes")
    if not axes or eqn.invars[0].aval.dtype.kind not in "fc":
        return False
    first = axes[0]
    if tuple(axes) != tuple(range(first, len(shape))):
        return False
    return first == 0 or first > _split_axis(shape, block)


def fuse_clusters(jaxpr: Jaxpr, min_size: int, block: int) -> Jaxpr | None:
    """`jaxpr` with each cluster of elementwise equations whose results have at
    least `min_size` elements replaced by one `fused` equation (blocks of about
    `block` elements), or None where it has no cluster.

    Equations join clusters in order, and a cluster's equation takes the place
    of its last member, so that no value is read before it is computed: an
    equation joins the open clusters (of its result's shape) that computed
    its operands, and any other equation that reads a cluster's value (or one
    of its reductions' results) closes that cluster, which takes no member
    after it. An equation with effects closes every cluster. Linear in the
    number of equations (clusters merge by union-find, `find`).
    """
    eqns = jaxpr.eqns
    least = max(1, min_size)
    if not any(v.aval.size >= least for e in eqns for v in e.outvars):
        return None  # no result large enough (a program on scalars): nothing to look at
    parent: list[int] = []
    shape_of: list[tuple[int, ...]] = []
    open_: set[int] = set()
    home: dict[int, int] = {}  # equation index -> its cluster
    made_by: dict[Var, int] = {}  # members' results -> their cluster
    internal: set[Var] = set()  # those of elementwise members, which later members may read block by block
    reductions: set[int] = set()

    def find(c: int) -> int:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for i, eqn in enumerate(eqns):
        read = {find(made_by[a]) for a in eqn.invars if type(a) is Var and a in made_by}
        joined: int | None = None
        if has_effects(eqn):
            open_.clear()
        elif (shape := _member_shape(eqn, least)) is not None:
            # A cluster whose reduction it reads is done only after its last block.
            blocked = {find(made_by[a]) for a in eqn.invars if type(a) is Var and a in made_by
                       and a not in internal}
            chosen = sorted(c for c in read if c in open_ and shape_of[c] == shape and c not in blocked
                            and any(type(a) is Var and a in internal and find(made_by[a]) == c
                                    for a in eqn.invars))
            if chosen:
                joined = chosen[0]
                for c in chosen[1:]:
                    parent[c] = joined
                    open_.discard(c)
            else:
                joined = len(parent)
                parent.append(joined)
                shape_of.append(shape)
                open_.add(joined)
            internal.add(eqn.outvars[0])
        elif eqn.primitive in reduce_rules and len(eqn.invars) == 1 and eqn.invars[0] in internal:
            c = find(made_by[eqn.invars[0]])
            if c in open_ and _reduces_blocks(eqn, shape_of[c], block):
                joined = c
                reductions.add(i)
        open_.difference_update(read - {joined})
        if joined is not None:
            home[i] = joined
            for v in eqn.outvars:
                made_by[v] = joined
    members: dict[int, list[int]] = {}
    for i in sorted(home):
        members.setdefault(find(home[i]), []).append(i)
    # One equation alone reads and writes its arrays once either way, and the plain
    # code writes it into a dead buffer: no cluster.
    members = {root: idx for root, idx in members.items() if len(idx) > 1}
    if not members:
        return None
    cluster_of = {i: root for root, idx in members.items() for i in idx}
    used_outside = {a for a in jaxpr.outvars if type(a) is Var}
    for i, eqn in enumerate(eqns):
        for a in eqn.invars:
            if type(a) is not Var:
                continue
            if i not in cluster_of or a not in made_by or find(made_by[a]) != cluster_of[i]:
                used_outside.add(a)
    out: list[JaxprEqn] = []
    for i, eqn in enumerate(eqns):
        root = cluster_of.get(i)
        if root is None:
            out.append(eqn)
        elif members[root][-1] == i:  # the cluster in its last member's place
            idx = members[root]
            out.append(_fused_eqn([eqns[j] for j in idx], reductions, idx, used_outside, shape_of[root],
                                  block))
    return Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, out)


def _fused_eqn(cluster_eqns: list[JaxprEqn], reducing: set[int], idx: list[int], used_outside: set[Var],
               shape: tuple[int, ...], block: int) -> JaxprEqn:
    computed = {v for e, i in zip(cluster_eqns, idx) if i not in reducing for v in e.outvars}
    ins = list(dict.fromkeys(a for e in cluster_eqns for a in e.invars
                             if type(a) is Var and a not in computed))
    full = [v for e, i in zip(cluster_eqns, idx) if i not in reducing for v in e.outvars if v in used_outside]
    reduced = [e.outvars[0] for e, i in zip(cluster_eqns, idx) if i in reducing]
    cluster = Cluster(Jaxpr([], ins, [*full, *reduced], cluster_eqns), shape, block)
    return JaxprEqn(cast(Primitive, fused_p), list(ins), [*full, *reduced], {"cluster": cluster})
