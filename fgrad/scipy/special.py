"""fgrad.scipy.special: logsumexp, softmax, erf, gammaln, ... (filled by the NumPy-surface work)."""

from __future__ import annotations

__all__: list[str] = []
