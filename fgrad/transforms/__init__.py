"""One module per interpreter: forward (jvp), reverse (linearize + transpose) and its
eager form on concrete values (a tape)."""

from .forward import JVPTrace, JVPTracer, jvp_flat
from .reverse import LinearFunction, backward_pass, linearize_flat

__all__ = ["JVPTrace", "JVPTracer", "jvp_flat", "LinearFunction", "backward_pass", "linearize_flat"]
