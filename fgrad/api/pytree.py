"""Pytrees: nested containers of arrays, flattened to a list of leaves and a
structure (`PyTreeDef`) that rebuilds them.

Containers: tuple, list, dict (sorted keys), None (no leaves), namedtuples,
and whatever `register_pytree_node` adds. Everything else is a leaf. The
transforms below the API layer only see flat lists; this module is how the
API layer gets there and back. Public as `fgrad.tree_util`.
"""

from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, NamedTuple, TypeVar

from ..core.trace import passthrough_types

__all__ = [
    "PyTreeDef", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves",
    "tree_structure", "register_pytree_node", "tree_flatten_with_path", "keystr",
    "SequenceKey", "DictKey", "GetAttrKey", "FlattenedIndexKey", "tree_reduce", "register_pytree_node_class",
]


class _NodeType(NamedTuple):
    name: str
    to_children: Callable[[Any], tuple[Iterable[Any], Hashable]]
    from_children: Callable[[Any, list[Any]], Any]


_registry: dict[type, _NodeType] = {}


def register_pytree_node(
    nodetype: type,
    flatten_func: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Any, Iterable[Any]], Any],
) -> None:
    """Make instances of `nodetype` containers: `flatten_func(x)` returns
    `(children, aux_data)`, `unflatten_func(aux_data, children)` rebuilds x.

    >>> class Point:
    ...     def __init__(self, x, y): self.x, self.y = x, y
    >>> register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))
    >>> tree_leaves(Point(1.0, [2.0, 3.0]))
    [1.0, 2.0, 3.0]
    """
    if nodetype in _registry:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _registry[nodetype] = _NodeType(
        nodetype.__name__, flatten_func, lambda aux, ch: unflatten_func(aux, ch)
    )


T = TypeVar("T", bound=type)


def register_pytree_node_class(cls: T) -> T:
    """A class decorator (JAX's): register `cls` as a pytree node through its own
    `tree_flatten(self) -> (children, aux_data)` method and
    `tree_unflatten(cls, aux_data, children)` classmethod. Returns `cls`.

    >>> @register_pytree_node_class
    ... class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    ...     def tree_flatten(self): return (self.a, self.b), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux, children): return cls(*children)
    >>> tree_leaves(Pair(1.0, [2.0]))
    [1.0, 2.0]
    """
    for method in ("tree_flatten", "tree_unflatten"):
        if not callable(getattr(cls, method, None)):
            raise TypeError(f"register_pytree_node_class: {cls.__name__} has no {method} method; it needs "
                            "tree_flatten(self) -> (children, aux_data) and a classmethod "
                            "tree_unflatten(cls, aux_data, children)")
    unflatten: Callable[[Any, Iterable[Any]], Any] = cls.tree_unflatten  # type: ignore[attr-defined]
    register_pytree_node(cls, lambda x: x.tree_flatten(), unflatten)
    return cls


def _dict_keys(d: dict[Any, Any]) -> list[Any]:
    try:
        return sorted(d)
    except TypeError:  # keys that do not compare: keep insertion order
        return list(d)


_registry[tuple] = _NodeType("tuple", lambda t: (t, None), lambda _, ch: tuple(ch))
_registry[list] = _NodeType("list", lambda t: (t, None), lambda _, ch: list(ch))
_registry[type(None)] = _NodeType("None", lambda t: ((), None), lambda _, ch: None)
def _flatten_dict(d: dict[Any, Any]) -> tuple[list[Any], tuple[Any, ...]]:
    keys = tuple(_dict_keys(d))
    return [d[k] for k in keys], keys


def _flatten_defaultdict(d: defaultdict[Any, Any]) -> tuple[list[Any], Any]:
    children, keys = _flatten_dict(d)
    return children, (d.default_factory, keys)


_registry[dict] = _NodeType("dict", _flatten_dict, lambda keys, ch: dict(zip(keys, ch)))
_registry[OrderedDict] = _NodeType(
    "OrderedDict",
    lambda d: (d.values(), tuple(d)),
    lambda keys, ch: OrderedDict(zip(keys, ch)),
)
_registry[defaultdict] = _NodeType(
    "defaultdict", _flatten_defaultdict, lambda aux, ch: defaultdict(aux[0], zip(aux[1], ch))
)


def _namedtuple_node(cls: type) -> _NodeType:
    return _NodeType(cls.__name__, lambda t: (t, None), lambda _, ch: cls(*ch))


def _node_of(x: Any) -> _NodeType | None:
    cls = type(x)
    node = _registry.get(cls)
    if node is None and isinstance(x, tuple) and hasattr(cls, "_fields"):
        node = _namedtuple_node(cls)
    return node


class PyTreeDef:
    """The structure of a pytree: a tree of node types with leaves as holes.

    >>> tree_structure((1.0, {"b": None, "a": [2.0, 3.0]}))
    PyTreeDef((*, {'a': [*, *], 'b': None}))
    """

    __slots__ = ("node", "cls", "aux", "children", "num_leaves", "leaf_tuple", "_hash")

    def __init__(
        self, node: _NodeType | None, cls: type | None, aux: Any, children: tuple[PyTreeDef, ...]
    ) -> None:
        self.node = node  # None: a leaf
        self.cls = cls
        self.aux = aux
        self.children = children
        self.num_leaves: int = 1 if node is None else sum(c.num_leaves for c in children)
        self.leaf_tuple = cls is tuple and all(c.node is None for c in children)
        # Immutable, so hashed once, when first asked: a jitted function looks
        # its arguments' structure up, and a hash recomputed would walk the tree.
        self._hash: int | None = None

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        leaves = list(leaves)
        if self.node is None and len(leaves) == 1:
            return leaves[0]
        if self.leaf_tuple and len(leaves) == self.num_leaves:
            return tuple(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"{self} has {self.num_leaves} leaves, but {len(leaves)} "
                f"value{' was' if len(leaves) == 1 else 's were'} given"
            )
        it = iter(leaves)
        return self._build(it)

    def _build(self, it: Any) -> Any:
        if self.node is None:
            return next(it)
        return self.node.from_children(self.aux, [c._build(it) for c in self.children])

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """The subtrees of `tree` at this structure's leaves (this is a prefix of it)."""
        out: list[Any] = []
        self._up_to(tree, out, "")
        return out

    def _up_to(self, tree: Any, out: list[Any], where: str) -> None:
        if self.node is None:
            out.append(tree)
            return
        node = _node_of(tree)
        if type(tree) is not self.cls or node is None:
            raise ValueError(
                f"pytree structure mismatch at {where or 'the root'}: expected a "
                f"{self.node.name}, got {type(tree).__name__}: {tree!r}"
            )
        children, aux = node.to_children(tree)
        children = list(children)
        if aux != self.aux or len(children) != len(self.children):
            raise ValueError(
                f"pytree structure mismatch at {where or 'the root'}: expected {self}, got "
                f"{tree_structure(tree)}"
            )
        for i, (c, sub) in enumerate(zip(self.children, children)):
            c._up_to(sub, out, f"{where}[{i}]")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        if self is other:
            return True
        return (
            hash(self) == hash(other)
            and self.cls is other.cls
            and self.aux == other.aux
            and self.children == other.children
        )

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self.cls, self.children))
        return self._hash

    def __repr__(self) -> str:
        return f"PyTreeDef({self._str()})"

    def _str(self) -> str:
        if self.node is None:
            return "*"
        parts = [c._str() for c in self.children]
        if self.cls is tuple:
            return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
        if self.cls is list:
            return "[" + ", ".join(parts) + "]"
        if self.cls is dict:
            return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(self.aux, parts)) + "}"
        if self.cls is type(None):
            return "None"
        return f"{self.node.name}(" + ", ".join(parts) + ")"


_LEAF = PyTreeDef(None, None, None, ())


# Arrays, scalars and tracers: leaves for sure, recognised without a registry lookup.
_KNOWN_LEAVES = passthrough_types


_flat: dict[tuple[type, int], PyTreeDef] = {}


def _flat_sequence(cls: type, n: int) -> PyTreeDef:
    """The structure of a tuple or list of n leaves (argument lists, lists of
    arrays), built once: the same object every time, so that comparing two is
    one identity check and its hash is computed once."""
    treedef = _flat.get((cls, n))
    if treedef is None:
        treedef = _flat[cls, n] = PyTreeDef(_registry[cls], cls, None, (_LEAF,) * n)
    return treedef


def _flatten(tree: Any, leaves: list[Any], is_leaf: Callable[[Any], bool] | None) -> PyTreeDef:
    if is_leaf is None:
        if type(tree) in _KNOWN_LEAVES:
            leaves.append(tree)
            return _LEAF
        t = type(tree)
        if (t is tuple or t is list) and all(type(x) in _KNOWN_LEAVES for x in tree):
            leaves.extend(tree)
            return _flat_sequence(t, len(tree))
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return _LEAF
    node = _node_of(tree)
    if node is None:
        leaves.append(tree)
        return _LEAF
    children, aux = node.to_children(tree)
    return PyTreeDef(node, type(tree), aux, tuple(_flatten(c, leaves, is_leaf) for c in children))


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Any], PyTreeDef]:
    """The leaves of `tree`, left to right, and its structure.

    >>> tree_flatten({"w": 1.0, "b": (2.0, None)})
    ([2.0, 1.0], PyTreeDef({'b': (*, None), 'w': *}))
    """
    leaves: list[Any] = []
    treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree of structure `treedef` from its leaves."""
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[[Any], bool] | None = None
) -> Any:
    """Apply `f` to each leaf (and the matching leaves of `rest`), keeping the structure.

    >>> tree_map(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)])
    [11, (22, 33)]
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [treedef.flatten_up_to(r) for r in rest]
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


_NO_INITIALIZER: Any = object()


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, initializer: Any = _NO_INITIALIZER,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`functools.reduce(function, tree_leaves(tree), initializer)` (JAX's).

    >>> tree_reduce(lambda a, b: a + b, {"w": [1.0, 2.0], "b": 3.0})
    6.0
    >>> tree_reduce(max, [3, (1, 4)], 0)
    4
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        if not leaves:
            raise TypeError("tree_reduce of a tree with no leaves needs an initializer, as functools.reduce "
                            "of an empty sequence does")
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


# --- key paths: naming leaves in messages -------------------------------------


class SequenceKey(NamedTuple):
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx}]"


class DictKey(NamedTuple):
    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


class GetAttrKey(NamedTuple):
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


class FlattenedIndexKey(NamedTuple):
    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


def _child_keys(tree: Any, treedef: PyTreeDef) -> list[Any]:
    cls = treedef.cls
    if cls in (tuple, list):
        return [SequenceKey(i) for i in range(len(treedef.children))]
    if cls in (dict, OrderedDict):
        return [DictKey(k) for k in treedef.aux]
    if cls is defaultdict:
        return [DictKey(k) for k in treedef.aux[1]]
    if cls is not None and isinstance(tree, tuple) and hasattr(cls, "_fields"):
        return [GetAttrKey(f) for f in cls._fields]
    return [FlattenedIndexKey(i) for i in range(len(treedef.children))]


def tree_flatten_with_path(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[tuple[Any, ...], Any]], PyTreeDef]:
    """Like `tree_flatten`, with each leaf paired with its key path."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    paths: list[tuple[Any, ...]] = []

    def walk(sub: Any, td: PyTreeDef, prefix: tuple[Any, ...]) -> None:
        if td.node is None:
            paths.append(prefix)
            return
        children = list(td.node.to_children(sub)[0])
        for key, child, ctd in zip(_child_keys(sub, td), children, td.children):
            walk(child, ctd, (*prefix, key))

    walk(tree, treedef, ())
    return list(zip(paths, leaves)), treedef


def keystr(path: tuple[Any, ...]) -> str:
    """A key path as text: ``[0]['w'].bias``."""
    return "".join(str(k) for k in path)
