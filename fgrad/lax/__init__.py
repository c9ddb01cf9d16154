"""Structured control flow, as JAX's `lax`: `cond`, `switch`, `select`,
`while_loop`, `fori_loop`, `scan`, `map` and `stop_gradient`; and the parts
of JAX's `lax` that JAX programs commonly call, written on fgrad.numpy:
`associative_scan`, the dynamic slices (`dynamic_slice`,
`dynamic_update_slice` and their one-axis forms), `dot`, `dot_general` and
`Precision`; and the convolutions (`conv_general_dilated`, `conv_transpose`,
...) and windowed reductions (`reduce_window`), on fgrad's window primitives.

Each is one primitive whose functions are closed jaxprs (one module per
primitive, with its rules), so that it works where Python control flow
cannot: under `jit` and `make_jaxpr`, and under `vmap` where the condition
differs between examples. Eagerly `cond` runs one branch and the loops run
as Python loops. Every transform composes with them, and reverse mode
through `while_loop` (and `fori_loop` with traced bounds) works, unlike
JAX's: the forward pass keeps each iteration's residuals, as many as there
were iterations, on a tape whose length is found as the loop runs, to any
order of derivative.
"""

from ..api.transformations import stop_gradient
from .associative import associative_scan
from .cond import cond, select, switch
from .loops import fori_loop, while_loop
from .products import Precision, dot, dot_general
from .scan import map, scan
from .slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
)
from .solves import custom_linear_solve, custom_root

__all__ = [
    "cond", "switch", "select", "while_loop", "fori_loop", "scan", "map", "stop_gradient",
    "associative_scan", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
    "dot", "dot_general", "Precision", "custom_root", "custom_linear_solve",
]


# Convolutions and windowed reductions (stax's Conv, MaxPool, AvgPool), as JAX's lax has them.
from . import convolution, windowed  # noqa: E402
from .convolution import *  # noqa: E402, F403
from .windowed import *  # noqa: E402, F403

__all__ += [*convolution.__all__, *windowed.__all__]
