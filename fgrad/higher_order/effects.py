"""The effect primitives: `debug_print`, `debug_callback`, `tap_grad` and
`tap_cotangent`, which hand values to Python (a print, a callback) when the
computation runs. Passes never drop them (`effectful`), and every transform
passes them along: under differentiation `debug_print` prints the primal
values and under vmap the whole batch; `tap_grad` is the identity whose
linear part, `tap_cotangent`, calls back with the cotangent when it is
transposed. The public functions are in `fgrad/debug.py`."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from ..core.libraries import on_every_namespace
from ..core.rules import Linearization, batch_rules, effectful, jvp_rules, transpose_rules
from ..core.trace import Primitive

__all__ = ["Named", "debug_print_p", "debug_callback_p", "tap_grad_p", "tap_cotangent_p"]


class Named:
    """A callable parameter printed by name in jaxprs."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def __repr__(self) -> str:
        return self.name


def _print_impl(*args: Any, fmt: str, tree: Any) -> list[Any]:
    a, kw = tree.unflatten(args)  # the (args, kwargs) of `fgrad.debug.print`
    builtins.print(fmt.format(*a, **kw))
    return []


debug_print_p = Primitive(
    "debug_print", on_every_namespace(_print_impl), lambda *avals, **_: [], multiple_results=True
)
# Under differentiation it prints the primal values; under vmap, the whole batch.
jvp_rules[debug_print_p] = lambda primals, tangents, **params: (debug_print_p.bind(*primals, **params), [])
batch_rules[debug_print_p] = lambda args, dims, **params: (debug_print_p.bind(*args, **params), [])


def _callback_impl(x: Any, *, callback: Named) -> Any:
    callback(x)
    return x


debug_callback_p = Primitive("debug_callback", on_every_namespace(_callback_impl), lambda x, **_: x)
jvp_rules[debug_callback_p] = lambda primals, tangents, **params: (
    debug_callback_p.bind(*primals, **params), tangents[0]
)
batch_rules[debug_callback_p] = lambda args, dims, **params: (debug_callback_p.bind(*args, **params), dims[0])

tap_grad_p = Primitive("tap_grad", on_every_namespace(lambda x, **_: x), lambda x, **_: x)


def _tap_grad_linearize(trace: Any, primals: list[Any], tangents: list[Any], *, callback: Named) -> Any:
    (x,), (t,) = primals, tangents
    return x, None if t is None else trace.stage(tap_cotangent_p, [t], {"callback": callback})


jvp_rules[tap_grad_p] = Linearization(
    lambda primals, tangents, **_: (primals[0], tangents[0]), _tap_grad_linearize
)
batch_rules[tap_grad_p] = lambda args, dims, **params: (tap_grad_p.bind(*args, **params), dims[0])

# The tangent passes through unchanged; transposed, the cotangent goes to the callback.
tap_cotangent_p = Primitive("tap_cotangent", on_every_namespace(lambda t, **_: t), lambda t, **_: t)
# Printing and calling back are what these are for: passes never drop them.
effectful.update((debug_print_p, debug_callback_p, tap_grad_p, tap_cotangent_p))
# They hand the values to Python (print, the callback) as they are: any library's arrays.
transpose_rules[tap_cotangent_p] = lambda ct, t, *, callback: [debug_callback_p.bind(ct, callback=callback)]
jvp_rules[tap_cotangent_p] = lambda primals, tangents, **params: (
    tap_cotangent_p.bind(*primals, **params), tangents[0]
)
batch_rules[tap_cotangent_p] = lambda args, dims, **params: (tap_cotangent_p.bind(*args, **params), dims[0])
