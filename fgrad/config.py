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
* `jit_fusion` (default True; FGRAD_JIT_FUSION=0 in the environment turns it
  off): jit's code runs each cluster of elementwise equations on large arrays
  (and a sum, max or min of their result) fused, in blocks that stay in the
  cache, across threads (ir/fusion.py). Off, each equation is one NumPy call
  on the whole arrays.
* `jit_fusion_min_size` (elements, default 262144; FGRAD_JIT_FUSION_MIN_SIZE):
  the size of a cluster's arrays from which it runs fused; below, one NumPy
  call per equation costs less.
* `jit_fusion_block_size` (elements, default 32768; FGRAD_JIT_FUSION_BLOCK_SIZE):
  about how many elements of each array a block holds.
* `jit_fusion_threads` (default None: `os.cpu_count()`; FGRAD_JIT_FUSION_THREADS):
  how many threads at most run a fused cluster's blocks, the calling thread
  included (1: only the calling thread); read at each call.

The other jit_fusion options are read when a jitted function generates the
code of a version: versions compiled before keep theirs (`f.clear_cache()`
compiles them again).
"""

from __future__ import annotations

import math
import os
from typing import Any

__all__ = ["config"]

_OPTIONS = {"explain_cache_misses": "FGRAD_EXPLAIN_CACHE_MISSES",
            "log_compiles_slower_than": "FGRAD_LOG_COMPILES_SLOWER_THAN",
            "jit_fusion": "FGRAD_JIT_FUSION",
            "jit_fusion_min_size": "FGRAD_JIT_FUSION_MIN_SIZE",
            "jit_fusion_block_size": "FGRAD_JIT_FUSION_BLOCK_SIZE",
            "jit_fusion_threads": "FGRAD_JIT_FUSION_THREADS"}
_COUNTS = ("jit_fusion_min_size", "jit_fusion_block_size", "jit_fusion_threads")


class Config:
    """The options (attributes) and `update(name, value)` to change one."""

    def __init__(self) -> None:
        self.explain_cache_misses = os.environ.get(_OPTIONS["explain_cache_misses"], "") not in ("", "0")
        seconds = os.environ.get(_OPTIONS["log_compiles_slower_than"], "")
        self.log_compiles_slower_than = 1.0
        if seconds:
            self.update("log_compiles_slower_than", None if seconds.lower() == "none" else float(seconds))
        self.jit_fusion = os.environ.get(_OPTIONS["jit_fusion"], "1") not in ("", "0")
        self.jit_fusion_min_size: int = 1 << 18
        self.jit_fusion_block_size: int = 1 << 15
        self.jit_fusion_threads: int | None = None
        for name in _COUNTS:
            given = os.environ.get(_OPTIONS[name], "")
            if given:
                try:
                    value: Any = None if given.lower() == "none" else int(given)
                except ValueError:
                    raise ValueError(f"{_OPTIONS[name]}={given!r} in the environment: fgrad.config option "
                                     f"{name!r} takes a whole number") from None
                self.update(name, value)

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
        elif name in _COUNTS:
            least = 0 if name == "jit_fusion_min_size" else 1
            if not (value is None and name == "jit_fusion_threads") and (
                    isinstance(value, bool) or not isinstance(value, int) or value < least):
                also = " or None (as many as os.cpu_count())" if name == "jit_fusion_threads" else ""
                raise TypeError(f"fgrad.config option {name!r} takes a whole number of at least {least}"
                                f"{also}, not {value!r}")
        elif not isinstance(value, bool):
            raise TypeError(f"fgrad.config option {name!r} takes True or False, not {value!r}")
        setattr(self, name, value)


config = Config()
