"""Generate docs/numpy-coverage.md: every public function of fgrad.numpy (with
its linalg and fft), fgrad.scipy (special, linalg, signal, stats, integrate)
and fgrad.random, and whether each works traced (eval), in forward mode (jvp),
reverse mode (vjp) and under vmap.

Nothing in the table is declared by hand: each cell is checked on sample
inputs when the table is generated —
* eval: traced to a jaxpr and evaluated, the values equal NumPy's (or SciPy's
  function applied by fgrad without a transform);
* jvp / reverse: fgrad.test_util.check_jvp / check_vjp against finite
  differences, with respect to the floating-point arguments;
* vmap: vmap over two examples equals a loop.

Run `python docs/numpy_coverage.py` to rewrite the file; tests/test_docs.py
fails when the committed table is out of date.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.integrate
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats

import fgrad
import fgrad.numpy as fnp
import fgrad.random as frandom
import fgrad.scipy.integrate as fintegrate
import fgrad.scipy.linalg as flinalg
import fgrad.scipy.signal as fsignal
import fgrad.scipy.special as fsp
import fgrad.scipy.stats as fstats
from fgrad.ir import eval_jaxpr
from fgrad.test_util import check_jvp, check_vjp
from fgrad.tree_util import tree_flatten, tree_map

OUT = Path(__file__).with_name("numpy-coverage.md")

# Distinct values away from the jumps of rounding (k/2) and of modular arithmetic.
V = np.array([0.31, 0.47, 0.83])
KEY = frandom.key(0)
M = np.array([[0.61, 0.23, 0.37], [0.12, 0.71, 0.44], [0.58, 0.29, 0.93]])
SPD = M @ M.T + 3 * np.eye(3)
GENERIC: list[tuple[Any, ...]] = [(M,), (V,), (M, M), (V, V), (M, V)]

# Functions that need particular arguments; every other one tries GENERIC in turn.
EXPLICIT: dict[str, tuple[Any, ...]] = {
    "arccosh": (1.5 + M,), "acosh": (1.5 + M,), "polygamma": (1, V + 0.5), "erfinv": (0.9 * V,),
    "stack": ([V, 2 * V],), "concatenate": ([V, 2 * V],), "hstack": ([V, 2 * V],),
    "vstack": ([V, 2 * V],), "dstack": ([V, 2 * V],), "column_stack": ([V, 2 * V],),
    "split": (np.arange(1.0, 7.0) / 7, 3), "array_split": (V, 2), "take": (V, np.array([0, 2, 2])),
    "take_along_axis": (M, np.argsort(M, axis=1), 1), "repeat": (V, 2), "tile": (V, 2), "pad": (V, 1),
    "roll": (V, 1), "reshape": (M, (9,)), "expand_dims": (V, 0), "moveaxis": (M, 0, 1),
    "swapaxes": (M, 0, 1), "broadcast_to": (V, (2, 3)), "einsum": ("ij,jk->ik", M, M),
    "clip": (V, 0.4, 0.7), "where": (V > 0.4, V, 2 * V), "select": ([V > 0.4, V > 0.7], [V, 2 * V]),
    "searchsorted": (np.sort(V), M.ravel()), "solve": (SPD, V), "matrix_power": (M, 3),
    "multi_dot": ([M, M.T, M],), "cholesky": (SPD,), "eigh": (SPD,), "eigvalsh": (SPD,),
    "heaviside": (V - 0.4, V), "full": ((2, 3), np.array(0.5)), "full_like": (M, 0.5),
    "fmax": (V, 2 * V - 0.4), "fmin": (V, 2 * V - 0.4),  # away from ties, where fmax picks a side
    "astype": (M, np.float32),
    "lexsort": (np.stack([V, 2 * V]),), "partition": (M.ravel(), 4), "argpartition": (M.ravel(), 4),
    "broadcast_arrays": (V, M), "meshgrid": (V, 2 * V), "atleast_1d": (V,), "diag": (V,),
    "trace": (M,), "diagonal": (M,), "at": (V,), "unique": (np.round(M * 2),), "zeros": ((2, 3),),
    "ones": ((2, 3),), "empty": ((2, 3),), "eye": (3,), "arange": (4.0,),
    "linspace": (np.array(0.2), np.array([1.0, 2.0]), 5),
    "logsumexp": (M,), "rot90": (M,), "lstsq": (M, V), "kron": (M, V), "outer": (V, 2 * V),
    "tensordot": (M, M), "divmod": (V + 1.07, V), "remainder": (V + 1.07, V), "mod": (V + 1.07, V),
    "fmod": (V + 1.07, V), "floor_divide": (V + 1.07, V), "float_power": (V, V), "power": (V, V),
    "pow": (V, V),
    "vecdot": (M, V), "vector_norm": (V,), "matrix_norm": (M,), "xlogy": (V, V), "xlog1py": (V, V),
    "bitwise_and": (np.arange(4), np.arange(4)[::-1]), "bitwise_or": (np.arange(4), np.arange(4)[::-1]),
    "bitwise_xor": (np.arange(4), np.arange(4)[::-1]), "invert": (np.arange(4),),
    "bitwise_not": (np.arange(4),), "bitwise_invert": (np.arange(4),),
    "diff": (V, 1, -1, 0.2), "ediff1d": (V, 2 * V, 0.2), "trapezoid": (M, V), "append": (V, 2 * V),
    "insert": (V, 1, 2 * V[:1]), "delete": (V, 1), "hsplit": (M, 3), "vsplit": (M, 3),
    "dsplit": (M.reshape(3, 1, 3), 3), "row_stack": ([V, 2 * V],), "rollaxis": (M.reshape(3, 3, 1), 2),
    "cross": (M, 2 * M[::-1]), "polyval": (V, M), "vander": (V,), "logspace": (np.array(0.2), V, 5),
    "geomspace": (np.array(0.2), V, 5), "isclose": (V, V + 1e-9 * (V > 0.4)),
    "allclose": (V, V + 1e-9 * (V > 0.4)), "array_equal": (V, V), "iscomplex": (V + 1j * (V > 0.4),),
    "isreal": (V + 1j * (V > 0.4),),
    "interp": (M, np.array([0.2, 0.5, 0.9]), V), "convolve": (V, 2 * V[:2]), "correlate": (V, 2 * V[:2]),
    "quantile": (M, 0.3), "percentile": (M, 30.0), "ldexp": (V, np.arange(3)), "polyfit": (V, 2 * V, 1),
    "piecewise": (V, [V > 0.4], [lambda v: 2 * v, lambda v: v ** 2]), "bincount": (np.array([0, 2, 2]), V),
    "ix_": (np.arange(3), np.arange(2)),
    "tensorinv": (np.eye(4).reshape(4, 2, 2) + 0.1, 1), "multigammaln": (V + 2, 3),
    "betainc": (V + 1, V + 2, V), "zeta": (np.array([2, 3, 4]), V + 1),
    "fft.fftfreq": (8, np.array(0.1)), "fft.rfftfreq": (8, np.array(0.1)),
    "scipy.linalg.solve_triangular": (np.tril(M) + np.eye(3), V), "scipy.linalg.cho_factor": (SPD,),
    "scipy.linalg.cho_solve": ((np.linalg.cholesky(SPD), True), V), "scipy.linalg.lu_factor": (M,),
    "scipy.linalg.lu_solve": (scipy.linalg.lu_factor(M), V), "scipy.linalg.lu": (M,),
    "scipy.linalg.expm_frechet": (M, M.T), "scipy.linalg.block_diag": (M, V[None]),
    "scipy.linalg.cholesky": (SPD,), "scipy.linalg.solve": (SPD, V),
    "scipy.signal.convolve2d": (M, M[:2, :2]), "scipy.signal.correlate2d": (M, M[:2, :2]),
    "scipy.integrate.cumulative_trapezoid": (M, V),
    "scipy.integrate.odeint": (lambda y, t, k: -k * y * t, V, np.array([0.0, 0.5, 1.0]), np.array(0.7)),
    "random.key": (np.uint64(3),), "random.PRNGKey": (np.uint64(3),), "random.split": (KEY,),
    "random.fold_in": (KEY, np.uint64(5)), "random.key_data": (KEY,),
    "random.wrap_key_data": (np.array([1, 2], dtype=np.uint64),), "random.bits": (KEY, (3,)),
    "random.uniform": (KEY, (3,), np.float64, V, V + 1), "random.normal": (KEY, (3,)),
    "random.truncated_normal": (KEY, V - 1, V + 1), "random.gumbel": (KEY, (3,)),
    "random.bernoulli": (KEY, V, (3,)), "random.categorical": (KEY, M),
    "random.randint": (KEY, (3,), 0, 5), "random.permutation": (KEY, V), "random.choice": (KEY, V, (2,)),
    "random.gamma": (KEY, V + 1), "random.multivariate_normal": (KEY, V, SPD),
}
# scipy.stats: the arguments of each distribution's methods.
STATS_ARGS: dict[str, tuple[Any, ...]] = {
    "norm": (V,), "t": (V, np.array(3.5)), "gamma": (V, np.array(2.5)),
    "beta": (V, np.array(2.5), np.array(1.5)), "expon": (V,), "laplace": (V,), "logistic": (V,),
    "cauchy": (V,), "uniform": (V,), "poisson": (np.array([0, 1, 3]), np.array(2.5)),
    "binom": (np.array([0, 1, 3]), 5, np.array(0.3)), "bernoulli": (np.array([0, 0]), np.array(0.3)),
    "multivariate_normal": (V, 0.5 * V, SPD), "dirichlet": (V / V.sum(), V + 1),
}
# ... and of the methods that take other ones.
KDE_DATA = np.array([[0.1, 0.5, 1.3, 0.8, 1.9], [0.4, -0.2, 0.9, 1.6, 0.3]])
STATS_METHOD_ARGS: dict[str, tuple[Any, ...]] = {
    "bernoulli.ppf": (V, np.array(0.6)),
    "gaussian_kde.evaluate": (KDE_DATA, M[:2]), "gaussian_kde.pdf": (KDE_DATA, M[:2]),
    "gaussian_kde.logpdf": (KDE_DATA, M[:2]),
    "gaussian_kde.integrate_gaussian": (KDE_DATA, V[:2], SPD[:2, :2]),
    "gaussian_kde.integrate_box_1d": (KDE_DATA[0], np.array(0.2), np.array(1.1)),
    "gaussian_kde.integrate_kde": (KDE_DATA, M[:2]), "gaussian_kde.resample": (KDE_DATA,),
}
# gaussian_kde's methods, as functions of the data and the methods' arguments.
KDE_METHODS: dict[str, Callable[..., Callable[..., Any]]] = {
    "evaluate": lambda kde: lambda data, x: kde(data).evaluate(x),
    "pdf": lambda kde: lambda data, x: kde(data).pdf(x),
    "logpdf": lambda kde: lambda data, x: kde(data).logpdf(x),
    "integrate_gaussian": lambda kde: lambda data, mean, cov: kde(data).integrate_gaussian(mean, cov),
    "integrate_box_1d": lambda kde: lambda data, low, high: kde(data).integrate_box_1d(low, high),
    "integrate_kde": lambda kde: lambda data, other: kde(data).integrate_kde(kde(other)),
}
# Functions with a derivative in some of their arguments only (the others raise
# NotImplementedError, as they must where fgrad has no rule): those positions.
ONLY_IN: dict[str, tuple[int, ...]] = {
    "zeta": (1,),
    # Off the simplex the density is not defined: its derivative is in alpha.
    "scipy.stats.dirichlet.logpdf": (1,), "scipy.stats.dirichlet.pdf": (1,),
}
# SciPy's cho_factor leaves the other triangle as LAPACK left it; fgrad's has zeros there.
# (checked on c alone: the flag `lower` is a Python bool, nothing to differentiate).
REFERENCES: dict[str, Callable[..., Any]] = {
    "scipy.linalg.cho_factor": lambda a: np.triu(scipy.linalg.cho_factor(a)[0]),
}
SUBJECTS: dict[str, Callable[..., Any]] = {
    "scipy.linalg.cho_factor": lambda a: flinalg.cho_factor(a)[0],
}
# Functional updates are reached through fgrad.numpy.at(x)[idx] (or x.at[idx] on traced values).
AT_UPDATES = {
    "at(x)[idx].set(v)": lambda x, v: fnp.at(x)[1:].set(v),
    "at(x)[idx].add(v)": lambda x, v: fnp.at(x)[1:].add(v),
    "at(x)[idx].multiply(v)": lambda x, v: fnp.at(x)[1:].multiply(v),
    "at(x)[idx].min(v)": lambda x, v: fnp.at(x)[1:].min(v),
    "at(x)[idx].max(v)": lambda x, v: fnp.at(x)[1:].max(v),
    "at(x)[idx].get()": lambda x, v: fnp.at(x)[1:].get() * v,
}
# Piecewise constant in the values (no derivative by design), though their result is float.
NO_DERIVATIVE = {"unique", "histogram"}
# Functions of shapes and constants: nothing traced goes in, nothing to differentiate.
CONSTANT = {"zeros", "ones", "empty", "eye", "arange", "iscomplexobj", "isrealobj", "empty_like", "identity",
            "tri", "shape", "ndim", "size", "isscalar", "result_type", "triu_indices", "tril_indices",
            "diag_indices", "indices"}


def functions() -> list[tuple[str, str, str, Callable[..., Any], Callable[..., Any] | None]]:
    """(section, name, key in EXPLICIT, fgrad function, NumPy/SciPy reference or None)."""
    out = []
    for name in sorted(fnp.__all__):
        f = getattr(fnp, name)
        if callable(f) and not isinstance(f, type) and name not in ("linalg", "at", "fft"):
            out.append(("fgrad.numpy", name, name, f, getattr(np, name, None)))
    for name, f in AT_UPDATES.items():
        out.append(("fgrad.numpy", name, name, f, None))
    modules: list[tuple[str, Any, str, Any]] = [
        ("fgrad.numpy.linalg", fnp.linalg, "", np.linalg), ("fgrad.numpy.fft", fnp.fft, "fft.", np.fft),
        ("fgrad.scipy.special", fsp, "", scipy.special),
        ("fgrad.scipy.linalg", flinalg, "scipy.linalg.", scipy.linalg),
        ("fgrad.scipy.signal", fsignal, "scipy.signal.", scipy.signal),
    ]
    for section, module, prefix, reference in modules:
        for name in module.__all__:
            f = getattr(module, name)
            if callable(f) and not isinstance(f, type):
                ref = REFERENCES.get(prefix + name, getattr(reference, name, None))
                out.append((section, name, prefix + name, SUBJECTS.get(prefix + name, f), ref))
    for dist in fstats.__all__:
        if dist == "gaussian_kde":
            continue
        for method in ("logpdf", "pdf", "logpmf", "pmf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"):
            f = getattr(getattr(fstats, dist), method, None)
            if f is not None:
                ref = getattr(getattr(scipy.stats, dist), method)
                out.append(("fgrad.scipy.stats", f"{dist}.{method}", f"scipy.stats.{dist}.{method}", f, ref))
    for method, of in KDE_METHODS.items():
        out.append(("fgrad.scipy.stats", f"gaussian_kde.{method}", f"scipy.stats.gaussian_kde.{method}",
                    of(fstats.gaussian_kde), of(scipy.stats.gaussian_kde)))
    out.append(("fgrad.scipy.stats", "gaussian_kde.resample", "scipy.stats.gaussian_kde.resample",
                lambda data: fstats.gaussian_kde(data).resample(KEY, (3,)), None))
    for name in fintegrate.__all__:
        f, ref = getattr(fintegrate, name), getattr(scipy.integrate, name)
        if name == "odeint":  # JAX's signature, so no SciPy reference; tight tolerances, so that
            ref = None        # finite differences of the adaptive solver are accurate enough
            f = functools.partial(f, rtol=1e-12, atol=1e-12)
        out.append(("fgrad.scipy.integrate", name, f"scipy.integrate.{name}", f, ref))
    for name in frandom.__all__:
        out.append(("fgrad.random", name, f"random.{name}", getattr(frandom, name), None))
    return out


def _array_positions(args: tuple[Any, ...], kinds: str) -> list[int]:
    """The arguments that are arrays (or lists of them) of dtype kinds `kinds`."""
    out = []
    for i, a in enumerate(args):
        leaves = tree_flatten(a)[0]
        if (leaves and not isinstance(a, (tuple, str))
                and all(isinstance(x, np.ndarray) and x.dtype.kind in kinds for x in leaves)):
            out.append(i)
    return out


def _sample(name: str, f: Callable[..., Any]) -> tuple[Any, ...] | None:
    if name in AT_UPDATES:
        return (V, np.array([0.2, 0.9]))
    if name.startswith("scipy.stats."):
        method = name.removeprefix("scipy.stats.")
        return STATS_METHOD_ARGS.get(method, STATS_ARGS.get(method.split(".")[0]))
    for args in ([EXPLICIT[name]] if name in EXPLICIT else GENERIC):
        try:
            out = f(*args)
        except Exception:
            continue
        if all(isinstance(x, (np.ndarray, np.generic, float, int, bool, complex))
               for x in tree_flatten(out)[0]) and tree_flatten(out)[0]:
            return args
    return None


def _numeric_leaves(x: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in tree_flatten(x)[0]]


def _second_example(x: np.ndarray) -> np.ndarray:
    # Shrinking a float keeps what samples are built to have (sorted, symmetric positive definite,
    # inside [-1, 1], positive); integers and booleans are reversed instead.
    if x.dtype.kind in "fc":
        return 0.75 * x
    return x[::-1] if x.ndim else x


def _close(a: Any, b: Any) -> bool:
    la, lb = _numeric_leaves(a), _numeric_leaves(b)
    return len(la) == len(lb) and all(
        x.shape == y.shape and np.allclose(x, y, rtol=1e-10, atol=1e-12, equal_nan=True)
        for x, y in zip(la, lb)
    )


def _implicit_gamma(mode: str) -> str:
    """fgrad.random.gamma's derivative in `a` is the implicit one (JAX's): the
    sample x moves with a so that its probability P(a, x) stays fixed, not as
    the rejection sampler's arithmetic moves. Checked as that: dP/da + dP/dx
    dx/da = 0, by differences of SciPy's gammainc along (1, dx/da)."""
    a = V + 1
    sample = lambda a: frandom.gamma(KEY, a)  # noqa: E731
    if mode == "jvp":
        x, dx = fgrad.jvp(sample, (a,), (np.ones_like(a),))
    else:  # elementwise: the vjp of ones is the diagonal of the Jacobian
        x, pullback = fgrad.vjp(sample, a)
        (dx,) = pullback(np.ones_like(a))
    h = 1e-6
    drift = (scipy.special.gammainc(a + h, x + h * dx) - scipy.special.gammainc(a - h, x - h * dx)) / (2 * h)
    return "✓ (implicit, JAX's)" if np.allclose(drift, 0, atol=1e-6) else "✗ wrong"


def _check(name: str, f: Callable[..., Any], reference: Callable[..., Any] | None) -> dict[str, str]:
    if name in CONSTANT:
        return {"eval": "NumPy's (a constant)", "jvp": "—", "reverse": "—", "vmap": "—"}
    args = _sample(name, f)
    if args is None:
        return {"eval": "not checked", "jvp": "not checked", "reverse": "not checked", "vmap": "not checked"}
    cells: dict[str, str] = {}
    expected = f(*args)  # no transform active: NumPy (or fgrad's eager code)
    if reference is not None:
        try:
            same = _close(expected, reference(*args))
        except Exception:
            same = True  # the reference takes other arguments: nothing to compare
        if not same:
            return {"eval": "differs from NumPy", "jvp": "—", "reverse": "—", "vmap": "—"}
    floats = _array_positions(args, "f")
    arrays = floats or _array_positions(args, "biuf")
    only = ONLY_IN.get(name)
    note = ""
    if only:
        floats = arrays = [i for i in floats if i in only]
        names = list(inspect.signature(f).parameters)
        note = " (in " + ", ".join(f"`{names[i]}`" for i in only) + " only)"

    def on(positions: list[int]) -> Callable[..., Any]:
        def g(*xs: Any) -> Any:
            full = list(args)
            for i, x in zip(positions, xs):
                full[i] = x
            return f(*full)

        return g

    g, fx = on(floats), [args[i] for i in floats]
    try:
        closed = fgrad.make_jaxpr(on(arrays))(*[args[i] for i in arrays])
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *tree_flatten([args[i] for i in arrays])[0])
        cells["eval"] = "✓" if _close(outs, _numeric_leaves(expected)) else "✗ values differ"
    except fgrad.ConcretizationTypeError:
        cells["eval"] = "concrete values only"
    except Exception as e:  # noqa: BLE001 - any failure is a finding for the table
        cells["eval"] = f"✗ {type(e).__name__}"
    differentiable = (floats and name not in NO_DERIVATIVE
                      and any(leaf.dtype.kind in "fc" for leaf in _numeric_leaves(expected)))
    for mode, check in (("jvp", check_jvp), ("reverse", check_vjp)):
        if name == "random.gamma":
            cells[mode] = _implicit_gamma(mode)
            continue
        if not differentiable:
            cells[mode] = "— (no derivative)"
            continue
        try:
            check(g, fx)
            cells[mode] = "✓" + note
        except AssertionError:
            cells[mode] = "✗ wrong"
        except Exception as e:  # noqa: BLE001
            cells[mode] = f"✗ {type(e).__name__}"
    if not arrays:
        cells["vmap"] = "—"
        return cells
    try:
        h, ax = on(arrays), [args[i] for i in arrays]
        batch = [tree_map(lambda x: np.stack([x, _second_example(x)]), a) for a in ax]
        got = fgrad.vmap(h)(*batch)
        loop = [h(*[tree_map(lambda b, k=k: b[k], a) for a in batch]) for k in range(2)]
        stacked = tree_map(lambda *xs: np.stack(xs), *loop)
        cells["vmap"] = "✓" if _close(got, stacked) else "✗ values differ"
    except fgrad.ConcretizationTypeError:
        cells["vmap"] = "concrete values only"
    except Exception as e:  # noqa: BLE001
        cells["vmap"] = f"✗ {type(e).__name__}"
    return cells


def table() -> str:
    lines = [
        "# Coverage of NumPy, SciPy and random",
        "",
        "Generated by `python docs/numpy_coverage.py`: every cell is checked on sample inputs, not",
        "declared (see that script). **eval**: traced to a jaxpr and evaluated, equal to NumPy's (or",
        "SciPy's) result; **jvp** / **reverse**: forward / reverse mode against finite differences;",
        "**vmap**: vmap over two examples equals a loop. — means nothing to check (a constant, or no",
        "derivative: integer, boolean, index or key results); *concrete values only* means the",
        "function needs values, not just shapes (it works under grad, jvp and vjp, which trace with",
        "concrete values). *(in `x` only)*: differentiable in the arguments named, and",
        "differentiating in another raises NotImplementedError. *(implicit, JAX's)*: the derivative",
        "of a gamma sample in its shape holds the sample's probability fixed, checked as that.",
        "SciPy's functions need the `scipy` extra (`pip install fgrad[scipy]`).",
        "",
    ]
    section = None
    for sec, name, key, f, reference in functions():
        if sec != section:
            section = sec
            lines += ["", f"## {sec}", "", "| function | eval | jvp | reverse | vmap |",
                      "|---|---|---|---|---|"]
        c = _check(key, f, reference)
        lines.append(f"| `{name}` | {c['eval']} | {c['jvp']} | {c['reverse']} | {c['vmap']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import warnings

    warnings.simplefilter("ignore")
    text = table()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT}")
