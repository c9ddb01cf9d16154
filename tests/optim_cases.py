"""The optimizer cases of tests/test_optim.py and the problems they run on, in one place for the
tests and for tests/record_torch_optim.py, which records PyTorch's trajectories of the same cases
in tests/data/torch_optim.json."""

from pathlib import Path

import numpy as np

from fgrad.tree_util import tree_map

# Each optimizer of fgrad.optim by name, with every option that changes its update rule.
CASES = [
    ("sgd", dict(lr=0.1)),
    ("sgd", dict(lr=0.1, momentum=0.9)),
    ("sgd", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("sgd", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("sgd", dict(lr=0.05, momentum=0.5, weight_decay=0.1)),
    ("sgd", dict(lr=0.05, weight_decay=0.2)),
    ("adam", dict()),
    ("adam", dict(lr=0.1)),
    ("adam", dict(lr=0.05, amsgrad=True)),
    ("adam", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1)),
    ("adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    ("adamw", dict()),
    ("adamw", dict(lr=0.1, weight_decay=0.5)),
    ("adamw", dict(lr=0.05, betas=(0.5, 0.6), amsgrad=True)),
    ("adamw", dict(lr=0.05, weight_decay=0)),
    ("rmsprop", dict()),
    ("rmsprop", dict(lr=0.05, alpha=0.9)),
    ("rmsprop", dict(centered=True)),
    ("rmsprop", dict(momentum=0.9)),
    ("rmsprop", dict(lr=0.03, centered=True, momentum=0.5, weight_decay=0.1, eps=1e-4)),
    ("adagrad", dict()),
    ("adagrad", dict(lr=0.1, lr_decay=0.5)),
    ("adagrad", dict(lr=0.1, initial_accumulator_value=0.5, weight_decay=0.1)),
    ("adagrad", dict(lr=0.1, eps=1e-2)),
    ("asgd", dict()),
    ("asgd", dict(lr=0.05, t0=2)),
    ("asgd", dict(lr=0.1, lambd=0.05, alpha=0.5, t0=0, weight_decay=0.1)),
]


def case_id(name, kwargs):
    """A case's test id, and its key in the recorded file: sgd-lr=0.1-momentum=0.9, adam-defaults."""
    return f"{name}-{'-'.join(f'{k}={v}' for k, v in kwargs.items()) or 'defaults'}"


CASE_IDS = [case_id(name, kwargs) for name, kwargs in CASES]

STEPS = 4


def example_params(kind, rng):
    if kind == "scalar":
        return 0.7
    if kind == "array":
        return rng.standard_normal((2, 3))
    if kind == "complex":
        return {"z": rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3)),
                "rest": [0.3 - 0.4j, rng.standard_normal(2)]}
    return {"w": rng.standard_normal((3, 2)), "b": [rng.standard_normal(3), (0.5, rng.standard_normal(()))]}


def random_like(tree, rng):
    def like(p):
        g = rng.standard_normal(np.shape(p))
        return g + 1j * rng.standard_normal(np.shape(p)) if np.iscomplexobj(p) else g

    return tree_map(like, tree)


# --- PyTorch's side ----------------------------------------------------------------
# Real parameters only: for complex ones fgrad follows optax's convention (|g|^2), not PyTorch's,
# which optimizes the real and imaginary parts as separate coordinates (torch.view_as_real).

TORCH_NAMES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop", "adagrad": "Adagrad",
               "asgd": "ASGD"}
TORCH_SEED = 4
RECORDED = Path(__file__).parent / "data" / "torch_optim.json"


def torch_problem():
    """The parameters (a pytree of float64 leaves) and the STEPS gradients every case runs on."""
    rng = np.random.default_rng(TORCH_SEED)
    params = example_params("pytree", rng)
    return params, [random_like(params, rng) for _ in range(STEPS)]


def torch_trajectory(name, kwargs, param_leaves, grad_leaves_seq):
    """torch.optim's iterates, in float64: one list of leaves (NumPy arrays) per step."""
    import torch

    tensors = [torch.tensor(np.asarray(p, float), dtype=torch.float64, requires_grad=True) for p in param_leaves]
    opt = getattr(torch.optim, TORCH_NAMES[name])(tensors, **kwargs)
    # torch keeps scalar state (ASGD's eta and mu) in its default dtype: make that float64 too.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    out = []
    try:
        for grad_leaves in grad_leaves_seq:
            for t, g in zip(tensors, grad_leaves):
                t.grad = torch.tensor(np.asarray(g, float), dtype=torch.float64)
            opt.step()
            out.append([t.detach().numpy().copy() for t in tensors])
    finally:
        torch.set_default_dtype(previous)
    return out
