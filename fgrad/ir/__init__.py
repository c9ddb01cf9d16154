"""The jaxpr IR: data structures, staging, evaluation and passes."""

from .evaluate import eval_jaxpr
from .jaxpr import Atom, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var, pp_jaxpr
from .passes import dce_jaxpr
from .staging import StagingTrace, StagingTracer

__all__ = [
    "Atom", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Var", "pp_jaxpr",
    "eval_jaxpr", "dce_jaxpr", "StagingTrace", "StagingTracer",
]
