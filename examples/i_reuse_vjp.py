"""(i) A vjp function may be called again: nothing is consumed, nothing accumulates.

PyTorch needs retain_graph=True to backpropagate twice, and adds gradients
into .grad between calls. In fgrad the pullback is a pure function.
"""

import numpy as np

import fgrad
import fgrad.numpy as fnp

x = np.array([1.0, 2.0, 3.0])
y, f_vjp = fgrad.vjp(lambda x: fnp.sum(x**3), x)
print("first call: ", f_vjp(1.0)[0])
print("second call:", f_vjp(1.0)[0])
print("grad twice: ", fgrad.grad(lambda x: fnp.sum(x**3))(x), fgrad.grad(lambda x: fnp.sum(x**3))(x))
