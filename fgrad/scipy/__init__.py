"""fgrad.scipy: the parts of SciPy's API that differentiable code uses, with
SciPy's names, signatures and values, and fgrad's derivative rules.

`special` is imported with fgrad; its older functions (erf, gammaln, digamma,
expit, logsumexp, ...) are computed by fgrad itself, and the rest take their
values from SciPy, an optional extra (`pip install fgrad[scipy]`). `linalg`,
`signal`, `stats`, `integrate`, `optimize` and `sparse` are imported on first
use.

>>> import fgrad.scipy
>>> fgrad.scipy.stats.norm.logpdf(0.0)
np.float64(-0.9189385332046727)
"""

from typing import TYPE_CHECKING, Any

from . import special

if TYPE_CHECKING:
    from . import integrate, linalg, optimize, signal, sparse, stats

__all__ = ["special", "linalg", "signal", "stats", "integrate", "optimize", "sparse"]

_LAZY = frozenset({"linalg", "signal", "stats", "integrate", "optimize", "sparse"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'fgrad.scipy' has no attribute {name!r}")
