"""The jaxpr type checker: every staged jaxpr passes; each kind of malformed
jaxpr, built by hand, is rejected with a message naming what is wrong."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.core.avals import ShapedArray
from fgrad.higher_order.checkpoint import checkpoint_p
from fgrad.ir.check import JaxprTypeError, check_jaxpr
from fgrad.ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from fgrad.primitives.elementwise import cos_p, mul_p, sin_p

F64_3 = ShapedArray((3,), np.float64)
F64 = ShapedArray((), np.float64)


def _sin_then_mul():
    """{ lambda ; a:f64[3]. let b = sin a; c = mul b a in (c,) }, and its variables."""
    a, b, c = Var(F64_3), Var(F64_3), Var(F64_3)
    eqns = [JaxprEqn(sin_p, [a], [b], {}), JaxprEqn(mul_p, [b, a], [c], {})]
    return Jaxpr([], [a], [c], eqns), (a, b, c)


# --- staged jaxprs are well formed ------------------------------------------------


def _mixed(x, y):
    return fnp.sum(fnp.sin(x) * y, axis=0) * 2.0, fnp.exp(y) @ np.ones((3, 2)), x


STAGED = {
    "several inputs, outputs, literals and constants": lambda: fgrad.make_jaxpr(_mixed)(
        np.ones((4, 3)), np.ones(3)),
    "an input returned as it is": lambda: fgrad.make_jaxpr(lambda x: (x, x))(1.0),
    "grad": lambda: fgrad.make_jaxpr(fgrad.grad(lambda x: fnp.sum(fnp.tanh(x) * x)))(np.ones(3)),
    "grad of grad": lambda: fgrad.make_jaxpr(fgrad.grad(fgrad.grad(lambda x: fnp.sin(x) * x)))(0.5),
    "vmap": lambda: fgrad.make_jaxpr(fgrad.vmap(lambda x, y: fnp.dot(x, y), in_axes=(0, None)))(
        np.ones((2, 3)), np.ones(3)),
    "checkpoint": lambda: fgrad.make_jaxpr(fgrad.checkpoint(lambda x: fnp.sin(fnp.cos(x))))(np.ones(2)),
    "grad of checkpoint": lambda: fgrad.make_jaxpr(
        fgrad.grad(lambda x: fnp.sum(fgrad.checkpoint(lambda y: fnp.sin(y) * y)(x))))(np.ones(2)),
}


@pytest.mark.parametrize("make", STAGED.values(), ids=STAGED.keys())
def test_staged_jaxprs_pass(make):
    closed = make()
    assert isinstance(closed, ClosedJaxpr)
    check_jaxpr(closed)
    check_jaxpr(closed.jaxpr)  # the open jaxpr alone too


def test_a_checkpoint_jaxpr_holds_its_body_as_a_parameter():
    closed = STAGED["checkpoint"]()
    (eqn,) = closed.eqns
    assert eqn.primitive is checkpoint_p
    check_jaxpr(eqn.params["jaxpr"])


def nested(depth, leaf):
    """A jaxpr calling `leaf` 2**depth times: each level two checkpoints of the level
    below, one jaxpr shared by both (as a checkpointed scan's segments are)."""
    closed = leaf
    for _ in range(depth):
        a, b, c = Var(F64), Var(F64), Var(F64)
        calls = [JaxprEqn(checkpoint_p, [x], [y], {"jaxpr": closed, "name": "f"}) for x, y in ((a, b), (b, c))]
        closed = ClosedJaxpr(Jaxpr([], [a], [c], calls), [])
    return closed


def test_a_jaxpr_nested_in_many_places_is_checked_once():
    check_jaxpr(nested(60, fgrad.make_jaxpr(fnp.sin)(1.0)))  # 2**60 calls of sin: once each jaxpr
    jaxpr, (a, b, c) = _sin_then_mul()
    bad = Jaxpr([], [a], [c], list(reversed(jaxpr.eqns)))
    for _ in range(2):  # a jaxpr that failed fails again
        with pytest.raises(JaxprTypeError, match="used before it is bound"):
            check_jaxpr(bad)


def test_a_hand_built_jaxpr_with_constants_and_literals_passes():
    k, a, b, c = Var(F64_3), Var(F64_3), Var(F64_3), Var(F64_3)
    eqns = [JaxprEqn(mul_p, [a, Literal(2.0)], [b], {}), JaxprEqn(mul_p, [b, k], [c], {})]
    check_jaxpr(ClosedJaxpr(Jaxpr([k], [a], [c, Literal(1.0)], eqns), [np.ones(3)]))


# --- malformed jaxprs are rejected ------------------------------------------------


def test_a_variable_used_before_it_is_bound():
    jaxpr, (a, b, c) = _sin_then_mul()
    swapped = Jaxpr([], [a], [c], list(reversed(jaxpr.eqns)))  # mul reads b before sin binds it
    with pytest.raises(JaxprTypeError, match=r"variable (\w+) is used before it is bound \(in `\w+:f64\[3\] = mul \1 \w+`\)"):
        check_jaxpr(swapped)


def test_a_variable_never_bound():
    stray = Var(F64_3)
    a, b = Var(F64_3), Var(F64_3)
    jaxpr = Jaxpr([], [a], [b], [JaxprEqn(mul_p, [a, stray], [b], {})])
    with pytest.raises(JaxprTypeError, match="used before it is bound"):
        check_jaxpr(jaxpr)


def test_an_output_never_bound():
    a = Var(F64_3)
    with pytest.raises(JaxprTypeError, match=r"used before it is bound \(an output\)"):
        check_jaxpr(Jaxpr([], [a], [Var(F64_3)], []))


def test_an_equation_reading_its_own_output():
    a, b = Var(F64_3), Var(F64_3)
    with pytest.raises(JaxprTypeError, match=r"variable (\w+) is used before it is bound \(in `\1:f64\[3\] = mul \w+ \1`\)"):
        check_jaxpr(Jaxpr([], [a], [b], [JaxprEqn(mul_p, [a, b], [b], {})]))


def test_a_variable_bound_by_two_equations():
    a, b = Var(F64_3), Var(F64_3)
    eqns = [JaxprEqn(sin_p, [a], [b], {}), JaxprEqn(cos_p, [a], [b], {})]
    with pytest.raises(JaxprTypeError, match=r"variable (\w+) is bound twice \(in `\1:f64\[3\] = cos \w+`\)"):
        check_jaxpr(Jaxpr([], [a], [b], eqns))


def test_an_equation_rebinding_an_input():
    a = Var(F64_3)
    with pytest.raises(JaxprTypeError, match=r"variable (\w+) is bound twice \(in `\1:f64\[3\] = sin \1`\)"):
        check_jaxpr(Jaxpr([], [a], [a], [JaxprEqn(sin_p, [a], [a], {})]))


def test_an_input_listed_twice():
    a = Var(F64_3)
    with pytest.raises(JaxprTypeError, match=r"bound twice \(an input\)"):
        check_jaxpr(Jaxpr([], [a, a], [a], []))


def test_a_constant_that_is_also_an_input():
    a = Var(F64_3)
    with pytest.raises(JaxprTypeError, match=r"bound twice \(an input\)"):
        check_jaxpr(ClosedJaxpr(Jaxpr([a], [a], [a], []), [np.ones(3)]))


@pytest.mark.parametrize("wrong", [ShapedArray((4,), np.float64), ShapedArray((3,), np.float32), F64],
                         ids=["shape", "dtype", "rank"])
def test_an_output_aval_its_primitive_does_not_give(wrong):
    a, b = Var(F64_3), Var(wrong)
    jaxpr = Jaxpr([], [a], [b], [JaxprEqn(sin_p, [a], [b], {})])
    with pytest.raises(JaxprTypeError) as info:
        check_jaxpr(jaxpr)
    message = str(info.value)
    assert "the outputs of `sin` are typed" in message
    assert f"({wrong.str_short()})" in message and "gives (f64[3])" in message
    assert "for inputs (f64[3])" in message


def test_a_broadcast_result_typed_as_its_smaller_operand():
    x, y, z = Var(ShapedArray((2, 1), np.float64)), Var(ShapedArray((3,), np.float64)), Var(F64_3)
    jaxpr = Jaxpr([], [x, y], [z], [JaxprEqn(mul_p, [x, y], [z], {})])
    with pytest.raises(JaxprTypeError, match=r"typed \(f64\[3\]\), but its abstract evaluation gives \(f64\[2,3\]\)"):
        check_jaxpr(jaxpr)


def test_a_multiple_result_primitive_with_the_wrong_number_of_outputs():
    body = fgrad.make_jaxpr(lambda x: (fnp.sin(x), fnp.cos(x)))(np.ones(3))
    a, b = Var(F64_3), Var(F64_3)
    eqn = JaxprEqn(checkpoint_p, [a], [b], {"jaxpr": body, "name": "f"})  # two results, one variable
    with pytest.raises(JaxprTypeError, match=r"the outputs of `checkpoint` are typed \(f64\[3\]\), but its abstract evaluation gives \(f64\[3\], f64\[3\]\)"):
        check_jaxpr(Jaxpr([], [a], [b], [eqn]))


@pytest.mark.parametrize("n_consts", [0, 2])
def test_a_closed_jaxpr_with_the_wrong_number_of_constants(n_consts):
    k, a, b = Var(F64_3), Var(F64_3), Var(F64_3)
    jaxpr = Jaxpr([k], [a], [b], [JaxprEqn(mul_p, [a, k], [b], {})])
    check_jaxpr(ClosedJaxpr(jaxpr, [np.ones(3)]))
    with pytest.raises(JaxprTypeError, match=f"has 1 constant variables but {n_consts} constants"):
        check_jaxpr(ClosedJaxpr(jaxpr, [np.ones(3)] * n_consts))


def test_a_staged_closed_jaxpr_that_lost_a_constant():
    closed = fgrad.make_jaxpr(lambda x: x @ np.eye(3))(np.ones(3))
    assert len(closed.consts) == 1
    with pytest.raises(JaxprTypeError, match="1 constant variables but 0 constants"):
        check_jaxpr(ClosedJaxpr(closed.jaxpr, []))


def test_a_malformed_sub_jaxpr_in_a_parameter():
    body, (a, b, c) = _sin_then_mul()
    broken = ClosedJaxpr(Jaxpr([], [a], [c], list(reversed(body.eqns))), [])
    x, y = Var(F64_3), Var(F64_3)
    outer = Jaxpr([], [x], [y], [JaxprEqn(checkpoint_p, [x], [y], {"jaxpr": broken, "name": "f"})])
    check_jaxpr(Jaxpr([], [x], [y], [JaxprEqn(checkpoint_p, [x], [y],
                                               {"jaxpr": ClosedJaxpr(body, []), "name": "f"})]))
    with pytest.raises(JaxprTypeError, match=r"variable (\w+) is used before it is bound \(in `\w+:f64\[3\] = mul \1 \w+`\)"):
        check_jaxpr(outer)


def test_a_sub_jaxpr_missing_its_constants():
    body = fgrad.make_jaxpr(lambda x: x * np.arange(3.0))(np.ones(3))
    x, y = Var(F64_3), Var(F64_3)
    eqn = JaxprEqn(checkpoint_p, [x], [y], {"jaxpr": ClosedJaxpr(body.jaxpr, []), "name": "f"})
    with pytest.raises(JaxprTypeError, match="1 constant variables but 0 constants"):
        check_jaxpr(Jaxpr([], [x], [y], [eqn]))


def test_a_sub_jaxpr_in_a_staged_checkpoint_made_malformed():
    def f(x):
        return fnp.sum(fgrad.checkpoint(lambda y: fnp.sin(y) * y)(x))

    closed = fgrad.make_jaxpr(fgrad.grad(f))(np.ones(2))
    check_jaxpr(closed)
    eqns = []
    for eqn in closed.eqns:
        if eqn.primitive is checkpoint_p:
            inner = eqn.params["jaxpr"]
            # without the equation that binds a variable used later
            broken = ClosedJaxpr(Jaxpr(inner.jaxpr.constvars, inner.jaxpr.invars, inner.jaxpr.outvars,
                                       inner.eqns[1:]), inner.consts)
            eqn = JaxprEqn(eqn.primitive, eqn.invars, eqn.outvars, {**eqn.params, "jaxpr": broken})
        eqns.append(eqn)
    assert sum(e.primitive is checkpoint_p for e in eqns) >= 1
    j = closed.jaxpr
    with pytest.raises(JaxprTypeError, match="used before it is bound"):
        check_jaxpr(ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), closed.consts))


def test_the_error_is_a_type_error():
    assert issubclass(JaxprTypeError, TypeError)


# --- found by reading the checker against the printer and the primitives ----------------


def test_messages_name_variables_as_the_printed_jaxpr_does():
    a, b, c = Var(F64_3), Var(F64_3), Var(F64_3)
    jaxpr = Jaxpr([], [a], [c], [JaxprEqn(mul_p, [b, a], [c], {}), JaxprEqn(sin_p, [a], [b], {})])
    assert "b:f64[3] = mul c a" in str(jaxpr)
    with pytest.raises(JaxprTypeError, match=r"variable c is used before it is bound \(in `b:f64\[3\] = mul c a`\)"):
        check_jaxpr(jaxpr)


def test_a_higher_order_equation_whose_operands_do_not_fit_its_jaxpr():
    body = fgrad.make_jaxpr(fnp.sin)(np.ones(3))  # takes f64[3]
    x, y = Var(ShapedArray((2,), np.float32)), Var(F64_3)
    jaxpr = Jaxpr([], [x], [y], [JaxprEqn(checkpoint_p, [x], [y], {"jaxpr": body, "name": "f"})])
    with pytest.raises(JaxprTypeError, match=r"operands of `checkpoint of f` are \(f32\[2\]\), but its jaxpr takes \(f64\[3\]\)"):
        check_jaxpr(jaxpr)


def test_a_constant_that_does_not_fit_its_variable():
    k, a, b = Var(F64_3), Var(F64_3), Var(F64_3)
    closed = ClosedJaxpr(Jaxpr([k], [a], [b], [JaxprEqn(mul_p, [a, k], [b], {})]), [np.ones((5, 5), np.int8)])
    with pytest.raises(JaxprTypeError, match=r"constant a is typed f64\[3\] but its value is a i8\[5,5\]"):
        check_jaxpr(closed)


def test_an_error_in_a_sub_jaxpr_names_the_equation_holding_it():
    a, b = Var(F64_3), Var(F64_3)
    bad = ClosedJaxpr(Jaxpr([], [a], [b], [JaxprEqn(sin_p, [b], [b], {})]), [])
    x, y = Var(F64_3), Var(F64_3)
    outer = Jaxpr([], [x], [y], [JaxprEqn(checkpoint_p, [x], [y], {"jaxpr": bad, "name": "f"})])
    with pytest.raises(JaxprTypeError, match=r"used before it is bound[\s\S]*in the parameter `jaxpr` of the equation `b:f64\[3\] = checkpoint"):
        check_jaxpr(outer)
