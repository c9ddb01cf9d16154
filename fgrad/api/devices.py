"""JAX's device functions, for programs that call them: fgrad has one device,
the CPU that NumPy runs on, so `device_put` and `block_until_ready` return
their argument and `device_get` makes NumPy arrays.

Other array libraries keep their own placement: `device_put` leaves their
arrays where they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.libraries import is_library_array
from ..core.trace import Tracer
from .pytree import tree_map

__all__ = [
    "CpuDevice", "devices", "local_devices", "device_count", "default_backend", "device_put", "device_get",
    "block_until_ready", "check_device", "check_backend",
]


class CpuDevice:
    """The CPU, fgrad's one device (JAX's `CpuDevice(id=0)`).

    >>> devices()
    [CpuDevice(id=0)]
    """

    __slots__ = ()
    id = 0
    platform = "cpu"
    device_kind = "cpu"
    process_index = 0

    def __repr__(self) -> str:
        return "CpuDevice(id=0)"


_CPU = CpuDevice()


def check_backend(backend: Any, function: str) -> None:
    """A RuntimeError for a backend other than None or "cpu" (JAX's error
    type for a backend it does not have)."""
    if backend is not None and backend != "cpu":
        raise RuntimeError(f"{function}: unknown backend {backend!r}; fgrad runs on the CPU through NumPy, "
                           "its one backend is 'cpu' (or pass None)")


def check_device(device: Any, function: str, argument: str = "device") -> None:
    """A TypeError for a device that is not fgrad's (None, or one of `devices()`)."""
    if device is not None and not isinstance(device, CpuDevice):
        raise TypeError(f"{function}: {argument} must be None or a device of fgrad.devices() (the CPU), got "
                        f"{type(device).__name__}: {device!r}")


def devices(backend: str | None = None) -> list[CpuDevice]:
    """The devices of `backend` (JAX's `jax.devices`): fgrad's one, the CPU; a
    backend other than "cpu" raises RuntimeError.

    >>> devices("cpu")
    [CpuDevice(id=0)]
    """
    check_backend(backend, "devices")
    return [_CPU]


def local_devices(process_index: int | None = None, backend: str | None = None) -> list[CpuDevice]:
    """The devices of this process (JAX's `jax.local_devices`): the CPU.

    >>> local_devices(backend="cpu")[0]
    CpuDevice(id=0)
    """
    if process_index not in (None, 0):
        raise ValueError("local_devices: fgrad runs in one process, of index 0; "
                         f"got process_index={process_index!r}")
    return devices(backend)


def device_count(backend: str | None = None) -> int:
    """How many devices there are (JAX's `jax.device_count`): 1.

    >>> device_count()
    1
    """
    return len(devices(backend))


def default_backend() -> str:
    """The platform computations run on (JAX's `jax.default_backend`): "cpu".

    >>> default_backend()
    'cpu'
    """
    return "cpu"


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: Any = False,
               may_alias: bool | None = None) -> Any:
    """`x` placed on `device` (JAX's `jax.device_put`): fgrad's arrays are NumPy's, in
    the CPU's memory already, so each leaf of the pytree `x` comes back as it is:
    a NumPy array (not copied), another library's array, a traced value (whose
    derivative passes through), a number. `device` and `src` may be None or a
    device of `devices()`; `donate` and `may_alias` are accepted and ignored.

    >>> import numpy as np
    >>> x = np.ones(2)
    >>> device_put(x, devices()[0]) is x
    True
    """
    check_device(device, "device_put")
    check_device(src, "device_put", "src")
    return tree_map(lambda leaf: leaf, x)


def device_get(x: Any) -> Any:
    """`x` with each array leaf a NumPy array in host memory (JAX's `jax.device_get`):
    NumPy's arrays and scalars and Python numbers as they are, another library's
    arrays converted with numpy.asarray. A traced value cannot leave its
    transform: it raises, as numpy.asarray of it does.

    >>> import numpy as np
    >>> device_get({"w": np.ones(2), "n": 3})
    {'n': 3, 'w': array([1., 1.])}
    """

    def get(leaf: Any) -> Any:
        if isinstance(leaf, Tracer) or (not isinstance(leaf, np.generic) and is_library_array(leaf)):
            return np.asarray(leaf)
        return leaf

    return tree_map(get, x)


def block_until_ready(x: Any) -> Any:
    """`x`, once its arrays are computed (JAX's `jax.block_until_ready`): fgrad
    computes eagerly, so at once.

    >>> block_until_ready(1.0)
    1.0
    """
    return x
