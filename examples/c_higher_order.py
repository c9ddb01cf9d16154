"""(c) Higher derivatives by nesting grad: for y = x^2 - 2x + 1, y'' = 2 and y''' = 0."""

import fgrad


def f(x):
    return x**2 - 2 * x + 1


d1 = fgrad.grad(f)
d2 = fgrad.grad(d1)
d3 = fgrad.grad(d2)
for x in (-1.0, 0.0, 3.0):
    print(f"x = {x:4}:  f' = {d1(x):5}  f'' = {d2(x)}  f''' = {d3(x)}")
