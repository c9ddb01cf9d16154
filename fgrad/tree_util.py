"""fgrad.tree_util: pytrees (nested tuples, lists, dicts, None, namedtuples and
registered classes) flattened to leaves and rebuilt.

>>> from fgrad.tree_util import tree_map
>>> tree_map(lambda x: 2 * x, {"w": [1.0, 2.0], "b": 3.0})
{'b': 6.0, 'w': [2.0, 4.0]}
"""

from .api.pytree import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    PyTreeDef,
    SequenceKey,
    keystr,
    register_pytree_node,
    register_pytree_node_class,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_reduce,
    tree_structure,
    tree_unflatten,
)

__all__ = [
    "PyTreeDef", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_structure",
    "register_pytree_node", "tree_flatten_with_path", "keystr", "SequenceKey", "DictKey",
    "GetAttrKey", "FlattenedIndexKey", "tree_reduce", "register_pytree_node_class",
]
