"""JAX's device functions (fgrad/api/devices.py): one device, the CPU, so
device_put is the identity (under transforms too, derivatives passing through),
device_get makes NumPy arrays; and jit's deprecated device= and backend=."""

import warnings

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.test_util import check_grads


def test_one_cpu_device():
    (cpu,) = fgrad.devices()
    assert repr(cpu) == "CpuDevice(id=0)"
    assert (cpu.id, cpu.platform, cpu.device_kind, cpu.process_index) == (0, "cpu", "cpu", 0)
    assert fgrad.devices("cpu") == [cpu] == fgrad.local_devices(backend="cpu") == fgrad.local_devices(0)
    assert fgrad.device_count() == 1 and fgrad.default_backend() == "cpu"
    with pytest.raises(RuntimeError, match="devices: unknown backend 'gpu'; fgrad runs on the CPU"):
        fgrad.devices("gpu")
    with pytest.raises(ValueError, match="process_index=1"):
        fgrad.local_devices(1)


def test_device_put_returns_every_leaf_as_it_is():
    x, n = np.arange(3.0), np.float32(2.0)
    tree = {"x": x, "pair": (n, 3), "none": None}
    out = fgrad.device_put(tree, fgrad.devices()[0], donate=True, may_alias=False)
    assert out["x"] is x and out["pair"][0] is n and out["pair"][1] == 3 and out["none"] is None
    assert fgrad.device_put(x) is x
    assert fgrad.device_put(x, src=fgrad.devices()[0]) is x
    with pytest.raises(TypeError, match="device_put: device must be None or a device of fgrad.devices"):
        fgrad.device_put(x, "gpu:0")
    with pytest.raises(TypeError, match="device_put: src must be None"):
        fgrad.device_put(x, src=0)


def test_device_put_is_the_identity_under_transforms():
    f = lambda x: fnp.sum(fnp.sin(fgrad.device_put(x)) * fgrad.device_put({"w": x})["w"])  # noqa: E731
    x = np.linspace(-1.0, 1.0, 4)
    np.testing.assert_allclose(fgrad.grad(f)(x), np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(fgrad.jit(fgrad.grad(f))(x), np.cos(x) * x + np.sin(x))
    np.testing.assert_allclose(fgrad.vmap(lambda x: fgrad.device_put(x) * 2.0)(x), 2 * x)
    check_grads(f, (x,), order=2)
    assert "device" not in str(fgrad.make_jaxpr(f)(x))  # no equation of its own


def test_device_get_gives_numpy_values_and_refuses_a_traced_one():
    x = np.ones(2)
    out = fgrad.device_get({"x": x, "n": 1.5, "t": (np.float64(2.0),)})
    assert out["x"] is x and out["n"] == 1.5 and out["t"][0] == 2.0
    with pytest.raises(fgrad.TracerArrayConversionError):
        fgrad.jit(lambda x: fgrad.device_get(x))(x)
    with pytest.raises(fgrad.TracerArrayConversionError):
        fgrad.grad(lambda x: fnp.sum(fgrad.device_get(x)))(x)


def test_block_until_ready():
    x = {"a": np.ones(2)}
    assert fgrad.block_until_ready(x) is x


def test_jit_backend_and_device_warn_as_jax_and_change_nothing():
    f = lambda x: x * 2.0  # noqa: E731
    for kwargs in ({"backend": "cpu"}, {"device": fgrad.devices()[0]}):
        with pytest.warns(DeprecationWarning, match="jit's device and backend arguments are deprecated") as rec:
            g = fgrad.jit(f, **kwargs)
        assert rec[0].filename == __file__  # the warning points at the call of jit
        np.testing.assert_array_equal(g(np.ones(2)), [2.0, 2.0])
        with pytest.warns(DeprecationWarning):
            decorated = fgrad.jit(**kwargs)(f)
        np.testing.assert_array_equal(decorated(np.ones(2)), [2.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ValueError, match="give a device or a backend, not both"):
            fgrad.jit(f, backend="cpu", device=fgrad.devices()[0])
        with pytest.raises(RuntimeError, match="jit: unknown backend 'tpu'"):
            fgrad.jit(f, backend="tpu")
        with pytest.raises(TypeError, match="jit: device must be None or a device of fgrad.devices"):
            fgrad.jit(f, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fgrad.jit(f, backend=None, device=None)  # the defaults do not warn
