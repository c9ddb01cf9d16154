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
* `log_compiles_slower_than` (seconds, default 1.0; also
  FGRAD_LOG_COMPILES_SLOWER_THAN in the environment): when a jitted function
  takes longer than this to trace, optimise and generate the code of a
  version, log so (logger "fgrad.jit", level WARNING, which reaches stderr
  when logging is not configured): the function's name, its number of
  equations and the time each step took. 0 logs every compile, None none.
"""

from __future__ import annotations

import math
import os
from typing import Any

__all__ = ["config"]

_OPTIONS = {"explain_cache_misses": "FGRAD_EXPLAIN_CACHE_MISSES",
            "log_compiles_slower_than": "FGRAD_LOG_COMPILES_SLOWER_THAN"}


class Config:
    """The options (attributes) and `update(name, value)` to change one."""

    def __init__(self) -> None:
        self.explain_cache_misses = os.environ.get(_OPTIONS["explain_cache_misses"], "") not in ("", "0")
        seconds = os.environ.get(_OPTIONS["log_compiles_slower_than"], "")
        self.log_compiles_slower_than = 1.0
        if seconds:
            self.update("log_compiles_slower_than", None if seconds.lower() == "none" else float(seconds))

    def update(self, name: str, value: Any) -> None:
        if name not in _OPTIONS:
            known = ", ".join(sorted(_OPTIONS))
            raise ValueError(f"fgrad.config has no option {name!r}; the options are: {known}")
        if name == "log_compiles_slower_than":
            if value is None:
                value = math.inf
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise TypeError(f"fgrad.config option {name!r} takes a number of seconds (0 or more) or "
                                f"None (never log), not {value!r}")
            value = float(value)
        elif not isinstance(value, bool):
            raise TypeError(f"fgrad.config option {name!r} takes True or False, not {value!r}")
        setattr(self, name, value)


config = Config()
