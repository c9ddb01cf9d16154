"""The core: abstract values, primitives, traces, tracers and their errors."""

from .avals import ShapedArray, dtype_name, get_aval, is_float_dtype, is_inexact_dtype
from .errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    UnexpectedTracerError,
    missing_rule_error,
)
from .rules import Linearization, UndefinedPrimal, batch_rules, jvp_rules, transpose_rules
from .trace import (
    EVAL_TRACE,
    EvalTrace,
    Primitive,
    Trace,
    Tracer,
    array_ops,
    ctx,
    tracing,
)

__all__ = [
    "ShapedArray", "dtype_name", "get_aval", "is_float_dtype", "is_inexact_dtype",
    "ConcretizationTypeError", "TracerArrayConversionError", "UnexpectedTracerError",
    "missing_rule_error", "EVAL_TRACE", "EvalTrace", "Primitive", "Trace", "Tracer",
    "array_ops", "ctx", "tracing", "UndefinedPrimal", "batch_rules", "jvp_rules", "Linearization",
    "transpose_rules",
]
