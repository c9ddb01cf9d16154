"""fgrad.tree_util: flattening, rebuilding, mapping, registering, key paths."""

import timeit
from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.tree_util import (
    keystr,
    register_pytree_node,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

Point = namedtuple("Point", ["x", "y"])

leaves = st.one_of(st.floats(allow_nan=False), st.integers(), st.just(np.float64(1.5)))
trees = st.recursive(
    leaves | st.none(),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=3), children, max_size=3),
        st.tuples(children, children).map(lambda t: Point(*t)),
    ),
    max_leaves=10,
)


@given(trees)
def test_flatten_then_unflatten_is_the_identity(tree):
    flat, treedef = tree_flatten(tree)
    assert tree_unflatten(treedef, flat) == tree
    assert treedef.num_leaves == len(flat) == len(tree_leaves(tree))
    assert tree_structure(tree) == treedef


def test_order_and_structure_text():
    tree = (1.0, {"b": None, "a": [2.0, 3.0]}, Point(4.0, 5.0))
    flat, treedef = tree_flatten(tree)
    assert flat == [1.0, 2.0, 3.0, 4.0, 5.0]  # dicts in sorted-key order, None has no leaves
    assert repr(treedef) == "PyTreeDef((*, {'a': [*, *], 'b': None}, Point(*, *)))"


def test_tree_map_with_several_trees_and_is_leaf():
    assert tree_map(lambda x, y: x + y, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]
    assert tree_map(lambda t: len(t), [(1, 2), (3,)], is_leaf=lambda t: isinstance(t, tuple)) == [2, 1]
    # the other trees may hold subtrees where the first has leaves (a prefix)...
    assert tree_map(lambda x, y: (x, y), [1, 2], [1, {"a": 3}]) == [(1, 1), (2, {"a": 3})]
    # ...but not a different structure
    with pytest.raises(ValueError, match="structure mismatch"):
        tree_map(lambda x, y: x, [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="expected a tuple, got list"):
        tree_map(lambda x, y: x, (1, 2), [1, 2])


def test_ordered_and_default_dicts():
    od = OrderedDict([("z", 1), ("a", 2)])
    assert tree_leaves(od) == [1, 2]  # insertion order kept
    dd = defaultdict(list, {"b": 1, "a": 2})
    rebuilt = tree_unflatten(tree_structure(dd), [20, 10])
    assert isinstance(rebuilt, defaultdict) and rebuilt == {"a": 20, "b": 10}


def test_register_pytree_node():
    class Box:
        def __init__(self, value, label):
            self.value, self.label = value, label

    register_pytree_node(Box, lambda b: ((b.value,), b.label), lambda label, ch: Box(ch[0], label))
    doubled = tree_map(lambda v: 2 * v, [Box(1.0, "a"), Box(np.ones(2), "b")])
    assert doubled[0].value == 2.0 and doubled[1].label == "b"
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(Box, lambda b: ((), None), lambda a, c: Box(0, ""))


def test_unflatten_checks_the_number_of_leaves():
    with pytest.raises(ValueError, match="has 2 leaves, but 3 values were given"):
        tree_unflatten(tree_structure((1, 2)), [1, 2, 3])


def test_key_paths():
    paths, _ = tree_flatten_with_path({"w": [1.0, 2.0], "p": Point(3.0, 4.0)})
    assert [keystr(p) for p, _ in paths] == ["['p'].x", "['p'].y", "['w'][0]", "['w'][1]"]


def test_structures_are_equal_and_hash_alike_when_they_are_the_same():
    same = [tree_structure([1.0, {"a": 2.0, "b": (3.0, None)}]) for _ in range(2)]
    assert same[0] == same[1] and hash(same[0]) == hash(same[1])
    others = [[1.0, {"a": 2.0, "c": (3.0, None)}], [1.0, {"a": 2.0, "b": (3.0, 4.0)}],
              [1.0, {"a": 2.0, "b": [3.0, None]}], [1.0, {"a": 2.0, "b": (3.0, None)}, 5.0]]
    assert all(tree_structure(t) != same[0] for t in others)
    # sequences of leaves, the common arguments, rebuild as what they were
    flat_list, flat_tuple = tree_structure([1.0, np.ones(2)]), tree_structure((1.0, np.ones(2)))
    assert flat_list != flat_tuple and flat_list == tree_structure([np.ones(3), 2.0])
    assert tree_unflatten(flat_list, [3.0, 4.0]) == [3.0, 4.0] and tree_unflatten(flat_tuple, [3.0, 4.0]) == (3.0, 4.0)


def test_a_structure_is_hashed_once_not_on_every_lookup():
    # jit looks its arguments' structure up on each call: hashing one of
    # 10,000 nodes costs what hashing one of three does.
    big, small = tree_structure([[1.0] * 100 for _ in range(100)]), tree_structure([1.0, 2.0])

    def cost(td):
        return min(timeit.repeat(lambda: hash(td), number=200, repeat=5))

    assert cost(big) < 10 * cost(small)


# --- tree_reduce, register_pytree_node_class, fgrad.tree (JAX's names) -------------


def test_tree_reduce_is_functools_reduce_over_the_leaves():
    import functools

    from fgrad.tree_util import tree_reduce

    tree = {"b": [1.0, (2.0, 3.0)], "a": 4.0}
    assert tree_reduce(lambda x, y: x * 10 + y, tree) == functools.reduce(lambda x, y: x * 10 + y, [4.0, 1.0, 2.0, 3.0])
    assert tree_reduce(lambda x, y: x + y, [], 7) == 7
    assert tree_reduce(lambda x, y: x + [y], [1, [2]], []) == [1, 2]
    with pytest.raises(TypeError, match="tree_reduce of a tree with no leaves needs an initializer"):
        tree_reduce(lambda x, y: x + y, {"a": None})


def test_register_pytree_node_class_under_the_transformations():
    from fgrad.tree_util import register_pytree_node_class

    @register_pytree_node_class
    class Linear:
        def __init__(self, w, b, name="layer"):
            self.w, self.b, self.name = w, b, name

        def tree_flatten(self):
            return (self.w, self.b), self.name

        @classmethod
        def tree_unflatten(cls, name, children):
            return cls(*children, name=name)

    layer = Linear(np.array([1.0, 2.0]), 0.5, "first")
    x = np.array([3.0, -1.0])
    g = fgrad.grad(lambda m: fnp.sum(m.w * x) + m.b ** 2)(layer)
    assert isinstance(g, Linear) and g.name == "first"
    np.testing.assert_array_equal(g.w, x)
    assert g.b == pytest.approx(1.0)
    out = fgrad.jit(lambda m: Linear(m.w * 2, m.b, m.name))(layer)
    np.testing.assert_array_equal(out.w, [2.0, 4.0])
    with pytest.raises(TypeError, match=r"register_pytree_node_class: NoMethods has no tree_flatten method"):
        register_pytree_node_class(type("NoMethods", (), {}))


def test_fgrad_tree_has_jaxs_short_names_for_the_same_functions():
    import fgrad.tree as tree
    from fgrad import tree_util

    t = {"w": [1.0, 2.0], "b": (3.0,)}
    assert tree.map(lambda x: x + 1, t) == tree_util.tree_map(lambda x: x + 1, t)
    leaves, treedef = tree.flatten(t)
    assert leaves == tree_util.tree_leaves(t) == tree.leaves(t)
    assert tree.unflatten(treedef, leaves) == t and tree.structure(t) == treedef
    assert tree.reduce(lambda a, b: a + b, t) == 6.0
    assert [k for k, _ in tree.flatten_with_path(t)[0]] == [k for k, _ in tree_util.tree_flatten_with_path(t)[0]]
    assert fgrad.tree is tree
