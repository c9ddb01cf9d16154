"""fgrad.tree: the pytree functions under JAX's short names (`jax.tree`):
`map`, `flatten`, `unflatten`, `leaves`, `structure`, `reduce`,
`flatten_with_path`; the same functions as fgrad.tree_util's `tree_*`.

>>> import fgrad
>>> fgrad.tree.map(lambda x: x * 2, {"w": [1.0, 2.0]})
{'w': [2.0, 4.0]}
"""

from .api.pytree import tree_flatten as flatten
from .api.pytree import tree_flatten_with_path as flatten_with_path
from .api.pytree import tree_leaves as leaves
from .api.pytree import tree_map as map  # noqa: A004 (JAX's name)
from .api.pytree import tree_reduce as reduce
from .api.pytree import tree_structure as structure
from .api.pytree import tree_unflatten as unflatten

__all__ = ["map", "flatten", "unflatten", "leaves", "structure", "reduce", "flatten_with_path"]
