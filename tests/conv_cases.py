"""Cases of convolutions and windowed reductions whose values JAX recorded in
tests/data/jax_conv.json (tests/record_jax_conv.py writes it, tests/lax/test_convolution.py
reads it). Each case is JSON: its operands' shapes (the values come from `operands`,
seeded) and the keyword arguments of the lax function; explicit padding as lists."""

from pathlib import Path

import numpy as np

RECORDED = Path(__file__).resolve().parent / "data" / "jax_conv.json"

NHWC = ["NHWC", "HWIO", "NHWC"]

# name -> (lhs shape, rhs shape, keyword arguments of conv_general_dilated)
CONV = {
    "nchw_valid": ((2, 3, 5, 4), (4, 3, 3, 2), dict(window_strides=[1, 1], padding="VALID")),
    "nchw_same_strided": ((2, 3, 5, 4), (4, 3, 3, 2), dict(window_strides=[2, 1], padding="SAME")),
    "nhwc_same_lower": ((2, 5, 4, 3), (3, 2, 3, 4), dict(window_strides=[1, 2], padding="SAME_LOWER",
                                                          dimension_numbers=NHWC)),
    "nhwc_explicit_negative": ((1, 6, 5, 2), (2, 3, 2, 3), dict(window_strides=[1, 1],
                                                                padding=[[2, -1], [0, 3]],
                                                                dimension_numbers=NHWC)),
    "rhs_dilation": ((2, 2, 7, 6), (3, 2, 2, 3), dict(window_strides=[1, 2], padding="SAME",
                                                      rhs_dilation=[2, 1])),
    "lhs_dilation": ((1, 2, 4, 3), (3, 2, 2, 2), dict(window_strides=[1, 1], padding=[[1, 1], [0, 1]],
                                                      lhs_dilation=[2, 3])),
    "depthwise": ((2, 5, 4, 3), (3, 3, 1, 6), dict(window_strides=[1, 1], padding="SAME",
                                                   dimension_numbers=NHWC, feature_group_count=3)),
    "feature_groups_mixed_layout": ((2, 4, 5, 3), (6, 2, 2, 3), dict(
        window_strides=[2, 1], padding="VALID", feature_group_count=2,
        dimension_numbers=["NCWH", "OIHW", "WHNC"])),
    "batch_groups": ((4, 3, 6), (4, 3, 2), dict(window_strides=[1], padding="SAME", batch_group_count=2)),
    "conv1d_nwc": ((3, 7, 2), (3, 2, 4), dict(window_strides=[2], padding="SAME",
                                              dimension_numbers=["NWC", "WIO", "NWC"], rhs_dilation=[2])),
}

# name -> (lhs shape, rhs shape, keyword arguments of conv_transpose)
CONV_TRANSPOSE = {
    "same": ((2, 4, 3, 3), (3, 2, 3, 2), dict(strides=[2, 1], padding="SAME")),
    "valid_flipped": ((1, 3, 4, 2), (2, 3, 3, 2), dict(strides=[2, 2], padding="VALID", transpose_kernel=True)),
    "explicit": ((1, 4, 3, 2), (3, 2, 2, 3), dict(strides=[2, 1], padding=[[1, 2], [0, 1]])),
    "consistent": ((1, 4, 3, 2), (3, 2, 2, 3), dict(strides=[2, 1], padding=[[1, 0], [0, 1]],
                                                    use_consistent_padding=True)),
}

# name -> (lhs shape, keyword arguments of conv_general_dilated_patches)
PATCHES = {
    "nchw": ((2, 3, 5, 4), dict(filter_shape=[2, 3], window_strides=[1, 2], padding="SAME")),
    "nhwc_dilated": ((1, 6, 5, 2), dict(filter_shape=[3, 2], window_strides=[1, 1], padding="VALID",
                                        rhs_dilation=[2, 1], dimension_numbers=NHWC)),
}

# name -> (operand shape, init value, computation (a name in lax), keyword arguments of reduce_window)
REDUCE_WINDOW = {
    "max_pool_valid": ((2, 6, 5, 3), -np.inf, "max", dict(window_dimensions=[1, 2, 2, 1],
                                                          window_strides=[1, 2, 2, 1], padding="VALID")),
    "max_pool_same": ((2, 5, 5, 3), -np.inf, "max", dict(window_dimensions=[1, 3, 3, 1],
                                                         window_strides=[1, 2, 2, 1], padding="SAME")),
    "sum_pool_overlapping": ((1, 6, 5, 2), 0.0, "add", dict(window_dimensions=[1, 3, 2, 1],
                                                            window_strides=[1, 1, 2, 1], padding="SAME")),
    "min_explicit": ((4, 5), np.inf, "min", dict(window_dimensions=[2, 3], window_strides=[1, 2],
                                                 padding=[[1, 0], [2, 1]])),
    "mul_dilated": ((5, 4), 1.0, "mul", dict(window_dimensions=[2, 2], window_strides=[1, 1],
                                             padding="VALID", base_dilation=[2, 1], window_dilation=[1, 2])),
    "add_init_not_zero": ((6,), 1.5, "add", dict(window_dimensions=[3], window_strides=[1], padding="SAME")),
    "max_init_above": ((6, 3), 0.25, "max", dict(window_dimensions=[2, 2], window_strides=[2, 1],
                                                 padding="SAME", window_dilation=[1, 2])),
}


def operands(*shapes, seed=0):
    """Arrays of `shapes`, deterministic in `seed`: what the recording and the tests compute on."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape) for shape in shapes]


def jsonable(kwargs):
    """`kwargs` as JAX takes them: lists of pairs as tuples (JAX's padding), the rest as it is."""
    out = dict(kwargs)
    if isinstance(out.get("padding"), list):
        out["padding"] = [tuple(p) for p in out["padding"]]
    if isinstance(out.get("dimension_numbers"), list):
        out["dimension_numbers"] = tuple(out["dimension_numbers"])
    return out
