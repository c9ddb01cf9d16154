"""Every primitive has a jvp rule, and a test that checks it numerically (listed in
the PRIMITIVES of a module of tests/primitives or tests/numpy). A new primitive
fails here until it gets both."""

import importlib
import pkgutil

import pytest

import fgrad
from fgrad.core import Primitive, jvp_rules, transpose_rules
from fgrad.core.rules import BILINEAR
from fgrad.core.rules import LINEAR as LINEAR_RULE
from tests.transforms.test_batching import _collect

# primitive name -> the test module that checks its rules numerically
TESTED_IN = _collect("PRIMITIVES")

# Every primitive defined anywhere in the package, optional extras included.
ALL = {
    p.name: p
    for info in pkgutil.walk_packages(fgrad.__path__, "fgrad.")
    for p in vars(importlib.import_module(info.name)).values()
    if isinstance(p, Primitive)
}


def test_the_registry_sees_the_higher_order_primitives():
    assert {"custom_jvp_call", "custom_vjp_call", "checkpoint", "debug_print", "tap_grad"} <= set(ALL)


def test_every_primitive_is_tested():
    untested = sorted(set(ALL) - set(TESTED_IN))
    assert not untested, f"primitives without a rule test (add one, then list them here): {untested}"


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_primitive_has_a_jvp_rule(name):
    assert ALL[name] in jvp_rules


# Primitives that appear in linear (tangent) jaxprs, so reverse mode needs their
# transpose: the linear and bilinear ones, and those the interpreters and the
# full jvp rules apply to tangents. (A full rule using another primitive on a
# tangent is caught by the reverse-mode checks of its rule test.)
ON_TANGENTS = {"neg", "add", "sub", "mul", "div", "where", "convert_element_type", "broadcast_to",
               "sort_by_key", "index_mul", "solve", "real", "imag", "conj",
               "gather", "scatter_add", "scatter_set", "scatter_mul", "tape_scan", "checkpoint_tangent",
               "custom_linear_solve"}
LINEAR = sorted(ON_TANGENTS | {name for name, p in ALL.items() if jvp_rules.get(p) in (LINEAR_RULE, BILINEAR)})


@pytest.mark.parametrize("name", LINEAR)
def test_linear_primitives_have_transpose_rules(name):
    assert ALL[name] in transpose_rules
