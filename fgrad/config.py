"""fgrad.config: process-wide options, JAX's way.

>>> import fgrad
>>> fgrad.config.update("explain_cache_misses", True)
>>> fgrad.config.explain_cache_misses
True
>>> fgrad.config.update("explain_cache_misses", False)

* `explain_cache_misses` (also FGRAD_EXPLAIN_CACHE_MISSES=1 in the environment):
  when a jitted function traces again, log (logger "fgrad.jit", level WARNING)
  what differs from its last trace: the tree structure of the arguments, an
  argument's shape or dtype (naming it), or a static value.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["config"]

_OPTIONS = {"explain_cache_misses": "FGRAD_EXPLAIN_CACHE_MISSES"}


class Config:
    """The options (attributes) and `update(name, value)` to change one."""

    def __init__(self) -> None:
        self.explain_cache_misses = os.environ.get(_OPTIONS["explain_cache_misses"], "") not in ("", "0")

    def update(self, name: str, value: Any) -> None:
        if name not in _OPTIONS:
            known = ", ".join(sorted(_OPTIONS))
            raise ValueError(f"fgrad.config has no option {name!r}; the options are: {known}")
        if not isinstance(value, bool):
            raise TypeError(f"fgrad.config option {name!r} takes True or False, not {value!r}")
        setattr(self, name, value)


config = Config()
