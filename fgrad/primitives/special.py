"""Special functions (erf, gammaln, digamma, ...) as primitives, implemented
with NumPy and the Python standard library only (no SciPy)."""

from __future__ import annotations

__all__: list[str] = []
