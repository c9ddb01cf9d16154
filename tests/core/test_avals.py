"""Abstract values: interning, weak types, and get_aval on every kind of value."""

import numpy as np
import pytest

from fgrad.core import ShapedArray, get_aval


def test_avals_are_interned():
    a = ShapedArray((2, 3), np.float64)
    assert a is ShapedArray((2, 3), "float64")
    assert a is ShapedArray([np.int64(2), 3], np.dtype("float64"))
    assert a is not ShapedArray((2, 3), np.float32)
    assert (a.ndim, a.size, str(a)) == (2, 6, "f64[2,3]")


def test_get_aval():
    assert get_aval(np.ones((2,), np.float32)) is ShapedArray((2,), np.float32)
    assert get_aval(np.float32(1.0)) is ShapedArray((), np.float32)
    assert get_aval(2.0) is ShapedArray((), np.float64, weak_type=True)
    assert get_aval(2) is ShapedArray((), np.int64, weak_type=True)
    assert get_aval(True) is ShapedArray((), np.bool_)
    assert get_aval([[1.0, 2.0]]) is ShapedArray((1, 2), np.float64)
    assert get_aval(2.0).strip_weak_type() is ShapedArray((), np.float64)


def test_get_aval_rejects_objects():
    with pytest.raises(TypeError, match="cannot use a value of type dict"):
        get_aval({"a": 1})


def test_short_dtype_names():
    names = [str(ShapedArray((), t)) for t in ("float32", "int32", "bool", "complex128", "uint8")]
    assert names == ["f32[]", "i32[]", "bool[]", "c128[]", "u8[]"]
