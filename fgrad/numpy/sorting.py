"""Sorting and searching: sort, argsort, searchsorted, unique, median (filled by the NumPy-surface work)."""

from __future__ import annotations

__all__: list[str] = []
