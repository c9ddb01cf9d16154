"""(m) A new differentiable function with its own backward rule, checked.

The tutorial defines P3(x) = 0.5 (5x^3 - 3x) (a Legendre polynomial) as an
autograd.Function with a hand-written backward. In fgrad that is a
custom_vjp: `fwd` returns the output and what the backward needs (the
residuals), `bwd` maps the cotangent to the input's cotangent. check_grads
compares it with finite differences, to second order, and catches the
tutorial's typo (5x^2 - 3 instead of 5x^2 - 1).
"""

import numpy as np

import fgrad
from fgrad.test_util import check_grads


def make_p3(backward_factor):
    @fgrad.custom_vjp
    def p3(x):
        return 0.5 * (5 * x**3 - 3 * x)

    p3.defvjp(lambda x: (p3(x), x), lambda x, g: (g * backward_factor(x),))
    return p3


p3 = make_p3(lambda x: 1.5 * (5 * x**2 - 1))
x = np.linspace(-1, 1, 5)
print("P3(x)   =", p3(x))
print("P3'(x)  =", fgrad.vjp(p3, x)[1](np.ones_like(x))[0])
check_grads(p3, (x,), order=2, modes=("rev",))
print("check_grads: the backward rule 1.5 (5x^2 - 1) is right, to second order")

wrong = make_p3(lambda x: 1.5 * (5 * x**2 - 3))
try:
    check_grads(wrong, (x,), order=1, modes=("rev",))
except AssertionError as e:
    print("check_grads caught the wrong rule 1.5 (5x^2 - 3):", str(e).splitlines()[0])
