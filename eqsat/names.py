"""Names the source passes share (`eqsat/desugar.py`, `eqsat/sections.py`,
`eqsat/reductions.py`): the prefix of the names eqsat binds to the language's functions,
and the shape a value has where it is a number."""
from __future__ import annotations

LIB = "eqsat_lib_"  # prefix of the names eqsat binds to the language's functions
SCALAR = "scalar"  # (`desugar._Env.value_shape` of a number)
