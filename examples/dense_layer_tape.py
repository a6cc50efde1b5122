"""A small Keras-like dense layer trained with sg.GradientTape; gradients by position.

    layer = Dense(3, 2); with tape: loss = ...; dw, db = tape.gradient(loss, layer.variables)

Run: python examples/dense_layer_tape.py
"""

from __future__ import annotations

import numpy as np

import symgrad as sg


class Dense:
    """y = activation(x @ w + b), with its Variables listed as ``[w, b]``."""

    def __init__(self, n_in: int, n_out: int, activation=sg.tanh, seed: int = 0):
        rng = np.random.default_rng(seed)
        limit = np.sqrt(6.0 / (n_in + n_out))  # Glorot uniform
        self.w = sg.Variable(rng.uniform(-limit, limit, (n_in, n_out)), name="dense/w")
        self.b = sg.Variable(np.zeros(n_out), name="dense/b")
        self.activation = activation

    @property
    def variables(self) -> list:
        return [self.w, self.b]

    def __call__(self, x):
        return self.activation(x @ self.w + self.b)


def main() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 3))
    y_true = np.tanh(x @ np.array([[1.0, -1.0], [0.5, 0.0], [0.0, 2.0]]) + [0.1, -0.2])
    layer = Dense(3, 2)
    for step in range(201):
        with sg.GradientTape() as tape:
            loss = sg.reduce_mean(sg.square(layer(x) - y_true))
        dw, db = tape.gradient(loss, layer.variables)  # positional, like layer.variables
        for variable, grad in zip(layer.variables, (dw, db)):
            variable.assign_sub(0.5 * grad.numpy())
        if step % 50 == 0:
            print(f"step {step:3d}  loss {float(loss):.5f}  |dw| {np.abs(dw.numpy()).max():.4f}"
                  f"  |db| {np.abs(db.numpy()).max():.4f}")
    print("w =", np.round(layer.w.numpy(), 3).tolist(), " b =",
          np.round(layer.b.numpy(), 3).tolist())
    # the tape's gradients against the chain rule written out by hand in numpy
    with sg.GradientTape() as tape:
        loss = sg.reduce_mean(sg.square(layer(x) - y_true))
    dw, db = tape.gradient(loss, layer.variables)
    out = np.tanh(x @ layer.w.numpy() + layer.b.numpy())
    delta = 2.0 * (out - y_true) / out.size * (1.0 - out**2)
    assert np.allclose(dw.numpy(), x.T @ delta) and np.allclose(db.numpy(), delta.sum(0))
    print("tape gradients match the hand-written chain rule")

if __name__ == "__main__":
    main()
