"""Every primitive, each defined once with its rules beside it.

| module | primitives |
|---|---|
| elementwise | neg sin cos exp log tanh sqrt square abs sign stop_gradient add sub mul |
| | div pow max min eq ne lt le gt ge where integer_pow convert_element_type |
| shapes | reshape transpose broadcast_to concatenate |
| reductions | reduce_sum reduce_max reduce_min |
| linalg | matmul |
| indexing | getitem index_add |
| sorting, decompositions, special | (filled by the NumPy-surface work) |

`derivatives` and `batching` hold the helpers that build rules.
"""

from . import (
    batching,
    decompositions,
    derivatives,
    elementwise,
    indexing,
    linalg,
    reductions,
    shapes,
    sorting,
    special,
)

__all__ = [
    "batching", "decompositions", "derivatives", "elementwise", "indexing", "linalg", "reductions",
    "shapes", "sorting", "special",
]
