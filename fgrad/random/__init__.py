"""fgrad.random: JAX's explicit random keys on NumPy's counter-based Philox.

Randomness is a function of a key: the same key gives the same numbers,
eagerly, under jit, vmap and grad alike, and a traced function draws anew
for every key it is given (NumPy's global generator inside a traced function
would be read once, when it is traced, and frozen into the jaxpr). Make a key
from a seed, split it (or fold data into it) for new independent keys, and
pass one key to each sampler:

>>> import fgrad, fgrad.numpy as fnp, fgrad.random as fr
>>> k1, k2 = fr.split(fr.key(0))
>>> draw = fgrad.jit(lambda k: fr.normal(k, (3,)))
>>> bool((draw(k1) == fr.normal(k1, (3,))).all()), bool((draw(k1) == draw(k2)).any())
(True, False)
>>> fgrad.grad(lambda mu: fnp.mean(mu + 2.0 * fr.normal(k2, (10,))))(1.0)  # reparameterised
np.float64(1.0)

The API is JAX's (names, signatures, `shape=()` and float64 defaults, NumPy's
semantics for arrays), but the streams are not: a key is a uint64 array of
shape (2,), the key of `numpy.random.Philox`, and its bits are Philox's
stream under that key, the counter starting from 0. The same key gives other
numbers than in JAX; it gives the same numbers in every version of fgrad on
NumPy's Philox, whose streams NumPy keeps stable (every sampler, gamma's
rejection included, reads the raw stream, never NumPy's Generator, whose
algorithms may change). A batch of keys (from `split`) has leading axes,
``(..., 2)``; vmap a sampler over it for one draw per key.

Bits come from primitives (`random_bits`, `random_fold_in`, `random_gamma`
in `fgrad.primitives.random`), so they are staged by jit and make_jaxpr and
batched by vmap; the samplers transform them with fgrad.numpy (see
`fgrad.random.distributions`), so samples are differentiable in their
parameters: location and scale, uniform and truncated normal bounds, gamma's shape (first order,
by the implicit reparameterisation gradient) and the mean and covariance of
a multivariate normal.
"""

from .distributions import (
    bernoulli,
    categorical,
    choice,
    gamma,
    gumbel,
    multivariate_normal,
    normal,
    permutation,
    randint,
    truncated_normal,
    uniform,
)
from .keys import PRNGKey, bits, fold_in, key, key_data, split, wrap_key_data

__all__ = [
    "key", "PRNGKey", "split", "fold_in", "key_data", "wrap_key_data", "bits",
    "uniform", "normal", "truncated_normal", "gumbel", "bernoulli", "categorical", "randint", "permutation",
    "choice", "gamma", "multivariate_normal",
]
