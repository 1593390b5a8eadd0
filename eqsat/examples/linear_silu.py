"""The tutorial's program: a linear layer with SiLU written out (`h * sigmoid(h)`).
With eqsat/examples/silu_rule.py its epilogue is the one op `silu`."""
from eqsat import f32, program, sigmoid

SHAPES = {"M": 64, "K": 32, "N": 48}


@program
def linear_silu(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
    h = x @ w
    return h * sigmoid(h)


def truth(x, w):
    import numpy as np

    h = x.astype(np.float64) @ w.astype(np.float64)
    return h / (1.0 + np.exp(-h))
