"""fgrad: JAX-style function transformations for NumPy code, in pure Python.

>>> import fgrad, fgrad.numpy as fnp
>>> f = lambda x1, x2: fnp.log(x1) + x1 * x2 - fnp.exp(x2)
>>> fgrad.grad(f, argnums=(0, 1))(2.0, 5.0)
(np.float64(5.5), np.float64(-146.4131591025766))
"""

from typing import TYPE_CHECKING, Any

from . import debug, numpy, scipy, tree_util
from .api import (
    ShapeDtypeStruct,
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    device_put,
    devices,
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jit,
    jvp,
    linearize,
    local_devices,
    make_jaxpr,
    stop_gradient,
    value_and_grad,
    vjp,
    vmap,
)
from .config import config
from .core.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    UnexpectedTracerError,
)
from .custom_derivatives import checkpoint, custom_jvp, custom_vjp, remat
from .debug import debug_nans
from .ir import ClosedJaxpr, Jaxpr, eval_jaxpr

if TYPE_CHECKING:
    from . import lax, nn, optim, random, test_util, tree, viz

__version__ = "0.1.0"

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "linearize", "make_jaxpr", "stop_gradient",
    "jit", "vmap", "jacfwd", "jacrev", "jacobian", "hessian", "custom_jvp", "custom_vjp", "checkpoint",
    "remat", "debug", "debug_nans", "config",
    "eval_jaxpr", "ClosedJaxpr", "Jaxpr", "ShapeDtypeStruct", "ConcretizationTypeError",
    "TracerArrayConversionError", "UnexpectedTracerError", "numpy", "optim", "scipy", "tree_util",
    "lax", "test_util", "random", "viz", "tree", "nn",
    "device_put", "device_get", "devices", "local_devices", "device_count", "default_backend",
    "block_until_ready",
]

# Imported on first use, as attributes of fgrad: fgrad.optim's classes cost a
# third of fgrad's own import time, which every user would pay, optimizer or not.
_LAZY = frozenset({"optim", "lax", "test_util", "random", "viz", "tree", "nn"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'fgrad' has no attribute {name!r}")
