"""Python and NumPy conversions of traced values: those that would drop a
derivative raise, those whose derivative is zero anyway (int, bool, comparisons,
indices) work, since Python control flow under grad depends on them."""

import re
import traceback

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad import ConcretizationTypeError, TracerArrayConversionError

# Each transform applied to f at x; the conversions raise before f returns.
DIFFERENTIATE = {
    "grad": lambda f, x: fgrad.grad(f)(x),
    "jvp": lambda f, x: fgrad.jvp(f, (x,), (np.ones_like(x),)),
    "vjp": lambda f, x: fgrad.vjp(f, x),
}

# (how the error names the conversion, the conversion). The NumPy ones all reach
# Tracer.__array__ (numpy.float64 tries float() first).
DROPPING = [
    ("float()", float),
    ("complex()", complex),
    (".item()", lambda x: x.item()),
    (".tolist()", lambda x: x.tolist()),
    ("numpy.asarray", np.asarray),
    ("numpy.array", np.array),
    ("numpy.float64", np.float64),
    ("numpy.float64(...) or another NumPy scalar type", np.float32),
    ("numpy.float64(...) or another NumPy scalar type", np.complex128),
]
CONVERSION_IDS = ["float", "complex", "item", "tolist", "asarray", "array", "float64", "float32", "complex128"]


@pytest.mark.parametrize("transform", DIFFERENTIATE)
@pytest.mark.parametrize(("shown", "convert"), DROPPING, ids=CONVERSION_IDS)
def test_conversions_that_would_drop_the_derivative_raise(transform, shown, convert):
    def f(x):
        return convert(x)

    with pytest.raises(TracerArrayConversionError) as e:
        DIFFERENTIATE[transform](f, np.float64(3.0))
    message = str(e.value)
    assert re.search(re.escape(shown) + r".* of a traced value \(f64\[\], differentiated by "
                     + re.escape(f"`{transform} of f`") + r"\) would silently drop its derivative", message)
    assert "Keep the value in fgrad.numpy operations" in message
    assert "fgrad.stop_gradient(x)" in message
    assert "y = fnp.at(y)[i].set(v)" in message and "y[i] = v" in message
    assert isinstance(e.value, ConcretizationTypeError) and isinstance(e.value, TypeError)


@pytest.mark.parametrize(("shown", "convert"), DROPPING, ids=CONVERSION_IDS)
def test_conversions_of_an_array_under_jacfwd_and_jacrev_raise(shown, convert):
    if convert in (float, complex, np.float64, np.float32, np.complex128):
        convert_one = convert
        f = lambda x: convert_one(x[0])  # noqa: E731 - a number needs one element
    else:
        f = convert
    for jac in (fgrad.jacfwd, fgrad.jacrev, fgrad.hessian):
        with pytest.raises(ConcretizationTypeError, match="would silently drop its derivative"):
            jac(f)(np.ones(2))


# Under vmap the value has no single number to give: the errors vmap raised before.
BATCHED = [
    r"\(float\(\)\)", r"\(complex\(\)\)", r"\(item\(\)\)", r"\(tolist\(\)\)",
    "numpy.asarray", "numpy.array", "numpy.float64", "numpy.float64", "numpy.float64",
]


@pytest.mark.parametrize(("pattern", "convert"), list(zip(BATCHED, [c for _, c in DROPPING])), ids=CONVERSION_IDS)
def test_conversions_under_vmap_raise_as_before(pattern, convert):
    def f(x):
        return convert(x)

    with pytest.raises(ConcretizationTypeError, match=pattern) as e:
        fgrad.vmap(f)(np.ones(2))
    assert "`vmap of f`" in str(e.value)
    if "numpy" in pattern:
        assert "NumPy cannot follow it" in str(e.value)
    else:
        assert "Under vmap it holds one value per example" in str(e.value)


def test_conversions_under_make_jaxpr_keep_their_messages():
    def f(x):
        return float(x)

    with pytest.raises(ConcretizationTypeError, match=r"Python needed its concrete value \(float\(\)\)"):
        fgrad.make_jaxpr(f)(1.0)
    with pytest.raises(TracerArrayConversionError, match="numpy.asarray.*`make_jaxpr of <lambda>`"):
        fgrad.make_jaxpr(lambda x: np.asarray(x))(1.0)


# --- what stays allowed: zero derivative, and Python control flow needs it ----------

def branch(x):
    return x ** 2 if x > 0 else -x


def repeat(x):
    return sum(x for _ in range(int(x)))  # int(x) copies of x


def truthy(x):
    return x * bool(x) + x * (x >= 1.0) + x * (x == 3.0)


def indexed(x):
    v = fnp.stack([x, 2 * x, 3 * x])
    return v[int(x) - 1] + [10.0, 20.0][fnp.argmax(fnp.stack([x, -x]))]


@pytest.mark.parametrize(("f", "x", "derivative"), [
    (branch, 3.0, 6.0), (branch, -3.0, -1.0), (repeat, 3.0, 3.0), (truthy, 3.0, 3.0), (indexed, 3.0, 3.0),
], ids=["if", "else", "range-int", "bool-comparisons", "index"])
def test_int_bool_comparisons_and_indices_work_with_the_right_derivative(f, x, derivative):
    assert fgrad.grad(f)(x) == derivative
    assert fgrad.jvp(f, (x,), (1.0,))[1] == derivative
    y, vjp_fn = fgrad.vjp(f, x)
    assert y == f(x) and vjp_fn(1.0) == (derivative,)


def test_nested_grad_through_int_and_if():
    assert fgrad.grad(fgrad.grad(lambda x: x ** 3 if x > 0 else -x))(3.0) == 18.0
    assert fgrad.grad(fgrad.grad(lambda x: x ** 3 * int(x)))(3.0) == 54.0  # 6x * 3
    assert fgrad.grad(fgrad.grad(repeat))(3.0) == 0.0
    assert fgrad.hessian(branch)(3.0) == 2.0


def test_float_inside_a_nested_grad_raises_naming_the_inner_transform():
    def inner(x):
        return float(x) * x

    with pytest.raises(ConcretizationTypeError, match=r"float\(\) of a traced value .*`grad of inner`"):
        fgrad.grad(fgrad.grad(inner))(3.0)


def test_stop_gradient_gives_a_value_that_converts():
    def f(x):
        c = fgrad.stop_gradient(x)
        return x * float(c) + c.item() + np.float64(c) + np.asarray(c).sum() + c.tolist()

    assert fgrad.grad(f)(3.0) == 3.0
    assert fgrad.jvp(f, (3.0,), (1.0,))[1] == 3.0
    assert fgrad.vjp(f, 3.0)[1](1.0) == (3.0,)
    assert fgrad.grad(fgrad.grad(lambda x: float(fgrad.stop_gradient(x)) * x ** 2))(3.0) == 6.0
    assert fgrad.grad(lambda x: fnp.sum(x * np.asarray(fgrad.stop_gradient(x))))(np.arange(3.0)).tolist() == [
        0.0, 1.0, 2.0
    ]


# --- assignment ----------------------------------------------------------------------

@pytest.mark.parametrize("transform", [fgrad.grad, fgrad.jacfwd, fgrad.vmap, fgrad.make_jaxpr])
def test_traced_arrays_are_immutable(transform):
    def f(x):
        x[0] = 1.0
        return x.sum()

    with pytest.raises(TypeError, match=r"traced arrays are immutable.*t = t\.at\[i\]\.set\(v\).*"
                                        r"t = fnp\.at\(t\)\[i\]\.set\(v\)"):
        transform(f)(np.ones(2))


AT_MESSAGE = r"would silently drop its derivative.*y = fnp\.at\(y\)\[i\]\.set\(v\)"


def test_assigning_a_traced_number_into_a_numpy_array_raises():
    def f(x):
        y = np.zeros(3)
        y[0] = x[0] ** 2
        return np.sum(y)

    # NumPy's y[i] = v calls float(v), and when that fails on a value with __getitem__
    # it raises its own ValueError, with fgrad's error as the cause: fgrad's comes first.
    for differentiate in (fgrad.value_and_grad, fgrad.jacfwd, fgrad.jacrev, lambda f: fgrad.jit(fgrad.grad(f))):
        with pytest.raises(TracerArrayConversionError) as e:
            differentiate(f)(np.ones(3))
        assert re.match(r"y\[i\] = v wrote a traced value v into a NumPy array y.*float\(\) of a traced value "
                        r"\(f64\[\].*" + AT_MESSAGE, str(e.value))
        assert e.value.__cause__ is None and e.value.__suppress_context__
        assert any(frame.name == "f" for frame in traceback.extract_tb(e.value.__traceback__))  # the user's line


@pytest.mark.parametrize("assign", [
    lambda y, x: y.__setitem__(slice(None), x),  # y[:] = x
    lambda y, x: y.__setitem__(slice(None), x[0]),  # y[:] = x[0]
    lambda y, x: y.__setitem__([0, 2], x[:2]),  # y[[0, 2]] = x[:2]
    lambda y, x: y.__setitem__(y > -1, x),  # y[mask] = x
    lambda y, x: y.reshape(1, 3).__setitem__(0, [x[0], x[1], x[2]]),  # y[0] = [x0, x1, x2]
    lambda y, x: y.astype(complex).__setitem__(0, x[0]),  # complex(): NumPy passes its error on
], ids=["slice", "slice-scalar", "fancy", "mask", "list", "complex"])
def test_assigning_traced_arrays_into_a_numpy_array_raises(assign):
    def f(x):
        y = np.zeros(3)
        assign(y, x)
        return np.sum(y)

    with pytest.raises(TracerArrayConversionError, match=AT_MESSAGE):
        fgrad.grad(f)(np.ones(3))
    with pytest.raises(TracerArrayConversionError, match=AT_MESSAGE):
        fgrad.jvp(f, (np.ones(3),), (np.ones(3),))


def test_the_functional_update_the_errors_point_to_has_the_right_derivative():
    def f(x):
        y = fnp.at(np.zeros(3))[0].set(x[0] ** 2)
        return fnp.sum(y)

    value, g = fgrad.value_and_grad(f)(np.full(3, 2.0))
    assert value == 4.0 and g.tolist() == [4.0, 0.0, 0.0]
