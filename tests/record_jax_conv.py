"""Records JAX's values of the convolution and windowed-reduction cases (tests/conv_cases.py)
in tests/data/jax_conv.json, which tests/lax/test_convolution.py compares fgrad.lax against
without JAX installed.

Run from the repository's root, with JAX installed (CPU):

    python -m tests.record_jax_conv

and commit the file. Run it again when a case is added or changed. JAX computes in float64
(jax_enable_x64). For each case the file holds the result and, for the convolutions, the
gradients of ``sum(sin(result))`` with respect to both operands; arrays as nested lists
(JSON writes floats by repr, so they read back exactly).
"""

import functools
import json

import numpy as np

from tests.conv_cases import CONV, CONV_TRANSPOSE, PATCHES, RECORDED, REDUCE_WINDOW, jsonable, operands


def record():
    """The recording, as the JSON object the file holds."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    jax.config.update("jax_enable_x64", True)

    def listed(x):
        return np.asarray(x).tolist()

    def with_grads(fun, lhs, rhs):
        out = fun(lhs, rhs)
        grads = jax.grad(lambda a, b: jnp.sum(jnp.sin(fun(a, b))), argnums=(0, 1))(lhs, rhs)
        return {"out": listed(out), "grad_lhs": listed(grads[0]), "grad_rhs": listed(grads[1])}

    conv = {}
    for name, (lhs_shape, rhs_shape, kwargs) in CONV.items():
        lhs, rhs = operands(lhs_shape, rhs_shape)
        conv[name] = with_grads(functools.partial(lax.conv_general_dilated, **jsonable(kwargs)), lhs, rhs)
    transposed = {}
    for name, (lhs_shape, rhs_shape, kwargs) in CONV_TRANSPOSE.items():
        lhs, rhs = operands(lhs_shape, rhs_shape)
        transposed[name] = with_grads(functools.partial(lax.conv_transpose, **jsonable(kwargs)), lhs, rhs)
    patches = {}
    for name, (shape, kwargs) in PATCHES.items():
        (lhs,) = operands(shape)
        patches[name] = {"out": listed(lax.conv_general_dilated_patches(lhs, **jsonable(kwargs)))}
    reduced = {}
    for name, (shape, init, computation, kwargs) in REDUCE_WINDOW.items():
        (x,) = operands(shape)
        fun = getattr(lax, computation)
        reduced[name] = {"out": listed(lax.reduce_window(x, init, fun, **jsonable(kwargs)))}
    return {"jax_version": jax.__version__, "conv_general_dilated": conv, "conv_transpose": transposed,
            "conv_general_dilated_patches": patches, "reduce_window": reduced}


if __name__ == "__main__":
    RECORDED.write_text(json.dumps(record()) + "\n")
    print(f"wrote {RECORDED}")
