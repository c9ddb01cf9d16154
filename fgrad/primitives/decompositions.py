"""Linear-algebra primitives beyond products: solve, inverse, determinants and
factorizations, each with its jvp, transpose (where linear) and batch rules."""

from __future__ import annotations

__all__: list[str] = []
