"""NumPy's floating-point warnings under transforms come from the user's line,
name the operation (and whose derivative it is part of), and leave the user's
own error state alone."""

import inspect
import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp


def caught(run):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run()
    return [(str(w.message), w.filename, w.lineno, w.category) for w in seen]


def line_of(text, fun):
    """The line number of the line of `fun`'s source that contains `text`."""
    lines, start = inspect.getsourcelines(fun)
    return start + next(i for i, line in enumerate(lines) if text in line)


def logs_and_roots(x):
    y = fnp.log(x)
    z = fnp.sqrt(x)
    return fnp.sum(y + z)


@pytest.mark.parametrize("transform", [
    lambda f, x: fgrad.grad(f)(x),
    lambda f, x: fgrad.value_and_grad(f)(x),
    lambda f, x: fgrad.vmap(f)(x[:, None]),
    lambda f, x: fgrad.jvp(f, (x,), (np.ones_like(x),)),
    lambda f, x: fgrad.vjp(f, x),
    lambda f, x: fgrad.linearize(f, x),
    lambda f, x: fgrad.jacrev(f)(x),
    lambda f, x: fgrad.hessian(f)(x),
], ids=["grad", "value_and_grad", "vmap", "jvp", "vjp", "linearize", "jacrev", "hessian"])
def test_each_warning_comes_from_the_users_line_naming_the_operation(transform):
    seen = caught(lambda: transform(logs_and_roots, np.array([-1.0, 2.0])))
    here = __file__
    assert ("invalid value encountered in log", here, line_of("fnp.log", logs_and_roots), RuntimeWarning) in seen
    assert ("invalid value encountered in sqrt", here, line_of("fnp.sqrt", logs_and_roots), RuntimeWarning) in seen
    assert all(filename == here for _, filename, _, _ in seen), seen  # none from fgrad's files


def test_a_warning_of_a_derivative_names_the_operation_it_belongs_to():
    def f(x):
        return fnp.sum(fnp.log(x))

    seen = caught(lambda: fgrad.grad(f)(np.array([0.0, 1.0])))
    line = line_of("fnp.log", f)
    assert ("divide by zero encountered in log", __file__, line, RuntimeWarning) in seen
    assert ("divide by zero encountered in div (in the derivative of log)", __file__, line, RuntimeWarning) in seen


def test_a_warning_in_a_backward_pass_comes_from_the_line_that_runs_it():
    y, pullback = fgrad.vjp(lambda x: x * np.inf, 1.0)
    seen = caught(lambda: pullback(0.0))  # 0 * inf in the transposed multiplication
    assert seen and all(message.startswith("invalid value encountered in mul") for message, *_ in seen), seen
    assert {(filename, lineno) for _, filename, lineno, _ in seen} == {
        (__file__, line_of("pullback(0.0)", test_a_warning_in_a_backward_pass_comes_from_the_line_that_runs_it))}


def test_the_default_filter_shows_each_users_line_once_not_each_fgrad_line_once():
    def f(x):
        return fnp.log(x) + fnp.log(x - 5.0)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")
        fgrad.grad(f)(-1.0)
        fgrad.grad(f)(-1.0)  # the same lines again: nothing new
        fgrad.grad(lambda x: fnp.log(x))(-1.0)  # another line: shown
    lines = [w.lineno for w in seen if "in log" in str(w.message) and "derivative" not in str(w.message)]
    assert lines == [line_of("fnp.log(x) +", f),
                     line_of("another line", test_the_default_filter_shows_each_users_line_once_not_each_fgrad_line_once)]


def test_the_users_error_state_is_kept():
    f = lambda x: fnp.log(x)  # noqa: E731
    with np.errstate(all="ignore"):
        assert caught(lambda: fgrad.grad(f)(-1.0)) == []
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid value encountered in log"):
        fgrad.grad(f)(-1.0)
    calls = []
    with np.errstate(all="call", call=lambda kind, flag: calls.append(kind)):
        assert caught(lambda: fgrad.grad(f)(-1.0)) == []
    assert "invalid value" in calls  # the user's own handler, not fgrad's
    before = np.geterr()
    fgrad.grad(f)(2.0)
    assert np.geterr() == before and np.geterrcall() is None


def test_nested_transforms_and_errors_inside_leave_no_state_behind():
    before = np.geterr()
    seen = caught(lambda: fgrad.grad(fgrad.grad(lambda x: fnp.log(x)))(0.0))
    assert seen and all(filename == __file__ for _, filename, _, _ in seen)
    with pytest.raises(ZeroDivisionError):
        fgrad.grad(lambda x: 1 // 0 * x)(1.0)
    assert np.geterr() == before


def test_the_errstate_path_for_a_numpy_without_the_context_variable(monkeypatch):
    from fgrad.core import fp_warnings

    monkeypatch.setattr(fp_warnings, "_extobj_contextvar", None)  # enter and leave go through np.errstate
    before = np.geterr()
    jitted = fgrad.jit(logs_and_roots)
    for run in (fgrad.grad(logs_and_roots), jitted, jitted):  # a transform, a trace, the generated code
        seen = caught(lambda: run(np.array([-1.0, 2.0])))  # noqa: B023
        assert all(filename == __file__ for _, filename, _, _ in seen) and seen, seen
        assert np.geterr() == before
    seen = caught(lambda: fgrad.grad(logs_and_roots)(np.array([-1.0, 2.0])))
    assert ("invalid value encountered in log", __file__, line_of("fnp.log", logs_and_roots), RuntimeWarning) in seen
    with np.errstate(all="ignore"):
        assert caught(lambda: fgrad.grad(logs_and_roots)(np.array([-1.0, 2.0]))) == []


def test_a_jitted_functions_warnings_come_from_the_line_that_calls_it_naming_the_operation():
    f = fgrad.jit(lambda x: fnp.sum(fnp.log(x) * 2.0))
    for _ in range(2):  # the first call traces, the second runs the generated code alone
        line = inspect.currentframe().f_lineno + 1
        seen = caught(lambda: f(np.array([-1.0, 1.0])))
        assert seen == [("invalid value encountered in log", __file__, line, RuntimeWarning)], seen
    g = fgrad.jit(fgrad.grad(lambda x: fnp.sum(fnp.sqrt(x))))
    seen = caught(lambda: g(np.array([0.0, 1.0])))
    assert seen and all(filename == __file__ for _, filename, _, _ in seen), seen
    assert any(message.startswith("divide by zero encountered in") for message, *_ in seen)


def test_an_error_inside_generated_code_shows_the_generated_line():
    import traceback

    f = fgrad.jit(lambda a: fnp.linalg.inv(a) * 2.0)
    f(np.eye(2))
    with pytest.raises(np.linalg.LinAlgError) as e:
        f(np.zeros((2, 2)))
    frames = [fr for fr in traceback.extract_tb(e.value.__traceback__) if fr.filename.startswith("<fgrad.jit")]
    assert frames and frames[0].line  # linecache knows the generated source


def test_a_jitted_methods_warnings_come_from_the_line_that_calls_it():
    class Model:
        def __init__(self):
            self.scale = 2.0

        def loss(self, x):
            return fnp.sum(fnp.log(x) * self.scale)

    f = fgrad.jit(Model().loss)
    for _ in range(2):  # tracing, then the generated code alone
        line = inspect.currentframe().f_lineno + 1
        seen = caught(lambda: f(np.array([-1.0, 1.0])))
        assert seen == [("invalid value encountered in log", __file__, line, RuntimeWarning)], seen
