"""Plain NumPy operators on traced values (`fgrad/numpy/dispatch.py`): ``acc += x`` into
an array fgrad.numpy made inside the transform rebinds `acc`, as in JAX; into any other
NumPy array, or through an explicit ``out=``, it raises saying what to write instead.
Expected values are closed forms and NumPy's."""

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads

X = np.array([0.5, -1.5, 2.0])
T = np.array([1.0, 0.25, -2.0])


def accumulate(x):
    acc = fnp.zeros_like(x)
    for w in (1.0, 2.0, 3.0):
        acc += w * x  # 6 x
    acc *= x  # 6 x**2
    acc -= 1.0 * x  # 6 x**2 - x
    return acc


@pytest.mark.parametrize("make, start", [
    (lambda x: fnp.zeros_like(x), 0.0), (lambda x: fnp.zeros(3), 0.0), (lambda x: fnp.ones(3), 3.0),
    (lambda x: fnp.ones_like(x), 3.0), (lambda x: fnp.empty(3), 0.0), (lambda x: fnp.empty_like(x), 0.0),
    (lambda x: fnp.full(3, 2.0), 6.0), (lambda x: fnp.full_like(x, 2.0), 6.0),
    (lambda x: fnp.eye(3)[0], 1.0), (lambda x: fnp.arange(3.0), 3.0), (lambda x: fnp.linspace(0, 2, 3), 3.0),
])
def test_in_place_add_into_a_fresh_array_rebinds_under_every_transform(make, start):
    def f(x):
        acc = make(x)
        acc += x * x
        return fnp.sum(acc)

    np.testing.assert_allclose(fgrad.grad(f)(X), 2 * X)
    np.testing.assert_allclose(fgrad.jit(f)(X), start + np.sum(X * X))
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(f))(X), 2 * X)
    _, tangent = fgrad.jvp(f, (X,), (T,))
    np.testing.assert_allclose(tangent, np.sum(2 * X * T))
    xs = np.stack([X, 2 * X, -X])
    np.testing.assert_allclose(fgrad.vmap(f)(xs), [start + np.sum(x * x) for x in xs])


def test_in_place_into_numpy_arithmetic_on_a_fresh_array_raises():
    # fnp.ones(3) - 1.0 is NumPy's new, writable array: fgrad cannot tell that nothing else holds it.
    def f(x):
        acc = fnp.ones(3) - 1.0
        acc += x
        return fnp.sum(acc)

    with pytest.raises(TypeError, match="Write a = a \\+ v instead"):
        fgrad.jit(f)(X)


def test_accumulation_loop_matches_the_closed_form():
    np.testing.assert_allclose(fgrad.jit(accumulate)(X), 6 * X**2 - X)
    np.testing.assert_allclose(fgrad.jacfwd(accumulate)(X), np.diag(12 * X - 1))
    np.testing.assert_allclose(fgrad.jacrev(accumulate)(X), np.diag(12 * X - 1))
    xs = np.stack([X, X + 1.0])
    np.testing.assert_allclose(fgrad.vmap(accumulate)(xs), [6 * x**2 - x for x in xs])
    check_grads(lambda x: fnp.sum(accumulate(x) ** 2), (X,), order=2)


def test_an_alias_of_the_fresh_array_keeps_its_value_as_in_jax():
    # The array is read-only: `acc += x` rebinds acc, and the alias sees the zeros it always
    # held (nothing can write into them), as a JAX array would.
    def f(x):
        acc = fnp.zeros_like(x)
        held = [acc]
        acc += x
        return acc, held[0]

    for run in (fgrad.jit(f), lambda x: fgrad.vmap(f)(x[None])):
        acc, held = run(X)
        np.testing.assert_array_equal(np.squeeze(acc), X)
        np.testing.assert_array_equal(np.squeeze(held), np.zeros(3))
    grads = fgrad.grad(lambda x: fnp.sum(f(x)[0]) + 10 * fnp.sum(f(x)[1]))(X)
    np.testing.assert_allclose(grads, np.ones(3))


def test_in_place_keeps_the_arrays_dtype_as_numpy():
    def f(x):
        acc = fnp.zeros(3, np.float32)
        acc += x  # float64 into float32, as NumPy's a += v keeps a's dtype
        return acc

    out = fgrad.jit(f)(X)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, X.astype(np.float32))
    np.testing.assert_allclose(fgrad.grad(lambda x: fnp.sum(f(x)))(X), np.ones(3))


def test_in_place_refuses_what_numpy_refuses():
    def into_int(x):
        acc = fnp.zeros(3, int)
        acc += x
        return acc

    def widening(x):
        acc = fnp.zeros(3)
        acc += fnp.stack([x, x])
        return acc

    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output from dtype\\('float64'\\)"):
        fgrad.jit(into_int)(X)
    with pytest.raises(ValueError, match=r"non-broadcastable output operand with shape \(3,\)"):
        fgrad.jit(widening)(X)


@pytest.mark.parametrize("transform", [fgrad.grad, fgrad.jit, fgrad.vmap])
def test_in_place_into_a_numpy_array_says_what_to_write(transform):
    def f(x):
        acc = np.zeros(3)  # writable: changing it in place is what NumPy would do, and cannot be traced
        acc += x
        return fnp.sum(acc)

    with pytest.raises(TypeError) as info:
        transform(f)(X)
    message = str(info.value)
    assert "a + v" in message and "fnp.zeros" in message and "writeable" in message
    assert "['out']" not in message and "out=" not in message


def test_in_place_into_an_array_made_before_the_transform_raises():
    acc = fnp.zeros(3)  # eagerly: NumPy's writable array, which `+=` changes in place
    acc += 1.0
    np.testing.assert_array_equal(acc, np.ones(3))

    def f(x):
        nonlocal acc
        acc += x
        return fnp.sum(acc)

    with pytest.raises(TypeError, match="a = a \\+ v"):
        fgrad.grad(f)(X)
    np.testing.assert_array_equal(acc, np.ones(3))


def test_explicit_out_raises_even_into_a_fresh_array():
    # numpy.add(acc, x, out=acc) reaches fgrad exactly as acc += x does, but its result is
    # dropped by the statement: returning it would leave acc silently unchanged.
    def f(x):
        acc = fnp.zeros(3)
        np.add(acc, x, out=acc)
        return fnp.sum(acc)

    with pytest.raises(TypeError, match=r"write y = fnp.add\(...\) and use its result"):
        fgrad.grad(f)(X)
    with pytest.raises(TypeError, match=r"write y = fnp.multiply\(...\) and use its result"):
        fgrad.jit(lambda x: np.multiply(x, 2.0, out=fnp.zeros(3)))(X)


def test_fresh_arrays_are_read_only_under_a_transform_only():
    seen = []

    def f(x):
        a = fnp.zeros(3)
        seen.append(a.flags.writeable)
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 1.0
        return fnp.sum(x * a)

    fgrad.grad(f)(X)
    fgrad.jit(f)(X)
    assert seen == [False, False]
    assert fnp.zeros(3).flags.writeable and fnp.zeros_like(X).flags.writeable
    assert fnp.arange(3).flags.writeable and fnp.eye(2).flags.writeable
