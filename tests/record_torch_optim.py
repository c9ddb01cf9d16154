"""Records torch.optim's trajectories of the optimizer cases (tests/optim_cases.py) in
tests/data/torch_optim.json, which tests/test_optim.py compares fgrad.optim against without
PyTorch installed.

Run from the repository's root, with PyTorch installed (any build; the CPU one suffices):

    python -m tests.record_torch_optim

and commit the file. Run it again when a case is added to or changed in tests/optim_cases.py
(tests/test_optim.py fails until then). The output is deterministic: the same PyTorch gives the
same bytes. The committed file was recorded by PyTorch 2.13.0 (CPU), whose version it stores.

The file holds the parameters' leaves (in tree_flatten's order), the gradients' leaves at every
step, and for each case (keyed by its test id) the parameters' leaves after every step, each
leaf as a number or a nested list; JSON writes floats by repr, so they read back exactly.
"""

import json

import numpy as np

from fgrad.tree_util import tree_flatten
from tests.optim_cases import CASES, RECORDED, STEPS, TORCH_SEED, case_id, torch_problem, torch_trajectory


def as_json(leaves):
    return [np.asarray(leaf, float).tolist() for leaf in leaves]


def record():
    """The recording, as the JSON object the file holds."""
    import torch

    params, grads_seq = torch_problem()
    param_leaves, treedef = tree_flatten(params)
    grad_leaves_seq = [treedef.flatten_up_to(g) for g in grads_seq]
    return {
        "torch_version": torch.__version__,
        "seed": TORCH_SEED,
        "steps": STEPS,
        "params": as_json(param_leaves),
        "grads": [as_json(leaves) for leaves in grad_leaves_seq],
        "cases": {
            case_id(name, kwargs): [as_json(leaves) for leaves in
                                    torch_trajectory(name, kwargs, param_leaves, grad_leaves_seq)]
            for name, kwargs in CASES
        },
    }


def dumps(recording):
    """The file's text: one line per step of a case, so that a diff shows what changed."""
    lines = ["{"]
    head = [k for k in recording if k not in ("grads", "cases")]
    lines += [f"  {json.dumps(k)}: {json.dumps(recording[k])}," for k in head]
    lines.append('  "grads": [')
    lines.append(",\n".join(f"    {json.dumps(step)}" for step in recording["grads"]))
    lines.append("  ],")
    lines.append('  "cases": {')
    cases = []
    for key, steps in recording["cases"].items():
        body = ",\n".join(f"      {json.dumps(step)}" for step in steps)
        cases.append(f"    {json.dumps(key)}: [\n{body}\n    ]")
    lines.append(",\n".join(cases))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    recording = record()
    RECORDED.parent.mkdir(exist_ok=True)
    RECORDED.write_text(dumps(recording))
    print(f"wrote {RECORDED} ({RECORDED.stat().st_size} bytes, {len(recording['cases'])} cases, "
          f"torch {recording['torch_version']})")


if __name__ == "__main__":
    main()
