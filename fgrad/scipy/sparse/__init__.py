"""fgrad.scipy.sparse: the part of SciPy's sparse package that differentiable
code uses, its iterative solvers (`fgrad.scipy.sparse.linalg`), imported on
first use. SciPy itself is imported only where SciPy's objects (a sparse
matrix, a LinearOperator) are given.

>>> import numpy as np, fgrad.scipy.sparse
>>> x, info = fgrad.scipy.sparse.linalg.cg(np.array([[2.0]]), np.array([1.0]))
>>> x, info
(array([0.5]), 0)
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import linalg

__all__ = ["linalg"]

_LAZY = frozenset({"linalg"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'fgrad.scipy.sparse' has no attribute {name!r}")
