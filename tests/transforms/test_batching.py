"""vmap equals a Python loop and a stack, for every primitive, with batch axes
drawn anywhere (or absent) on each argument and out_axes drawn too."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fgrad
from tests.strategies import values


def _collect(attribute):
    """Merge `attribute` (a dict or set) over the test modules of tests/primitives,
    tests/numpy, tests/scipy and tests/random; a label defined twice is an error
    (one would hide the other)."""
    import importlib
    import pkgutil

    import tests.numpy
    import tests.primitives
    import tests.random
    import tests.scipy

    merged = {}
    for package in (tests.primitives, tests.numpy, tests.scipy, tests.random):
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.startswith("test_"):
                module = importlib.import_module(f"{package.__name__}.{info.name}")
                value = getattr(module, attribute, None)
                if value:
                    entries = value if isinstance(value, dict) else dict.fromkeys(value, info.name)
                    repeated = sorted(set(entries) & set(merged))
                    assert not repeated, f"{attribute} labels defined twice ({module.__name__}): {repeated}"
                    merged.update(entries)
    return merged


CASES = _collect("BATCH_CASES")


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


@pytest.mark.parametrize("name", sorted(CASES))
@given(data=st.data(), seed=st.integers(0, 2**20))
def test_vmap_equals_a_loop(name, data, seed):
    f, shapes, domain = CASES[name]
    size, axes = data.draw(batching(shapes))
    out_ndim = np.ndim(f(*[values(s, domain, 0) for s in shapes])) + 1
    out_axis = data.draw(st.integers(-out_ndim, out_ndim - 1))
    check_vmap_matches_loop(f, shapes, domain, size, axes, out_axis, seed)


def test_every_primitive_has_a_batching_test():
    from tests.primitives.test_registry import ALL

    missing = sorted(set(ALL) - set(CASES))
    assert not missing, f"primitives without a vmap test (add BATCH_CASES entries named after them): {missing}"


def test_every_primitive_has_a_batch_rule():
    from fgrad.core import batch_rules
    from tests.primitives.test_registry import ALL

    assert not sorted(name for name, p in ALL.items() if p not in batch_rules)
