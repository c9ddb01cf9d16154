"""(e) Gradient descent on y = x^2 - 2x + 1 from x = 0 with learning rate 0.1.

The minimum is at x = 1; after 20 epochs x = 1 - 0.8^20 = 0.98847...
"""

import fgrad


def loss(x):
    return x**2 - 2 * x + 1


x, lr = 0.0, 0.1
for epoch in range(1, 21):
    value, g = fgrad.value_and_grad(loss)(x)
    x = x - lr * g
    print(f"epoch {epoch:2d}: x = {x:.5f}, loss before the step = {value:.5f}")
