"""Hypothesis strategies shared by the tests: shapes (0-d and broadcasting
included) and arrays drawn away from the kinks of the function under test."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

#: Shapes from 0-d to 3-d, small sides.
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)


def broadcast_pairs(num_shapes: int = 2) -> st.SearchStrategy[tuple[tuple[int, ...], ...]]:
    """Tuples of shapes that broadcast together (0-d included)."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=0, max_dims=3, min_side=1, max_side=3
    ).map(lambda bs: bs.input_shapes)


DOMAINS = {
    "real": lambda u: 4 * u - 2,                              # (-2, 2)
    "positive": lambda u: 0.5 + 1.5 * u,                      # (0.5, 2)
    "nonzero": lambda u: np.where(u < 0.5, -1, 1) * (0.3 + 2 * np.abs(u - 0.5)),  # |x| >= 0.3
    "unit": lambda u: 1.6 * u - 0.8,                          # (-0.8, 0.8)
}


def values(shape: tuple[int, ...], domain: str, seed: int, dtype: type = np.float64) -> np.ndarray:
    """An array of `shape` from `domain`, deterministic in `seed`."""
    u = np.random.default_rng(seed).uniform(size=shape)
    return np.asarray(DOMAINS[domain](u), dtype=dtype)


seeds = st.integers(min_value=0, max_value=2**32 - 1)
