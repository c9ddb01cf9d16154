"""Structured control flow, as JAX's `lax`: `cond`, `switch`, `select`,
`while_loop`, `fori_loop`, `scan`, `map` and `stop_gradient`; and the parts
of JAX's `lax` that JAX programs commonly call, written on fgrad.numpy:
`associative_scan`, the dynamic slices (`dynamic_slice`,
`dynamic_update_slice` and their one-axis forms), `dot`, `dot_general` and
`Precision`.

Each is one primitive whose functions are closed jaxprs (one module per
primitive, with its rules), so that it works where Python control flow
cannot: under `jit` and `make_jaxpr`, and under `vmap` where the condition
differs between examples. Eagerly `cond` runs one branch and the loops run
as Python loops. Every transform composes with them, and reverse mode
through `while_loop` (and `fori_loop` with traced bounds) works, unlike
JAX's: the forward pass keeps each iteration's residuals, as many as there
were iterations (unrolled as it runs under grad; on a tape whose length is
found at run time under jit and vmap).
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

