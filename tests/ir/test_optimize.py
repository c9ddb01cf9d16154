"""The optimisation passes jit runs, each alone and then as the pipeline: constant
folding, algebraic simplification, CSE, and `optimize_jaxpr`. Each test says which
equations a small jaxpr keeps, that the result type-checks, and that it computes
what the jaxpr it came from computes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.compiler import optimize_jaxpr
from fgrad.compiler.rewrites import identity_products, simplify_jaxpr, sliced_products, summed_products
from fgrad.core.avals import ShapedArray
from fgrad.core.trace import Primitive
from fgrad.ir.check import check_jaxpr
from fgrad.ir.evaluate import eval_jaxpr
from fgrad.ir.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from fgrad.ir.passes import cse_jaxpr, dce_closed_jaxpr, fold_constants
from fgrad.primitives.elementwise import (
    add_p,
    convert_element_type_p,
    div_p,
    integer_pow_p,
    mul_p,
    neg_p,
    sin_p,
    sub_p,
)
from fgrad.primitives.shapes import broadcast_to_p, reshape_p
from tests.strategies import broadcast_pairs, seeds, shapes, values

F64 = ShapedArray((), np.float64)
F32 = ShapedArray((), np.float32)
F64_3 = ShapedArray((3,), np.float64)


def _names(closed):
    return [e.primitive.name for e in closed.eqns]


def _run(closed, *args):
    return eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _assert_same_values(before, after, *args):
    got, want = _run(after, *args), _run(before, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=0)
        assert np.shape(g) == np.shape(w) and np.result_type(g) == np.result_type(w)


def _unary(aval, make_eqns, consts=()):
    """A closed jaxpr of one input `x` of `aval`: `make_eqns(x, *constvars)` gives
    its equations, the last one's result is the output."""
    x = Var(aval)
    constvars = [Var(ShapedArray(np.shape(c), np.result_type(c))) for c in consts]
    eqns = make_eqns(x, *constvars)
    return ClosedJaxpr(Jaxpr(constvars, [x], [eqns[-1].outvars[0]], eqns), list(consts))


def _eqn(prim, invars, aval, **params):
    return JaxprEqn(prim, list(invars), [Var(aval)], params)


def _unchanged(closed):
    """A fingerprint of a closed jaxpr, to check that a pass left its input alone."""
    return str(closed), [e for e in closed.eqns], [list(e.invars) for e in closed.eqns], list(closed.consts)


# --- fold_constants -------------------------------------------------------------------


def test_fold_turns_a_chain_of_scalar_literals_into_one_literal():
    closed = fgrad.make_jaxpr(lambda x: x * fnp.exp(fnp.negative(2.0)))(1.0)
    assert _names(closed) == ["neg", "exp", "mul"]
    before = _unchanged(closed)
    folded = fold_constants(closed)
    check_jaxpr(folded)
    assert _names(folded) == ["mul"]
    lit = folded.eqns[0].invars[1]
    assert isinstance(lit, Literal) and lit.val == np.exp(-2.0) and lit.aval is F64
    assert folded.consts == []
    assert _unchanged(closed) == before  # the input is not changed
    _assert_same_values(closed, folded, 3.0)


def test_fold_keeps_array_results_as_constants():
    k = np.arange(3.0)
    closed = fgrad.make_jaxpr(lambda x: x + fnp.sin(k) * 2.0)(np.ones(3))
    assert _names(closed) == ["sin", "mul", "add"]
    folded = fold_constants(closed)
    check_jaxpr(folded)
    assert _names(folded) == ["add"]
    (const,) = [c for v, c in zip(folded.jaxpr.constvars, folded.consts) if v in folded.eqns[0].invars]
    assert isinstance(const, np.ndarray)
    np.testing.assert_array_equal(const, np.sin(k) * 2.0)
    _assert_same_values(closed, folded, np.array([1.0, -2.0, 0.5]))


def test_fold_an_output_that_is_all_known_becomes_a_literal_output():
    closed = fgrad.make_jaxpr(lambda x: (x, fnp.cos(0.0) + 1.0))(1.0)
    folded = fold_constants(closed)
    check_jaxpr(folded)
    assert _names(folded) == []
    assert isinstance(folded.jaxpr.outvars[1], Literal) and folded.jaxpr.outvars[1].val == 2.0
    _assert_same_values(closed, folded, 4.0)


def test_fold_with_nothing_known_returns_the_jaxpr_itself():
    closed = fgrad.make_jaxpr(lambda x: fnp.sin(x) * x)(1.0)
    assert fold_constants(closed) is closed


def test_fold_leaves_effects_alone(capsys):
    def f(x):
        fgrad.debug.print("{}", 2.0)
        return x + fnp.sin(1.0)

    closed = fgrad.make_jaxpr(f)(1.0)
    folded = fold_constants(closed)
    check_jaxpr(folded)
    assert _names(folded) == ["debug_print", "add"]
    assert capsys.readouterr().out == ""  # folding printed nothing
    _run(folded, 1.0)
    assert capsys.readouterr().out == "2.0\n"


def test_fold_leaves_higher_order_equations_alone():
    k = np.array([0.5, 1.5])
    closed = fgrad.make_jaxpr(lambda x: x + fgrad.checkpoint(fnp.sin)(k))(np.ones(2))
    folded = fold_constants(closed)
    assert _names(folded) == ["checkpoint", "add"]


def test_fold_leaves_an_equation_whose_impl_raises_to_raise_when_run():
    def boom(x):
        raise ZeroDivisionError("at run time")

    boom_p = Primitive("boom", lambda xp, x: boom(x), lambda x: x)
    closed = _unary(F64, lambda x: [_eqn(boom_p, [Literal(1.0, F64)], F64)])
    assert fold_constants(closed) is closed
    with pytest.raises(ZeroDivisionError, match="at run time"):
        _run(closed, 1.0)


def test_fold_does_not_blow_a_scalar_up_into_a_large_constant():
    big = ShapedArray((100, 100), np.float64)
    closed = _unary(big, lambda x: [
        b := _eqn(broadcast_to_p, [Literal(2.0)], big, shape=(100, 100)),
        _eqn(mul_p, [x, b.outvars[0]], big),
    ])
    assert fold_constants(closed) is closed
    small = ShapedArray((10, 10), np.float64)
    closed = _unary(small, lambda x: [
        b := _eqn(broadcast_to_p, [Literal(2.0)], small, shape=(10, 10)),
        _eqn(mul_p, [x, b.outvars[0]], small),
    ])
    assert _names(fold_constants(closed)) == ["mul"]


@given(shapes, seeds)
def test_fold_computes_what_the_jaxpr_did(shape, seed):
    k = values(shape, "real", seed)
    closed = fgrad.make_jaxpr(lambda x: x * (fnp.cos(k) + 1.0) - fnp.sum(fnp.exp(k)))(np.ones(shape))
    folded = fold_constants(closed)
    check_jaxpr(folded)
    assert _names(folded) == ["mul", "sub"]
    _assert_same_values(closed, folded, values(shape, "real", seed + 1))


# --- simplify_jaxpr -------------------------------------------------------------------

ONE, ZERO = Literal(1.0), Literal(0.0)
IDENTITIES = {
    "mul x 1": lambda x: [_eqn(mul_p, [x, ONE], x.aval)],
    "mul 1 x": lambda x: [_eqn(mul_p, [ONE, x], x.aval)],
    "div x 1": lambda x: [_eqn(div_p, [x, ONE], x.aval)],
    "add x 0": lambda x: [_eqn(add_p, [x, ZERO], x.aval)],
    "add 0 x": lambda x: [_eqn(add_p, [ZERO, x], x.aval)],
    "sub x 0": lambda x: [_eqn(sub_p, [x, ZERO], x.aval)],
    "neg (neg x)": lambda x: [n := _eqn(neg_p, [x], x.aval), _eqn(neg_p, [n.outvars[0]], x.aval)],
    "convert_element_type to its dtype": lambda x: [
        _eqn(convert_element_type_p, [x], x.aval, new_dtype=x.aval.dtype)],
    "broadcast_to its shape": lambda x: [_eqn(broadcast_to_p, [x], x.aval, shape=x.aval.shape)],
    "integer_pow[y=1] x": lambda x: [_eqn(integer_pow_p, [x], x.aval, y=1)],
    "reshape to its shape": lambda x: [_eqn(reshape_p, [x], x.aval, new_shape=x.aval.shape)],
    "mul x (broadcast_to 1)": lambda x: [
        b := _eqn(broadcast_to_p, [ONE], x.aval, shape=x.aval.shape), _eqn(mul_p, [x, b.outvars[0]], x.aval)],
}


@pytest.mark.parametrize("make", IDENTITIES.values(), ids=IDENTITIES.keys())
@given(shape=shapes, seed=seeds)
def test_simplify_forwards_the_operand_of_an_identity(make, shape, seed):
    closed = _unary(ShapedArray(shape, np.float64), make)
    before = _unchanged(closed)
    simple = simplify_jaxpr(closed)
    check_jaxpr(simple)
    assert simple.jaxpr.outvars == closed.jaxpr.invars  # the output is x itself
    assert _unchanged(closed) == before
    _assert_same_values(closed, simple, values(shape, "real", seed))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@given(shape=shapes, seed=seeds)
def test_simplify_turns_a_second_power_into_square(dtype, shape, seed):
    aval = ShapedArray(shape, np.dtype(dtype))
    closed = _unary(aval, lambda x: [_eqn(integer_pow_p, [x], aval, y=2)])
    simple = simplify_jaxpr(closed)
    check_jaxpr(simple)
    assert _names(simple) == ["square"]
    _assert_same_values(closed, simple, (values(shape, "real", seed) * 3).astype(dtype))


def test_simplify_treats_a_constant_of_ones_or_zeros_as_the_number():
    closed = _unary(F64_3, lambda x, ones, zeros: [
        m := _eqn(mul_p, [ones, x], F64_3), _eqn(add_p, [m.outvars[0], zeros], F64_3),
    ], consts=[np.ones(3), np.zeros(3)])
    simple = simplify_jaxpr(closed)
    check_jaxpr(simple)
    assert _names(simple) == [] and simple.jaxpr.outvars == closed.jaxpr.invars


@pytest.mark.parametrize("minus_one_first", [False, True])
@given(shape=shapes, seed=seeds)
def test_simplify_turns_mul_by_minus_one_into_neg(minus_one_first, shape, seed):
    aval = ShapedArray(shape, np.float64)
    m1 = Literal(-1.0)
    closed = _unary(aval, lambda x: [_eqn(mul_p, [m1, x] if minus_one_first else [x, m1], aval)])
    simple = simplify_jaxpr(closed)
    check_jaxpr(simple)
    assert _names(simple) == ["neg"] and simple.eqns[0].invars == closed.jaxpr.invars
    assert simple.jaxpr.outvars == closed.jaxpr.outvars
    _assert_same_values(closed, simple, values(shape, "real", seed))


def test_simplify_leaves_mul_by_minus_one_of_unsigned_integers():
    u8 = ShapedArray((3,), np.uint8)
    closed = _unary(u8, lambda x: [_eqn(mul_p, [x, Literal(-1)], u8)])
    assert simplify_jaxpr(closed) is closed


NOT_IDENTITIES = {
    # f32 times a f64 one is a f64: the result is not x.
    "mul x:f32[] 1.0:f64[]": (F32, lambda x: [_eqn(mul_p, [x, Literal(np.float64(1.0))], F64)], ()),
    # Adding a (2, 3) array of zeros broadcasts x.
    "add x:f64[3] 0.0:f64[2,3]": (F64_3, lambda x, z: [_eqn(add_p, [x, z], ShapedArray((2, 3), np.float64))],
                                  (np.zeros((2, 3)),)),
    "broadcast_to another shape": (F64_3, lambda x: [
        _eqn(broadcast_to_p, [x], ShapedArray((2, 3), np.float64), shape=(2, 3))], ()),
    "convert_element_type to another dtype": (F64_3, lambda x: [
        _eqn(convert_element_type_p, [x], ShapedArray((3,), np.float32), new_dtype=np.dtype(np.float32))], ()),
    "mul x 2": (F64_3, lambda x: [_eqn(mul_p, [x, Literal(2.0)], F64_3)], ()),
    "add x 1": (F64_3, lambda x: [_eqn(add_p, [x, ONE], F64_3)], ()),
    "sub 0 x": (F64_3, lambda x: [_eqn(sub_p, [ZERO, x], F64_3)], ()),
    "div 1 x": (F64_3, lambda x: [_eqn(div_p, [ONE, x], F64_3)], ()),
    "mul x (a constant not all ones)": (F64_3, lambda x, c: [_eqn(mul_p, [x, c], F64_3)], (np.array([1.0, 1.0, 2.0]),)),
    "neg x": (F64_3, lambda x: [_eqn(neg_p, [x], F64_3)], ()),
}


@pytest.mark.parametrize("case", NOT_IDENTITIES.values(), ids=NOT_IDENTITIES.keys())
def test_simplify_leaves_what_is_not_an_identity(case):
    aval, make, consts = case
    closed = _unary(aval, make, consts)
    check_jaxpr(closed)
    assert simplify_jaxpr(closed) is closed


def test_simplify_leaves_a_weak_literal_where_the_result_is_strong():
    # mul 2.0 1.0 is a f64[], 2.0 a weakly typed one: forwarding it would let a
    # later f32 operand decide the dtype of what follows.
    closed = _unary(F32, lambda x: [
        m := _eqn(mul_p, [Literal(2.0), ONE], F64), _eqn(add_p, [m.outvars[0], x], F64),
    ])
    check_jaxpr(closed)
    assert simplify_jaxpr(closed) is closed


F64_WEAK = ShapedArray((), np.float64, weak_type=True)
TYPED_ONE, TYPED_ZERO = Literal(np.float64(1.0)), Literal(np.float64(0.0))

# Identities with a typed (strong) literal of a weak x (a jit argument given as a Python float), whose
# result is a strong f64[]: x itself where each use types its result as before.
TYPED_IDENTITIES = {
    "mul x 1.0:f64[]": lambda x: _eqn(mul_p, [x, TYPED_ONE], F64),
    "mul 1.0:f64[] x": lambda x: _eqn(mul_p, [TYPED_ONE, x], F64),
    "add x 0.0:f64[]": lambda x: _eqn(add_p, [x, TYPED_ZERO], F64),
    "add 0.0:f64[] x": lambda x: _eqn(add_p, [TYPED_ZERO, x], F64),
    "sub x 0.0:f64[]": lambda x: _eqn(sub_p, [x, TYPED_ZERO], F64),
    "div x 1.0:f64[]": lambda x: _eqn(div_p, [x, TYPED_ONE], F64),
}


def _assert_types_exact(before, after):
    """Every equation of `after` typed as its abstract evaluation says, weak types included (check_jaxpr
    compares shapes and dtypes), and the outputs typed as `before`'s."""
    for eqn in after.eqns:
        expected = eqn.primitive.abstract_eval(*[a.aval for a in eqn.invars], **eqn.params)
        assert [expected] == [v.aval for v in eqn.outvars]
    assert [a.aval for a in after.jaxpr.outvars] == [a.aval for a in before.jaxpr.outvars]


@pytest.mark.parametrize("make", TYPED_IDENTITIES.values(), ids=TYPED_IDENTITIES.keys())
def test_simplify_drops_identities_with_a_typed_literal_of_a_weak_operand(make):
    # Issue 25: jit(grad(f))(2.0, 5.0) kept `mul 1.0:f64[] a`, the seed times a weak a.
    strong = Var(F64)
    closed = _unary(F64_WEAK, lambda x: [m := make(x), _eqn(sub_p, [m.outvars[0], strong], F64)])
    closed = ClosedJaxpr(Jaxpr([], [closed.jaxpr.invars[0], strong], closed.jaxpr.outvars, closed.eqns), [])
    simple = simplify_jaxpr(closed)
    check_jaxpr(simple)
    _assert_types_exact(closed, simple)
    assert _names(simple) == ["sub"] and simple.eqns[0].invars == closed.jaxpr.invars
    _assert_same_values(closed, simple, 2.0, np.float64(0.5))


def test_simplify_keeps_a_typed_identity_where_the_weak_operand_would_change_a_type():
    f32 = Var(F32)
    # As an output the result would turn weak; beside an f32 the product would be an f32, not an f64.
    as_output = _unary(F64_WEAK, lambda x: [_eqn(mul_p, [x, TYPED_ONE], F64)])
    beside_f32 = _unary(F64_WEAK, lambda x: [m := _eqn(mul_p, [TYPED_ONE, x], F64),
                                             _eqn(mul_p, [m.outvars[0], f32], F64)])
    beside_f32 = ClosedJaxpr(Jaxpr([], [beside_f32.jaxpr.invars[0], f32], beside_f32.jaxpr.outvars,
                                   beside_f32.eqns), [])
    # Read where it does not matter too, it stays for the use where it does.
    both = _unary(F64_WEAK, lambda x: [m := _eqn(mul_p, [x, TYPED_ONE], F64), _eqn(sin_p, [m.outvars[0]], F64),
                                       _eqn(mul_p, [m.outvars[0], f32], F64)])
    both = ClosedJaxpr(Jaxpr([], [both.jaxpr.invars[0], f32], [both.eqns[1].outvars[0], both.eqns[2].outvars[0]],
                             both.eqns), [])
    for closed in (as_output, beside_f32, both):
        check_jaxpr(closed)
        assert simplify_jaxpr(closed) is closed


def test_simplify_keeps_a_product_with_ones_that_broadcasts_or_promotes():
    for aval, ones in [(F64, np.ones(3)), (F32, np.float64(1.0)), (F64_WEAK, np.ones(3))]:
        out = ShapedArray(np.broadcast_shapes(aval.shape, np.shape(ones)), np.float64)
        closed = _unary(aval, lambda x, c: [_eqn(mul_p, [c, x], out)], (ones,))
        check_jaxpr(closed)
        assert simplify_jaxpr(closed) is closed


def test_jit_of_the_seed_gradient_has_no_product_with_one():
    def f(x1, x2):
        return fnp.log(x1) + x1 * x2 - fnp.exp(x2)

    lowered = fgrad.jit(fgrad.grad(f, argnums=(0, 1))).lower(np.float64(2.0), 5.0)  # 5.0 weak
    assert "mul 1.0" not in str(lowered.jaxpr)
    # With two Python floats, 1 / x1 is a Python float too (weak), and so would be its sum with
    # x2: the seed's product with one of them stays, keeping the sum's type (float64 here).
    lowered = fgrad.jit(fgrad.grad(f, argnums=(0, 1))).lower(2.0, 5.0)
    assert str(lowered.jaxpr).count("mul 1.0") == 1
    for args in ((2.0, 5.0), (np.float64(2.0), 5.0)):
        got = fgrad.jit(fgrad.grad(f, argnums=(0, 1)))(*args)
        np.testing.assert_allclose(got, (1 / 2.0 + 5.0, 2.0 - np.exp(5.0)), rtol=1e-15)
        assert all(type(g) is np.float64 for g in got)


def test_simplify_renames_every_use_and_the_outputs():
    x = Var(F64)
    y, z = Var(F64), Var(F64)
    eqns = [JaxprEqn(mul_p, [x, ONE], [y], {}), JaxprEqn(sin_p, [y], [z], {})]
    closed = ClosedJaxpr(Jaxpr([], [x], [y, z, y], eqns), [])
    simple = simplify_jaxpr(closed)
    check_jaxpr(simple)
    assert _names(simple) == ["sin"] and simple.eqns[0].invars == [x]
    assert simple.jaxpr.outvars[0] is x and simple.jaxpr.outvars[2] is x
    _assert_same_values(closed, simple, 0.7)


NEGATIONS = {  # f(x, y), and the primitives the optimised jaxpr keeps
    "x + (-y)": (lambda x, y: x + (-y), ["sub"]),
    "(-y) + x": (lambda x, y: (-y) + x, ["sub"]),
    "x - (-y)": (lambda x, y: x - (-y), ["add"]),
    "(-x) * y + y": (lambda x, y: (-x) * y + y, ["mul", "sub"]),
    "y * (-x) + y": (lambda x, y: y * (-x) + y, ["mul", "sub"]),
    "(-x) * y * x - y": (lambda x, y: (-x) * y * x - y, ["mul", "mul", "neg", "sub"]),
}


@pytest.mark.parametrize("case", NEGATIONS.values(), ids=NEGATIONS.keys())
@given(shapes_=broadcast_pairs(), seed=seeds)
def test_negations_move_into_sums_exactly(case, shapes_, seed):
    f, kept = case
    x, y = values(shapes_[0], "real", seed), values(shapes_[1], "real", seed + 1)
    closed = fgrad.make_jaxpr(f)(x, y)
    simple = optimize_jaxpr(closed)
    check_jaxpr(simple)
    assert sorted(_names(simple)) == sorted(kept)
    got, want = _run(simple, x, y), _run(closed, x, y)
    np.testing.assert_array_equal(got[0], want[0])  # each rewrite is exact in IEEE arithmetic
    assert np.shape(got[0]) == np.shape(want[0])


def test_a_negation_read_twice_stays_where_it_is():
    def f(x, y):
        n = -x
        return n * y + y, n

    closed = fgrad.make_jaxpr(f)(np.ones(2), np.ones(2))
    assert sorted(_names(optimize_jaxpr(closed))) == ["add", "mul", "neg"]


def test_negations_of_integers_stay_where_they_are():
    closed = fgrad.make_jaxpr(lambda x, y: (-x) * y + y)(np.ones(2, int), np.ones(2, int))
    assert sorted(_names(optimize_jaxpr(closed))) == ["add", "mul", "neg"]


def test_simplify_cascades_through_a_chain_in_one_pass():
    closed = fgrad.make_jaxpr(lambda x: fnp.negative(fnp.negative(x * 1.0 + 0.0)) - 0.0)(np.ones(3))
    simple = simplify_jaxpr(closed)
    check_jaxpr(simple)
    assert simple.jaxpr.outvars == closed.jaxpr.invars
    assert set(_names(simple)) <= {"neg"}  # the inner neg is dead; DCE drops it
    _assert_same_values(closed, simple, np.array([1.0, -2.0, 3.0]))


def test_simplify_with_nothing_to_do_returns_the_jaxpr_itself():
    closed = fgrad.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(1.0)
    assert simplify_jaxpr(closed) is closed


# --- cse_jaxpr ------------------------------------------------------------------------


def test_cse_computes_a_repeated_expression_once():
    closed = fgrad.make_jaxpr(lambda x: (fnp.sin(x) + 1.0) * (fnp.sin(x) + 1.0))(np.ones(3))
    assert _names(closed) == ["sin", "add", "sin", "add", "mul"]
    before = _unchanged(closed)
    merged = cse_jaxpr(closed)
    check_jaxpr(merged)
    assert _names(merged) == ["sin", "add", "mul"]
    a = merged.eqns[1].outvars[0]
    assert merged.eqns[2].invars == [a, a]
    assert _unchanged(closed) == before
    _assert_same_values(closed, merged, np.array([0.1, 2.0, -3.0]))


def test_cse_renames_outputs_to_the_first_computation():
    closed = fgrad.make_jaxpr(lambda x: (fnp.exp(x), fnp.exp(x)))(1.0)
    merged = cse_jaxpr(closed)
    assert _names(merged) == ["exp"]
    assert merged.jaxpr.outvars[0] is merged.jaxpr.outvars[1] is merged.eqns[0].outvars[0]


def test_cse_matches_add_and_mul_with_their_operands_swapped():
    closed = fgrad.make_jaxpr(lambda x, y: (x * y, y * x, x - y, y - x, x + y, y + x))(1.0, 2.0)
    merged = cse_jaxpr(closed)
    check_jaxpr(merged)
    assert sorted(_names(merged)) == ["add", "mul", "sub", "sub"]
    _assert_same_values(closed, merged, 3.0, -5.0)


LITERAL_PAIRS = {
    "the same weak float": (Literal(1.0), Literal(1.0), True),
    "the same f64": (Literal(np.float64(2.0)), Literal(np.float64(2.0)), True),
    "another value": (Literal(1.0), Literal(2.0), False),
    "0.0 and -0.0": (Literal(0.0), Literal(-0.0), False),
    "a weak and a strong 1.0": (Literal(1.0), Literal(np.float64(1.0)), False),
    "a float and an int 1": (Literal(1.0), Literal(1), False),
}


@pytest.mark.parametrize("case", LITERAL_PAIRS.values(), ids=LITERAL_PAIRS.keys())
def test_cse_compares_literals_by_value_and_aval(case):
    first, second, same = case
    x = Var(F64_3)
    eqns = [_eqn(sub_p, [x, first], F64_3), _eqn(sub_p, [x, second], F64_3)]
    closed = ClosedJaxpr(Jaxpr([], [x], [e.outvars[0] for e in eqns], eqns), [])
    check_jaxpr(closed)
    merged = cse_jaxpr(closed)
    check_jaxpr(merged)
    assert len(merged.eqns) == (1 if same else 2)
    _assert_same_values(closed, merged, np.array([-0.0, 1.5, 2.0]))


def test_cse_compares_parameters():
    closed = fgrad.make_jaxpr(lambda x: (fnp.sum(x, axis=0), fnp.sum(x, axis=1), fnp.sum(x, axis=0)))(
        np.ones((3, 3)))
    merged = cse_jaxpr(closed)
    check_jaxpr(merged)
    assert [e.params["axes"] for e in merged.eqns] == [(0,), (1,)]
    _assert_same_values(closed, merged, np.arange(9.0).reshape(3, 3))


def test_cse_compares_sub_jaxprs_by_identity():
    closed = fgrad.make_jaxpr(lambda x: fgrad.checkpoint(fnp.sin)(x))(1.0)
    (eqn,) = closed.eqns
    body = eqn.params["jaxpr"]
    twin = ClosedJaxpr(body.jaxpr, body.consts)  # equal, but another object
    x = closed.jaxpr.invars[0]
    eqns = [JaxprEqn(eqn.primitive, [x], [Var(F64)], dict(eqn.params)) for _ in range(2)]
    eqns.append(JaxprEqn(eqn.primitive, [x], [Var(F64)], {**eqn.params, "jaxpr": twin}))
    three = ClosedJaxpr(Jaxpr([], [x], [e.outvars[0] for e in eqns], eqns), [])
    check_jaxpr(three)
    merged = cse_jaxpr(three)
    check_jaxpr(merged)
    assert len(merged.eqns) == 2
    assert merged.eqns[1].params["jaxpr"] is twin
    _assert_same_values(three, merged, 0.3)


def test_cse_keeps_equations_with_unhashable_parameters():
    scale_p = Primitive("scale", lambda xp, x, *, by: x * by, lambda x, *, by: x)
    x = Var(F64_3)
    eqns = [_eqn(scale_p, [x], F64_3, by=np.array([1.0, 2.0, 3.0])) for _ in range(2)]
    closed = ClosedJaxpr(Jaxpr([], [x], [e.outvars[0] for e in eqns], eqns), [])
    assert cse_jaxpr(closed) is closed


def test_cse_never_merges_effects_and_keeps_their_order(capsys):
    def f(x):
        fgrad.debug.print("x = {}", x)
        y = fnp.sin(x)
        fgrad.debug.print("x = {}", x)
        return y + fnp.sin(x)

    closed = fgrad.make_jaxpr(f)(1.0)
    assert _names(closed) == ["debug_print", "sin", "debug_print", "sin", "add"]
    merged = cse_jaxpr(closed)
    check_jaxpr(merged)
    assert _names(merged) == ["debug_print", "sin", "debug_print", "add"]
    assert merged.eqns[0] is closed.eqns[0] and merged.eqns[2] is closed.eqns[2]
    (out,) = _run(merged, 0.5)
    assert out == pytest.approx(2 * np.sin(0.5))
    assert capsys.readouterr().out == "x = 0.5\nx = 0.5\n"


def test_cse_with_nothing_repeated_returns_the_jaxpr_itself():
    closed = fgrad.make_jaxpr(lambda x: fnp.sin(x) * fnp.cos(x))(1.0)
    assert cse_jaxpr(closed) is closed


@given(st.tuples(shapes, st.booleans()), seeds)
def test_cse_computes_what_the_jaxpr_did(case, seed):
    shape, swap = case

    def f(x, y):
        a = fnp.tanh(x) * y
        b = y * fnp.tanh(x) if swap else fnp.tanh(x) * y
        return a + b, fnp.sum(a - b)

    x, y = values(shape, "real", seed), values(shape, "real", seed + 1)
    closed = fgrad.make_jaxpr(f)(x, y)
    merged = cse_jaxpr(closed)
    check_jaxpr(merged)
    assert _names(merged).count("tanh") == 1 and _names(merged).count("mul") == 1
    _assert_same_values(closed, merged, x, y)


# --- optimize_jaxpr -------------------------------------------------------------------


def _seed_f(x1, x2):
    return fnp.log(x1) + x1 * x2 - fnp.exp(x2)


def _is_literal(a, value):
    return isinstance(a, Literal) and a.val == value


def test_optimize_cleans_up_the_gradient_of_the_seed_example():
    closed = fgrad.make_jaxpr(fgrad.grad(_seed_f, argnums=(0, 1)))(2.0, 5.0)
    # What reverse mode stages today: a cotangent of 1.0 multiplied in, and a
    # negated literal.
    assert any(e.primitive.name == "mul" and any(_is_literal(a, 1.0) for a in e.invars) for e in closed.eqns)
    assert any(e.primitive.name == "neg" and isinstance(e.invars[0], Literal) for e in closed.eqns)
    before = _unchanged(closed)
    opt = optimize_jaxpr(closed)
    check_jaxpr(opt)
    assert _unchanged(closed) == before
    for e in opt.eqns:
        assert not (e.primitive.name == "mul" and any(_is_literal(a, 1.0) for a in e.invars)), e
        assert not (e.primitive.name == "neg" and isinstance(e.invars[0], Literal)), e
    # The dead primal and the bookkeeping are gone: 1/x1 + x2, and x1 - exp(x2), whose
    # negation the sum absorbed.
    assert sorted(_names(opt)) == ["add", "div", "exp", "sub"]
    dx1, dx2 = _run(opt, 2.0, 5.0)
    assert dx1 == 5.5
    assert dx2 == pytest.approx(-146.4131591025766, rel=1e-15)
    assert (dx1, dx2) == tuple(fgrad.grad(_seed_f, argnums=(0, 1))(2.0, 5.0))


def test_optimize_reaches_a_fixpoint():
    closed = fgrad.make_jaxpr(fgrad.grad(_seed_f, argnums=(0, 1)))(2.0, 5.0)
    opt = optimize_jaxpr(closed)
    assert optimize_jaxpr(opt) is opt


def test_optimize_needs_the_passes_together():
    # Folding makes the -1, simplification turns the mul into neg and drops the
    # neg of neg, CSE merges the two sins, DCE drops what is left over.
    def f(x):
        minus_one = fnp.negative(fnp.exp(0.0))
        return fnp.sin(x) * minus_one * minus_one + fnp.sin(x)

    closed = fgrad.make_jaxpr(f)(np.ones(3))
    opt = optimize_jaxpr(closed)
    check_jaxpr(opt)
    assert _names(opt) == ["sin", "add"]
    s = opt.eqns[0].outvars[0]
    assert opt.eqns[1].invars == [s, s]
    _assert_same_values(closed, opt, np.array([0.5, -1.0, 2.0]))


def test_optimize_keeps_every_effect_in_order(capsys):
    def f(x):
        unused = fnp.cos(x) * 1.0  # noqa: F841
        fgrad.debug.print("a {}", x * 1.0)
        fgrad.debug.print("a {}", x * 1.0)
        fgrad.debug.print("b {}", fnp.sin(x) + 0.0)
        return x

    closed = fgrad.make_jaxpr(f)(1.0)
    opt = optimize_jaxpr(closed)
    check_jaxpr(opt)
    assert _names(opt) == ["debug_print", "debug_print", "sin", "debug_print"]
    assert _run(opt, 2.0) == [2.0]
    assert capsys.readouterr().out == f"a 2.0\na 2.0\nb {np.sin(2.0)}\n"


@given(shapes, seeds)
def test_optimize_of_gradients_computes_what_they_did(shape, seed):
    k = values(shape, "positive", seed + 2)

    def f(x, y):
        return fnp.sum(fnp.tanh(x) * y + fnp.log(k) * x - fnp.exp(y) * 1.0)

    x, y = values(shape, "real", seed), values(shape, "real", seed + 1)
    closed = fgrad.make_jaxpr(fgrad.grad(f, argnums=(0, 1)))(x, y)
    opt = optimize_jaxpr(closed)
    check_jaxpr(opt)
    assert len(opt.eqns) < len(closed.eqns)
    _assert_same_values(closed, opt, x, y)
    assert optimize_jaxpr(opt) is opt


# --- inline_calls ----------------------------------------------------------------------


def test_inline_calls_splices_nested_jits_with_fresh_variables():
    from fgrad.compiler.pipeline import inline_calls

    inner = fgrad.jit(lambda x, y: (fnp.sin(x) * y, x))
    # the same inner jaxpr twice, and a jit inside a jit
    f = lambda z: fgrad.jit(lambda z: inner(z, z)[0] + inner(z, 2.0)[0])(z) * 3.0
    closed = fgrad.make_jaxpr(f)(1.0)
    assert "jit" in [e.primitive.name for e in closed.eqns]
    inlined = inline_calls(closed)
    check_jaxpr(inlined)
    assert "jit" not in [e.primitive.name for e in inlined.eqns]
    for z in (0.3, -1.7):
        np.testing.assert_allclose(eval_jaxpr(inlined.jaxpr, inlined.consts, z)[0],
                                   (np.sin(z) * z + np.sin(z) * 2.0) * 3.0, rtol=1e-15)
    assert inline_calls(inlined) is inlined  # nothing left to inline


def test_inline_calls_keeps_checkpoint_and_brings_constants_along():
    from fgrad.compiler.pipeline import inline_calls

    c = np.arange(3.0)
    closed = fgrad.make_jaxpr(lambda x: fgrad.checkpoint(fnp.sin)(fgrad.jit(lambda x: x * c)(x)))(np.ones(3))
    inlined = inline_calls(closed)
    check_jaxpr(inlined)
    assert [e.primitive.name for e in inlined.eqns] == ["mul", "checkpoint"]
    np.testing.assert_allclose(eval_jaxpr(inlined.jaxpr, inlined.consts, np.ones(3))[0], np.sin(c))


# --- identity_products ----------------------------------------------------------------
DIAGONAL_PRODUCTS = {  # f(v, C, s) with eye a constant; the primitives left after DCE
    "(eye * v) @ C": (lambda v, C, s: (np.eye(4) * v) @ C, ["mul", "reshape"]),
    "(v * eye) @ C": (lambda v, C, s: (v * np.eye(4)) @ C, ["mul", "reshape"]),
    "C @ (eye * v)": (lambda v, C, s: C.T @ (np.eye(4) * v), ["mul", "transpose"]),
    "(eye * v * v * s).T @ C": (lambda v, C, s: (np.eye(4) * v * v * s).T @ C, ["mul", "mul", "mul", "reshape"]),
    "(eye * v) @ v": (lambda v, C, s: (np.eye(4) * v) @ v, ["mul"]),
    "eye @ C": (lambda v, C, s: np.eye(4) @ C, []),
    "(eye * s) @ C": (lambda v, C, s: (np.eye(4) * s) @ C, ["mul"]),
}


@pytest.mark.parametrize("case", DIAGONAL_PRODUCTS.values(), ids=DIAGONAL_PRODUCTS.keys())
@given(seed=seeds)
def test_products_with_diagonals_of_the_identity_skip_the_zeros_and_equal_the_dense_product(case, seed):
    f, kept = case
    v, C, s = values((4,), "real", seed), values((4, 3), "real", seed + 1), values((), "real", seed + 2)
    closed = fgrad.make_jaxpr(f)(v, C, s)
    assert "matmul" in _names(closed)
    found = dce_closed_jaxpr(identity_products(closed))
    check_jaxpr(found)
    assert sorted(_names(found)) == sorted(kept)
    got, want = _run(found, v, C, s), _run(closed, v, C, s)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-15, atol=1e-300)
    assert np.shape(got[0]) == np.shape(want[0])


@pytest.mark.parametrize("make", [
    lambda v, C: (np.eye(4) + 1e-300 * np.ones((4, 4))) * v @ C,  # not the identity
    lambda v, C: (np.eye(4) * v.astype(np.float32)) @ C,  # dtypes differ: the product promotes
    lambda v, C: (np.eye(4) * C[:, :1]) @ C,  # a column (not recognised)
    lambda v, C: (np.eye(4, dtype=int) * v.astype(int)) @ C.astype(int),  # integers
])
def test_identity_products_leave_what_is_not_a_diagonal_of_the_identity(make):
    v, C = np.arange(1.0, 5.0), np.arange(16.0).reshape(4, 4)
    closed = fgrad.make_jaxpr(make)(v, C)
    assert "matmul" in _names(dce_closed_jaxpr(identity_products(closed)))


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd", "hessian"])
def test_jitted_jacobians_over_the_basis_equal_eager_ones(transform):
    A = np.random.default_rng(0).standard_normal((6, 6)) / 3
    f = lambda x: fnp.tanh(A @ x) * x if transform != "hessian" else fnp.sum(fnp.tanh(A @ x) ** 2)  # noqa: E731
    x = np.linspace(-1.0, 1.0, 6)
    eager = getattr(fgrad, transform)(f)(x)
    np.testing.assert_allclose(fgrad.jit(getattr(fgrad, transform)(f))(x), eager, rtol=1e-13, atol=1e-15)


# --- summed_products and sliced_products ----------------------------------------------
SUMS = {  # f(hs, gs, w, k), and how many products of one form it sums
    "h.T @ g": (lambda hs, gs, w, k: _chain([hs[i].T @ gs[i] for i in range(k)]), 1),
    "h @ w.T": (lambda hs, gs, w, k: _chain([hs[i] @ gs[i].T for i in range(k)]), 1),
    "sum(g, 0)": (lambda hs, gs, w, k: _chain([fnp.sum(gs[i], axis=0) for i in range(k)]), 1),
    "mixed with other terms": (lambda hs, gs, w, k: _chain(
        [w] + [hs[i].T @ gs[i] for i in range(k)] + [fnp.sin(w)] + [gs[i].T @ hs[i] for i in range(k)]), 2),
}


def _chain(terms):
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


@pytest.mark.parametrize("case", SUMS.values(), ids=SUMS.keys())
@given(seed=seeds, k=st.integers(1, 7), m=st.integers(1, 4))
def test_summed_products_stack_a_sum_of_products_and_equal_it_up_to_rounding(case, seed, k, m):
    case, per_k = case
    hs, gs = values((k, m, 3), "real", seed), values((k, m, 3), "real", seed + 1)
    w = values((3, 3), "real", seed + 2)
    closed = fgrad.make_jaxpr(lambda hs, gs, w: case(hs, gs, w, k))(hs, gs, w)
    found = dce_closed_jaxpr(summed_products(closed))
    check_jaxpr(found)
    products = sum(n in ("matmul", "reduce_sum") for n in _names(closed))
    if k * per_k >= 4:
        assert "concatenate" in _names(found)
        assert sum(n in ("matmul", "reduce_sum") for n in _names(found)) == products // (k * per_k)
    else:
        assert found.eqns == closed.eqns  # too few terms to be worth a copy
    got, want = _run(found, hs, gs, w), _run(closed, hs, gs, w)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=1e-13)


def test_summed_products_leave_terms_read_elsewhere_and_mixed_dtypes():
    hs, gs = np.arange(30.0).reshape(5, 2, 3), np.ones((5, 2, 3))
    read_twice = lambda hs, gs: (_chain([hs[i].T @ gs[i] for i in range(5)]), hs[0].T @ gs[0])  # noqa: E731
    closed = cse_jaxpr(fgrad.make_jaxpr(read_twice)(hs, gs))  # one product of h[0] and g[0], read twice
    found = dce_closed_jaxpr(summed_products(closed))
    assert _names(found).count("matmul") == 2  # the four others stacked; the one read twice kept
    for got, want in zip(_run(found, hs, gs), read_twice(hs, gs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    mixed = fgrad.make_jaxpr(lambda hs, gs: _chain([hs[i].T @ gs[i].astype(np.float32) for i in range(5)]))(hs, gs)
    assert "concatenate" not in _names(summed_products(mixed))  # the products promote


def test_summed_products_leave_stacks_too_large_to_copy(monkeypatch):
    import fgrad.compiler.rewrites as rewrites

    hs = np.ones((5, 2, 3))
    closed = fgrad.make_jaxpr(lambda hs: _chain([hs[i].T @ hs[i] for i in range(5)]))(hs)
    monkeypatch.setattr(rewrites, "STACK_MAX_ELEMENTS", 5 * 2 * 3 * 2 - 1)
    assert summed_products(closed) is closed


@given(seed=seeds, count=st.integers(1, 8), used=st.integers(1, 8), matrix=st.booleans())
def test_sliced_products_compute_one_product_when_most_slices_are_used(seed, count, used, matrix):
    used = min(used, count)
    xs = values((count, 2, 3) if matrix else (count, 3), "real", seed)
    U = values((3, 4), "real", seed + 1)
    f = lambda xs, U: [xs[i] @ U for i in range(-used, 0)]  # noqa: E731 - negative indices too
    closed = fgrad.make_jaxpr(f)(xs, U)
    found = dce_closed_jaxpr(sliced_products(closed))
    check_jaxpr(found)
    matmuls = _names(found).count("matmul")
    assert matmuls == (1 if used >= max(4, count / 2) else used)
    for got, want in zip(_run(found, xs, U), _run(closed, xs, U), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_sliced_products_leave_other_slices_and_other_matrices():
    xs, U, V = np.ones((5, 2, 3)), np.ones((3, 4)), np.ones((3, 4))
    for f in (lambda xs, U, V: [xs[i, :1] @ U for i in range(5)],  # not whole entries
              lambda xs, U, V: [xs[i] @ (U if i % 2 else V) for i in range(5)]):  # two matrices
        closed = fgrad.make_jaxpr(f)(xs, U, V)
        assert sliced_products(closed) is closed


def test_the_gradient_of_a_recurrent_scan_stays_a_loop_whatever_its_length():
    from fgrad import lax

    rng = np.random.default_rng(0)
    W, U, h0 = rng.standard_normal((6, 6)) / 3, rng.standard_normal((2, 6)), rng.standard_normal((3, 6))

    def loss(W, U, h0, xs):
        h, _ = lax.scan(lambda h, x: (fnp.tanh(h @ W + x @ U), None), h0, xs)
        return fnp.sum(h ** 2)

    def loop(W, U, h0, xs):
        h = h0
        for x in xs:
            h = fnp.tanh(h @ W + x @ U)
        return fnp.sum(h ** 2)

    grads = fgrad.grad(loss, argnums=(0, 1))
    sizes = []
    for steps in (20, 200):
        xs = rng.standard_normal((steps, 3, 2))
        want = fgrad.grad(loop, argnums=(0, 1))(W, U, h0, xs)
        for got in (grads(W, U, h0, xs), fgrad.jit(grads)(W, U, h0, xs)):
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
        optimized = optimize_jaxpr(fgrad.make_jaxpr(grads)(W, U, h0, xs))
        assert _names(optimized).count("scan") == 2  # the known part, and the transposed linear part
        sizes.append(len(optimized.jaxpr.eqns))
    assert sizes[0] == sizes[1] < 50
