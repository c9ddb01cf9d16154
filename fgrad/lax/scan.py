"""`scan` and `map` (JAX's `lax`): the body is staged at the carry and one
slice of the xs and bound as one `scan` primitive
(`fgrad/higher_order/scan.py`, with its rules).

`scan(..., checkpoints=k)` is no rule of its own: the steps are bound as
nested `checkpoint`s of shorter scans on the binomial schedule (`_schedule`),
one closed jaxpr per distinct segment, shared by every segment like it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..api.arguments import describe
from ..api.pytree import tree_flatten, tree_unflatten
from ..core.avals import ShapedArray, get_aval
from ..core.trace import EVAL_TRACE, ctx
from ..higher_order._common import split_counts
from ..higher_order.checkpoint import checkpoint_p
from ..higher_order.scan import scan_p
from ..ir.jaxpr import ClosedJaxpr
from ..ir.staging import trace_to_jaxpr
from ..primitives import indexing, shapes
from ..primitives.indexing import StaticIndex
from ._common import avals_of, check_same, leaves_of, stage

__all__ = ["scan", "map", "scan_p"]


def scan(f: Callable[[Any, Any], Any], init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1, checkpoints: int | None = None) -> tuple[Any, Any]:
    """Loop `carry, y = f(carry, x)` over the leading axis of `xs` (pytrees
    allowed), returning the final carry and the stacked ys (JAX's `lax.scan`).
    `xs` may be None with `length` given; `reverse` runs from the last slice;
    `unroll` is accepted and has no effect. Differentiable in both modes
    everywhere, jit included: reverse mode is a loop too, keeping `length`
    steps of residuals.

    `checkpoints=k` (fgrad's; JAX has none) trades time for memory in reverse
    mode, on Griewank and Walther's binomial ("revolve") schedule: the steps
    run in nested `checkpoint`s, so that the backward pass keeps at most k + 1
    carries at once and the residuals of one stretch of at most k steps, and
    recomputes the rest from the carries it keeps. With r the least integer
    such that k * C(k + r, k) >= length, no step runs forward more than r + 1
    times (the stretches are the shortest that allow r: ceil(length / C(k + r,
    k)) steps), so the time is at most r + 1 forward passes and the backward
    pass. For 2048 steps, k = 45 (about sqrt(length), or any k with
    k * (k + 1) >= length) gives r = 1, k = 16 gives 2, k = 8 gives 4 and
    k = 2 gives 44; k >= length recomputes nothing (a plain scan), and r over
    50 raises a ValueError. Memory besides: a few carries (cotangents) per
    level of nesting, r levels, and the cotangents of what the body closes
    over (a weight's gradient), summed once per level, so up to r + 2 of them
    at once: these dominate when such a value is much larger than the carry.
    The jaxpr holds one checkpoint jaxpr per distinct segment of the schedule,
    about k * r of them of at most k + 1 parts each (for k = 8: 20 at 2048
    steps, 85 at a million), not one per step.

    >>> import numpy as np
    >>> scan(lambda c, x: (c + x, c * x), 0.0, np.arange(1.0, 4.0))
    (np.float64(6.0), array([0., 2., 9.]))
    >>> scan(lambda c, x: (c + x, c * x), 0.0, np.arange(1.0, 4.0), checkpoints=2)
    (np.float64(6.0), array([0., 2., 9.]))
    """
    snaps = None if checkpoints is None else _checkpoint_count(checkpoints)
    carry_leaves, carry_tree = leaves_of(init)
    x_leaves, x_tree = leaves_of(xs)
    lengths = {int(np.shape(x)[0]) if np.ndim(x) else -1 for x in x_leaves}
    if -1 in lengths:
        raise ValueError("scan: every leaf of `xs` needs a leading axis to scan over, but one is a scalar")
    if len(lengths) > 1:
        raise ValueError(f"scan: the leaves of `xs` have different leading lengths {sorted(lengths)}")
    if length is not None and lengths and lengths != {int(length)}:
        raise ValueError(f"scan: length={length} disagrees with the leading length {lengths.pop()} of `xs`")
    if length is None and not lengths:
        raise ValueError("scan: give `length` when `xs` is None (or has no leaves)")
    n = int(length) if length is not None else lengths.pop()
    carry_avals = avals_of(carry_leaves)
    slice_avals = [ShapedArray(a.shape[1:], a.dtype) for a in avals_of(x_leaves)]
    trees: list[Any] = []

    def body(carry: Any, x: Any) -> Any:
        out = f(carry, x)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"scan: f must return a pair (carry, y), but it returned {describe(out)}; "
                            "return (new_carry, None) when there is nothing to stack")
        new_carry, y = out
        c_leaves, c_tree = tree_flatten(new_carry)
        y_leaves, y_tree = tree_flatten(y)
        trees.append((c_tree, y_tree, len(c_leaves)))
        return [*c_leaves, *y_leaves]

    staged = stage(body, [carry_tree, x_tree], [carry_avals, slice_avals], getattr(f, "__name__", "f"))
    c_tree, y_tree, n_carry = trees[0]
    check_same("scan: f must return a carry of the type it takes (the carry given, then f's)", carry_tree,
               carry_avals, c_tree, staged.out_avals[:n_carry], init)
    args = [*staged.consts, *carry_leaves, *x_leaves]
    stretch = _stretch(n, snaps) if snaps is not None and n > snaps else 0  # 0: nothing to recompute
    if snaps is not None and stretch and ctx.trace is not EVAL_TRACE:  # with no transform, nothing is kept
        outs = _Binomial(staged.jaxpr, len(staged.consts), len(carry_leaves), bool(reverse), stretch,
                         getattr(f, "__name__", "f")).run(n, snaps, args)
    else:
        outs = scan_p.bind(*args, jaxpr=staged.jaxpr, length=n, reverse=bool(reverse),
                           num_consts=len(staged.consts), num_carry=len(carry_leaves))
    return tree_unflatten(carry_tree, outs[:n_carry]), tree_unflatten(y_tree, outs[n_carry:])


# --- checkpointed scans: the binomial (revolve) schedule --------------------------


def _checkpoint_count(checkpoints: Any) -> int:
    if isinstance(checkpoints, bool) or not isinstance(checkpoints, (int, np.integer)) or checkpoints < 1:
        raise ValueError(f"scan: checkpoints must be a positive integer (the most carries reverse mode keeps "
                         f"at once), got {checkpoints!r}")
    return int(checkpoints)


#: The most times a step may be recomputed: each is one more checkpoint nested in
#: another, and reverse mode recurses through them.
_MAX_REPETITIONS = 50


def _stretch(steps: int, snaps: int) -> int:
    """The longest stretch of steps whose residuals reverse mode keeps, when `snaps`
    carries reverse `steps` steps: the shortest that needs no more repetitions than
    stretches of `snaps` steps would, ceil(steps / C(snaps + r, snaps)) <= snaps.
    Raises a ValueError when the repetitions, and so the nesting, would be too deep."""
    reps = _repetitions(steps, snaps, snaps)
    if reps > _MAX_REPETITIONS:
        enough = next(k for k in range(snaps + 1, steps + 1) if _repetitions(steps, k, k) <= _MAX_REPETITIONS)
        raise ValueError(
            f"scan: checkpoints={snaps} over {steps} steps would recompute steps up to {reps} times, in "
            f"checkpoints nested {reps} deep (at most {_MAX_REPETITIONS}); give checkpoints={enough} or more "
            f"({_repetitions(steps, enough, enough)} times)")
    return -(-steps // math.comb(snaps + reps, snaps))


def _reach(snaps: int, reps: int, stretch: int) -> int:
    """The most steps that `snaps` kept carries reverse when no step runs forward
    more than `reps` times besides the pass that reverses it, in stretches of at
    most `stretch` steps reversed from their residuals: stretch * C(snaps + reps, snaps)
    (Griewank and Walther's binomial bound, on stretches of steps)."""
    return stretch * math.comb(snaps + reps, snaps)


def _repetitions(steps: int, snaps: int, stretch: int) -> int:
    """The least number of repetitions with which `snaps` carries reverse `steps` steps."""
    reps = 0
    while _reach(snaps, reps, stretch) < steps:
        reps += 1
    return reps


_Part = tuple[str, int, int, int]  # (kind, steps, carries, how many such parts in a row)


@functools.lru_cache(maxsize=4096)
def _schedule(steps: int, snaps: int, stretch: int) -> tuple[_Part, ...]:
    """The parts `steps` steps run in, in the order they run, when reverse mode may
    keep `snaps` carries: ("checkpoint", m, s, count) is `count` checkpoints in a
    row of m steps each on the schedule of s carries (each keeps the carry it
    starts from until the backward pass is through it), and the last part,
    ("stretch", m, 0, 1), a scan of m <= `stretch` steps whose residuals the
    backward pass keeps.

    The binomial rule: with r the least number of repetitions reaching `steps`,
    the first part is the most steps that `snaps` carries reverse with r - 1
    (the checkpoint adds one: it runs forward, then again in the backward pass),
    and the rest is reversed with one carry less, since the first part's stays
    kept meanwhile. Equal checkpoints in a row make one part."""
    parts: list[_Part] = []
    while steps > stretch:
        first = _reach(snaps, _repetitions(steps, snaps, stretch) - 1, stretch)
        kind, m, s = "checkpoint", first, snaps if first > stretch else 0  # one stretch needs no carry
        if parts and parts[-1][:3] == (kind, m, s):
            parts[-1] = (kind, m, s, parts[-1][3] + 1)
        else:
            parts.append((kind, m, s, 1))
        steps, snaps = steps - first, snaps - 1
    if parts and parts[-1][:3] == ("checkpoint", steps, 0):  # the last stretch as one more of them
        return (*parts[:-1], ("checkpoint", steps, 0, parts[-1][3] + 1))
    return (*parts, ("stretch", steps, 0, 1))


class _Binomial:
    """`scan` of `body` on the binomial schedule (`_schedule`) in stretches of at
    most `stretch` steps: the parts bound in turn, each checkpointed part on a
    closed jaxpr made once per schedule and shared by every part of that
    schedule, so that reverse mode transforms each once and the jaxprs stay few
    (one per distinct part, however many steps)."""

    def __init__(self, body: ClosedJaxpr, num_consts: int, num_carry: int, reverse: bool, stretch: int,
                 name: str) -> None:
        self.body, self.nk, self.nc, self.reverse, self.stretch, self.name = (
            body, num_consts, num_carry, reverse, stretch, name)
        self.jaxprs: dict[tuple[str, tuple[_Part, ...]], ClosedJaxpr] = {}

    def run(self, steps: int, snaps: int, args: Sequence[Any]) -> list[Any]:
        """The carry and the ys of `steps` steps, on the current trace."""
        consts, carry, xs = split_counts(args, (self.nk, self.nc))
        pieces: list[tuple[int, list[Any]]] = []
        done = 0
        for kind, m, s, count in _schedule(steps, snaps, self.stretch):
            n = m * count
            lo = steps - done - n if self.reverse else done
            part = xs if n == steps else [indexing.getitem(x, idx=StaticIndex((slice(lo, lo + n),)))
                                          for x in xs]
            if kind == "stretch":  # the last: its residuals are kept
                outs = scan_p.bind(*consts, *carry, *part, jaxpr=self.body, length=m, reverse=self.reverse,
                                   num_consts=self.nk, num_carry=self.nc)
            elif count == 1:
                outs = checkpoint_p.bind(*consts, *carry, *part, jaxpr=self.segment(m, s), name=self.name)
            else:  # `count` checkpoints in a row: a scan over them
                rows = [shapes.reshape(x, new_shape=(count, m, *get_aval(x).shape[1:])) for x in part]
                outs = scan_p.bind(*consts, *carry, *rows, jaxpr=self.checkpointed(m, s), length=count,
                                   reverse=self.reverse, num_consts=self.nk, num_carry=self.nc)
                outs = [*outs[:self.nc], *(shapes.reshape(y, new_shape=(n, *get_aval(y).shape[2:]))
                                          for y in outs[self.nc:])]
            carry = outs[:self.nc]
            pieces.append((lo, outs[self.nc:]))
            done += n
        pieces.sort(key=lambda p: p[0])
        n_ys = len(self.body.out_avals) - self.nc
        ys = [pieces[0][1][k] if len(pieces) == 1 else shapes.concatenate(*(p[1][k] for p in pieces), axis=0)
              for k in range(n_ys)]
        return [*carry, *ys]

    def segment(self, steps: int, snaps: int) -> ClosedJaxpr:
        """The jaxpr of `steps` steps on the schedule of `snaps` carries."""
        return self._staged("segment", steps, snaps, lambda *args: self.run(steps, snaps, args))

    def checkpointed(self, steps: int, snaps: int) -> ClosedJaxpr:
        """A scan's body running one checkpoint of `steps` steps on the schedule of `snaps` carries."""
        segment = self.segment(steps, snaps)
        return self._staged("body", steps, snaps,
                            lambda *args: checkpoint_p.bind(*args, jaxpr=segment, name=self.name))

    def _staged(self, what: str, steps: int, snaps: int, fn: Callable[..., list[Any]]) -> ClosedJaxpr:
        key = (what, _schedule(steps, snaps, self.stretch))
        if key not in self.jaxprs:
            nk, nc = self.nk, self.nc
            x_avals = [ShapedArray((steps, *a.shape), a.dtype) for a in self.body.in_avals[nk + nc:]]
            self.jaxprs[key] = trace_to_jaxpr(fn, [*self.body.in_avals[:nk + nc], *x_avals],
                                              "checkpoints of scan", fresh=True)
        return self.jaxprs[key]


def map(f: Callable[[Any], Any], xs: Any, *, batch_size: int | None = None) -> Any:  # noqa: A001 (JAX's name)
    """`f` applied to each slice of `xs` along its leading axis, the results
    stacked (JAX's `lax.map`): a scan without a carry. With `batch_size`, the
    scan runs `vmap(f)` over chunks of that many slices, and once more over
    the slices left over; 0 is a single `vmap(f)` over them all. The results
    are the same; a batch trades memory for fewer, larger steps.

    >>> import numpy as np
    >>> map(lambda x: x * 2.0, np.arange(3.0))
    array([0., 2., 4.])
    >>> map(lambda x: x * 2.0, np.arange(5.0), batch_size=2)
    array([0., 2., 4., 6., 8.])
    """
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    return _in_batches(f, xs, batch_size)


def _in_batches(f: Callable[[Any], Any], xs: Any, batch_size: Any) -> Any:
    """`map(f, xs)` as a scan of `vmap(f)` over chunks of `batch_size` slices
    (JAX's), then `vmap(f)` of the rest, the results concatenated."""
    from ..api.vectorize import vmap
    from ..numpy import concatenate, reshape

    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 0:
        raise ValueError(f"map: batch_size must be a non-negative integer (the slices one step of the scan "
                         f"maps at once, 0 for all of them), got {batch_size!r}")
    x_leaves, x_tree = leaves_of(xs)
    lengths = {int(np.shape(x)[0]) if np.ndim(x) else -1 for x in x_leaves}
    if not x_leaves or -1 in lengths or len(lengths) > 1:
        return map(f, xs)  # scan's error for leaves without a common leading axis
    n, size = lengths.pop(), int(batch_size)
    full, rest = divmod(n, size) if size else (0, n)
    batched = vmap(f)
    ys = None
    if full:
        chunks = [reshape(x[:full * size], (full, size, *np.shape(x)[1:])) for x in x_leaves]
        _, chunk_ys = scan(lambda _, c: ((), batched(c)), (), tree_unflatten(x_tree, chunks))
        y_leaves, y_tree = leaves_of(chunk_ys)
        ys = tree_unflatten(y_tree, [reshape(y, (full * size, *np.shape(y)[2:])) for y in y_leaves])
    if rest or not full:
        tail = batched(tree_unflatten(x_tree, [x[full * size:] for x in x_leaves]))
        if ys is None:
            return tail
        y_leaves, y_tree = leaves_of(ys)
        ys = tree_unflatten(y_tree, [concatenate([y, t]) for y, t in zip(y_leaves, leaves_of(tail)[0])])
    return ys
