"""check_grads accepts correct rules and catches wrong ones, in each mode and
order: the tutorial's custom rule with a wrong derivative must fail it."""

import numpy as np
import pytest

import fgrad.numpy as fnp
from fgrad.core import Primitive, jvp_rules, transpose_rules
from fgrad.primitives import elementwise as ew
from fgrad.test_util import check_grads


def legendre_p3(name, derivative):
    """P3(x) = 0.5 (5x^3 - 3x) as a primitive whose jvp uses `derivative`."""
    p = Primitive(name, lambda xp, x: 0.5 * (5 * x**3 - 3 * x), lambda x: x)
    jvp_rules[p] = lambda primals, tangents: (p.bind(*primals), ew.mul(tangents[0], derivative(primals[0])))
    return p


def test_a_correct_rule_passes_to_second_order():
    good = legendre_p3("p3_good", lambda x: 1.5 * (5 * x**2 - 1))
    check_grads(good.bind, (np.array([0.3, -0.8]),), order=2)


@pytest.mark.parametrize("modes", [("fwd",), ("rev",)])
def test_the_tutorials_wrong_rule_fails_in_each_mode(modes):
    wrong = legendre_p3("p3_wrong", lambda x: 1.5 * (5 * x**2 - 3))
    with pytest.raises(AssertionError, match="JVP|VJP"):
        check_grads(wrong.bind, (np.array([0.3, -0.8]),), order=1, modes=modes)


def test_a_wrong_second_derivative_is_caught_at_order_two_only():
    # first derivative right, but written with a primitive whose own jvp is wrong
    bad_square_p = Primitive("bad_square", lambda xp, x: xp.square(x), lambda x: x)
    jvp_rules[bad_square_p] = lambda primals, tangents: (
        bad_square_p.bind(*primals), ew.mul(tangents[0], 3.0 * primals[0]))  # should be 2x
    cube = legendre_p3("p3_via_bad", lambda x: 1.5 * (5 * bad_square_p.bind(x) - 1))
    x = (np.array([0.4]),)
    check_grads(cube.bind, x, order=1)
    with pytest.raises(AssertionError, match="of JVP|of VJP"):
        check_grads(cube.bind, x, order=2)


def test_check_grads_argument_errors():
    with pytest.raises(ValueError, match="modes"):
        check_grads(fnp.sin, (1.0,), order=1, modes=("backward",))
    with pytest.raises(ValueError, match="order"):
        check_grads(fnp.sin, (1.0,), order=0)


@pytest.mark.parametrize("mode, what", [("fwd", "JVP"), ("rev", "VJP")])
def test_zero_tolerances_are_used_not_replaced_by_the_defaults(mode, what):
    # Finite differences are never exact, so a check with no tolerance at all must fail:
    # `atol or default` took 0.0 for "not given" and passed it.
    check_grads(fnp.sin, (0.5,), order=1, modes=(mode,))
    with pytest.raises(AssertionError, match=f"{what} does not match.*atol=0.0, rtol=0.0"):
        check_grads(fnp.sin, (0.5,), order=1, modes=(mode,), atol=0.0, rtol=0.0)
    with pytest.raises(AssertionError, match="atol=0.0, rtol=0.0"):  # rtol defaults to atol
        check_grads(fnp.sin, (0.5,), order=1, modes=(mode,), atol=0.0)
    check_grads(fnp.sin, (0.5,), order=1, modes=(mode,), atol=0.0, rtol=1e-8)


def test_eps_must_be_a_positive_step():
    for eps in (0.0, -1e-5):
        with pytest.raises(ValueError, match="eps, the finite-difference step, must be positive"):
            check_grads(fnp.sin, (0.5,), order=1, eps=eps)


def test_transpose_rules_table_is_used_for_reverse_mode():
    assert ew.mul_p in transpose_rules


def test_arguments_may_be_a_list():
    from fgrad.test_util import check_jvp, check_vjp

    check_jvp(fnp.sin, [np.array([0.1, 0.2])])
    check_vjp(fnp.sin, [np.array([0.1, 0.2])])
