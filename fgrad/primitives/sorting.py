"""Sorting primitives: sort, argsort and friends (filled by the NumPy-surface work)."""

from __future__ import annotations

__all__: list[str] = []
