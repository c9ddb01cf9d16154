"""Optional extras, imported on first use: SciPy's values for the functions of
`fgrad.scipy` that fgrad does not compute itself. The core never imports an
extra at import time; a function that needs a missing one raises ImportError
naming the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, extra: str, feature: str) -> ModuleType:
    """`module` imported, or an ImportError that names `feature`, the missing
    module and the extra of fgrad that installs it.

    >>> require("numpy", "none", "a doctest").__name__
    'numpy'
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"{feature} needs {module.split('.')[0]}, which is not installed: install fgrad's optional "
            f"extra with `pip install fgrad[{extra}]` (or `pip install {module.split('.')[0]}`)"
        ) from error


def scipy_special() -> ModuleType:
    """scipy.special, or an ImportError naming the `scipy` extra."""
    return require("scipy.special", "scipy", "this function of fgrad.scipy")
