"""Every primitive's case (the BATCH_CASES of tests/primitives, tests/numpy,
tests/scipy and tests/random) on the arrays of other libraries, under jit,
vmap, jvp and grad: the result is an array of that library equal to what the
same transform computes on NumPy's arrays (itself checked against NumPy by
the rest of the suite), or a NotImplementedError naming the primitive and the
library. Which labels may raise is written down below, so that a label that
stops working fails, and so does one that starts working until it is taken
off its list."""

import re

import numpy as np
import pytest

import fgrad
import fgrad.numpy as fnp
from fgrad.core.avals import get_aval
from tests.strategies import values
from tests.transforms.test_batching import _collect

xs = pytest.importorskip("array_api_strict")
da = pytest.importorskip("dask.array")

pytestmark = pytest.mark.filterwarnings("error::UserWarning")  # strict's warning on comparing dtypes

CASES = _collect("BATCH_CASES")


def _dask(x):
    """A Dask array of `x` in chunks of half its length along each axis."""
    return da.from_array(x, chunks=tuple(max(1, (n + 1) // 2) for n in x.shape))


LIBRARIES = {  # name -> (the library's name in fgrad's messages, NumPy -> library, library -> NumPy, array type)
    "array_api_strict": ("array_api_strict", xs.asarray, np.from_dlpack, type(xs.asarray(0.0))),
    "dask": ("dask.array", _dask, lambda x: x.compute(), da.Array),
}

# label -> the transforms under which it raises NotImplementedError on the
# library ("all": every transform that applies to it). Regenerate with
# `python -m tests.libraries.test_registry_libraries` when rules are added.
NOT_ON_STRICT: dict[str, str] = {
    'scipy_linear_operator': 'all',
    'scipy_solution': 'all',
    'scipy_solution_tangent': 'all',
    'scipy_solve': 'all',
    'bessel_over_power': 'all',
    'beta': 'all',
    'betainc': 'all',
    'betainc_grad_ab': 'all',
    'betaln': 'all',
    'digamma': 'all',
    'eig': 'all',
    'eig_abs_eigenvalues': 'all',
    'eigvals': 'all',
    'erf': 'all',
    'erf_complex': 'all',
    'erf_inv': 'all',
    'erfc': 'all',
    'erfc_complex': 'all',
    'erfcinv': 'all',
    'expm': 'all',
    'expm_frechet': 'all',
    'expm_stack': 'all',
    'gamma': 'all',
    'gammainc': 'all',
    'gammainc_grad_a': 'all',
    'gammaincc': 'all',
    'gammasgn': 'all',
    'i0': 'all',
    'i0e': 'all',
    'i1': 'all',
    'i1e': 'all',
    'inv_nan_if_singular': 'all',
    'j0': 'all',
    'j1': 'all',
    'lgamma': 'all',
    'log_ndtr': 'all',
    'lu_factor': 'all',
    'lu_factor_wide': 'all',
    'lu_solve': 'all',
    'ndtri': 'all',
    'pivots_to_permutation': 'all',
    'polygamma': 'all',
    'polygamma_orders': 'all',
    'random_bits': 'all',
    'random_bits_split': 'all',
    'random_fold_in': 'all',
    'random_gamma': 'all',
    'random_gamma_grad': 'all',
    'random_multivariate_normal': 'all',
    'random_normal_affine': 'all',
    'random_permutation': 'all',
    'rgamma': 'all',
    'riemann_zeta': 'all',
    'stats.beta.logpdf': 'all',
    'stats.dirichlet.logpdf': 'all',
    'stats.gamma.logpdf': 'all',
    'stats.norm.ppf': 'all',
    'stats.poisson.logpmf': 'vmap jvp grad',
    'stats.t.logpdf': 'all',
    'y0': 'all',
    'y1': 'all',
    'zeta': 'all',
}
NOT_ON_DASK: dict[str, str] = {
    'scipy_linear_operator': 'all',
    'scipy_solution': 'all',
    'scipy_solution_tangent': 'all',
    'scipy_solve': 'all',
    'adjugate': 'all',
    'adjugate_singular': 'all',
    'det': 'all',
    'eig': 'all',
    'eig_abs_eigenvalues': 'all',
    'eigh': 'all',
    'eigvals': 'all',
    'eigvalsh': 'all',
    'eigvalsh_complex': 'all',
    'expm': 'all',
    'expm_frechet': 'all',
    'expm_stack': 'all',
    'inv_nan_if_singular': 'all',
    'lu_factor': 'all',
    'lu_factor_wide': 'all',
    'lu_solve': 'all',
    'pinv': 'all',
    'pinv_hermitian': 'all',
    'pivots_to_permutation': 'all',
    'random_bits': 'all',
    'random_bits_split': 'all',
    'random_fold_in': 'all',
    'random_gamma': 'all',
    'random_multivariate_normal': 'all',
    'random_normal_affine': 'all',
    'random_permutation': 'all',
    'slogdet': 'all',
}
NOT_ON = {"array_api_strict": NOT_ON_STRICT, "dask": NOT_ON_DASK}

def _real_sum(f):
    """The sum of the real parts of `f`'s inexact outputs: a scalar to differentiate."""

    def loss(*args):
        leaves = [y for y in fgrad.tree_util.tree_leaves(f(*args)) if get_aval(y).dtype.kind in "fc"]
        return sum(fnp.sum(fnp.real(y)) for y in leaves)

    return loss


def _runs(f, shapes, domain):
    """Each transform as a function of (NumPy -> array converter): its arguments
    made by the converter, so that NumPy's run and the library's see the same values."""
    args = [values(s, domain, 11 + 7 * i) for i, s in enumerate(shapes)]
    tangents = [values(s, "real", 101 + 7 * i) for i, s in enumerate(shapes)]
    batch = [np.stack([x, values(x.shape, domain, 53 + 7 * i)]) for i, x in enumerate(args)]
    return {
        "jit": lambda to: fgrad.jit(f)(*map(to, args)),
        "vmap": lambda to: fgrad.vmap(f)(*map(to, batch)),
        "jvp": lambda to: fgrad.jvp(f, tuple(map(to, args)), tuple(map(to, tangents))),
        "grad": lambda to: fgrad.grad(_real_sum(f), argnums=tuple(range(len(args))))(*map(to, args)),
    }


def _numpy(run):
    """The run on NumPy's arrays; None where the transform does not apply to
    the case (grad of an integer output, jvp of a function of integers)."""
    try:
        out = run(np.asarray)
    except (TypeError, ValueError, NotImplementedError):
        return None
    leaves = fgrad.tree_util.tree_leaves(out)
    return leaves if leaves else None


def _check_same(got, expected, library):
    name, _, to_numpy, array_type = LIBRARIES[library]
    leaves = fgrad.tree_util.tree_leaves(got)
    assert len(leaves) == len(expected)
    for y, want in zip(leaves, expected):
        assert isinstance(y, array_type), f"a result of type {type(y).__name__}, not an array of {name}"
        value = to_numpy(y)
        assert value.dtype == np.asarray(want).dtype
        # rtol, and an atol for entries that cancel to rounding error (off-diagonal zeros)
        scale = float(np.max(np.abs(want), initial=0.0)) if np.size(want) else 0.0
        np.testing.assert_allclose(value, want, rtol=1e-10, atol=1e-13 * scale)


def _outcomes(label, library):
    """Each transform's outcome on `library`: 'ok', 'raises' (NotImplementedError)
    or 'n/a'; an assertion error when a result differs from NumPy's."""
    name, to_library, _, _ = LIBRARIES[library]
    f, shapes, domain = CASES[label]
    outcomes = {}
    for transform, run in _runs(f, shapes, domain).items():
        expected = _numpy(run)
        if expected is None:
            outcomes[transform] = "n/a"
            continue
        try:
            got = run(to_library)
        except NotImplementedError as e:
            assert re.search(rf"the primitive `[\w.]+`.* arrays of {re.escape(name)}", str(e)), str(e)
            outcomes[transform] = "raises"
            continue
        _check_same(got, expected, library)
        outcomes[transform] = "ok"
    return outcomes


def _raising(outcomes):
    """The transforms that raise, as NOT_ON writes them."""
    raising = [t for t, o in outcomes.items() if o == "raises"]
    return "all" if raising == [t for t, o in outcomes.items() if o != "n/a"] else " ".join(raising)


@pytest.mark.parametrize("library", sorted(LIBRARIES))
@pytest.mark.parametrize("label", sorted(CASES))
def test_case_on_library(label, library):
    raising = _raising(_outcomes(label, library))
    expected = NOT_ON[library].get(label, "")
    assert raising == expected, (
        f"{label} on {library}: NotImplementedError under {raising or 'no transform'}, expected under "
        f"{expected or 'none'}; update NOT_ON_{'STRICT' if library == 'array_api_strict' else 'DASK'}"
    )


def _primitives():
    from tests.primitives.test_registry import ALL

    return ALL


# Primitives computed on NumPy's arrays only, and why.
NUMPY_ONLY: dict[str, str] = {
    "eig": "the standard's linalg has eigh only: no eigenvalues of a general matrix",
    "eigvals": "the standard's linalg has eigvalsh only: no eigenvalues of a general matrix",
    "expm": "no matrix exponential in the standard",
    "expm_frechet": "no matrix exponential in the standard",
    "lu_factor": "no LU factorization in the standard",
    "pivots_to_permutation": "LAPACK's pivots come from lu_factor, NumPy only",
    "random_bits": "fgrad's keys and bits are NumPy's (threefry on uint32 words)",
    "scipy_solve": "SciPy's solvers run on NumPy's arrays",
    "scipy_linear_operator": "SciPy's LinearOperators and sparse matrices apply to NumPy's arrays",
    "random_fold_in": "fgrad's keys and bits are NumPy's (threefry on uint32 words)",
    "random_gamma": "fgrad's keys and bits are NumPy's (threefry on uint32 words)",
}


def test_every_primitive_runs_on_libraries_or_says_why_not():
    strict = xs.asarray(1.0)
    fgrad.jit(fnp.sin)(strict)  # the namespace known to fgrad
    only_numpy = set()
    for name, p in _primitives().items():
        if not p.xp_impl.__qualname__.startswith("numpy_only."):  # core.libraries.numpy_only's
            continue
        only_numpy.add(name)
        with pytest.raises(NotImplementedError, match=rf"the primitive `{name}` has no implementation for "
                                                      r"arrays of array_api_strict"):
            p.xp_impl(xs, strict)
    assert only_numpy == set(NUMPY_ONLY), (
        f"computed on NumPy only but not in NUMPY_ONLY: {sorted(only_numpy - set(NUMPY_ONLY))}; in NUMPY_ONLY "
        f"but computed on other libraries: {sorted(set(NUMPY_ONLY) - only_numpy)}"
    )


def _regenerate():
    """Print NOT_ON_STRICT and NOT_ON_DASK as they now are, and the cases that
    fail otherwise than with NotImplementedError (bugs to fix)."""
    found = {library: {} for library in LIBRARIES}
    broken = {}
    for library in LIBRARIES:
        for label in sorted(CASES):
            try:
                raising = _raising(_outcomes(label, library))
            except Exception as e:  # noqa: BLE001 - reported, for the list
                first_line = (str(e).splitlines() or [""])[0][:80]
                broken[(library, label)] = f"{type(e).__name__}: {first_line}"
                continue
            if raising:
                found[library][label] = raising
    for library, var in (("array_api_strict", "NOT_ON_STRICT"), ("dask", "NOT_ON_DASK")):
        print(f"{var}: dict[str, str] = {{")
        for label, raising in found[library].items():
            print(f"    {label!r}: {raising!r},")
        print("}")
    for key, why in broken.items():
        print(f"# broken: {key!r}: {why!r}")


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("error", UserWarning)
    _regenerate()
