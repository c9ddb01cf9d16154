"""fgrad.scipy.stats.gaussian_kde: the Gaussian kernel density estimate of
scipy.stats and jax.scipy.stats, differentiable and traceable.

Written on `fgrad.numpy` (the weighted covariance of `fgrad.numpy.cov`, its
Cholesky factor, triangular solves, logsumexp) and `fgrad.random`, so the
estimate is differentiable in the points where it is evaluated, in the data
and in the weights, to any order, and runs under jit and vmap. An estimate is a
pytree, as JAX's, so it can be passed to and returned from transformed
functions. Values are SciPy's; `resample` takes an fgrad key, as JAX's.

>>> kde = gaussian_kde([-1.0, 0.0, 2.0], bw_method=1.0)
>>> kde.covariance  # the data's variance times factor**2
array([[2.33333333]])
>>> float(kde.integrate_box_1d(-np.inf, np.inf))
1.0
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import numpy as fnp
from .. import random as frandom
from ..api.pytree import register_pytree_node_class
from ..core.avals import get_aval
from ..core.trace import Tracer
from ..numpy.operands import Array, ArrayLike, concrete_value, operand
from . import special as fsp

__all__ = ["gaussian_kde"]

BwMethod = str | float | ArrayLike | Callable[["gaussian_kde"], ArrayLike] | None

_LOG_2PI = math.log(2 * math.pi)


def _float_2d(x: ArrayLike, function: str, name: str) -> Array:
    x = operand(x)
    if get_aval(x).dtype.kind == "c":
        raise NotImplementedError(f"gaussian_kde does not support complex {name} (in {function}); "
                                  "pass real values")
    return fnp.atleast_2d(fnp.asarray(x, dtype=np.float64))


def _is_scalar(x: Any) -> bool:
    """A number, a NumPy scalar or 0-d array, or a 0-d traced value (JAX's jnp.isscalar)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Number, np.generic, np.ndarray, Tracer)):
        return False
    return fnp.ndim(x) == 0 and get_aval(x).dtype.kind in "iuf"


@register_pytree_node_class
class gaussian_kde:  # noqa: N801 (SciPy's and JAX's name)
    """scipy.stats.gaussian_kde(dataset, bw_method=None, weights=None): the density
    sum_i w_i N(x; x_i, covariance) of the points x_i, the columns of `dataset`
    (d, n) (a vector: n points of dimension 1), weighted by `weights` (normalized
    to sum 1; None: 1/n each). covariance is the weighted covariance of the data
    times factor**2, factor being given by `bw_method`: 'scott' (the default,
    neff**(-1/(d+4))), 'silverman' ((neff (d+2)/4)**(-1/(d+4))), a scalar, or a
    callable taking the estimate (its dataset, weights, d, n, neff are set) and
    returning the factor. Attributes: dataset, weights, d, n, neff, factor,
    covariance, inv_cov. The dataset is float64 whatever its input dtype.

    >>> kde = gaussian_kde(np.array([0.0, 1.0, 3.0]))
    >>> kde.pdf([0.0, 1.0]).shape
    (2,)
    """

    neff: Any
    dataset: Any
    weights: Any
    covariance: Any
    inv_cov: Any
    factor: Any

    def __init__(self, dataset: ArrayLike, bw_method: BwMethod = None,
                 weights: ArrayLike | None = None) -> None:
        dataset = _float_2d(dataset, "gaussian_kde", "data")
        if not fnp.size(dataset) > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = fnp.shape(dataset)
        if weights is None:
            weights = fnp.full(n, 1.0 / n)
        else:
            weights = operand(weights)
            if get_aval(weights).dtype.kind == "c":
                raise NotImplementedError("gaussian_kde does not support complex weights; pass real values")
            weights = fnp.atleast_1d(fnp.asarray(weights, dtype=np.float64))
            if fnp.ndim(weights) != 1:
                raise ValueError(f"`weights` input should be one-dimensional, got shape "
                                 f"{fnp.shape(weights)}.")
            if fnp.shape(weights)[0] != n:
                raise ValueError(f"`weights` input should be of length n: the dataset has n = {n} points, "
                                 f"got {fnp.shape(weights)[0]} weights")
            weights = fnp.divide(weights, fnp.sum(weights))
        if d > n:
            raise ValueError(
                "Number of dimensions is greater than number of samples. This results in a singular data "
                "covariance matrix, which cannot be treated using the algorithms implemented in "
                "`gaussian_kde`. Note that `gaussian_kde` interprets each *column* of `dataset` to be a "
                f"point; consider transposing the input to `dataset` (its shape is {(d, n)})."
            )
        self.dataset = dataset
        self.weights = weights
        self.neff = fnp.divide(1.0, fnp.sum(fnp.square(weights)))
        self.factor = self._factor(bw_method)
        data_covariance = fnp.atleast_2d(fnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
        known = concrete_value(data_covariance, None)  # SciPy's check, where the value is known
        try:
            if known is not None:
                np.linalg.cholesky(np.asarray(known))
        except np.linalg.LinAlgError as err:
            raise np.linalg.LinAlgError(
                "The data appears to lie in a lower-dimensional subspace of the space in which it is "
                "expressed. This has resulted in a singular data covariance matrix, which cannot be "
                "treated using the algorithms implemented in `gaussian_kde`. Consider performing principal "
                "component analysis / dimensionality reduction and using `gaussian_kde` with the "
                "transformed data."
            ) from err
        data_inv_cov = fnp.linalg.inv(data_covariance)
        factor2 = fnp.square(self.factor)
        self.covariance = fnp.multiply(data_covariance, factor2)
        self.inv_cov = fnp.divide(data_inv_cov, factor2)

    def _factor(self, bw_method: BwMethod) -> Array:
        if bw_method is None or isinstance(bw_method, str):
            if bw_method is None or bw_method == "scott":
                return self.scotts_factor()
            if bw_method == "silverman":
                return self.silverman_factor()
        elif _is_scalar(bw_method):
            return fnp.asarray(bw_method, dtype=np.float64)
        elif callable(bw_method):
            return fnp.asarray(bw_method(self), dtype=np.float64)
        raise ValueError(
            f"`bw_method` should be 'scott', 'silverman', a scalar or a callable, got {bw_method!r}."
        )

    # --- pytree: the arrays are the children, as in JAX (and the factor) ---

    def tree_flatten(self) -> tuple[tuple[Any, ...], None]:
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov, self.factor), None

    @classmethod
    def tree_unflatten(cls, aux_data: None, children: Any) -> gaussian_kde:
        kde = cls.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov, kde.factor = children
        return kde

    def __repr__(self) -> str:
        return f"<fgrad.scipy.stats.gaussian_kde of {self.n} points of dimension {self.d}>"

    @property
    def d(self) -> int:
        """The dimension of the points."""
        return int(fnp.shape(self.dataset)[0])

    @property
    def n(self) -> int:
        """The number of points."""
        return int(fnp.shape(self.dataset)[1])

    def scotts_factor(self) -> Array:
        """Scott's factor, neff**(-1/(d+4))."""
        return fnp.power(self.neff, -1.0 / (self.d + 4))

    def silverman_factor(self) -> Array:
        """Silverman's factor, (neff (d+2)/4)**(-1/(d+4))."""
        return fnp.power(fnp.multiply(self.neff, (self.d + 2) / 4.0), -1.0 / (self.d + 4))

    def covariance_factor(self) -> Array:
        """The factor by which the data's covariance is multiplied (squared)."""
        return self.factor

    # --- the density ---

    def _points(self, points: ArrayLike, function: str) -> Array:
        points = _float_2d(points, function, "points")
        d, m = fnp.shape(points)
        if d != self.d:
            if d == 1 and m == self.d:  # one point, given as a row
                return fnp.reshape(points, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def _log_kernels(self, points: Array) -> Array:
        """(m, n): log N(x_j; x_i, covariance) for the points x_j and the data x_i."""
        chol = fnp.linalg.cholesky(self.covariance)
        # Whitened: L^-1 x, as SciPy's, so that the distances are sums of squares.
        white_data = fnp.linalg.solve(chol, self.dataset)
        white_points = fnp.linalg.solve(chol, points)
        diff = fnp.subtract(fnp.transpose(white_points)[:, None, :], fnp.transpose(white_data)[None, :, :])
        log_norm = fnp.add(fnp.sum(fnp.log(fnp.diagonal(chol))), 0.5 * self.d * _LOG_2PI)
        return fnp.subtract(-0.5 * fnp.sum(fnp.square(diff), axis=-1), log_norm)

    def evaluate(self, points: ArrayLike) -> Array:
        """The estimated density at `points` (d, m) (a vector: m points of dimension 1,
        or for d > 1 one point); a vector of m values."""
        points = self._points(points, "evaluate")
        return fnp.sum(fnp.multiply(fnp.exp(self._log_kernels(points)), self.weights), axis=1)

    __call__ = evaluate

    def pdf(self, x: ArrayLike) -> Array:
        """The estimated density at x: evaluate(x)."""
        return self.evaluate(x)

    def logpdf(self, x: ArrayLike) -> Array:
        """The log of the estimated density at x, without underflow far from the data."""
        points = self._points(x, "logpdf")
        with np.errstate(divide="ignore"):  # a zero weight: log 0 = -inf, a point that counts for nothing
            log_weights = fnp.log(self.weights)
        return fsp.logsumexp(fnp.add(self._log_kernels(points), log_weights), axis=1)

    # --- integrals ---

    def integrate_gaussian(self, mean: ArrayLike, cov: ArrayLike) -> Array:
        """The integral of the density times the normal density N(mean, cov)."""
        mean = fnp.atleast_1d(fnp.squeeze(fnp.asarray(mean, dtype=np.float64)))
        cov = fnp.atleast_2d(fnp.asarray(cov, dtype=np.float64))
        if fnp.shape(mean) != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}: got shape {fnp.shape(mean)}")
        if fnp.shape(cov) != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}: got shape {fnp.shape(cov)}")
        return _gaussian_overlap(fnp.add(self.covariance, cov), self.dataset, self.weights, mean[:, None],
                                 fnp.ones(1))

    def integrate_box_1d(self, low: ArrayLike, high: ArrayLike) -> Array:
        """The integral of a 1-d density from `low` to `high` (scalars)."""
        if self.d != 1:
            raise ValueError(f"integrate_box_1d() only handles 1D pdfs, this one has dimension {self.d}")
        if fnp.ndim(low) != 0 or fnp.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars, got shapes "
                             f"{fnp.shape(low)} and {fnp.shape(high)}")
        sigma = fnp.sqrt(self.covariance[0, 0])
        data = self.dataset[0]
        upper = fsp.ndtr(fnp.divide(fnp.subtract(high, data), sigma))
        lower = fsp.ndtr(fnp.divide(fnp.subtract(low, data), sigma))
        return fnp.sum(fnp.multiply(self.weights, fnp.subtract(upper, lower)))

    def integrate_kde(self, other: gaussian_kde) -> Array:
        """The integral of the product of this density and `other`'s."""
        if other.d != self.d:
            raise ValueError(f"KDEs are not the same dimensionality: {self.d} and {other.d}")
        return _gaussian_overlap(fnp.add(self.covariance, other.covariance), self.dataset, self.weights,
                                 other.dataset, other.weights)

    def integrate_box(self, low_bounds: ArrayLike, high_bounds: ArrayLike,
                      maxpts: int | None = None) -> Array:
        """Not implemented (as in JAX): only 1-d box integrals, `integrate_box_1d`."""
        raise NotImplementedError("gaussian_kde.integrate_box is not implemented: only 1D box integrations "
                                  "are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method: BwMethod = None) -> None:
        """Not implemented (as in JAX): an estimate is immutable; make a new one with the bw_method."""
        raise NotImplementedError("dynamically changing the bandwidth method is not supported: an fgrad "
                                  "gaussian_kde is immutable; create a new one, gaussian_kde(kde.dataset, "
                                  "bw_method, kde.weights)")

    # --- sampling ---

    def resample(self, key: ArrayLike, shape: tuple[int, ...] = ()) -> Array:
        """Points drawn from the estimate with the fgrad random key `key`, as JAX's: an
        array (d,) + shape, a data point chosen by weight plus normal noise of the
        kernel's covariance (differentiable in the data, the reparameterization)."""
        index_key, noise_key = frandom.split(key)
        index = frandom.choice(index_key, self.n, shape=shape, p=self.weights)
        noise = frandom.multivariate_normal(noise_key, fnp.zeros(self.d), self.covariance, shape=shape)
        return fnp.add(fnp.take(self.dataset, index, axis=1), fnp.moveaxis(noise, -1, 0))


def _gaussian_overlap(total_cov: Any, x: Any, wx: Any, y: Any, wy: Any) -> Array:
    """sum_ij wx_i wy_j N(x_i - y_j; 0, total_cov): the integral of the product of two
    mixtures of normals of covariances adding up to total_cov."""
    chol = fnp.linalg.cholesky(total_cov)
    d = fnp.shape(x)[0]
    white_x = fnp.transpose(fnp.linalg.solve(chol, x))
    white_y = fnp.transpose(fnp.linalg.solve(chol, y))
    diff = fnp.subtract(white_x[:, None, :], white_y[None, :, :])
    energies = 0.5 * fnp.sum(fnp.square(diff), axis=-1)
    norm = fnp.multiply((2 * math.pi) ** (d / 2.0), fnp.prod(fnp.diagonal(chol)))
    return fnp.divide(fnp.sum(fnp.multiply(fnp.exp(-energies), fnp.outer(wx, wy))), norm)
