"""fgrad.optim: each optimizer against a hand computation of PyTorch's update rule,
on scalars, arrays, pytrees and complex parameters (|g|^2, optax's convention);
no mutation; states are pytrees; float32 stays float32; losses go down; optimizer
steps under fgrad's transformations; and against torch.optim's trajectories, recorded in
tests/data/torch_optim.json by tests/record_torch_optim.py, and, when PyTorch is installed,
against torch.optim itself and the script's recording now (the only tests that need it)."""

import copy
import io
import json

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
import fgrad.optim as optim
from fgrad.tree_util import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from tests.optim_cases import (
    CASE_IDS,
    RECORDED,
    STEPS,
    TORCH_SEED,
    case_id,
    example_params,
    random_like,
    torch_problem,
    torch_trajectory,
)
from tests.optim_cases import CASES as OPTIM_CASES

# --- hand computations: PyTorch's formulas for one array, over a sequence of gradients ---
# Squared gradients are |g|^2, so the same formulas hold for complex arrays (optax's convention).


def ref_sgd(p, grads, lr, momentum=0, dampening=0, nesterov=False, weight_decay=0):
    out, buf = [], None
    for g in grads:
        g = g + weight_decay * p
        if momentum != 0:
            buf = g if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p)
    return out


def ref_adam(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, decoupled=False):
    b1, b2 = betas
    m, v, vmax = 0.0 * p, np.zeros(np.shape(p)), np.zeros(np.shape(p))
    out = []
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * np.abs(g) ** 2
        m_hat = m / (1 - b1**t)
        if amsgrad:
            vmax = np.maximum(vmax, v)
            v_hat = vmax / (1 - b2**t)
        else:
            v_hat = v / (1 - b2**t)
        p = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        out.append(p)
    return out


def ref_adamw(p, grads, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
    return ref_adam(p, grads, lr, betas, eps, weight_decay, amsgrad, decoupled=True)


def ref_rmsprop(p, grads, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False):
    s, a, b = np.zeros(np.shape(p)), 0.0 * p, 0.0 * p
    out = []
    for g in grads:
        g = g + weight_decay * p
        s = alpha * s + (1 - alpha) * np.abs(g) ** 2
        if centered:
            a = alpha * a + (1 - alpha) * g
            d = np.sqrt(s - np.abs(a) ** 2) + eps
        else:
            d = np.sqrt(s) + eps
        if momentum > 0:
            b = momentum * b + g / d
            p = p - lr * b
        else:
            p = p - lr * g / d
        out.append(p)
    return out


def ref_adagrad(p, grads, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10):
    acc = np.zeros(np.shape(p)) + initial_accumulator_value
    out = []
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        clr = lr / (1 + (t - 1) * lr_decay)
        acc = acc + np.abs(g) ** 2
        p = p - clr * g / (np.sqrt(acc) + eps)
        out.append(p)
    return out


def ref_asgd(p, grads, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, averages=None):
    eta, mu, ax = lr, 1.0, 0.0 * p
    out = []
    for t, g in enumerate(grads, start=1):
        g = g + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = p if mu == 1 else ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)
        out.append(p)
        if averages is not None:
            averages.append(ax)
    return out


# The cases (tests/optim_cases.py, shared with the recording of PyTorch's trajectories), each
# with its optimizer and the hand computation of its update rule.
REFS = {"sgd": ref_sgd, "adam": ref_adam, "adamw": ref_adamw, "rmsprop": ref_rmsprop, "adagrad": ref_adagrad,
        "asgd": ref_asgd}
CASES = [(getattr(optim, name), REFS[name], kwargs) for name, kwargs in OPTIM_CASES]


def run(opt, params, grads_seq):
    """The iterates of `opt` over a fixed sequence of gradients."""
    state = opt.init(params)
    out = []
    for grads in grads_seq:
        params, state = opt.update(grads, state, params)
        out.append(params)
    return out, state


@pytest.mark.parametrize("kind", ["scalar", "array", "pytree", "complex"])
@pytest.mark.parametrize("make, ref, kwargs", CASES, ids=CASE_IDS)
def test_matches_hand_computation(make, ref, kwargs, kind):
    rng = np.random.default_rng(0)
    params = example_params(kind, rng)
    grads_seq = [random_like(params, rng) for _ in range(STEPS)]
    got, _ = run(make(**kwargs), params, grads_seq)

    p_leaves, treedef = tree_flatten(params)
    g_leaves = [treedef.flatten_up_to(g) for g in grads_seq]
    for i, p0 in enumerate(p_leaves):
        expected = ref(np.asarray(p0), [np.asarray(g[i]) for g in g_leaves], **kwargs)
        for step in range(STEPS):
            assert tree_structure(got[step]) == treedef
            np.testing.assert_allclose(tree_leaves(got[step])[i], expected[step], rtol=1e-12, atol=1e-14)


def test_sgd_first_steps_by_hand():
    # p = 1, g = 2 then 1, lr 0.1, momentum 0.9, dampening 0.5: b1 = g1 = 2; b2 = 0.9*2 + 0.5*1 = 2.3
    opt = optim.sgd(lr=0.1, momentum=0.9, dampening=0.5)
    p, s = opt.update(2.0, opt.init(1.0), 1.0)
    assert p == pytest.approx(0.8) and s.momentum_buffer == pytest.approx(2.0)
    p, s = opt.update(1.0, s, p)
    assert p == pytest.approx(0.8 - 0.23) and s.momentum_buffer == pytest.approx(2.3)


def test_adam_first_step_moves_by_lr():
    # With zero weight decay, Adam's first step is lr * g / (|g| + eps) per coordinate.
    g = np.array([3.0, -0.5, 1e-3])
    p, _ = optim.adam(lr=0.1).update(g, optim.adam(lr=0.1).init(np.zeros(3)), np.zeros(3))
    np.testing.assert_allclose(p, -0.1 * g / (np.abs(g) + 1e-8), rtol=1e-12)


# --- the tutorial: ASGD on x^2 - 2x + 1 ----------------------------------------------


def poly(x):
    return x**2 - 2 * x + 1


def test_asgd_tutorial_loop():
    """30 epochs of ASGD (PyTorch's defaults, lr = 0.1) on x^2 - 2x + 1 from x = 0."""
    opt = optim.asgd(lr=0.1)
    x = 0.0
    state = opt.init(x)
    xs, losses = [], []
    for _ in range(30):
        loss, g = fgrad.value_and_grad(poly)(x)
        x, state = opt.update(g, state, x)
        xs.append(x)
        losses.append(loss)

    # PyTorch's ASGD by hand: eta_0 = lr, mu_0 = 1, ax_0 = 0; eta and mu of the previous step.
    lr, lambd, alpha, t0 = 0.1, 1e-4, 0.75, 1e6
    hx, eta, mu, ax = 0.0, lr, 1.0, 0.0
    for t in range(1, 31):
        assert losses[t - 1] == pytest.approx(poly(hx), rel=1e-14, abs=1e-15)
        g = 2 * hx - 2
        hx = hx * (1 - lambd * eta) - eta * g
        ax = hx if mu == 1 else ax + mu * (hx - ax)
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)
        assert xs[t - 1] == pytest.approx(hx, rel=1e-14)
    assert xs[0] == pytest.approx(0.2)
    assert float(state.ax) == pytest.approx(ax, rel=1e-14) and float(state.ax) == pytest.approx(xs[-1])
    assert int(state.step) == 30
    assert float(state.eta) == pytest.approx(eta, rel=1e-14) and float(state.mu) == 1.0
    assert abs(xs[-1] - 1) < 2e-3 and poly(xs[-1]) < 1e-5


def test_asgd_averages_after_t0():
    rng = np.random.default_rng(1)
    p = rng.standard_normal(3)
    grads_seq = [rng.standard_normal(3) for _ in range(6)]
    averages = []
    ref_asgd(p, grads_seq, lr=0.05, t0=2, averages=averages)
    opt = optim.asgd(lr=0.05, t0=2)
    state = opt.init(p)
    for g, expected in zip(grads_seq, averages):
        p, state = opt.update(g, state, p)
        np.testing.assert_allclose(state.ax, expected, rtol=1e-12)
    assert not np.allclose(state.ax, p)  # averaging has started: ax is not the iterate


# --- purity and states ---------------------------------------------------------------

ALL_SPECS = [  # every optimizer, with every option that adds a state entry or a scalar factor
    (optim.sgd, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.1)),
    (optim.sgd, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
    (optim.adam, dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, amsgrad=True, weight_decay=0.1)),
    (optim.adamw, dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, amsgrad=True, weight_decay=0.1)),
    (optim.rmsprop, dict(lr=0.01, alpha=0.9, eps=1e-6, centered=True, momentum=0.9, weight_decay=0.1)),
    (optim.adagrad, dict(lr=0.01, lr_decay=0.1, initial_accumulator_value=0.1, weight_decay=0.1, eps=1e-6)),
    (optim.asgd, dict(lr=0.01, lambd=0.1, alpha=0.5, t0=1, weight_decay=0.1)),
]
ALL = [make(**kwargs) for make, kwargs in ALL_SPECS]
ALL_IDS = [f"{type(opt).__name__}{'-nesterov' if getattr(opt, 'nesterov', False) else ''}" for opt in ALL]


def readonly(tree):
    def freeze(x):
        if isinstance(x, np.ndarray):
            x.setflags(write=False)
        return x

    return tree_map(freeze, tree)


@pytest.mark.parametrize("opt", ALL, ids=ALL_IDS)
def test_nothing_is_mutated(opt):
    rng = np.random.default_rng(2)
    params = readonly(example_params("pytree", rng))
    state = readonly(opt.init(params))
    for _ in range(3):
        grads = readonly(random_like(params, rng))
        before = copy.deepcopy((params, grads, state))
        new_params, new_state = opt.update(grads, state, params)  # read-only arrays: no in-place writes
        for a, b in zip(tree_leaves((params, grads, state)), tree_leaves(before)):
            np.testing.assert_array_equal(a, b)
        assert not any(np.shares_memory(a, b) for a in tree_leaves(new_params) for b in tree_leaves(params)
                       if isinstance(a, np.ndarray) and isinstance(b, np.ndarray))
        params, state = readonly(new_params), readonly(new_state)


@pytest.mark.parametrize("opt", ALL, ids=ALL_IDS)
def test_states_are_pytrees_of_numpy_values(opt):
    rng = np.random.default_rng(3)
    params = example_params("pytree", rng)
    state = opt.init(params)
    structure = tree_structure(state)
    params, state = opt.update(random_like(params, rng), state, params)
    assert tree_structure(state) == structure  # the same structure at every step
    assert all(isinstance(leaf, (np.ndarray, np.generic)) for leaf in tree_leaves(state))
    assert isinstance(repr(state), str) and type(state).__name__ in repr(state)

    # Save the leaves, load them back, and carry on: the same next step.
    leaves, treedef = tree_flatten(state)
    buffer = io.BytesIO()
    np.savez(buffer, *leaves)
    buffer.seek(0)
    with np.load(buffer) as saved:
        loaded = tree_unflatten(treedef, [saved[f"arr_{i}"] for i in range(len(leaves))])
    grads = random_like(params, rng)
    for a, b in zip(tree_leaves(opt.update(grads, state, params)), tree_leaves(opt.update(grads, loaded, params))):
        np.testing.assert_array_equal(a, b)


def test_states_leave_out_what_an_option_turns_off():
    assert optim.sgd(lr=0.1).init([1.0]).momentum_buffer is None
    assert optim.adam().init([1.0]).max_exp_avg_sq is None
    state = optim.rmsprop().init([1.0])
    assert state.momentum_buffer is None and state.grad_avg is None
    assert tree_leaves(optim.sgd(lr=0.1).init({"a": 1.0})) == [0]  # only the step count


def float32_problem():
    return {"w": np.ones(3, np.float32), "b": np.float32(0.5)}, {"w": np.full(3, 0.25, np.float32), "b": np.float32(-1)}


def assert_float32(params, state):
    """The params and every array in the state (moments, buffers) are float32."""
    assert all(np.asarray(leaf).dtype == np.float32 for leaf in tree_leaves(params))
    moments = [leaf for name, entry in state._asdict().items() if name not in ("step", "eta", "mu")
               for leaf in tree_leaves(entry)]
    assert moments or type(state).__name__ == "ASGDState"
    assert all(np.asarray(leaf).dtype == np.float32 for leaf in moments)


@pytest.mark.parametrize("opt", ALL, ids=ALL_IDS)
def test_float32_stays_float32(opt):
    params, grads = float32_problem()
    state = opt.init(params)
    for _ in range(2):
        params, state = opt.update(grads, state, params)
    assert_float32(params, state)


def numpy_scalars(kwargs):
    """The hyperparameters as NumPy float64 scalars (which, unlike Python floats, promote float32)."""
    def convert(v):
        return v if isinstance(v, bool) else tuple(map(convert, v)) if isinstance(v, tuple) else np.float64(v)

    return {k: convert(v) for k, v in kwargs.items()}


@pytest.mark.parametrize("make, kwargs", ALL_SPECS, ids=ALL_IDS)
def test_float32_stays_float32_with_numpy_scalar_hyperparameters(make, kwargs):
    opt, reference = make(**numpy_scalars(kwargs)), make(**kwargs)
    params, grads = float32_problem()
    state, ref_params, ref_state = opt.init(params), params, reference.init(params)
    for _ in range(3):
        params, state = opt.update(grads, state, params)
        ref_params, ref_state = reference.update(grads, ref_state, ref_params)
    assert_float32(params, state)
    for a, b in zip(tree_leaves(params), tree_leaves(ref_params)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("opt", ALL, ids=ALL_IDS)
def test_float32_stays_float32_when_traced(opt):
    # Under make_jaxpr the step count (and ASGD's eta and mu) are traced float64 values.
    params, grads = float32_problem()
    params, state = opt.update(grads, opt.init(params), params)
    eager = opt.update(grads, state, params)
    jaxpr = fgrad.make_jaxpr(lambda p, g, s: opt.update(g, s, p))(params, grads, state)
    assert [aval.dtype for aval in jaxpr.out_avals] == [np.asarray(leaf).dtype for leaf in tree_leaves(eager)]
    assert_float32(*eager)
    got = fgrad.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *tree_leaves((params, grads, state)))
    for a, b in zip(got, tree_leaves(eager)):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("opt", ALL, ids=ALL_IDS)
def test_vmap_over_a_batch_of_states_stays_float32(opt):
    # Two states one step apart: under vmap the step count is a batched (traced) value.
    params, grads = float32_problem()
    state0 = opt.init(params)
    params1, state1 = opt.update(grads, state0, params)
    stack = lambda *trees: tree_map(lambda *leaves: np.stack(leaves), *trees)  # noqa: E731
    batched = fgrad.vmap(lambda p, g, s: opt.update(g, s, p))(
        stack(params, params1), stack(grads, grads), stack(state0, state1))
    for row, (p, s) in enumerate([(params, state0), (params1, state1)]):
        expected = opt.update(grads, s, p)
        for a, b in zip(tree_leaves(batched), tree_leaves(expected)):
            assert a.dtype == np.asarray(b).dtype
            np.testing.assert_allclose(a[row], b, rtol=1e-6)
    assert_float32(*batched)


# Each optimizer as a function of a (possibly traced) learning rate, for meta-gradients.
OPT_MAKERS = pytest.mark.parametrize("opt_maker", [
    lambda lr: optim.sgd(lr, momentum=0.9),
    lambda lr: optim.adam(lr, amsgrad=True),
    lambda lr: optim.adamw(lr),
    lambda lr: optim.rmsprop(lr, centered=True, momentum=0.3),
    lambda lr: optim.adagrad(lr, lr_decay=0.1),
    lambda lr: optim.asgd(lr, t0=1),
], ids=["sgd", "adam", "adamw", "rmsprop", "adagrad", "asgd"])


@OPT_MAKERS
def test_meta_gradient_with_float32_params(opt_maker):
    # The traced float64 learning rate is cast to float32 where it meets a leaf, differentiably.
    x0 = np.array([0.3, 2.0])
    value, d_lr = fgrad.value_and_grad(unrolled_loss)(0.05, x0.astype(np.float32), opt_maker)
    assert np.asarray(value).dtype == np.float32
    assert d_lr == pytest.approx(fgrad.grad(unrolled_loss)(0.05, x0, opt_maker), rel=1e-3, abs=1e-5)


# --- complex parameters: |g|^2, as optax ---------------------------------------------


def test_adam_first_step_on_a_complex_parameter_follows_the_gradient():
    # Adam's first step is lr * g / |g|: here -0.1j, not the 0.1 a squared g = -1 would give.
    opt = optim.adam(lr=0.1)
    p, state = opt.update(np.array([1j]), opt.init(np.array([1 + 1j])), np.array([1 + 1j]))
    np.testing.assert_allclose(p, [1 + 0.9j], rtol=1e-7)
    assert state.exp_avg_sq.dtype == np.float64 and state.exp_avg.dtype == np.complex128


@pytest.mark.parametrize("opt", ALL, ids=ALL_IDS)
def test_complex_second_moments_are_real(opt):
    params = {"z": np.ones(2, np.complex64), "x": np.ones(2, np.float32)}
    grads = {"z": np.array([1j, 2 - 1j], np.complex64), "x": np.ones(2, np.float32)}
    new_params, state = opt.update(grads, opt.init(params), params)
    assert new_params["z"].dtype == np.complex64 and new_params["x"].dtype == np.float32
    for name in ("exp_avg_sq", "max_exp_avg_sq", "square_avg", "sum"):
        if name in state._fields:
            assert getattr(state, name)["z"].dtype == np.float32
    for name in ("exp_avg", "momentum_buffer", "grad_avg", "ax"):
        if name in state._fields:
            assert getattr(state, name)["z"].dtype == np.complex64


def complex_least_squares():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 3)) + 1j * rng.standard_normal((6, 3))
    z_true = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    b = a @ z_true

    def loss(z):
        r = a @ z - b
        return fnp.sum(fnp.real(r * fnp.conj(r)))

    return loss, z_true, 1 / np.linalg.eigvalsh(2 * a.conj().T @ a).max()


@pytest.mark.parametrize("name", ["sgd", "adam"])
def test_complex_least_squares_converges(name):
    loss, z_true, lr_max = complex_least_squares()
    opt = optim.sgd(lr=lr_max) if name == "sgd" else optim.adam(lr=0.1)
    z = np.zeros(3, complex)
    state, first = opt.init(z), loss(z)
    for _ in range(300):
        # fgrad.grad of a real loss of z is df/dx - i df/dy: the descent direction is its conjugate.
        z, state = opt.update(np.conj(fgrad.grad(loss)(z)), state, z)
    assert loss(z) < 1e-8 * first
    np.testing.assert_allclose(z, z_true, atol=1e-4)


# --- losses go down ----------------------------------------------------------------


def loss(params):
    w, (b, c) = params["w"], params["rest"]
    return fnp.sum((w - 1.0) ** 2) + 3.0 * (b + 2.0) ** 2 + (c - 0.5) ** 2 + 0.5 * fnp.sum(w) * b


@pytest.mark.parametrize("opt", [
    optim.sgd(lr=0.05), optim.sgd(lr=0.05, momentum=0.9, nesterov=True), optim.adam(lr=0.2),
    optim.adam(lr=0.2, amsgrad=True), optim.adamw(lr=0.2), optim.rmsprop(lr=0.05),
    optim.rmsprop(lr=0.02, centered=True, momentum=0.5), optim.adagrad(lr=0.5), optim.asgd(lr=0.05),
], ids=lambda opt: repr(opt))
def test_optimization_decreases_the_loss(opt):
    params = {"w": np.zeros(3), "rest": [0.0, 3.0]}
    state = opt.init(params)
    first = loss(params)
    for _ in range(25):
        value, grads = fgrad.value_and_grad(loss)(params)
        params, state = opt.update(grads, state, params)
    assert loss(params) < 0.2 * first


# --- under fgrad's transformations -------------------------------------------------


def unrolled_loss(lr, x0, opt_maker, steps=3):
    """The loss after a few optimizer steps, as a function of the learning rate and the start."""
    opt = opt_maker(lr)
    params = {"x": x0}
    state = opt.init(params)
    for _ in range(steps):
        params, state = opt.update(fgrad.grad(lambda p: fnp.sum(p["x"] ** 4) / 4 - fnp.sum(p["x"]))(params),
                                   state, params)
    return fnp.sum(params["x"] ** 4) / 4 - fnp.sum(params["x"])


@OPT_MAKERS
def test_meta_gradient_through_the_optimizer(opt_maker):
    lr, x0 = 0.05, np.array([0.3, 2.0])
    d_lr, d_x0 = fgrad.grad(unrolled_loss, argnums=(0, 1))(lr, x0, opt_maker)
    h = 1e-6
    fd_lr = (unrolled_loss(lr + h, x0, opt_maker) - unrolled_loss(lr - h, x0, opt_maker)) / (2 * h)
    fd_x0 = [(unrolled_loss(lr, x0 + h * e, opt_maker) - unrolled_loss(lr, x0 - h * e, opt_maker)) / (2 * h)
             for e in np.eye(2)]
    assert d_lr == pytest.approx(fd_lr, rel=1e-5, abs=1e-7)
    np.testing.assert_allclose(d_x0, fd_x0, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("opt", ALL, ids=ALL_IDS)
def test_update_under_make_jaxpr_and_vmap(opt):
    params = {"w": np.ones(3), "b": 0.5}
    grads = {"w": np.arange(3.0), "b": 1.0}
    state = opt.init(params)
    expected = opt.update(grads, state, params)
    jaxpr = fgrad.make_jaxpr(lambda p, g, s: opt.update(g, s, p))(params, grads, state)
    got = fgrad.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *tree_leaves((params, grads, state)))
    for a, b in zip(got, tree_leaves(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-14)

    batch = np.stack([np.ones(3), 2 * np.ones(3)])
    stepped = fgrad.vmap(lambda p, g: opt.update(g, opt.init(p), p)[0])(batch, batch)
    for row in range(2):
        np.testing.assert_allclose(stepped[row], opt.update(batch[row], opt.init(batch[row]), batch[row])[0])


# --- clipping, errors --------------------------------------------------------------


def test_clip_by_global_norm():
    grads = {"a": np.array([3.0, 0.0]), "b": [4.0]}
    clipped = optim.clip_by_global_norm(grads, 1.0)
    np.testing.assert_allclose(clipped["a"], [3 / (5 + 1e-6), 0.0])
    assert clipped["b"][0] == pytest.approx(4 / (5 + 1e-6))
    assert optim.clip_by_global_norm(grads, 10.0)["b"][0] == 4.0  # under the limit: unchanged
    assert fgrad.grad(lambda g: optim.clip_by_global_norm(g, 1.0)["b"][0])(grads)["b"][0] == pytest.approx(
        (1 / 5) * (1 - 16 / 25), rel=1e-5)


def test_clip_by_global_norm_complex_and_float32():
    np.testing.assert_allclose(optim.clip_by_global_norm({"a": np.array([3j])}, 1.0)["a"], [3j / (3 + 1e-6)])
    clipped = optim.clip_by_global_norm({"a": np.array([3j], np.complex64), "b": np.float32(4.0)}, np.float64(1))
    np.testing.assert_allclose(clipped["a"], [3j / (5 + 1e-6)], rtol=1e-6)  # the norm counts |3j| = 3
    assert clipped["a"].dtype == np.complex64 and np.asarray(clipped["b"]).dtype == np.float32
    params, _ = float32_problem()
    jaxpr = fgrad.make_jaxpr(lambda g: optim.clip_by_global_norm(g, 0.1))(params)
    assert [aval.dtype for aval in jaxpr.out_avals] == [np.float32, np.float32]


@pytest.mark.parametrize("make, message", [
    (lambda: optim.sgd(lr=-0.1), r"sgd: lr must be >= 0, got -0.1"),
    (lambda: optim.sgd(lr=0.1, nesterov=True), r"nesterov=True needs momentum > 0 and dampening = 0"),
    (lambda: optim.sgd(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), r"dampening=0.1"),
    (lambda: optim.adam(betas=(1.0, 0.999)), r"adam: betas\[0\] must be in \[0, 1\), got 1.0"),
    (lambda: optim.adamw(eps=-1.0), r"adamw: eps must be >= 0"),
    (lambda: optim.rmsprop(alpha=-0.5), r"rmsprop: alpha must be >= 0"),
    (lambda: optim.adagrad(lr_decay=-1), r"adagrad: lr_decay must be >= 0"),
    (lambda: optim.asgd(weight_decay=-1), r"asgd: weight_decay must be >= 0"),
])
def test_invalid_hyperparameters(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_grads_must_match_the_params():
    opt = optim.adam()
    params = {"w": np.ones(2), "b": 0.0}
    with pytest.raises(ValueError, match="pytree structure mismatch"):
        opt.update({"w": np.ones(2)}, opt.init(params), params)


# --- against PyTorch: its recorded trajectories, and torch.optim itself when installed ---
# tests/data/torch_optim.json holds torch.optim's iterates of every case, recorded by
# tests/record_torch_optim.py; only the tests that compare the file with PyTorch need it.

TOLERANCE = dict(rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def recorded():
    return json.loads(RECORDED.read_text())


def recorded_problem(recording):
    """The recorded parameters and gradients, in the pytree structure of torch_problem()."""
    template, treedef = tree_flatten(torch_problem()[0])

    def unflatten(values):
        assert len(values) == len(template)
        return tree_unflatten(treedef, [float(v) if isinstance(t, float) else np.array(v, float)
                                        for v, t in zip(values, template)])

    return unflatten(recording["params"]), [unflatten(step) for step in recording["grads"]]


def assert_same_trajectory(got, expected):
    assert len(got) == len(expected) == STEPS
    for mine, theirs in zip(got, expected):
        assert len(tree_leaves(mine)) == len(theirs)
        for a, b in zip(tree_leaves(mine), theirs):
            np.testing.assert_allclose(a, np.asarray(b, float), **TOLERANCE)


def test_recording_covers_every_case(recorded):
    missing = sorted(set(CASE_IDS) - set(recorded["cases"]))
    stale = sorted(set(recorded["cases"]) - set(CASE_IDS))
    assert not missing and not stale, (
        f"{RECORDED.name} has no trajectory of the cases {missing} and has one of {stale}, no longer "
        "cases: run `python -m tests.record_torch_optim` with PyTorch installed, and commit the file")
    assert recorded["steps"] == STEPS and recorded["seed"] == TORCH_SEED


def test_recorded_problem_is_the_one_the_cases_run_on(recorded):
    # The seeded generation still gives the recorded inputs, bit for bit; the recorded-trajectory
    # tests run on the recorded ones, so that they hold even if NumPy's random streams change.
    generated, recorded_inputs = tree_leaves(torch_problem()), tree_leaves(recorded_problem(recorded))
    assert len(generated) == len(recorded_inputs)
    for a, b in zip(generated, recorded_inputs):
        np.testing.assert_array_equal(a, b, strict=True)


@pytest.mark.parametrize("make, _ref, kwargs", CASES, ids=CASE_IDS)
def test_matches_recorded_torch_optim(make, _ref, kwargs, recorded):
    key = case_id(make.__name__, kwargs)
    assert key in recorded["cases"], f"no recorded trajectory of {key}: run `python -m tests.record_torch_optim`"
    params, grads_seq = recorded_problem(recorded)
    got, _ = run(make(**kwargs), params, grads_seq)
    assert_same_trajectory(got, recorded["cases"][key])


@pytest.mark.parametrize("make, _ref, kwargs", CASES, ids=CASE_IDS)
def test_matches_torch_optim(make, _ref, kwargs):
    pytest.importorskip("torch")
    params, grads_seq = torch_problem()
    got, _ = run(make(**kwargs), params, grads_seq)
    leaves, treedef = tree_flatten(params)
    expected = torch_trajectory(make.__name__, kwargs, leaves, [treedef.flatten_up_to(g) for g in grads_seq])
    assert_same_trajectory(got, expected)


def test_recording_is_what_the_script_records(recorded):
    pytest.importorskip("torch")
    from tests.record_torch_optim import dumps, record

    now = record()
    assert json.loads(dumps(now)) == now  # the file's text reads back as the recording
    # PyTorch may round differently in the last bits (another version, or the same one on
    # another CPU's vector units): the trajectories agree to rounding, everything else exactly.
    assert {k: v for k, v in now.items() if k not in ("torch_version", "cases")} == {
        k: v for k, v in recorded.items() if k not in ("torch_version", "cases")}
    assert list(now["cases"]) == list(recorded["cases"])
    for key, steps in now["cases"].items():
        for step, expected in zip(steps, recorded["cases"][key], strict=True):
            for a, b in zip(step, expected, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15, err_msg=key)
