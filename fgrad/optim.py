r"""fgrad.optim: functional optimizers on pytrees, with PyTorch's update rules and defaults.

An optimizer is an immutable object of hyperparameters with two methods,
``init(params) -> state`` and ``update(grads, state, params) -> (new_params, new_state)``.
Params, grads and states are pytrees; nothing is mutated. A state is a
NamedTuple of NumPy arrays and scalars (entries an option turns off are None),
so it can be printed, saved, and passed through fgrad's transformations.

>>> import fgrad, fgrad.optim as optim
>>> loss = lambda p: (p["w"] - 3.0) ** 2
>>> opt = optim.sgd(lr=0.1)
>>> params = {"w": 0.0}
>>> state = opt.init(params)
>>> for _ in range(100):
...     params, state = opt.update(fgrad.grad(loss)(params), state, params)
>>> round(float(params["w"]), 6)
3.0

This module owns the update rules only. It sees pytrees through `tree_util`
and arrays through Python operators and `fgrad.numpy`, so the same step runs on
NumPy arrays and on fgrad tracers: an optimizer step may itself be
differentiated (a learning rate or an initialisation tuned by `fgrad.grad`).

Precision: a leaf keeps its dtype (float32 stays float32). Every scalar that meets
a leaf (a hyperparameter, a bias correction, ASGD's eta and mu) is used as a Python
float when it is one (a weak type that does not promote), and otherwise (a NumPy
scalar, or a value traced by `make_jaxpr`, `vmap` or `grad`) is cast to the leaf's
precision first; the cast is differentiable, so meta-gradients still flow.

Complex parameters follow optax's convention, not PyTorch's (which optimizes the
real and imaginary parts as separate reals): squared gradients are |g|^2 =
real(g * conj(g)), so second-moment states are real, and clipping uses |g|.
fgrad.grad of a real loss of complex z is df/dx - i df/dy (JAX's convention), so
the descent direction is its conjugate: pass ``tree_map(fnp.conj, grads)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

import numpy as np

from . import numpy as fnp
from .core.trace import Tracer
from .tree_util import tree_leaves, tree_map

__all__ = [
    "Optimizer", "sgd", "adam", "adamw", "rmsprop", "adagrad", "asgd", "clip_by_global_norm",
    "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "ASGD",
    "SGDState", "AdamState", "RMSpropState", "AdagradState", "ASGDState",
]

State = TypeVar("State")


class Optimizer(Protocol[State]):
    """What every optimizer here provides."""

    def init(self, params: Any) -> State: ...

    def update(self, grads: Any, state: State, params: Any) -> tuple[Any, State]: ...


# --- helpers: scalars that may be traced -----------------------------------------


def _like(c: Any, leaf: Any) -> Any:
    """The scalar `c` in the precision of the floating-point `leaf` it meets (the real
    precision for a complex leaf); a Python number is returned as it is (it is weak)."""
    if not isinstance(c, (np.ndarray, np.generic, Tracer)):  # np.float64 is a float: test it first
        return c
    dtype = leaf.dtype if isinstance(leaf, (np.ndarray, np.generic, Tracer)) else np.result_type(leaf)
    if dtype.kind not in "fc":
        return c
    dtype = np.finfo(dtype).dtype
    return c if getattr(c, "dtype", None) == dtype else fnp.astype(c, dtype)


def _abs2(g: Any) -> Any:
    """|g|^2, real also for a complex g."""
    return fnp.real(g * fnp.conj(g)) if fnp.iscomplexobj(g) else g * g


def _concrete(x: Any) -> Any:
    """A scalar as a Python float (a weak type: it does not promote float32
    leaves), or the tracer itself when it is traced."""
    return x if isinstance(x, Tracer) else float(x)


def _sqrt(x: Any) -> Any:
    return fnp.sqrt(x) if isinstance(x, Tracer) else math.sqrt(x)


def _select(cond: Any, x: Any, y: Any) -> Any:
    """`x if cond else y`, also when `cond` is traced."""
    return fnp.where(cond, x, y) if isinstance(cond, Tracer) else (x if cond else y)


def _is_set(x: Any) -> bool:
    """Whether an option is on; a traced hyperparameter always is."""
    return isinstance(x, Tracer) or x != 0


def _check(opt: str, name: str, value: Any, ok: bool, expected: str) -> None:
    if not isinstance(value, Tracer) and not ok:
        raise ValueError(f"{opt}: {name} must be {expected}, got {value!r}")


def _check_nonnegative(opt: str, **values: Any) -> None:
    for name, value in values.items():
        _check(opt, name, value, isinstance(value, Tracer) or value >= 0, ">= 0")


def _check_betas(opt: str, betas: tuple[float, float]) -> None:
    for i, beta in enumerate(betas):
        _check(opt, f"betas[{i}]", beta, isinstance(beta, Tracer) or 0 <= beta < 1, "in [0, 1)")


def _zeros_like(p: Any, real: bool = False) -> Any:
    """Zeros for a state entry of leaf `p`: its float dtype (float64 for an integer
    leaf), its real counterpart if `real` (second moments of complex leaves are real)."""
    dtype = fnp.zeros_like(p).dtype
    dtype = np.dtype(np.float64) if dtype.kind not in "fc" else dtype
    return fnp.zeros_like(p, np.finfo(dtype).dtype if real else dtype)


def _zeros(params: Any, real: bool = False) -> Any:
    return tree_map(lambda p: _zeros_like(p, real), params)


_STEP0 = np.int64(0)


def _weight_decayed(grads: Any, params: Any, weight_decay: Any) -> Any:
    """PyTorch's L2 penalty: g + weight_decay * p."""
    if not _is_set(weight_decay):
        return grads
    return tree_map(lambda g, p: g + _like(weight_decay, p) * p, grads, params)


# --- SGD ---------------------------------------------------------------------------


class SGDState(NamedTuple):
    step: Any
    momentum_buffer: Any  # None without momentum


@dataclass(frozen=True)
class SGD:
    r"""Stochastic gradient descent, as torch.optim.SGD (see `sgd`).

    For t = 1, 2, ... with g = grad + weight_decay * p::

        b_1 = g;  b_t = momentum * b_{t-1} + (1 - dampening) * g      (if momentum != 0)
        g = g + momentum * b_t  if nesterov  else  b_t                  (if momentum != 0)
        p = p - lr * g
    """

    lr: float
    momentum: float = 0.0
    dampening: float = 0.0
    nesterov: bool = False
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        _check_nonnegative("sgd", lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay)
        if self.nesterov and not (_is_set(self.momentum) and self.dampening == 0):
            raise ValueError(
                f"sgd: nesterov=True needs momentum > 0 and dampening = 0, got momentum="
                f"{self.momentum!r}, dampening={self.dampening!r}; set them, or nesterov=False"
            )

    def init(self, params: Any) -> SGDState:
        return SGDState(_STEP0, _zeros(params) if _is_set(self.momentum) else None)

    def update(self, grads: Any, state: SGDState, params: Any) -> tuple[Any, SGDState]:
        lr, mom = self.lr, self.momentum
        step = state.step + 1
        grads = _weight_decayed(grads, params, self.weight_decay)
        buf = state.momentum_buffer
        if buf is not None:
            # b starts at zero, so scaling g by 1 on the first step gives PyTorch's b_1 = g.
            c = _select(step == 1, 1.0, 1.0 - self.dampening)
            buf = tree_map(lambda b, g: _like(mom, b) * b + _like(c, g) * g, buf, grads)
            grads = tree_map(lambda g, b: g + _like(mom, b) * b, grads, buf) if self.nesterov else buf
        new_params = tree_map(lambda p, g: p - _like(lr, g) * g, params, grads)
        return new_params, SGDState(step, buf)


def sgd(
    lr: float, momentum: float = 0, dampening: float = 0, nesterov: bool = False, weight_decay: float = 0
) -> SGD:
    """Stochastic gradient descent with optional (Nesterov) momentum: torch.optim.SGD.

    >>> opt = sgd(lr=0.1, momentum=0.9)
    >>> params, state = opt.update(2.0, opt.init(1.0), 1.0)
    >>> float(params), int(state.step)
    (0.8, 1)
    """
    return SGD(lr, momentum, dampening, nesterov, weight_decay)


# --- Adam and AdamW ----------------------------------------------------------------


class AdamState(NamedTuple):
    step: Any
    exp_avg: Any
    exp_avg_sq: Any
    max_exp_avg_sq: Any  # None without amsgrad


def _adam_init(params: Any, amsgrad: bool) -> AdamState:
    return AdamState(
        _STEP0, _zeros(params), _zeros(params, real=True), _zeros(params, real=True) if amsgrad else None
    )


def _adam_update(
    grads: Any, state: AdamState, params: Any, lr: Any, betas: tuple[Any, Any], eps: Any, amsgrad: bool
) -> tuple[Any, AdamState]:
    b1, b2 = betas
    step = state.step + 1
    t = _concrete(step)
    m = tree_map(lambda m, g: _like(b1, m) * m + _like(1 - b1, g) * g, state.exp_avg, grads)
    v = tree_map(lambda v, g: _like(b2, v) * v + _like(1 - b2, v) * _abs2(g), state.exp_avg_sq, grads)
    vmax = tree_map(fnp.maximum, state.max_exp_avg_sq, v) if amsgrad else None
    step_size = lr / (1 - b1**t)
    bc2_sqrt = _sqrt(1 - b2**t)
    new_params = tree_map(
        lambda p, m, v: p - _like(step_size, m) * (m / (fnp.sqrt(v) / _like(bc2_sqrt, v) + _like(eps, v))),
        params, m, vmax if amsgrad else v,
    )
    return new_params, AdamState(step, m, v, vmax)


@dataclass(frozen=True)
class Adam:
    r"""Adam, as torch.optim.Adam (see `adam`).

    For t = 1, 2, ... with g = grad + weight_decay * p (an L2 penalty)::

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * |g|**2
        v_max = max(v_max, v);  v_used = v_max  if amsgrad  else  v
        p = p - lr / (1 - beta1**t) * m / (sqrt(v_used) / sqrt(1 - beta2**t) + eps)

    (AMSGrad takes the maximum of the raw v, then bias-corrects it, as PyTorch does.)
    """

    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.0
    amsgrad: bool = False

    def __post_init__(self) -> None:
        _check_nonnegative("adam", lr=self.lr, eps=self.eps, weight_decay=self.weight_decay)
        _check_betas("adam", self.betas)

    def init(self, params: Any) -> AdamState:
        return _adam_init(params, self.amsgrad)

    def update(self, grads: Any, state: AdamState, params: Any) -> tuple[Any, AdamState]:
        grads = _weight_decayed(grads, params, self.weight_decay)
        return _adam_update(grads, state, params, self.lr, self.betas, self.eps, self.amsgrad)


def adam(
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 0,
    amsgrad: bool = False,
) -> Adam:
    """Adam with an L2 penalty and optional AMSGrad: torch.optim.Adam.

    >>> opt = adam(lr=0.1)
    >>> params, state = opt.update({"w": 4.0}, opt.init({"w": 1.0}), {"w": 1.0})
    >>> round(float(params["w"]), 6)  # the first step moves each leaf by about lr
    0.9
    """
    return Adam(lr, betas, eps, weight_decay, amsgrad)


@dataclass(frozen=True)
class AdamW:
    r"""AdamW, as torch.optim.AdamW (see `adamw`): Adam with decoupled weight decay.

    For t = 1, 2, ... with g = grad::

        p = p * (1 - lr * weight_decay)
        then Adam's step (see `Adam`) on p, without the L2 penalty
    """

    lr: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 1e-2
    amsgrad: bool = False

    def __post_init__(self) -> None:
        _check_nonnegative("adamw", lr=self.lr, eps=self.eps, weight_decay=self.weight_decay)
        _check_betas("adamw", self.betas)

    def init(self, params: Any) -> AdamState:
        return _adam_init(params, self.amsgrad)

    def update(self, grads: Any, state: AdamState, params: Any) -> tuple[Any, AdamState]:
        if _is_set(self.weight_decay):
            decay = 1 - self.lr * self.weight_decay
            params = tree_map(lambda p: p * _like(decay, p), params)
        return _adam_update(grads, state, params, self.lr, self.betas, self.eps, self.amsgrad)


def adamw(
    lr: float = 1e-3,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 1e-2,
    amsgrad: bool = False,
) -> AdamW:
    """Adam with decoupled weight decay: torch.optim.AdamW.

    >>> opt = adamw(lr=0.1, weight_decay=0.5)
    >>> params, state = opt.update(4.0, opt.init(1.0), 1.0)
    >>> round(float(params), 6)  # 1 * (1 - 0.1 * 0.5), then a step of about lr
    0.85
    """
    return AdamW(lr, betas, eps, weight_decay, amsgrad)


# --- RMSprop -----------------------------------------------------------------------


class RMSpropState(NamedTuple):
    step: Any
    square_avg: Any
    momentum_buffer: Any  # None without momentum
    grad_avg: Any  # None unless centered


@dataclass(frozen=True)
class RMSprop:
    r"""RMSprop, as torch.optim.RMSprop (see `rmsprop`).

    For t = 1, 2, ... with g = grad + weight_decay * p::

        s = alpha * s + (1 - alpha) * |g|**2
        a = alpha * a + (1 - alpha) * g;  d = sqrt(s - |a|**2) + eps   (if centered)
        d = sqrt(s) + eps                                              (otherwise)
        b = momentum * b + g / d;  p = p - lr * b                      (if momentum != 0)
        p = p - lr * g / d                                             (otherwise)
    """

    lr: float = 1e-2
    alpha: float = 0.99
    eps: float = 1e-8
    weight_decay: float = 0.0
    momentum: float = 0.0
    centered: bool = False

    def __post_init__(self) -> None:
        _check_nonnegative(
            "rmsprop", lr=self.lr, alpha=self.alpha, eps=self.eps, weight_decay=self.weight_decay,
            momentum=self.momentum,
        )

    def init(self, params: Any) -> RMSpropState:
        return RMSpropState(
            _STEP0,
            _zeros(params, real=True),
            _zeros(params) if _is_set(self.momentum) else None,
            _zeros(params) if self.centered else None,
        )

    def update(self, grads: Any, state: RMSpropState, params: Any) -> tuple[Any, RMSpropState]:
        lr, alpha, eps, mom = self.lr, self.alpha, self.eps, self.momentum
        grads = _weight_decayed(grads, params, self.weight_decay)
        sq = tree_map(
            lambda s, g: _like(alpha, s) * s + _like(1 - alpha, s) * _abs2(g), state.square_avg, grads
        )
        ga = state.grad_avg
        if ga is not None:
            ga = tree_map(lambda a, g: _like(alpha, a) * a + _like(1 - alpha, g) * g, ga, grads)
            denom = tree_map(lambda s, a: fnp.sqrt(s - _abs2(a)) + _like(eps, s), sq, ga)
        else:
            denom = tree_map(lambda s: fnp.sqrt(s) + _like(eps, s), sq)
        buf = state.momentum_buffer
        if buf is not None:
            buf = tree_map(lambda b, g, d: _like(mom, b) * b + g / d, buf, grads, denom)
            new_params = tree_map(lambda p, b: p - _like(lr, b) * b, params, buf)
        else:
            new_params = tree_map(lambda p, g, d: p - _like(lr, g) * (g / d), params, grads, denom)
        return new_params, RMSpropState(state.step + 1, sq, buf, ga)


def rmsprop(
    lr: float = 1e-2,
    alpha: float = 0.99,
    eps: float = 1e-8,
    weight_decay: float = 0,
    momentum: float = 0,
    centered: bool = False,
) -> RMSprop:
    """RMSprop, optionally centered and with momentum: torch.optim.RMSprop.

    >>> opt = rmsprop(lr=0.01)
    >>> params, state = opt.update(2.0, opt.init(1.0), 1.0)  # 1 - 0.01 * 2 / sqrt(0.01 * 4)
    >>> round(float(params), 6)
    0.9
    """
    return RMSprop(lr, alpha, eps, weight_decay, momentum, centered)


# --- Adagrad -----------------------------------------------------------------------


class AdagradState(NamedTuple):
    step: Any
    sum: Any


@dataclass(frozen=True)
class Adagrad:
    r"""Adagrad, as torch.optim.Adagrad (see `adagrad`).

    With sum initialised to initial_accumulator_value, for t = 1, 2, ... with
    g = grad + weight_decay * p::

        lr_t = lr / (1 + (t - 1) * lr_decay)
        sum = sum + |g|**2
        p = p - lr_t * g / (sqrt(sum) + eps)
    """

    lr: float = 1e-2
    lr_decay: float = 0.0
    weight_decay: float = 0.0
    initial_accumulator_value: float = 0.0
    eps: float = 1e-10

    def __post_init__(self) -> None:
        _check_nonnegative(
            "adagrad", lr=self.lr, lr_decay=self.lr_decay, weight_decay=self.weight_decay,
            initial_accumulator_value=self.initial_accumulator_value, eps=self.eps,
        )

    def init(self, params: Any) -> AdagradState:
        init = self.initial_accumulator_value
        return AdagradState(_STEP0, tree_map(lambda p: _zeros_like(p, real=True) + _like(init, p), params))

    def update(self, grads: Any, state: AdagradState, params: Any) -> tuple[Any, AdagradState]:
        eps = self.eps
        step = state.step + 1
        clr = self.lr / (1 + (_concrete(step) - 1) * self.lr_decay)
        grads = _weight_decayed(grads, params, self.weight_decay)
        acc = tree_map(lambda s, g: s + _abs2(g), state.sum, grads)
        new_params = tree_map(
            lambda p, g, s: p - _like(clr, g) * (g / (fnp.sqrt(s) + _like(eps, s))), params, grads, acc
        )
        return new_params, AdagradState(step, acc)


def adagrad(
    lr: float = 1e-2,
    lr_decay: float = 0,
    weight_decay: float = 0,
    initial_accumulator_value: float = 0,
    eps: float = 1e-10,
) -> Adagrad:
    """Adagrad: per-coordinate steps shrinking with the summed squared gradients; torch.optim.Adagrad.

    >>> opt = adagrad(lr=0.5)
    >>> params, state = opt.update([3.0, -1.0], opt.init([1.0, 1.0]), [1.0, 1.0])
    >>> [round(float(p), 6) for p in params]  # the first step is lr * sign(g)
    [0.5, 1.5]
    """
    return Adagrad(lr, lr_decay, weight_decay, initial_accumulator_value, eps)


# --- ASGD --------------------------------------------------------------------------


class ASGDState(NamedTuple):
    step: Any
    eta: Any  # the step size of the next update
    mu: Any  # the averaging weight of the next update
    ax: Any  # the averaged parameters


@dataclass(frozen=True)
class ASGD:
    r"""Averaged SGD, as torch.optim.ASGD (see `asgd`).

    With eta = lr, mu = 1 and ax = 0 at first, for t = 1, 2, ... with
    g = grad + weight_decay * p (eta and mu are those left by the previous step)::

        p = p * (1 - lambd * eta) - eta * g
        ax = p  if mu == 1  else  ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * t)**alpha
        mu = 1 / max(1, t - t0)

    `update` returns the iterates p; the averaged parameters are `state.ax`.
    """

    lr: float = 1e-2
    lambd: float = 1e-4
    alpha: float = 0.75
    t0: float = 1e6
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        _check_nonnegative("asgd", lr=self.lr, weight_decay=self.weight_decay)

    def init(self, params: Any) -> ASGDState:
        lr = self.lr if isinstance(self.lr, Tracer) else np.float64(self.lr)
        return ASGDState(_STEP0, lr, np.float64(1.0), _zeros(params))

    def update(self, grads: Any, state: ASGDState, params: Any) -> tuple[Any, ASGDState]:
        lr, lambd = self.lr, self.lambd
        eta, mu = _concrete(state.eta), _concrete(state.mu)
        step = state.step + 1
        t = _concrete(step)
        grads = _weight_decayed(grads, params, self.weight_decay)
        new_params = tree_map(lambda p, g: p * _like(1 - lambd * eta, p) - _like(eta, g) * g, params, grads)
        ax = tree_map(lambda a, p: _select(mu == 1, p, a + (p - a) * _like(mu, a)), state.ax, new_params)
        new_eta = lr / (1 + lambd * lr * t) ** self.alpha
        new_mu = 1 / _select(t - self.t0 > 1, t - self.t0, 1.0)
        if not isinstance(new_eta, Tracer):
            new_eta = np.float64(new_eta)
        if not isinstance(new_mu, Tracer):
            new_mu = np.float64(new_mu)
        return new_params, ASGDState(step, new_eta, new_mu, ax)


def asgd(
    lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0
) -> ASGD:
    """Averaged stochastic gradient descent: torch.optim.ASGD. The averaged
    parameters, the usual answer once averaging starts (after t0 steps), are `state.ax`.

    >>> opt = asgd(lr=0.1)
    >>> x, state = opt.update(-2.0, opt.init(0.0), 0.0)  # the gradient of x^2 - 2x + 1 at 0
    >>> round(float(x), 6), round(float(state.ax), 6)
    (0.2, 0.2)
    """
    return ASGD(lr, lambd, alpha, t0, weight_decay)


# --- gradient clipping -------------------------------------------------------------


def clip_by_global_norm(grads: Any, max_norm: float) -> Any:
    """`grads` scaled so that their global L2 norm is at most `max_norm`, by PyTorch's rule.

    The name is optax's but the rule and the form are torch.nn.utils.clip_grad_norm_'s:
    scale = min(1, max_norm / (norm + 1e-6)) (optax's transform has no 1e-6 term), and
    it returns the clipped grads rather than a gradient transformation. The norm of a
    complex leaf counts |g|.

    >>> clipped = clip_by_global_norm({"a": 3.0, "b": 4.0}, max_norm=1.0)  # the norm is 5
    >>> {k: round(float(g), 6) for k, g in clipped.items()}
    {'a': 0.6, 'b': 0.8}
    """
    squares = [fnp.sum(_abs2(g)) for g in tree_leaves(grads)]
    norm = _sqrt(_concrete(sum(squares, 0.0)))
    scale = _concrete(max_norm / (norm + 1e-6))
    scale = _select(scale < 1.0, scale, 1.0)
    return tree_map(lambda g: g * _like(scale, g), grads)
