"""NumPy's floating-point warnings ("invalid value encountered in log") from
the user's line, not from fgrad's.

NumPy warns from the innermost Python frame, which under a transform is
fgrad's: a primitive's implementation, `bind`, or the code jit generated.
Every warning of a kind would then come from one place in fgrad, and
Python's default filter shows a warning once per place: the second `log` of
a negative number anywhere would be silent. So while a transformed function
runs, `user_warnings()` turns NumPy's "warn" into "call" (NumPy's errstate,
per thread and per context, and only where the user left "warn"), and the
handler re-issues the warning from the first frame outside fgrad, NumPy and
SciPy, naming the operation: the primitive being computed, or the NumPy
function a line of generated code calls.

This module knows primitives only as objects with a `name` found among a
frame's locals; it imports nothing of fgrad's.
"""

from __future__ import annotations

import importlib
import linecache
import re
import sys
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from types import FrameType
from typing import Any

import numpy as np

__all__ = ["user_warnings", "enter", "leave", "reissue", "operation_of", "for_threads", "enter_state"]

# NumPy >= 2 keeps its error state in a context variable: set it directly, at a quarter of
# np.errstate's cost (a jitted call pays it). A NumPy without one gets np.errstate.
_umath: Any = importlib.import_module("numpy._core.umath")
_extobj_contextvar: Any = getattr(_umath, "_extobj_contextvar", None)

_MODES = ("divide", "over", "under", "invalid")
_GENERATED = "<fgrad"  # the file name of every function jit generates
_LIBRARIES = frozenset({"fgrad", "numpy", "scipy"})  # whose frames are not the user's
_DIFFERENTIATION = frozenset({  # rules run there
    "fgrad.transforms.forward", "fgrad.transforms.reverse", "fgrad.transforms.tape",
})
_CALLED = re.compile(r"\b(?:np|math|numpy)\.(\w+)\(|= (\w+)\(")


def _outside(frame: FrameType) -> bool:
    """Whether `frame` runs the user's code: not fgrad's, NumPy's or SciPy's."""
    if frame.f_code.co_filename.startswith(_GENERATED):
        return False
    package = (frame.f_globals.get("__name__") or "").partition(".")[0]
    return package not in _LIBRARIES


def operation_of(frame: FrameType) -> str | None:
    """The operation an fgrad frame is computing: a primitive among its locals,
    or the function a line of generated code calls."""
    filename = frame.f_code.co_filename
    if filename.startswith(_GENERATED):  # the function the line calls, by its own name (f0 is numpy.log)
        found = _CALLED.search(linecache.getline(filename, frame.f_lineno))
        if found is None:
            return None
        if found.group(1):
            return found.group(1)
        called = frame.f_globals.get(found.group(2))
        return getattr(called, "__name__", None) or found.group(2)
    local = frame.f_locals
    for name in ("prim", "self", "primitive"):
        candidate = local.get(name)
        if candidate is not None and type(candidate).__name__ == "Primitive":
            return str(candidate.name)
    return None


def reissue(kind: str, flag: int, operation: str | None = None) -> None:
    """NumPy's "call" handler: warn `kind` ("invalid value", "divide by zero", ...)
    as NumPy would, from the user's frame. `operation` names the operation
    when the caller knows it (a warning that arose in another thread)."""
    frame: FrameType | None = sys._getframe(1)
    derivative_of = None
    while frame is not None and not _outside(frame):
        if operation is None:
            operation = operation_of(frame)
        elif derivative_of is None and frame.f_globals.get("__name__") in _DIFFERENTIATION:
            # An operation further out whose rule is running (a jvp rule computing log's 1/x),
            # or a backward pass's equation, which says whose derivative it belongs to.
            found = operation_of(frame) or getattr(frame.f_locals.get("eqn"), "source", None)
            if found != operation:
                derivative_of = found
        frame = frame.f_back
    message = f"{kind} encountered" + (f" in {operation}" if operation else "")
    if derivative_of:
        message += f" (in the derivative of {derivative_of})"
    if frame is None:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
        return
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, RuntimeWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=frame.f_globals.get("__name__"), registry=registry)


def enter() -> Any:
    """Set NumPy's error state to the handler's: the state in force, with each
    "warn" made "call" (found once per state: a small cache). Returns what
    `leave` takes to put it back. The hot path's pair (a jitted call); blocks
    use `user_warnings()`."""
    if _extobj_contextvar is None:
        switch = _errstate_switch()
        switch.__enter__()
        return switch
    current = _extobj_contextvar.get()
    state = _ours.get(current, 0)
    if state == 0:
        state = _ours[current] = _ours_for(current)
        if state is not None:
            _ours[state] = None  # already ours: nested blocks leave it
        if len(_ours) > 256:  # states made by a user's errstate in a loop: forget them
            _ours.clear()
    return None if state is None else _extobj_contextvar.set(state)


def leave(token: Any) -> None:
    """Put back the error state `enter` replaced."""
    if token is None:
        return
    if _extobj_contextvar is None:
        token.__exit__(None, None, None)
    else:
        _extobj_contextvar.reset(token)


_ours: dict[Any, Any] = {}  # a state in force -> the state to set (None: leave it); atomic dict operations


class _Switch:
    """`enter` and `leave` around a `with` block."""

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = enter()

    def __exit__(self, *exc: object) -> None:
        leave(self.token)


def _handler_modes(modes: dict[str, Any]) -> dict[str, Any] | None:
    """The modes that hand NumPy's warnings to `reissue` (each "warn" made "call"),
    or None to leave them: nothing warns, or the user has a handler of their own."""
    if "warn" not in modes.values() or any(m in ("call", "log") for m in modes.values()):
        return None
    return {k: "call" if m == "warn" else m for k, m in modes.items()}


def _ours_for(current: Any) -> Any:
    settings: dict[str, Any] = _umath._get_extobj_dict()
    modes = _handler_modes({k: settings[k] for k in _MODES})
    return None if modes is None else _umath._make_extobj(call=reissue, bufsize=settings["bufsize"], **modes)


def _errstate_switch() -> AbstractContextManager[Any]:
    modes = _handler_modes(dict(np.geterr()))
    return nullcontext() if modes is None else np.errstate(call=reissue, **modes)


def for_threads(handler: Callable[[str, int], None]) -> tuple[dict[str, Any], Any]:
    """For work that other threads share (jit's fused blocks): the modes of the
    error state in force, and a state for those threads (`enter_state`): the
    same, but each mode that warns ("warn", or `reissue`'s "call") calls
    `handler` instead, for the caller to warn once the work is done. None for
    that state where the user's own handler is in force ("call" with another
    function, "log", "print"): it must see each error where it happens."""
    if _extobj_contextvar is None:
        modes, call = dict(np.geterr()), np.geterrcall()
        worker = _thread_modes(modes, call)
        return modes, None if worker is None else (handler, worker)
    current = _extobj_contextvar.get()
    found = _threads.get((current, handler))
    if found is None:
        settings: dict[str, Any] = _umath._get_extobj_dict()
        modes = {k: settings[k] for k in _MODES}
        worker = _thread_modes(modes, settings["call"])
        state = None if worker is None else _umath._make_extobj(call=handler, bufsize=settings["bufsize"],
                                                                **worker)
        if len(_threads) > 256:  # states made by a user's errstate in a loop: forget them
            _threads.clear()
        found = _threads[(current, handler)] = (modes, state)
    return found


def enter_state(state: Any) -> Any:
    """Set a state `for_threads` gave, in this thread; `leave` takes what it returns."""
    if _extobj_contextvar is None:
        handler, modes = state
        switch = np.errstate(call=handler, **modes)
        switch.__enter__()
        return switch
    return _extobj_contextvar.set(state)


_threads: dict[tuple[Any, Any], tuple[dict[str, Any], Any]] = {}  # (state in force, handler) -> for_threads


def _thread_modes(modes: dict[str, Any], call: Any) -> dict[str, Any] | None:
    chosen = modes.values()
    if "print" in chosen or "log" in chosen or ("call" in chosen and call is not reissue):
        return None
    return {k: "call" if m in ("warn", "call") else m for k, m in modes.items()}


user_warnings: Callable[[], AbstractContextManager[Any]] = _Switch
"""`with user_warnings():` around work that runs the user's function or its
transform: NumPy's warnings inside come from the user's line."""
