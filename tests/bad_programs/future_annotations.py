"""A *valid* program in a module using `from __future__ import annotations`.

With postponed evaluation, `fn.__annotations__` holds strings such as "f32['M']";
the front end must resolve them instead of claiming the annotation is missing.
"""
from __future__ import annotations

from eqsat import empty, f32, program


@program
def double(x: f32["M"]) -> f32["M"]:
    y = empty((M,))  # noqa: F821
    for i in range(M):  # noqa: F821
        y[i] = x[i] * 2.0
    return y
