"""fgrad.jit: the API (call, decorator, partial, static arguments, pytrees,
keywords), the cache, abstract values inside, its errors, and composition with
every transformation, each against the same function without jit."""

import functools
import re
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.ir.check import check_jaxpr
from tests.strategies import seeds, values


def f(x1, x2):
    return fnp.log(x1) + x1 * x2 - fnp.exp(x2)


def counting(fun):
    """`fun`, and a list that grows by one each time it is traced (runs in Python)."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return fun(*args, **kwargs)

    return counted, calls


def test_values_equal_eager_ones():
    assert fgrad.jit(f)(2.0, 5.0) == pytest.approx(f(2.0, 5.0), rel=1e-14)
    x = np.linspace(0.1, 2.0, 7)
    np.testing.assert_allclose(fgrad.jit(f)(x, x[::-1]), f(x, x[::-1]), rtol=1e-14)
    out = fgrad.jit(lambda x: fnp.sin(x) * 2.0)(x)
    assert type(out) is np.ndarray and out.flags.writeable


@given(shape=st.sampled_from([(), (3,), (2, 3)]), seed=seeds)
def test_under_every_transformation_as_without_jit(shape, seed):
    x, y = values(shape, "positive", seed), values(shape, "real", seed + 1)
    loss = lambda x, y: fnp.sum(f(x, y) ** 2)
    jloss = fgrad.jit(loss)
    for transform in (
        lambda g: fgrad.grad(g, argnums=(0, 1)),
        lambda g: fgrad.jit(fgrad.grad(g, argnums=(0, 1))),
        lambda g: (lambda x, y: fgrad.jvp(g, (x, y), (np.ones_like(x), np.ones_like(y)))),
        lambda g: fgrad.grad(lambda x, y: fnp.sum(fgrad.grad(g)(x, y) * fnp.cos(x)), argnums=(0, 1)),
    ):
        for got, want in zip(transform(jloss)(x, y), transform(loss)(x, y)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_vmap_jacobians_and_nesting():
    x = np.linspace(0.2, 1.5, 4)
    np.testing.assert_allclose(fgrad.vmap(fgrad.jit(f))(x, x + 1), f(x, x + 1))
    np.testing.assert_allclose(fgrad.jit(fgrad.vmap(f))(x, x + 1), f(x, x + 1))
    np.testing.assert_allclose(fgrad.jit(fgrad.jit(f))(x, x), f(x, x))
    np.testing.assert_allclose(fgrad.jacrev(fgrad.jit(fnp.tanh))(x), np.diag(1 - np.tanh(x) ** 2))
    np.testing.assert_allclose(fgrad.jacfwd(fgrad.jit(fnp.tanh))(x), np.diag(1 - np.tanh(x) ** 2))
    h = lambda x: fnp.sum(fnp.sin(x) ** 2)
    np.testing.assert_allclose(fgrad.hessian(fgrad.jit(h))(x), fgrad.hessian(h)(x), atol=1e-14)
    np.testing.assert_allclose(fgrad.vmap(fgrad.grad(fgrad.jit(h)))(np.stack([x, 2 * x])),
                               np.stack([np.sin(2 * x), np.sin(4 * x)]))


def test_custom_rules_and_checkpoint_inside_jit():
    @fgrad.custom_jvp
    def softplus(x):
        return fnp.log1p(fnp.exp(x))

    softplus.defjvps(lambda t, ans, x: t / (1.0 + fnp.exp(-x)))
    x = np.array([-1.0, 0.5, 2.0])
    g = fgrad.jit(fgrad.grad(lambda x: fnp.sum(fgrad.checkpoint(softplus)(x))))
    np.testing.assert_allclose(g(x), 1 / (1 + np.exp(-x)))


def test_it_is_one_equation_and_grad_splits_it_in_two():
    closed = fgrad.make_jaxpr(fgrad.jit(f))(2.0, 5.0)
    assert [e.primitive.name for e in closed.eqns] == ["jit"]
    assert "jit[name=f jaxpr={ lambda ; a:f64[] b:f64[]. let" in str(closed)
    grad_jaxpr = fgrad.make_jaxpr(fgrad.grad(fgrad.jit(f)))(2.0, 5.0)
    check_jaxpr(grad_jaxpr)
    # the primal part with its residuals, and the backward pass of the tangent part
    assert [e.primitive.name for e in grad_jaxpr.eqns] == ["jit", "jit"]
    assert fgrad.eval_jaxpr(grad_jaxpr.jaxpr, grad_jaxpr.consts, 2.0, 5.0)[0] == 5.5


def test_closing_over_a_traced_value():
    x0 = np.array([0.3, -0.7, 1.2])
    loss = lambda w: fnp.sum(fgrad.jit(lambda x: fnp.sin(x * w))(x0))
    np.testing.assert_allclose(fgrad.grad(loss)(2.0), np.sum(np.cos(2 * x0) * x0))
    np.testing.assert_allclose(fgrad.vmap(loss)(np.array([1.0, 2.0])),
                               [np.sum(np.sin(x0)), np.sum(np.sin(2 * x0))])


def test_decorator_partial_keywords_and_pytrees():
    @fgrad.jit
    def g(params, x):
        return {"y": params["w"] * x + params["b"], "n": fnp.sum(x)}

    out = g({"w": 2.0, "b": np.ones(2)}, x=np.array([1.0, 3.0]))
    np.testing.assert_allclose(out["y"], [3.0, 7.0])
    assert out["n"] == 4.0

    @functools.partial(fgrad.jit, static_argnums=1)
    def power(x, n):
        return x**n

    assert power(3.0, 2) == 9.0 and power(3.0, 3) == 27.0

    @fgrad.jit(static_argnames="mode")
    def pick(x, mode="sin"):
        return fnp.sin(x) if mode == "sin" else fnp.cos(x)

    assert pick(0.0) == 0.0 and pick(0.0, mode="cos") == 1.0 and pick(0.0, "cos") == 1.0


def test_a_static_argument_is_found_by_position_by_name_or_by_its_default():
    # As JAX: static_argnums and static_argnames go through the signature, so a
    # static parameter is static however the call gives it, and one left out
    # is its default.
    traced = []

    @functools.partial(fgrad.jit, static_argnums=1)
    def power(x, n=2):
        traced.append(n)
        return x**n

    assert [power(3.0), power(3.0, 2), power(3.0, n=2), power(x=3.0, n=2)] == [9.0] * 4
    assert [power(3.0, n=3), power(3.0, 3)] == [27.0] * 2
    assert traced == [2, 3]  # one version per value, however it was given

    @functools.partial(fgrad.jit, static_argnames="mode")
    def pick(x, mode="sin", scale=1.0):
        traced.append(mode)
        return (fnp.sin(x) if mode == "sin" else fnp.cos(x)) * scale

    assert [pick(0.0), pick(0.0, "sin"), pick(0.0, mode="sin")] == [0.0] * 3
    assert [pick(0.0, "cos"), pick(0.0, mode="cos"), pick(0.0, "cos", 2.0), pick(0.0, scale=2.0, mode="cos")] \
        == [1.0, 1.0, 2.0, 2.0]
    assert traced == [2, 3, "sin", "cos", "cos"]  # the last with `scale` given, however
    # a dynamic parameter left to its default stays the function's own (not a number here)
    label = fgrad.jit(lambda x, n, unit="m": x * n if unit == "m" else x, static_argnums=1)
    assert label(2.0, 3) == 6.0 and label(2.0, n=3) == 6.0
    with pytest.raises(TypeError, match=r"argument 1 of power is static .* unhashable list"):
        power(3.0, n=[2])


def test_a_compiled_version_takes_its_dynamic_arguments_only():
    k = lambda x, n: x * n  # noqa: E731
    compiled = fgrad.jit(k, static_argnums=1).lower(np.ones(3), 3).compile()
    assert compiled(np.ones(3)).tolist() == [3.0] * 3  # as JAX's: jax.jit(k, static_argnums=1).lower(x, 3).compile()(x)
    assert compiled(x=np.ones(3)).tolist() == [3.0] * 3
    by_name = fgrad.jit(k, static_argnames="n").lower(np.ones(3), n=3).compile()
    assert by_name(np.ones(3)).tolist() == [3.0] * 3
    with pytest.raises(TypeError, match=r"lowered with static argument 1 \(n\) = 3, and takes its dynamic arguments "
                                        r"only, but was given 'n'. Leave the static arguments out"):
        by_name(np.ones(3), n=3)
    with pytest.raises(TypeError, match=r"too many positional arguments.*lowered with static argument 1 \(n\) = 3"):
        compiled(np.ones(3), 3)
    with pytest.raises(TypeError, match=r"takes arguments \(f64\[3\]\), but was called with \(f64\[4\]\)"):
        compiled(np.ones(4))


def test_traces_once_per_kind_of_argument():
    g, calls = counting(lambda x, n: x * n)
    jg = fgrad.jit(g, static_argnums=1)
    jg(np.ones(3), 2)
    jg(np.zeros(3), 2)
    assert len(calls) == 1  # same shape, dtype and static value: a hit
    jg(np.ones(4), 2)
    jg(np.ones(3, np.float32), 2)
    jg(np.ones(3), 3)
    assert len(calls) == 4  # shape, dtype, static value
    jg(2.0, 2)
    jg(np.float64(2.0), 2)
    assert len(calls) == 6  # a Python float is weakly typed, a NumPy one is not
    jg.clear_cache()
    jg(np.ones(3), 2)
    assert len(calls) == 7


def test_calls_of_arrays_and_numbers_find_their_version_by_kind_as_every_call_does():
    # Positional arrays and numbers take a shorter road to their traced
    # version; it must tell apart what the full key tells apart.
    f = lambda x, y: x * y + 1.0  # noqa: E731
    g, calls = counting(f)
    jg = fgrad.jit(g)
    args = [(np.ones(3), 2.0), (np.ones(3), np.float64(2.0)), (np.ones(3, np.float32), 2.0),
            (np.ones((3, 1)), 2.0), (np.ones(3), 2), (1.5, 2.0), (np.float32(1.5), 2.0),
            (np.ma.masked_array(np.ones(3)), 2.0)]  # a subclass: the full key, as the first
    for _ in range(3):
        for x, y in args:
            out = jg(x, y)
            want = f(np.asarray(x), y)
            np.testing.assert_array_equal(out, want)
            assert np.asarray(out).dtype == np.asarray(want).dtype and np.shape(out) == np.shape(want)
    assert len(calls) == len(args) - 1  # each kind traced once
    assert fgrad.grad(lambda x: fnp.sum(jg(x, 2.0)))(np.ones(3)).tolist() == [2.0, 2.0, 2.0]
    jg.clear_cache()
    jg(np.ones(3), 2.0)
    assert len(calls) == len(args)


def test_calls_of_pytrees_and_keywords_find_their_version_by_structure_and_kind():
    # Arrays and numbers in tuples, lists and dicts, and keyword arguments, take
    # the shorter road too: a new structure, shape, dtype or keyword traces again.
    traced = []

    def g(xs, scale=1.0):
        traced.append(1)
        leaves = fgrad.tree_util.tree_leaves(xs)
        return [leaf * scale + i for i, leaf in enumerate(leaves)]

    jg, x = fgrad.jit(g), np.arange(3.0)
    calls = [
        ([x, x],), ([x, x],), ([x, 2 * x],),  # same structure: one trace
        ([x, x, x],), ([x],), ([],),  # each length traces
        ((x, x),),  # a tuple is not a list
        ([x, np.ones(4)],), ([x, np.ones(3, np.float32)],), ([x, 2.0],), ([x, np.float64(2.0)],),
        ({"a": x, "b": 2.0},), ({"b": 2.0, "a": x},),  # the same dict, however ordered
        ({"a": x, "c": 2.0},), ({"a": x},),  # other keys
        ({"a": [x, None], "b": (1.0, {"c": x})},), ({"a": [x, None], "b": (1.0, {"c": x})},),
        ({"a": [x, x], "b": (1.0, {"c": x})},),
        ([x, x], 3.0), ([x, x], 3.0),
    ]
    kwcalls = [({"scale": 3.0}), ({"scale": 3.0}), ({"scale": np.float64(3.0)}), ({"scale": x})]
    for _ in range(2):
        for args in calls:
            got, want = jg(*args), g(*args)
            assert len(got) == len(want) and all(np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype
                                                  for a, b in zip(got, want))
        for kw in kwcalls:
            assert all(np.array_equal(a, b) for a, b in zip(jg([x, x], **kw), g([x, x], **kw)))
    n_traced = len(traced) - 2 * (len(calls) + len(kwcalls))  # (minus the eager calls of g)
    assert n_traced == len(calls) - 5 + len(kwcalls) - 1  # the hits: 5 among the calls, 1 among those by keyword
    # the same calls under a transform, and after the cache is cleared
    assert fgrad.grad(lambda s: jg([x, x], scale=s)[1].sum())(2.0) == 3.0
    jg.clear_cache()
    jg([x, x])
    assert len(traced) - 2 * (len(calls) + len(kwcalls)) == n_traced + 1  # (grad found its version too)


def test_a_static_argument_s_value_selects_the_version_on_every_road():
    traced = []

    @functools.partial(fgrad.jit, static_argnums=1)
    def power(xs, n):
        traced.append(n)
        return [x**n for x in xs]

    x = np.arange(3.0)
    for _ in range(2):
        assert power([x], 2)[0].tolist() == [0.0, 1.0, 4.0]
        assert power([x], 3)[0].tolist() == [0.0, 1.0, 8.0]
        assert power([x], n=3)[0].tolist() == [0.0, 1.0, 8.0]
        assert power([x, x], 3)[1].tolist() == [0.0, 1.0, 8.0]
    assert traced == [2, 3, 3]

    @functools.partial(fgrad.jit, static_argnames="mode")
    def h(b, a, *, mode="sub", **extra):
        traced.append(mode)
        return (b - a if mode == "sub" else b + a) * extra.get("scale", 1.0)

    one, two = np.ones(2), np.full(2, 2.0)
    for _ in range(2):  # keywords in any order bind to the same call
        assert h(two, one).tolist() == h(a=one, b=two).tolist() == h(two, a=one, mode="sub").tolist() == [1.0] * 2
        assert h(b=two, a=one, mode="add", scale=2.0).tolist() == h(two, one, scale=2.0, mode="add").tolist() == [6.0] * 2
    assert traced[3:] == ["sub", "add"]  # `mode` given or left to its default: one version


def test_python_scalars_are_weak_as_in_eager_mode():
    x = np.ones(2, np.float32)
    assert fgrad.jit(lambda x, s: x * s)(x, 2.0).dtype == (x * 2.0).dtype == np.float32


def test_a_python_print_runs_when_tracing_and_debug_print_on_every_call(capsys):
    def g(x):
        print("tracing")
        fgrad.debug.print("x = {}", x)
        return x + 1.0

    jg = fgrad.jit(g)
    jg(1.0)
    jg(2.0)
    assert capsys.readouterr().out.split("\n") == ["tracing", "x = 1.0", "x = 2.0", ""]


def test_lower_shows_the_jaxpr():
    lowered = fgrad.jit(lambda x: fnp.sin(x) * 2.0).lower(np.zeros(3))
    assert str(lowered.jaxpr) == "{ lambda ; a:f64[3]. let b:f64[3] = sin a c:f64[3] = mul b 2.0 in (c,) }"


def test_lower_compile_runs_that_version_only():
    g, calls = counting(lambda x, p: {"y": fnp.sin(x) * p["k"]})
    compiled = fgrad.jit(g).lower(np.zeros(3), {"k": 2.0}).compile()
    out = compiled(np.arange(3.0), {"k": 3.0})
    np.testing.assert_allclose(out["y"], np.sin(np.arange(3.0)) * 3.0, rtol=1e-15)
    assert fgrad.grad(lambda x: fnp.sum(compiled(x, {"k": 3.0})["y"]))(np.zeros(3)).tolist() == [3.0] * 3
    assert len(calls) == 1
    with pytest.raises(TypeError, match=r"takes arguments \(f64\[3\], f64\[\]\), but was called with "
                                        r"\(f32\[3\], f64\[\]\).*Call the jitted function itself"):
        compiled(np.zeros(3, np.float32), {"k": 3.0})
    assert len(calls) == 1  # a compiled version never traces


def test_errors_say_what_to_do():
    @fgrad.jit
    def branchy(x, y):
        return x if x > 0 else y

    with pytest.raises(fgrad.ConcretizationTypeError, match=r"argument `x` of branchy[\s\S]*static_argnums"):
        branchy(1.0, 2.0)
    with pytest.raises(TypeError, match=r"is a str \('abc'\), which jit cannot trace[\s\S]*static_argnums"):
        fgrad.jit(lambda x, s: x)(1.0, "abc")
    with pytest.raises(TypeError, match=r"argument 1 of .* must be hashable, but it is an unhashable list"):
        fgrad.jit(lambda x, s: x, static_argnums=1)(1.0, [1, 2])
    with pytest.raises(ValueError, match=r"static_argnums=\(5,\) is out of range for <lambda>\(x\), which takes 1 "
                                         r"positional argument: give static_argnums between -1 and 0"):
        fgrad.jit(lambda x: x, static_argnums=5)
    with pytest.raises(ValueError, match=r"static_argnums=\(2,\) is out of range for <lambda> called with 1 positional "
                                         r"argument: static_argnums counts positional arguments, so give at least 3"):
        fgrad.jit(lambda x, *rest: x, static_argnums=2)(1.0)
    with pytest.raises(ValueError, match=r"static_argnames=\('m',\) names \['m'\], which <lambda>\(x, n\) does not "
                                         r"take: give the names of its parameters"):
        fgrad.jit(lambda x, n: x, static_argnames="m")
    with pytest.raises(ValueError, match=r"names \['n'\], positional-only parameters of .* use static_argnums"):
        fgrad.jit(lambda x, n, /: x, static_argnames="n")
    with pytest.raises(TypeError, match=r"<lambda>\(x, n\) cannot be called with 1 positional argument and keywords m: "
                                        r"missing a required argument: 'n'. Call it as its signature says"):
        fgrad.jit(lambda x, n: x, static_argnums=1)(1.0, m=2)
    with pytest.raises(TypeError, match="jit expects a function"):
        fgrad.jit(3)
    with pytest.raises(fgrad.ConcretizationTypeError, match=r"concrete value \(float\(\)\)[\s\S]*static_argnums"):
        fgrad.jit(lambda x: float(x))(1.0)


def test_the_cache_is_bounded():
    from fgrad.api.jit import CACHE_SIZE

    g, calls = counting(lambda x: x)
    jg = fgrad.jit(g)
    for n in range(CACHE_SIZE + 1):
        jg(np.ones(n))
    jg(np.ones(CACHE_SIZE))  # the newest is kept
    jg(np.ones(0))  # the oldest was dropped
    assert len(calls) == CACHE_SIZE + 2


# --- every primitive: its vmap cases (tests/transforms/test_batching.py names one for
# each primitive in the registry) give the same values and dtypes under jit -------------


def _cases():
    from tests.transforms.test_batching import CASES

    return CASES


@pytest.mark.parametrize("name", sorted(_cases()))
def test_every_primitive_under_jit_equals_eager(name):
    fun, shapes, domain = _cases()[name]
    args = [values(s, domain, 3) for s in shapes]
    batched = [np.stack([values(s, domain, 3 + i) for i in range(2)]) for s in shapes]
    for jitted, plain, xs in ((fgrad.jit(fun), fun, args),
                              (fgrad.jit(fgrad.vmap(fun)), fgrad.vmap(fun), batched),
                              (fgrad.vmap(fgrad.jit(fun)), fgrad.vmap(fun), batched)):
        got, want = jitted(*xs), plain(*xs)
        for g, w in zip(fgrad.tree_util.tree_leaves(got), fgrad.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(g, w, rtol=1e-14, atol=0)
            assert np.asarray(g).dtype == np.asarray(w).dtype


def test_the_jaxpr_it_runs_is_optimised_and_its_source_is_shown():
    # `mul 1.0 a` is `a`, for NumPy scalars (strongly typed) and, where no use of the
    # product would be typed otherwise, for weak Python floats (tests/ir/test_optimize.py)
    lowered = fgrad.jit(fgrad.grad(f, argnums=(0, 1))).lower(np.float64(2.0), np.float64(5.0))
    text = str(lowered.jaxpr)
    assert "mul 1.0" not in text and "neg 1.0" not in text
    assert len(lowered.jaxpr.eqns) < len(fgrad.make_jaxpr(fgrad.grad(f, argnums=(0, 1)))(2.0, 5.0).eqns)
    assert "\ndef jitted(v0, v1):\n" in lowered.as_text()
    assert fgrad.jit(fgrad.grad(f, argnums=(0, 1)))(2.0, 5.0) == (5.5, pytest.approx(-146.4131591025766, rel=1e-14))


W = np.arange(6.0).reshape(2, 3)


def test_the_source_begins_with_a_comment_saying_what_each_name_is():
    from fgrad import lax

    b = np.array([1.0, -2.0, 3.0])

    def g(x, p):
        y = fnp.sum(x @ W, axis=0) * p["s"] + b
        ys = lax.scan(lambda c, a: (c + fnp.sin(a), c * 2.0), 0.0, y)[1]
        return lax.while_loop(lambda c: c < 10.0, lambda c: c * 3.0, 1.0) + ys

    text = fgrad.jit(g).lower(np.ones((4, 2)), {"s": 2.0}).as_text()
    header, source = text.split("\ndef jitted", 1)
    assert header.splitlines() == [
        "# v0: `W`, a global the function reads, f64[2,3]",
        "# v1: `b`, a variable the function closes over, f64[3]",
        "# v2: argument `x`, f64[4,2]",
        "# v3: argument `p['s']`, f64[]",
        "# f0: reduce_sum's implementation",  # (x @ W is np.dot in the source)
        "# p0: reduce_sum's parameters: axes=(0,)",
        "# f1: sin's implementation",  # sin(a) needs no carry: it leaves the scan, done for every step at once
        "# k0: 0.0, f64[]",
        "# k1: 2.0, f64[] (a Python scalar), in the body of scan",
        "# f2: mul as numpy.multiply (into a buffer), in the body of scan",  # into its row of the ys
        "# k2: 1.0, f64[]",
        "# k3: 10.0, f64[] (a Python scalar), in the condition of while_loop",
        "# f3: lt's implementation, in the condition of while_loop",
        "# k4: 3.0, f64[] (a Python scalar), in the body of while_loop",
        "# tN: a loop's step",
    ]
    # Only a comment before the source the call runs.
    from fgrad.ir.codegen import compile_jaxpr

    lowered = fgrad.jit(g).lower(np.ones((4, 2)), {"s": 2.0})
    assert text == header + "\n" + compile_jaxpr(lowered.jaxpr).source
    assert all(line.startswith("# ") for line in header.splitlines())


def test_the_header_names_attributes_buffers_and_python_floats():
    class Layer:
        def __init__(self):
            self.w = np.linspace(0.0, 1.0, 10)

        def apply(self, x):
            return x * self.w

    header = fgrad.jit(Layer().apply).lower(np.ones(10)).as_text().split("\ndef")[0]
    assert header == "# v0: `self.w`, an attribute of the method's object, f64[10]\n# v1: argument `x`, f64[10]"
    large = fgrad.jit(lambda x: fnp.sum(fnp.exp(fnp.sin(x) * 2.0) + x)).lower(np.ones((300, 300))).as_text()
    assert "# f1: mul as numpy.multiply (into a buffer)\n" in large and "f1(v1, k0, out=v1)" in large
    scalar = fgrad.jit(lambda x: fnp.log(fnp.sin(x) * x + 1.0)).lower(0.5).as_text()
    assert "# wN: values as Python numbers" in scalar
    folded = fgrad.jit(lambda x: x + W.T @ np.ones(2)).lower(np.ones(3)).as_text()
    assert folded.startswith("# v0: a constant of the trace (a value the function closes over, or made from one)")


def test_explain_cache_misses_says_what_changed(caplog):
    g = fgrad.jit(lambda x, n: x * n, static_argnums=1)
    fgrad.config.update("explain_cache_misses", True)
    try:
        with caplog.at_level("WARNING", logger="fgrad.jit"):
            g(np.ones(3), 2)
            g(np.ones(3), 2)  # a hit: nothing said
            g(np.ones(4), 2)
            g(np.ones(4), 3)
            g(np.float64(2.0), 3)
            g(2.0, 3)
            g((1.0,), 3)
    finally:
        fgrad.config.update("explain_cache_misses", False)
    assert [r.getMessage().split(": ", 1)[1] for r in caplog.records] == [
        "argument `x` changed from f64[3] to f64[4]",
        "static argument 1 changed from 2 to 3",
        "argument `x` changed from f64[4] to f64[]",
        "argument `x` (f64[]) changed from a NumPy value to a Python scalar (weakly typed)",
        "the structure of its arguments changed from PyTreeDef(((*,), {})) to PyTreeDef((((*,),), {}))",
    ]
    with pytest.raises(ValueError, match="no option 'explain'; the options are: explain_cache_misses"):
        fgrad.config.update("explain", True)
    with pytest.raises(TypeError, match="takes True or False"):
        fgrad.config.update("explain_cache_misses", 1)


def test_a_slow_compile_says_so(caplog):
    def slowish(x, y):
        return fnp.sum(fnp.sin(x) * y) + 1.0

    assert fgrad.config.log_compiles_slower_than == 1.0
    with caplog.at_level("WARNING", logger="fgrad.jit"):
        fgrad.jit(slowish)(np.ones(3), 2.0)  # well under a second: nothing said
        assert not caplog.records
        fgrad.config.update("log_compiles_slower_than", 0)
        try:
            jitted = fgrad.jit(slowish)
            jitted(np.ones(3), 2.0)
            jitted(np.ones(3), 3.0)  # no compile: nothing said
            fgrad.grad(fgrad.jit(slowish))(np.ones(3), 2.0)  # under grad no code is generated now
        finally:
            fgrad.config.update("log_compiles_slower_than", 1.0)
    first, under_grad = (r.getMessage() for r in caplog.records)
    assert caplog.records[0].levelname == "WARNING" and caplog.records[0].name == "fgrad.jit"
    pattern = (r"jit of slowish took \d+\.\d{3} s to compile a version of 4 equations \(4 after optimising\): "
               r"trace \d+\.\d{3} s, optimise \d+\.\d{3} s")
    assert re.fullmatch(pattern + r", generate code \d+\.\d{3} s", first), first
    assert re.fullmatch(pattern, under_grad), under_grad
    with pytest.raises(TypeError, match="takes a number of seconds"):
        fgrad.config.update("log_compiles_slower_than", "1")
    fgrad.config.update("log_compiles_slower_than", None)  # never
    assert fgrad.config.log_compiles_slower_than == float("inf")
    fgrad.config.update("log_compiles_slower_than", 1.0)


def test_a_jitted_method_takes_self_as_a_static_argument():
    class Scale:
        def __init__(self, k):
            self.k = k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return isinstance(other, Scale) and other.k == self.k

        @functools.partial(fgrad.jit, static_argnums=0)
        def apply(self, x):
            return x * self.k

        @fgrad.jit
        def apply_dynamic(self, x):
            return x * self.k

    assert Scale(3.0).apply(2.0) == 6.0
    assert fgrad.grad(Scale(3.0).apply)(2.0) == 3.0
    with pytest.raises(TypeError, match="is a Scale .* Mark the argument static"):
        Scale(3.0).apply_dynamic(2.0)


RNG = np.random.default_rng(0)


def test_drawing_from_numpy_s_random_generators_while_tracing_warns_that_the_numbers_are_frozen():
    def dropout(x):
        return x * (np.random.rand(*x.shape) > 0.5)

    jitted = fgrad.jit(dropout)
    with pytest.warns(UserWarning) as record:
        first = jitted(np.ones(100))
    assert len(record) == 1 and record[0].filename == __file__  # the user's call
    message = str(record[0].message)
    assert message.startswith("jit of dropout: while it traced, the function drew random numbers from NumPy's "
                              "global random state (np.random.*). They are now constants of the compiled "
                              "function, the same on every call. Use fgrad.random with a key")
    assert "fgrad.random.split(key)" in message
    np.testing.assert_array_equal(jitted(np.ones(100)), first)  # what it warns of
    with pytest.warns(UserWarning, match=r"from `RNG`, a global the function reads\."):
        fgrad.jit(lambda x: x + RNG.normal(size=x.shape))(np.ones(3))

    class Noisy:
        def __init__(self):
            self.rng = np.random.RandomState(0)

        def apply(self, x):
            return x + self.rng.uniform()

    with pytest.warns(UserWarning, match=r"from `self.rng`, an attribute of the method's object\."):
        fgrad.grad(fgrad.jit(Noisy().apply))(1.0)  # under a transform too
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fgrad.jit(lambda x: x * np.ones(3) + RNG.bit_generator.state["state"]["inc"] * 0.0)(np.ones(3))
        key = fgrad.random.key(0)
        fgrad.jit(lambda k, x: x * fgrad.random.bernoulli(k, 0.5, x.shape))(key, np.ones(3))
        fgrad.make_jaxpr(dropout)(np.ones(3))  # its jaxpr shows the constants it made: no warning


class Affine:
    def __init__(self):
        self.w = np.array([1.0, 2.0, 3.0])
        self.scale = 2.0
        self.traces = []

    def apply(self, x):
        self.traces.append(1)  # a list changed in place: the same object
        return fnp.sum(x * self.w) * self.scale


def test_a_jitted_bound_method_traces_again_when_its_object_s_attributes_are_rebound(caplog):
    layer = Affine()
    apply = fgrad.jit(layer.apply)
    x = np.ones(3)
    assert apply(x) == 12.0 and apply(x) == 12.0 and len(layer.traces) == 1  # unchanged: no new trace
    layer.w = np.array([1.0, 1.0, 1.0])
    assert apply(x) == 6.0 and len(layer.traces) == 2
    layer.scale = 3.0
    assert apply(x) == 9.0 and len(layer.traces) == 3
    layer.scale = 3.0  # another float, equal to the one traced with
    assert apply(x) == 9.0 and apply(np.full(3, 2.0)) == 18.0 and len(layer.traces) == 3
    layer.w = np.array([4.0])  # one element, broadcast
    assert apply(x) == 36.0 and len(layer.traces) == 4
    layer.w = np.array([5.0])
    assert fgrad.grad(apply)(x).tolist() == [15.0] * 3 and len(layer.traces) == 5  # under a transform too
    compiled = apply.lower(x).compile()
    assert compiled(x) == 45.0
    layer.bias = 1.0
    with pytest.raises(TypeError, match="traced with other attributes of its object: the method's object has a "
                                        "new attribute `bias`"):
        compiled(x)
    fgrad.config.update("explain_cache_misses", True)
    try:
        with caplog.at_level("WARNING", logger="fgrad.jit"):
            assert apply(x) == 45.0
            del layer.bias
            apply(x)
            layer.w = np.zeros(3)
            apply(x)
    finally:
        fgrad.config.update("explain_cache_misses", False)
    assert [r.getMessage() for r in caplog.records] == [
        "jit of apply traces again: the method's object has a new attribute `bias`",
        "jit of apply traces again: the method's object no longer has its attribute `bias`",
        "jit of apply traces again: attribute `w` of the method's object was rebound to another value",
    ]
    assert apply(x=x) == 0.0  # a call the fast path does not take checks too
    layer.w = np.ones(3)
    assert apply(x=x) == 9.0


def test_grad_of_a_jitted_function_holding_checkpoint_custom_rules_and_loops():
    # Their jvps mix primal and tangent work in one equation, which splitting
    # jit's jvp by equations cannot separate: the jaxpr is differentiated inline.
    from fgrad import lax

    cv = fgrad.custom_vjp(lambda a: fnp.sin(a))
    cv.defvjp(lambda a: (fnp.sin(a), a), lambda r, g: (fnp.cos(r) * g,))
    x = np.array([0.3, -1.2])
    cases = [
        lambda x: fnp.sum(fgrad.checkpoint(lambda a: fnp.sin(a) * a)(x)),
        lambda x: fnp.sum(cv(x) * x),
        lambda x: fnp.sum(lax.scan(lambda c, v: (c * v + 1.0, c), 1.0, x)[0]),
        lambda x: lax.while_loop(lambda v: v[0] < 5.0, lambda v: v * 1.5, x)[1],
    ]
    for f in cases:
        np.testing.assert_allclose(fgrad.grad(fgrad.jit(f))(x), fgrad.grad(f)(x), rtol=1e-14)
