"""One module per interpreter: forward (jvp) and reverse (linearize + transpose)."""

from .forward import JVPTrace, JVPTracer, jvp_flat
from .reverse import LinearFunction, backward_pass, linearize_flat

__all__ = ["JVPTrace", "JVPTracer", "jvp_flat", "LinearFunction", "backward_pass", "linearize_flat"]
