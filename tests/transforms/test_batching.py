"""vmap equals a Python loop and a stack, for every primitive, with batch axes
drawn anywhere (or absent) on each argument and out_axes drawn too."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
import fgrad.numpy as fnp
from fgrad.numpy.indexing import static_index
from fgrad.primitives import indexing
from fgrad.primitives import shapes as P
from tests.strategies import values

# name -> (function, per-example argument shapes, domain)
CASES = {
    "neg": (fnp.negative, [(3,)], "real"), "sin": (fnp.sin, [(2, 3)], "real"),
    "cos": (fnp.cos, [()], "real"), "exp": (fnp.exp, [(3,)], "real"),
    "log": (fnp.log, [(2, 2)], "positive"), "tanh": (fnp.tanh, [(3,)], "real"),
    "sqrt": (fnp.sqrt, [(3,)], "positive"), "square": (fnp.square, [(3,)], "real"),
    "abs": (fnp.abs, [(3,)], "nonzero"), "sign": (fnp.sign, [(3,)], "nonzero"),
    "stop_gradient": (fgrad.stop_gradient, [(3,)], "real"),
    "integer_pow": (lambda x: x**3, [(2, 3)], "real"),
    "convert_element_type": (lambda x: fnp.astype(x, np.float32), [(3,)], "real"),
    "add": (fnp.add, [(2, 3), (3,)], "real"), "sub": (fnp.subtract, [(3,), (2, 3)], "real"),
    "mul": (fnp.multiply, [(2, 1), (1, 3)], "real"), "div": (fnp.divide, [(3,), ()], "nonzero"),
    "pow": (fnp.power, [(3,), (3,)], "positive"), "max": (fnp.maximum, [(3,), (2, 3)], "real"),
    "min": (fnp.minimum, [(2, 3), ()], "real"),
    "eq": (fnp.equal, [(3,), (3,)], "real"), "ne": (fnp.not_equal, [(3,), ()], "real"),
    "lt": (fnp.less, [(3,), (3,)], "real"), "le": (fnp.less_equal, [(2, 3), (3,)], "real"),
    "gt": (fnp.greater, [(3,), (3,)], "real"), "ge": (fnp.greater_equal, [(3,), (3,)], "real"),
    "where": (lambda x, y, z: fnp.where(x > 0, y, z), [(3,), (2, 3), ()], "real"),
    "reshape": (lambda x: fnp.reshape(x, (3, 2)), [(2, 3)], "real"),
    "transpose": (lambda x: fnp.transpose(x, (2, 0, 1)), [(2, 3, 4)], "real"),
    "broadcast_to": (lambda x: P.broadcast_to(x, shape=(2, 4, 3)), [(4, 1)], "real"),
    "concatenate": (lambda x, y: fnp.concatenate([x, y, x], axis=1), [(2, 3), (2, 1)], "real"),
    "reduce_sum": (lambda x: fnp.sum(x, axis=(0, 2)), [(2, 3, 4)], "real"),
    "reduce_max": (lambda x: fnp.max(x, axis=-1, keepdims=True), [(2, 3)], "real"),
    "reduce_min": (lambda x: fnp.min(x), [(2, 3)], "real"),
    "matmul": (fnp.matmul, [(2, 3), (3, 4)], "real"),
    "getitem": (lambda x: x[1:, None, ::2], [(3, 4)], "real"),
    "index_add": (lambda x, y: indexing.index_add(x, y, idx=static_index((slice(1, 3), 0))),
                  [(4, 2), (2,)], "real"),
}

MORE = {  # further shapes for the rules with several cases
    "matmul_vec_mat": (fnp.matmul, [(3,), (3, 4)], "real"),
    "matmul_mat_vec": (fnp.matmul, [(2, 3), (3,)], "real"),
    "matmul_vec_vec": (fnp.matmul, [(3,), (3,)], "real"),
    "matmul_stacks": (fnp.matmul, [(5, 2, 3), (3, 2)], "real"),
    "matmul_stack_vec": (fnp.matmul, [(3,), (2, 3, 4)], "real"),
    "getitem_array": (lambda x: x[np.array([2, 0, 2]), 1:], [(3, 4)], "real"),
    "getitem_separated_arrays": (lambda x: x[np.array([0, 1]), :, np.array([1, 0])], [(2, 3, 2)], "real"),
    "getitem_int": (lambda x: x[1], [(3, 2)], "real"),
    "getitem_mask": (lambda x: x[np.array([True, False, True])], [(3, 2)], "real"),
    "index_add_array": (lambda x, y: indexing.index_add(x, y, idx=static_index(np.array([0, 0, 2]))),
                        [(3, 2), (3, 2)], "real"),
    "reduce_sum_all": (fnp.sum, [(2, 3)], "real"), "scalar_ops": (lambda x, y: x * y + x, [(), ()], "real"),
    "stack": (lambda x, y: fnp.stack([x, y], axis=-1), [(2,), (2,)], "real"),
}


@st.composite
def batching(draw, shapes):
    """A batch size, and for each argument an in_axis (None: shared) valid for its rank."""
    size = draw(st.integers(1, 3))
    axes = [draw(st.one_of(st.none(), st.integers(-len(s) - 1, len(s)))) for s in shapes]
    return size, axes


def _batched(example_shape, axis, size, domain, seed):
    """`size` examples stacked along `axis`, or one shared example when axis is None."""
    if axis is None:
        return values(example_shape, domain, seed), None
    stack = np.stack([values(example_shape, domain, seed + 97 * i) for i in range(size)])
    return np.moveaxis(stack, 0, axis), axis


def check_vmap_matches_loop(f, shapes, domain, size, axes, out_axis, seed):
    if all(a is None for a in axes):
        axes[0] = 0
    args = [_batched(s, a, size, domain, seed + 7 * i) for i, (s, a) in enumerate(zip(shapes, axes))]
    arrays = [x for x, _ in args]
    got = fgrad.vmap(f, in_axes=tuple(axes), out_axes=out_axis)(*arrays)
    examples = [
        f(*[x if a is None else np.take(x, i, axis=a) for x, a in zip(arrays, axes)])
        for i in range(size)
    ]
    expected = np.stack([np.asarray(e) for e in examples], axis=out_axis)
    assert np.asarray(got).dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("name", sorted({**CASES, **MORE}))
@given(data=st.data(), seed=st.integers(0, 2**20))
def test_vmap_equals_a_loop(name, data, seed):
    f, shapes, domain = {**CASES, **MORE}[name]
    size, axes = data.draw(batching(shapes))
    out_ndim = np.ndim(f(*[values(s, domain, 0) for s in shapes])) + 1
    out_axis = data.draw(st.integers(-out_ndim, out_ndim - 1))
    check_vmap_matches_loop(f, shapes, domain, size, axes, out_axis, seed)


def test_every_primitive_has_a_batching_test():
    from tests.primitives.test_registry import ALL

    missing = sorted(set(ALL) - set(CASES))
    assert not missing, f"primitives without a vmap test: {missing}"


def test_every_primitive_has_a_batch_rule():
    from fgrad.core import batch_rules
    from tests.primitives.test_registry import ALL

    assert not sorted(name for name, p in ALL.items() if p not in batch_rules)
