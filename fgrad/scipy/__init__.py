"""fgrad.scipy: the parts of SciPy's API that differentiable code uses, written
on fgrad's primitives (SciPy itself is not needed)."""

from . import special

__all__ = ["special"]
