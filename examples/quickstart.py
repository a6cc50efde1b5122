"""symgrad quickstart: build a graph, take gradients, look at them, evaluate them."""

import numpy as np

import symgrad as sg

# A static graph: nothing is computed yet.
x = sg.placeholder("x", shape=(None,))
y = sg.placeholder("y", shape=(None,))
loss = sg.reduce_sum(sg.sin(x) * sg.exp(-y**2) + sg.log1p(x**2 * y**2))

# tf.gradients semantics: one gradient per x, shaped like x.
dx, dy = sg.gradients(loss, [x, y])

# grad_ys weights each y; stop_gradients holds tensors constant (partial derivatives).
a = sg.placeholder("a")
b = 2.0 * a
total = sg.gradients(a + b, [a, b])                           # [3, 1]
partial = sg.gradients(a + b, [a, b], stop_gradients=[a, b])  # [1, 1]
weighted = sg.gradients(sg.sin(x), x, grad_ys=[np.array([1.0, 10.0])])

# The symbolic view of a derivative.
z = sg.placeholder("z")
print("d/dz sin(z)*z  =", sg.to_sympy(sg.gradients(sg.sin(z) * z, z)[0]))
print("LaTeX          :", sg.latex(sg.gradients(sg.sin(z) * z, z)[0]))

# Evaluate with the numpy reference interpreter.
feeds = {x: np.array([0.5, 1.0]), y: np.array([0.1, -0.2]), a: 1.0}
value, gx, gy = sg.evaluate([loss, dx, dy], feeds)
print("loss =", value, " dloss/dx =", gx, " dloss/dy =", gy)
print("total derivatives [3, 1]:", sg.evaluate(total, feeds))
print("partial derivatives [1, 1]:", sg.evaluate(partial, feeds))
print("grad_ys-weighted d sin(x):", sg.evaluate(weighted[0], feeds))

# Compile once to a fused numba kernel (value and both gradients in one loop).
if hasattr(sg, "function"):
    f = sg.function([x, y], [loss, dx, dy])
    print("compiled:", f(feeds[x], feeds[y]))
