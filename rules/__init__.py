"""Rewrite-rule families, one per file. Each module exposes `ruleset` and a docstring
that states the transformation (preconditions, before, after).

`FAMILIES` lists the optimizing families `optimize()` runs by default; `analysis` and
`sanity` are support and always run.
"""
FAMILIES = ("inline", "uncache", "anti_inline", "transpose", "matmul", "epilogue", "algebra", "prologue")
ASSUMING = ("finite",)  # families that hold only under a checked assumption (eqsat/assume.py)
