"""A module whose program is rejected when it is imported (used by tests/test_bad_input.py).

The offending line carries the marker `# ERR:module-while`.
"""
from eqsat import empty, f32, program


@program
def halve_until_small(x: f32["M"]) -> f32["M"]:
    y = empty((M,))  # noqa: F821
    for i in range(M):  # noqa: F821
        y[i] = x[i]
    while y[0] > 1.0:  # ERR:module-while
        y[0] = y[0] * 0.5
    return y
