"""fgrad.jit's first call (trace, optimise, generate code) does work linear in
the size of the program (issue 24). Work is counted, not timed: the Python
and C functions called while a version compiles (`sys.setprofile`; a resumed
generator counts as a call, so a rescan by `any(... for e in eqns)` shows).
With programs of n, 2n and 4n operations, linear work grows by twice as much
from 2n to 4n as from n to 2n, whatever the fixed cost; work quadratic in the
size grows by up to four times as much."""

import sys

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import lax


def scalar_graph(n):
    """W9 of "Fastest Autograd in the West": softplus, sums, products and
    softmaxes of earlier nodes, on the 30 entries of one vector."""

    def f(x):
        nodes = [x[i] for i in range(30)]
        for op in range(n):
            if op % 4 == 0:
                nodes.append(fnp.logaddexp(nodes[-10], 0.0))
            elif op % 4 == 1:
                nodes.append(sum(nodes[-30:-10:5]))
            elif op % 4 == 2:
                nodes.append(nodes[-20] * nodes[-10])
            else:
                last = nodes[-4:]
                m = fnp.maximum(fnp.maximum(last[0], last[1]), fnp.maximum(last[2], last[3]))
                es = [fnp.exp(v - m) for v in last]
                nodes.extend(e / (es[0] + es[1] + es[2] + es[3]) for e in es)
        return nodes[-1]

    return f, np.linspace(0.0, 1.0, 30)


def loops(n):
    """Scans, fori_loops and conds (whose predicates are abstract) between scalar operations."""

    def f(x):
        nodes = [x[0], x[1], x[2]]
        for op in range(n):
            a, b = nodes[-1], nodes[-3]
            if op % 4 == 0:
                nodes.append(lax.scan(lambda c, t: (fnp.sin(c) * t, c), a, x)[0])
            elif op % 4 == 1:
                nodes.append(lax.fori_loop(0, 3, lambda i, c: fnp.tanh(c) + c * b, a))
            elif op % 4 == 2:
                nodes.append(lax.cond(b > 0.3, lambda u: fnp.exp(-u * u), lambda u: u * 0.5, a))
            else:
                nodes.append(fnp.sin(a) + b * 0.5)
        return nodes[-1]

    return f, np.linspace(0.1, 0.9, 4)


def vectors(n):
    """Matrix-vector products, broadcasting, reductions and where on vectors."""

    def f(x, A):
        nodes = [x, fnp.sin(x), fnp.cos(x)]
        for op in range(n):
            if op % 4 == 0:
                nodes.append(fnp.tanh(A @ nodes[-3]))
            elif op % 4 == 1:
                nodes.append(nodes[-1] * nodes[-3] - fnp.mean(nodes[-2]))
            elif op % 4 == 2:
                nodes.append(fnp.where(nodes[-1] > 0, nodes[-1], 0.1 * nodes[-1]))
            else:
                nodes.append(fnp.exp(-nodes[-1] ** 2) + nodes[-2][:, None].sum(axis=1))
        return fnp.sum(nodes[-1])

    return (lambda x: f(x, np.eye(8) / 2 + 0.1)), np.linspace(-1.0, 1.0, 8)


def first_call_work(fun, x):
    """The functions called by the first call of a new `jit(fun)` on `x`."""
    count = 0

    def profiler(frame, event, arg):
        nonlocal count
        if event == "call" or event == "c_call":
            count += 1

    jitted = fgrad.jit(fun)
    sys.setprofile(profiler)
    try:
        jitted(x)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("program", [scalar_graph, loops, vectors])
@pytest.mark.parametrize("transform", ["jit", "grad"])
def test_first_call_work_is_linear_in_the_program_s_size(program, transform):
    def work(n):
        f, x = program(n)
        return first_call_work(fgrad.grad(f) if transform == "grad" else f, x)

    work(8)  # first uses: rule tables, lazy imports, caches of primitives
    n = 40
    small, medium, large = work(n), work(2 * n), work(4 * n)
    # Counts vary by a few calls between runs (set orders); a message that
    # rescanned the trace at each cond of `loops` under grad gave 2.09.
    growth = (large - medium) / (medium - small)
    assert 1.95 < growth < 2.05, (small, medium, large)
