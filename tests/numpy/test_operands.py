"""fgrad.numpy's shared fast path, `numpy_when_eager` (fgrad/numpy/operands.py): every public
function carrying it has NumPy's signature, gives NumPy's own result when no transform is active
without running its body, runs its body under a transform, and raises NumPy's TypeError for a
wrong call either way."""

import inspect
import sys
import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.core.errors import ConcretizationTypeError
from fgrad.numpy.operands import EAGER_NUMPY
from fgrad.tree_util import tree_leaves

DECORATED = {
    prefix + name: getattr(module, name)
    for prefix, module in [("", fnp), ("linalg.", fnp.linalg), ("fft.", fnp.fft)]
    for name in module.__all__
    if getattr(module, name) in EAGER_NUMPY
}

M = np.array([[0.61, 0.23, 0.37], [0.12, 0.71, 0.44], [0.58, 0.29, 0.93]])
V = np.array([0.31, -0.47, 0.83])
SPD = M @ M.T + 3 * np.eye(3)
SPD4 = np.kron(SPD[:2, :2], SPD[1:, 1:])
I3 = np.array([2, 0, 1, 1])
for _a in (M, V, SPD, SPD4, I3):
    _a.flags.writeable = False  # no call may write into an input (a probe's out= would)

# Two inputs each where the generic ones below do not fit (the first also runs traced).
INPUTS = {
    "stack": [([V, 2 * V],), ([M, M.astype(np.float32)], 1)],
    "hstack": [([V, 2 * V],), ([M, M],)], "vstack": [([V, 2 * V],), ([M, V],)],
    "dstack": [([V, 2 * V],), ([M, M],)], "column_stack": [([V, 2 * V],), ([M, V],)],
    "pad": [(V, 1), (M, ((1, 0), (0, 2)), "reflect")], "vander": [(V,), (V, 2, True)],
    "triu_indices": [(3,), (3, 1, 4)], "tril_indices": [(3,), (3, -1, 2)], "diag_indices": [(3,), (2, 3)],
    "indices": [((2, 3),), ((2, 1), np.int32, True)], "ix_": [(I3, I3[:2])],
    "polyfit": [(V, M[0], 1), (np.arange(4.0), np.array([1.0, 0.5, 2.0, 3.0]), 2)],
    "histogram": [(V,), (M.ravel(), 3)], "expand_dims": [(V, 0), (M, (0, 2))], "moveaxis": [(M, 0, 1)],
    "swapaxes": [(M, 0, 1), (M[None], 0, 2)], "roll": [(V, 1), (M, (1, -1), (0, 1))],
    "tile": [(V, 2), (M, (2, 1))], "repeat": [(V, 2), (M, [1, 2, 0], 0)],
    "split": [(np.arange(6.0), 3), (M, [1], 1)], "array_split": [(V, 2), (M, 2, 1)],
    "hsplit": [(M[:, :2], 2), (np.arange(6.0), [2])], "vsplit": [(M[:2], 2), (M, [1])],
    "dsplit": [(M.reshape(1, 3, 3)[..., :2], 2), (M.reshape(3, 1, 3), [1])],
    "rollaxis": [(M, 1), (M[None], 2, 1)], "append": [(V, M), (M, M, 0)],
    "insert": [(V, 1, 5.0), (M, [0, 2], 1.5, 1)], "delete": [(V, 1), (M, [0], 1)],
    "partition": [(V, 1), (M, 2, 0)], "argpartition": [(V, 1), (M, 2, 0)],
    "lexsort": [(M,), (np.stack([I3, I3[::-1]]),)],
    "searchsorted": [(np.sort(V), M), (np.sort(V), 0.4, "right")],
    "interp": [(M, np.sort(V), V), (V, np.sort(V), V, 0.0, 1.0)],
    "piecewise": [(V, [V < 0], [lambda v: -v, lambda v: 2 * v]), (M, [M < 0.5, M > 0.9], [1.0, lambda v: v])],
    "select": [([V > 0, V > 0.5], [V, 2 * V]), ([M > 0.5], [M], -1.0)],
    "nan_to_num": [(V,), (np.array([np.nan, np.inf]),)], "real_if_close": [(V,), (V + 1e-17j,)],
    "isposinf": [(np.array([np.inf, -np.inf, 1.0]),), (V,)],
    "isneginf": [(np.array([np.inf, -np.inf, 1.0]),), (V,)], "size": [(M,), (M, 1)],
    "linalg.solve": [(SPD, V), (SPD, M)], "linalg.cholesky": [(SPD,), (SPD4,)],
    "linalg.eigvalsh": [(SPD,), (SPD, "U")], "linalg.matrix_power": [(M, 3), (SPD, -2)],
    "linalg.tensorsolve": [(SPD, V), (SPD.reshape(3, 3), V)],
    "linalg.tensorinv": [(SPD, 1), (SPD4.reshape(4, 2, 2), 1)],
    "linalg.lstsq": [(M, V), (M[:, :2], M)], "linalg.matrix_rank": [(M,), (SPD, None, True)],
    "linalg.pinv": [(M,), (SPD, 1e-10, True)], "linalg.vector_norm": [(V,), (M,)],
    "linalg.eigvals": [(np.array([[0.3, -1.0], [1.0, 0.2]]),), (SPD,)],
    "fft.irfft": [(V + 0.5j,), (M, 4)], "fft.hfft": [(V + 0.5j,), (M, 4)],
    "fft.irfftn": [(M + 0.5j,), (M, (2, 4))], "fft.irfft2": [(M + 0.5j,), (M, (2, 4))],
    "fft.fftn": [(M,), (M, (2, 4))], "fft.rfftn": [(M,), (M, (2, 4))], "fft.ifftn": [(M,), (M, (2, 4))],
}
# Every other function: the first two of these that NumPy takes without a warning.
GENERIC = [(M,), (V,), (M.astype(np.float32),), (M, M), (V, V), (M, V), (I3,), (V > 0,)]


def _inputs(name):
    if name in INPUTS:
        return INPUTS[name]
    np_fn, found = EAGER_NUMPY[DECORATED[name]], []
    for args in GENERIC:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                np_fn(*args)
        except Exception:  # not an input of this function
            continue
        found.append(args)
    assert found, f"no generic input fits fgrad.numpy.{name}: give it some in INPUTS"
    return found[:2]


class _Entered:
    """Whether `code` runs (is called) while the block does: a profile hook, which sees
    every Python call in this thread."""

    def __init__(self, code):
        self.code, self.count = code, 0

    def _hook(self, frame, event, arg):
        if event == "call" and frame.f_code is self.code:
            self.count += 1

    def __enter__(self):
        self.previous = sys.getprofile()
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self.previous)


def _assert_same(got, expected):
    got_leaves, expected_leaves = tree_leaves(got), tree_leaves(expected)
    assert type(got) is type(expected) and len(got_leaves) == len(expected_leaves)
    for g, e in zip(got_leaves, expected_leaves):
        assert type(g) is type(e) and np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(g, e)


def test_the_registry_holds_the_functions_that_have_numpys_signature():
    assert len(DECORATED) > 100 and {"transpose", "cumsum", "linalg.det", "fft.fft"} <= DECORATED.keys()
    for name, fn in DECORATED.items():
        assert fn.__name__ == fn.__wrapped__.__name__ and fn.__doc__ == fn.__wrapped__.__doc__, name
        assert inspect.signature(fn) == inspect.signature(fn.__wrapped__), name


@pytest.mark.parametrize("name", sorted(DECORATED))
def test_signature_is_numpys(name):
    """What numpy_when_eager needs: the arguments given pass to NumPy unchanged, so NumPy must
    take exactly what fgrad's function takes (a new NumPy may add a keyword: then write the
    shortcut by hand, or give fgrad's function the keyword too)."""
    fn, np_fn = DECORATED[name], EAGER_NUMPY[DECORATED[name]]
    try:
        numpy_signature = inspect.signature(np_fn)
    except ValueError:  # a builtin without one (NumPy 2.0's lexsort): compare what its calls raise
        numpy_signature = None
    if numpy_signature is not None:
        ours = [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
        numpys = [(p.name, p.kind, p.default) for p in numpy_signature.parameters.values()]
        assert ours == numpys, f"fgrad.numpy.{name}{inspect.signature(fn)} vs numpy's {numpy_signature}"
    params = inspect.signature(fn).parameters.values()
    wrong = [((), {"bogus": 1})]
    if not any(p.kind == p.VAR_POSITIONAL for p in params):
        wrong.append(((object(),) * (1 + sum(p.kind <= p.POSITIONAL_OR_KEYWORD for p in params)), {}))
    if any(p.default is p.empty and p.kind <= p.POSITIONAL_OR_KEYWORD for p in params):
        wrong.append(((), {}))
    for args, kwargs in wrong:
        with pytest.raises(TypeError) as eager:
            fn(*args, **kwargs)
        with pytest.raises(TypeError) as traced:
            fgrad.jit(lambda: fn(*args, **kwargs))()
        assert str(eager.value) == str(traced.value), (args, kwargs)
        assert f"{fn.__name__}() " in str(eager.value)


@pytest.mark.parametrize("name", sorted(DECORATED))
def test_with_no_transform_the_result_is_numpys_and_the_body_does_not_run(name):
    fn, np_fn = DECORATED[name], EAGER_NUMPY[DECORATED[name]]
    for args in _inputs(name):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy's own, as NumPy would give them
            expected = np_fn(*args)
            with _Entered(fn.__wrapped__.__code__) as body:
                got = fn(*args)
        assert body.count == 0
        _assert_same(got, expected)


def _float_positions(args):
    return [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


@pytest.mark.parametrize("name", sorted(DECORATED))
def test_under_a_transform_the_body_runs_and_computes_numpys_values(name):
    fn, np_fn = DECORATED[name], EAGER_NUMPY[DECORATED[name]]
    args = _inputs(name)[0]
    at = _float_positions(args)

    def f(*xs):
        full = list(args)
        for i, x in zip(at, xs):
            full[i] = x
        return fn(*full)

    primals = [args[i] for i in at]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = np_fn(*args)
        with _Entered(fn.__wrapped__.__code__) as body:
            try:
                got = fgrad.jit(f)(*primals)
            except ConcretizationTypeError:  # needs the values: a transform that has them
                assert primals, name
                got, _ = fgrad.jvp(f, tuple(primals), tuple(np.ones_like(x) for x in primals))
    assert body.count >= 1
    got_leaves, expected_leaves = tree_leaves(got), tree_leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    for g, e in zip(got_leaves, expected_leaves):
        assert np.shape(g) == np.shape(e) and np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


WITH_OUT = sorted(n for n, f in DECORATED.items() if "out" in inspect.signature(f).parameters)


@pytest.mark.parametrize("name", WITH_OUT)
def test_out_is_numpys_with_no_transform_and_refused_under_one(name):
    fn = DECORATED[name]
    args = _inputs(name)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = EAGER_NUMPY[fn](*args)
        numpys, out = np.zeros_like(expected), np.zeros_like(expected)
        _assert_same(fn(*args, out=out), EAGER_NUMPY[fn](*args, out=numpys))
    np.testing.assert_array_equal(out, numpys)
    with pytest.raises(TypeError, match="out="):
        fgrad.make_jaxpr(lambda *a: fn(*a, out=out))(*args)


@pytest.mark.parametrize("call, category", [
    (lambda x: fnp.cross(x[:2], x[1:]), DeprecationWarning),
    (lambda x: fnp.cov(x[:1], ddof=1), RuntimeWarning),
    (lambda x: fnp.fft.fftn(x, s=(2,)), DeprecationWarning),
])
def test_warnings_under_a_transform_point_at_the_callers_line(call, category):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fgrad.jvp(call, (V,), (np.ones(3),))
    assert [w.filename for w in seen if w.category is category] and all(
        w.filename == __file__ for w in seen if w.category is category)

