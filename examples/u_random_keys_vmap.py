"""(u) Random numbers from explicit keys: fgrad.random, under vmap, jit and grad.

A key (`fr.key(seed)`) determines the numbers drawn with it: the same key
gives the same numbers, eagerly and under jit; `fr.split` makes new,
independent keys. vmap over a batch of keys gives one independent draw per
key: 1000 Monte Carlo estimates of pi, whose spread is compared with the
binomial one, 4 sqrt(p (1 - p) / n) for p = pi / 4; and a dropout mask of its
own for each example of a batch. Last, a reparameterised gradient: with
x = mu + sigma eps, eps ~ N(0, 1), d/dmu and d/dsigma of the sample mean of
x^2 estimate those of E[x^2] = mu^2 + sigma^2, which are 2 mu and 2 sigma.
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp
import fgrad.random as fr

key = fr.key(0)
print("normal(key, (3,))       :", fr.normal(key, (3,)))
print("again, the same key     :", fr.normal(key, (3,)))
print("under jit, the same key :", fgrad.jit(lambda k: fr.normal(k, (3,)))(key))
key, sub = fr.split(key)
print("a new key from split    :", fr.normal(sub, (3,)))

n, n_keys = 1000, 1000


def estimate_pi(key):
    points = fr.uniform(key, (n, 2), minval=-1.0, maxval=1.0)
    return 4 * fnp.mean(fnp.sum(points**2, axis=1) < 1.0)


key, sub = fr.split(key)
estimates = fgrad.vmap(estimate_pi)(fr.split(sub, n_keys))
p = np.pi / 4
print(f"\npi from {n_keys} keys x {n} points: {estimates[:3]} ..., mean {estimates.mean():.4f}"
      f" +- {estimates.std() / np.sqrt(n_keys):.4f}")
print(f"their spread {estimates.std():.4f}, binomial {4 * np.sqrt(p * (1 - p) / n):.4f}")


def dropout(key, x, rate=0.5):
    keep = fr.bernoulli(key, 1 - rate, x.shape)
    return fnp.where(keep, x / (1 - rate), 0.0)


key, sub = fr.split(key)
print("per-example dropout, one key per row of ones((4, 8)):")
print(fgrad.vmap(dropout)(fr.split(sub, 4), np.ones((4, 8))))

key, sub = fr.split(key)
eps = fr.normal(sub, (100_000,))


def mean_square(mu, sigma):
    return fnp.mean((mu + sigma * eps) ** 2)


mu, sigma = 1.5, 0.5
d_mu, d_sigma = fgrad.grad(mean_square, argnums=(0, 1))(mu, sigma)
print(f"\nd/dmu E[x^2] ~ {d_mu:.4f} (2 mu = {2 * mu}), d/dsigma E[x^2] ~ {d_sigma:.4f}"
      f" (2 sigma = {2 * sigma})")
