"""Passes over jaxprs (DCE, effects, liveness) and the evaluation that uses
liveness to release each value after its last use."""

import gc
import weakref

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.core.avals import ShapedArray
from fgrad.core.trace import EVAL_TRACE, Primitive, ctx
from fgrad.higher_order.effects import debug_print_p
from fgrad.ir.check import check_jaxpr
from fgrad.ir.evaluate import eval_closed_now, eval_jaxpr
from fgrad.ir.jaxpr import Jaxpr, JaxprEqn, Var
from fgrad.ir.passes import dce_closed_jaxpr, dce_jaxpr, has_effects, last_uses
from fgrad.primitives.elementwise import add_p, cos_p, exp_p, mul_p, sin_p

F64_3 = ShapedArray((3,), np.float64)


def _names(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


def _run(closed, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


# --- dce_jaxpr ----------------------------------------------------------------------


def test_dce_drops_equations_no_output_depends_on():
    def f(x):
        unused = fnp.cos(x) * 3.0  # noqa: F841
        return fnp.sin(x) + 1.0

    closed = fgrad.make_jaxpr(f)(np.ones(3))
    assert _names(closed.jaxpr) == ["cos", "mul", "sin", "add"]
    pruned = dce_jaxpr(closed.jaxpr)
    check_jaxpr(pruned)
    assert _names(pruned) == ["sin", "add"]
    x = np.array([0.1, -2.0, 3.0])
    np.testing.assert_allclose(eval_jaxpr(pruned, closed.consts, x)[0], np.sin(x) + 1.0)


def test_dce_keeps_a_dead_chain_feeding_an_effect(capsys):
    def f(x):
        y = fnp.exp(x)
        fgrad.debug.print("y = {}", y)
        return fnp.sin(x), fnp.cos(x)

    closed = fgrad.make_jaxpr(f)(1.0)
    pruned = dce_jaxpr(closed.jaxpr, used_outputs=[False, True])
    check_jaxpr(pruned)
    assert _names(pruned) == ["exp", "debug_print", "cos"]
    (out,) = eval_jaxpr(pruned, [], 0.0)
    assert out == 1.0
    assert capsys.readouterr().out == "y = 1.0\n"


def test_dce_with_used_outputs_keeps_only_the_chosen_ones():
    def f(x, y):
        return fnp.sin(x), x * y, fnp.exp(y)

    closed = fgrad.make_jaxpr(f)(np.ones(2), np.ones(2))
    x, y = np.array([0.5, 1.5]), np.array([-1.0, 2.0])
    expected = [np.sin(x), x * y, np.exp(y)]
    for used in [(True, False, False), (False, True, False), (False, False, True), (True, False, True),
                 (False, False, False), (True, True, True)]:
        pruned = dce_jaxpr(closed.jaxpr, used)
        check_jaxpr(pruned)
        assert len(pruned.eqns) == sum(used)  # one equation per output here
        assert pruned.invars == closed.jaxpr.invars  # the signature keeps every input
        outs = eval_jaxpr(pruned, [], x, y)
        assert len(outs) == sum(used)
        for got, want in zip(outs, [e for e, u in zip(expected, used) if u]):
            np.testing.assert_allclose(got, want)


def test_dce_keeps_an_equation_that_a_kept_one_needs_even_if_its_own_output_is_dropped():
    def f(x):
        s = fnp.sin(x)
        return s, s * 2.0

    closed = fgrad.make_jaxpr(f)(1.0)
    pruned = dce_jaxpr(closed.jaxpr, [False, True])
    assert _names(pruned) == ["sin", "mul"]
    assert eval_jaxpr(pruned, [], 0.5) == [pytest.approx(2 * np.sin(0.5))]


def test_dce_drops_constant_variables_only_dead_equations_read():
    a, b, c = np.arange(3.0), np.arange(3.0) + 10, np.arange(3.0) + 20

    def f(x):
        return x * a, x + b, x - c

    closed = fgrad.make_jaxpr(f)(np.ones(3))
    assert len(closed.jaxpr.constvars) == 3
    pruned = dce_closed_jaxpr(closed, [True, False, True])
    check_jaxpr(pruned)
    assert len(pruned.consts) == 2
    assert pruned.consts[0] is a and pruned.consts[1] is c  # the kept ones, in order
    x = np.array([1.0, 2.0, 3.0])
    got = _run(pruned, x)
    np.testing.assert_allclose(got[0], x * a)
    np.testing.assert_allclose(got[1], x - c)


def test_dce_closed_jaxpr_of_an_effect_only_function_keeps_it(capsys):
    k = np.array([4.0, 5.0])

    def f(x):
        fgrad.debug.print("k = {}", k)
        return x

    closed = fgrad.make_jaxpr(f)(1.0)
    pruned = dce_closed_jaxpr(closed)
    check_jaxpr(pruned)
    assert _names(pruned.jaxpr) == ["debug_print"] and pruned.consts == [k]
    assert _run(pruned, 3.0) == [3.0]
    assert capsys.readouterr().out == "k = [4. 5.]\n"


# --- has_effects --------------------------------------------------------------------


def test_has_effects_of_plain_and_printing_equations():
    def f(x):
        fgrad.debug.print("{}", x)
        return fnp.sin(x)

    eqns = fgrad.make_jaxpr(f)(1.0).eqns
    assert [e.primitive for e in eqns] == [debug_print_p, sin_p]
    assert has_effects(eqns[0]) and not has_effects(eqns[1])


def _checkpoint_eqn(fn):
    (eqn,) = fgrad.make_jaxpr(fgrad.checkpoint(fn))(1.0).eqns
    assert eqn.primitive.name == "checkpoint"
    return eqn


def _printing(x):
    fgrad.debug.print("inside {}", x)
    return x * 2.0


def test_has_effects_sees_through_a_sub_jaxpr():
    assert has_effects(_checkpoint_eqn(_printing))
    assert not has_effects(_checkpoint_eqn(lambda x: fnp.sin(x) * 2.0))


def test_has_effects_sees_through_nested_sub_jaxprs():
    assert has_effects(_checkpoint_eqn(fgrad.checkpoint(fgrad.checkpoint(_printing))))
    assert not has_effects(_checkpoint_eqn(fgrad.checkpoint(lambda x: x + 1.0)))


def test_has_effects_looks_into_a_jaxpr_nested_in_many_places_once():
    from tests.ir.test_check import nested

    printing, pure = (nested(60, fgrad.make_jaxpr(fn)(1.0)) for fn in (_printing, fnp.sin))  # 2**60 calls
    assert has_effects(printing.eqns[0]) and not has_effects(pure.eqns[0])


def test_dce_keeps_a_checkpoint_whose_body_prints_and_drops_a_pure_one(capsys):
    def f(x):
        fgrad.checkpoint(_printing)(x)  # its result is unused
        fgrad.checkpoint(lambda y: fnp.sin(y))(x)  # likewise, and pure
        return x + 1.0

    closed = fgrad.make_jaxpr(f)(1.0)
    assert _names(closed.jaxpr) == ["checkpoint", "checkpoint", "add"]
    pruned = dce_jaxpr(closed.jaxpr)
    assert _names(pruned) == ["checkpoint", "add"]
    assert has_effects(pruned.eqns[0])
    assert eval_jaxpr(pruned, [], 1.5) == [2.5]
    assert capsys.readouterr().out == "inside 1.5\n"


# --- last_uses ----------------------------------------------------------------------


def _small_jaxpr():
    """{ lambda k ; a b . let
           c = sin a        # 0
           d = mul c b      # 1
           e = cos a        # 2
           f = mul d k      # 3
           g = add f e      # 4
         in (g, c) }"""
    k, a, b, c, d, e, f, g = (Var(F64_3) for _ in range(8))
    eqns = [
        JaxprEqn(sin_p, [a], [c], {}),
        JaxprEqn(mul_p, [c, b], [d], {}),
        JaxprEqn(cos_p, [a], [e], {}),
        JaxprEqn(mul_p, [d, k], [f], {}),
        JaxprEqn(add_p, [f, e], [g], {}),
    ]
    jaxpr = Jaxpr([k], [a, b], [g, c], eqns)
    check_jaxpr(jaxpr)
    return jaxpr, dict(k=k, a=a, b=b, c=c, d=d, e=e, f=f, g=g)


def _by_name(uses, names):
    inverse = {id(v): n for n, v in names.items()}
    return {i: sorted(inverse[id(v)] for v in vs) for i, vs in uses.items()}


def test_last_uses_forward():
    jaxpr, names = _small_jaxpr()
    # `c` is an output, so it is never released although equation 1 reads it last;
    # `g` is read by no equation; the constant `k` goes after equation 3.
    assert _by_name(last_uses(jaxpr), names) == {1: ["b"], 2: ["a"], 3: ["d", "k"], 4: ["e", "f"]}


def test_last_uses_reverse():
    jaxpr, names = _small_jaxpr()
    # Running the equations backwards, a value is dead after its first use in
    # order; outputs are included (the backward pass reads them as it goes).
    assert _by_name(last_uses(jaxpr, reverse=True), names) == {
        0: ["a"], 1: ["b", "c"], 3: ["d", "k"], 4: ["e", "f"],
    }


def test_last_uses_lists_a_variable_read_twice_by_one_equation_once():
    a, b, c = Var(F64_3), Var(F64_3), Var(F64_3)
    jaxpr = Jaxpr([], [a], [c], [JaxprEqn(mul_p, [a, a], [b], {}), JaxprEqn(sin_p, [b], [c], {})])
    for reverse in (False, True):
        uses = last_uses(jaxpr, reverse=reverse)
        assert [len(vs) for _, vs in sorted(uses.items())] == [1, 1]
        assert uses[0][0] is a and uses[1][0] is b


def test_last_uses_is_cached_per_jaxpr_and_direction():
    jaxpr, _ = _small_jaxpr()
    assert last_uses(jaxpr) is last_uses(jaxpr)
    assert last_uses(jaxpr, reverse=True) is last_uses(jaxpr, reverse=True)
    assert last_uses(jaxpr) != last_uses(jaxpr, reverse=True)


def test_last_uses_of_a_jaxpr_without_equations():
    a = Var(F64_3)
    assert last_uses(Jaxpr([], [a], [a], [])) == {}
    assert last_uses(Jaxpr([], [a], [a], []), reverse=True) == {}


# --- eval_jaxpr releases values ----------------------------------------------------

class _Spy:
    """A test-only primitive `exp` whose impl notes, before computing, which of
    the values it made earlier are still alive."""

    def __init__(self):
        self.made = []  # weak references to each output, in order
        self.alive = []  # at each call: whether each earlier output was alive
        self.p = Primitive("spy_exp", lambda xp, x: self.impl(x), lambda x: x)

    def impl(self, x):
        gc.collect()
        self.alive.append([r() is not None for r in self.made])
        out = np.exp(x)
        self.made.append(weakref.ref(out))
        return out


def test_eval_jaxpr_releases_an_intermediate_after_its_last_use():
    spy = _Spy()
    closed = fgrad.make_jaxpr(lambda a: spy.p.bind(spy.p.bind(spy.p.bind(a))))(np.zeros(10_000))
    assert len(closed.eqns) == 3
    a = np.full(10_000, -1.0)
    (d,) = _run(closed, a)
    np.testing.assert_allclose(d, np.exp(np.exp(np.exp(a))))
    # b = spy a; c = spy b; d = spy c. While computing d, b (read last by the
    # second equation) is gone and c, the operand, is alive.
    assert spy.alive == [[], [True], [False, True]]


def test_eval_jaxpr_keeps_an_output_that_an_equation_also_reads():
    spy = _Spy()

    def f(a):
        b = spy.p.bind(a)
        c = spy.p.bind(b)
        return spy.p.bind(c), b

    closed = fgrad.make_jaxpr(f)(np.zeros(4))
    a = np.array([0.0, 1.0, -1.0, 0.5])
    d, b = _run(closed, a)
    assert spy.alive == [[], [True], [True, True]]  # b is an output: kept
    np.testing.assert_allclose(b, np.exp(a))
    np.testing.assert_allclose(d, np.exp(np.exp(np.exp(a))))


def test_eval_jaxpr_releases_a_value_used_by_several_equations_after_the_last():
    spy = _Spy()

    def f(a):
        b = spy.p.bind(a)
        c = spy.p.bind(b)  # b read
        d = spy.p.bind(c * b)  # b read last
        return spy.p.bind(d)

    closed = fgrad.make_jaxpr(f)(np.zeros(3))
    a = np.array([0.1, 0.2, 0.3])
    (out,) = _run(closed, a)
    b = np.exp(a)
    np.testing.assert_allclose(out, np.exp(np.exp(np.exp(b) * b)))
    # b = spy a; c = spy b; m = mul c b; d = spy m; out = spy d. The mul reads
    # b and c last, so both are gone by the time d is computed.
    assert spy.alive == [[], [True], [False, False], [False, False, True]]


def test_eval_jaxpr_releases_a_constant_after_its_last_use():
    spy = _Spy()
    closed = fgrad.make_jaxpr(lambda x: spy.p.bind(spy.p.bind(x * np.ones(5))))(np.zeros(5))
    assert len(closed.consts) == 1

    def make_constant():
        k = np.arange(5.0)
        spy.made.append(weakref.ref(k))
        return k

    # handed over by a generator, so that evaluation holds the only reference
    (out,) = eval_jaxpr(closed.jaxpr, (make_constant() for _ in range(1)), np.ones(5))
    np.testing.assert_allclose(out, np.exp(np.exp(np.arange(5.0))))
    assert spy.alive == [[False], [False, True]]  # the constant went after the mul


def test_eval_jaxpr_checks_the_number_of_arguments():
    closed = fgrad.make_jaxpr(lambda x, y: x * y)(1.0, 2.0)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        _run(closed, 1.0)


# --- eval_closed_now ----------------------------------------------------------------


def test_eval_closed_now_computes_even_under_staging():
    inner = fgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(np.ones(3))
    x = np.array([0.1, 0.2, 0.3])
    seen = {}

    def f(y):
        seen["now"] = eval_closed_now(inner, [x])
        seen["trace_after"] = ctx.trace
        return y + 1.0

    staged = fgrad.make_jaxpr(f)(1.0)
    (now,) = seen["now"]
    assert type(now) is np.ndarray
    np.testing.assert_allclose(now, np.sin(x) * 2.0)
    assert _names(staged.jaxpr) == ["add"]  # nothing of `inner` was recorded
    assert seen["trace_after"] is not EVAL_TRACE  # the staging trace was current again


def test_eval_closed_now_under_jvp_returns_plain_values():
    inner = fgrad.make_jaxpr(lambda x: (fnp.exp(x), x * 3.0))(1.0)
    got = {}

    def f(y):
        got["outs"] = eval_closed_now(inner, [0.5])
        return y * y

    primal, tangent = fgrad.jvp(f, (2.0,), (1.0,))
    assert (primal, tangent) == (4.0, 4.0)
    e, m = got["outs"]
    assert type(e) is np.float64 and e == pytest.approx(np.exp(0.5)) and m == 1.5


def test_eval_closed_now_restores_the_trace_after_an_error():
    inner = fgrad.make_jaxpr(lambda x: x @ x)(np.ones(3))
    before = []

    def f(y):
        before.append(ctx.trace)
        with pytest.raises(ValueError):
            eval_closed_now(inner, [np.ones(4)[:, None]])  # a (4, 1) @ (4, 1) fails in NumPy
        assert ctx.trace is before[0]
        return y

    fgrad.grad(f)(1.0)
    assert ctx.trace is EVAL_TRACE


def test_eval_closed_now_keeps_nan_checks_on():
    inner = fgrad.make_jaxpr(fnp.log)(1.0)

    def f(y):
        eval_closed_now(inner, [-1.0])
        return y

    with np.errstate(invalid="ignore"), fgrad.debug.debug_nans(), \
            pytest.raises(FloatingPointError, match="`log` produced NaN"):
        fgrad.grad(f)(1.0)


def test_eval_closed_now_uses_the_closed_jaxprs_constants():
    k = np.array([2.0, 3.0])
    inner = fgrad.make_jaxpr(lambda x: x * k)(np.ones(2))
    assert inner.consts[0] is k
    (out,) = eval_closed_now(inner, [np.array([1.0, -1.0])])
    np.testing.assert_allclose(out, [2.0, -3.0])


def test_eval_jaxpr_of_a_hand_built_jaxpr():
    a, b, c = Var(F64_3), Var(F64_3), Var(F64_3)
    jaxpr = Jaxpr([], [a], [c, b], [JaxprEqn(exp_p, [a], [b], {}), JaxprEqn(sin_p, [b], [c], {})])
    x = np.array([0.0, 1.0, 2.0])
    c_val, b_val = eval_jaxpr(jaxpr, [], x)
    np.testing.assert_allclose(b_val, np.exp(x))
    np.testing.assert_allclose(c_val, np.sin(np.exp(x)))
