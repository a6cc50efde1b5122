"""Softmax regression trained by gradient descent, with labels picked by ``sg.gather``.

The negative log-likelihood takes, for each row, the log-probability of its label: the
row-major flat index ``row * classes + label`` gathers it from ``log_softmax(logits)``.
Loss and gradients are compiled once into one function and called every step.

    python examples/softmax_regression.py [--no-plot] [--out DIR]

Figure (with matplotlib): the data coloured by label over the learnt decision regions, and
the loss per step.
"""

import numpy as np

import symgrad as sg
from _figures import arguments, pyplot, save

args = arguments(__doc__)

rng = np.random.default_rng(0)
classes, features, rows = 3, 2, 3000
centres = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
labels = rng.integers(0, classes, rows)
data = centres[labels] + rng.normal(scale=0.8, size=(rows, features))

X = sg.placeholder("X", shape=(None, features))
picks = sg.placeholder("picks", shape=(None,), dtype="int64")   # row * classes + label
W = sg.placeholder("W", shape=(features, classes))
b = sg.placeholder("b", shape=(classes,))

log_p = sg.log_softmax(sg.matmul(X, W) + b)
loss = -sg.reduce_mean(sg.gather(sg.reshape(log_p, (-1,)), picks))
step_fn = sg.function([X, picks, W, b], [loss] + sg.gradients(loss, [W, b]))

flat_picks = np.arange(rows) * classes + labels
w, bias = np.zeros((features, classes)), np.zeros(classes)
losses = []
for step in range(201):
    value, dw, db = step_fn(data, flat_picks, w, bias)
    w, bias = w - 0.5 * dw, bias - 0.5 * db
    losses.append(float(value))
    if step % 50 == 0:
        print(f"step {step:3d}  loss {value:.4f}")

predicted = np.argmax(data @ w + bias, axis=1)
print(f"training accuracy: {np.mean(predicted == labels):.3f}")
final_loss = step_fn(data, flat_picks, w, bias)[0]
reference = sg.evaluate(loss, {X: data, picks: flat_picks, W: w, b: bias})
assert np.isclose(final_loss, reference, rtol=1e-9), "compiled loss differs from sg.evaluate"

plt = pyplot(args)
if plt:
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    gx, gy = np.meshgrid(np.linspace(-5, 5, 300), np.linspace(-4.5, 5, 300))
    regions = np.argmax(np.stack([gx.ravel(), gy.ravel()], 1) @ w + bias, axis=1)
    colours = np.array(["tab:red", "tab:blue", "tab:green"])      # class 0, 1, 2
    left.contourf(gx, gy, regions.reshape(gx.shape), levels=[-0.5, 0.5, 1.5, 2.5],
                  colors=colours, alpha=0.15)
    left.scatter(data[:, 0], data[:, 1], c=colours[labels], s=3)
    left.set(aspect="equal", title=f"decision regions, accuracy {np.mean(predicted == labels):.3f}")
    right.plot(losses)
    right.set(xlabel="gradient step", ylabel="mean negative log-likelihood", title="training loss")
    save(fig, args, "softmax_regression.png")
