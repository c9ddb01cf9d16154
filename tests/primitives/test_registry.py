"""Every primitive has a jvp rule, and a test in this folder that checks it
numerically. A new primitive fails here until it gets both."""

import pytest

from fgrad.core import Primitive, jvp_rules, transpose_rules
from fgrad.primitives import elementwise, indexing, linalg, reductions, shapes

# primitive name -> the test module that checks its rules numerically
TESTED_IN = {
    **dict.fromkeys(
        ["neg", "sin", "cos", "exp", "log", "tanh", "sqrt", "square", "abs", "sign",
         "stop_gradient", "add", "sub", "mul", "div", "pow", "max", "min", "eq", "ne", "lt",
         "le", "gt", "ge", "where", "integer_pow", "convert_element_type"],
        "test_elementwise",
    ),
    **dict.fromkeys(["reshape", "transpose", "broadcast_to", "concatenate"], "test_shapes"),
    **dict.fromkeys(["reduce_sum", "reduce_max", "reduce_min"], "test_reductions"),
    "matmul": "test_linalg",
    **dict.fromkeys(["getitem", "index_add"], "test_indexing"),
}

# primitives that appear in linear (tangent) jaxprs, so reverse mode needs their transpose
LINEAR = {"neg", "add", "sub", "mul", "div", "where", "convert_element_type", "reshape",
          "transpose", "broadcast_to", "concatenate", "reduce_sum", "matmul", "getitem",
          "index_add"}

ALL = {
    p.name: p
    for module in (elementwise, indexing, linalg, reductions, shapes)
    for p in vars(module).values()
    if isinstance(p, Primitive)
}


def test_every_primitive_is_tested():
    untested = sorted(set(ALL) - set(TESTED_IN))
    assert not untested, f"primitives without a rule test (add one, then list them here): {untested}"


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_primitive_has_a_jvp_rule(name):
    assert ALL[name] in jvp_rules


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_primitives_have_transpose_rules(name):
    assert ALL[name] in transpose_rules
