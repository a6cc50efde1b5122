"""The custom_gradient and define_op presets that v2 cases name (``attrs.fn`` /
``attrs.formula``), written as TF's recording script wrote them.

>>> sorted(CUSTOM)
['clip_grad_norm', 'log1pexp', 'mul_grad_swap', 'sin_grad3cos']
>>> sorted(DEFINED)
['bilinear_sin', 'gauss_bump', 'underivable']
"""

from __future__ import annotations

import numpy as np
import sympy as sp

import symgrad as sg


@sg.custom_gradient
def log1pexp(x):
    e = sg.exp(x)
    return sg.log(1.0 + e), lambda up: up * (1.0 - 1.0 / (1.0 + e))


@sg.custom_gradient
def sin_grad3cos(x):
    return sg.sin(x), lambda up: 3.0 * up * sg.cos(x)


@sg.custom_gradient
def mul_grad_swap(x, y):
    return x * y, lambda up: (up * y, up)


@sg.custom_gradient
def clip_grad_norm(x):
    return sg.identity(x), lambda up: sg.minimum(sg.maximum(up, -0.5), 0.5)


CUSTOM = {f.__name__: f for f in (log1pexp, sin_grad3cos, mul_grad_swap, clip_grad_norm)}
_g = sp.Function("g")
DEFINED = {
    "gauss_bump": sg.define_op("gauss_bump", lambda x: x * sp.exp(-x**2)),
    "bilinear_sin": sg.define_op("bilinear_sin", lambda x, y: x * y + sp.sin(x)),
    "underivable": sg.define_op("underivable", lambda x: _g(x), numpy=lambda x: np.array(x)),
}
