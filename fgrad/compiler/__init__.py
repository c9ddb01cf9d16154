"""What `jit` does to a staged jaxpr beyond what any IR pass does: the
rewrites that are about particular primitives (`rewrites.py`, importing the
primitives they rewrite) and the pipeline of passes (`pipeline.py`,
`optimize_jaxpr`). It sits above the primitives and the higher-order
primitives; `fgrad/ir/` keeps the passes that know no primitive.
"""

from .pipeline import optimize_jaxpr

__all__ = ["optimize_jaxpr"]
