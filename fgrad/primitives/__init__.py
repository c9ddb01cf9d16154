"""Every primitive, each defined once with its rules beside it.

| module | primitives |
|---|---|
| elementwise | neg sin cos exp log tanh sqrt square abs sign stop_gradient fabs reciprocal cbrt |
| | exp2 expm1 log2 log10 log1p tan arcsin arccos arctan sinh cosh arcsinh arccosh arctanh |
| | deg2rad rad2deg sinc floor ceil rint trunc round nan_to_num isfinite isnan isinf signbit |
| | logical_not logical_and logical_or logical_xor invert bitwise_and bitwise_or bitwise_xor |
| | add sub mul div pow max min fmax fmin float_power floor_divide remainder fmod copysign |
| | hypot arctan2 logaddexp logaddexp2 heaviside eq ne lt le gt ge where integer_pow |
| | convert_element_type real imag conj angle |
| shapes | reshape transpose broadcast_to concatenate |
| reductions | reduce_sum reduce_max reduce_min reduce_prod reduce_and reduce_or two_norm argmax |
| | argmin cumsum cumprod |
| sorting | sort argsort argpartition sort_by_key searchsorted |
| linalg | matmul einsum |
| decompositions | solve inv pinv adjugate det slogdet cholesky qr eigh eigvalsh eig eigvals svd svdvals |
| indexing | getitem index_add index_set index_mul index_min index_max |
| gather | gather scatter_add scatter_set scatter_mul scatter_min scatter_max scatter_mul_cofactors |
| special | erf erfc erf_inv lgamma digamma polygamma logistic logit xlogy xlog1py entr |
| fft | fft |
| windows | window_patches window_fold |
| scipy_special | gamma rgamma gammasgn beta betaln betainc betainc_grad_ab gammainc gammaincc |
| | gammainc_grad_a erfcinv ndtri log_ndtr i0 i0e i1 i1e j0 j1 y0 y1 bessel_over_power zeta |
| | riemann_zeta rel_entr kl_div erf_complex erfc_complex |
| scipy_linalg | triangular_solve lu_factor pivots_to_permutation expm expm_frechet |
| random | random_bits random_fold_in random_gamma random_gamma_grad |

`derivatives` and `batching` hold the helpers that build rules. `scipy_special`,
`scipy_linalg` and `random` are imported by the modules that use them
(fgrad.scipy.special, fgrad.scipy.linalg, fgrad.random), not here: their
values come from SciPy, an optional extra, or serve one module only.
"""

from . import (
    batching,
    decompositions,
    derivatives,
    elementwise,
    fft,
    gather,
    indexing,
    linalg,
    reductions,
    shapes,
    sorting,
    special,
    windows,
)

__all__ = [
    "batching", "decompositions", "derivatives", "elementwise", "fft", "gather", "indexing", "linalg",
    "reductions", "shapes", "sorting", "special", "windows",
]
