"""The surface of the input language: dtypes, buffer constructors and library functions.

A program is plain Python; these objects make it runnable with numpy (that run is the
oracle, see `eqsat.reference`) and let the front end recognise what a name means.
`empty` is zero-filled on purpose: a program that reads an element it never wrote gets
the same answer from `reference` and from every backend, instead of garbage.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    np_dtype: type
    itemsize: int

    def __getitem__(self, dims) -> TensorType:
        # checked by the front end, which can say where: an exception here would surface
        # while Python defines the function, with no location in the program
        if not isinstance(dims, tuple):
            dims = (dims,)
        return TensorType(self, tuple(dims))

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    dims: tuple[str | int, ...]

    def __repr__(self) -> str:
        return f"{self.dtype.name}[{', '.join(repr(d) for d in self.dims)}]"


f32 = DType("f32", np.float32, 4)
f16 = DType("f16", np.float16, 2)
bf16 = DType("bf16", np.float32, 2)  # numpy has no bfloat16: its values are float32s rounded to it
DTYPES = {"f32": f32, "f16": f16, "bf16": bf16}
# the tensor dtypes the language computes in f32 (a narrower one's values are read into
# f32, results rounded back to it): numpy's forms over tensors read the same for all three
FLOATS = (f32, f16, bf16)


def round_to(x, dtype: DType):
    """float32 values rounded to `dtype` (f16, bf16: to nearest, ties to even), as float32.
    A program computes in f32 (with f32 accumulation); a value of a narrower dtype (an
    argument, a result) is a float32 holding a number that dtype can represent."""
    x = np.asarray(x, dtype=np.float32)
    if dtype is f16:
        return x.astype(np.float16).astype(np.float32)
    if dtype is bf16:
        bits = x.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
        return np.where(np.isnan(x), x, rounded).astype(np.float32)
    return x


def as_dtype(x, dtype: DType):
    """A result in its declared dtype: float16 for f16; float32 holding bf16 values for bf16
    (numpy has no bfloat16); float32 otherwise."""
    if dtype is f16:
        return np.asarray(x, dtype=np.float32).astype(np.float16)
    if dtype is bf16:
        return round_to(x, bf16)
    return x


def empty(shape) -> np.ndarray:
    return np.zeros(shape, dtype=np.float32)


def zeros(shape) -> np.ndarray:
    return np.zeros(shape, dtype=np.float32)


def transpose(x, perm=None):
    return np.transpose(x, perm)


def reshape(x, shape):
    return np.reshape(x, shape)


# the language's functions that change a tensor's shape, not its elements: one table the
# desugaring, the front end and the compiled nests read
SHAPERS = {"transpose": transpose, "reshape": reshape}


def relu(x):
    return np.maximum(x, np.float32(0))


def gelu(x):
    """The tanh approximation, as in GPT-2 and PyTorch's approximate='tanh'."""
    c = np.float32(np.sqrt(2.0 / np.pi))
    return np.float32(0.5) * x * (np.float32(1) + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))


def sigmoid(x):
    return np.float32(1) / (np.float32(1) + np.exp(-x))


def silu(x):
    # sigmoid written out: numba compiles each function alone (loops._lib), and a call to
    # another Python function would not compile
    return x * (np.float32(1) / (np.float32(1) + np.exp(-x)))


def tanh(x):
    return np.tanh(x)


def exp(x):
    return np.exp(x)


def sqrt(x):
    return np.sqrt(x)


def log(x):
    return np.log(x)


def sin(x):
    return np.sin(x)


def cos(x):
    return np.cos(x)


# numpy's functions with no term in the e-graph: a loop nest reading one runs as written
# (compiled by numba, or by numpy on whole tensors), nothing is rewritten through it
def tan(x):
    return np.tan(x)


def arcsin(x):
    return np.arcsin(x)


def arccos(x):
    return np.arccos(x)


def arctan(x):
    return np.arctan(x)


def sinh(x):
    return np.sinh(x)


def cosh(x):
    return np.cosh(x)


def log1p(x):
    return np.log1p(x)


def expm1(x):
    return np.expm1(x)


def log2(x):
    return np.log2(x)


def log10(x):
    return np.log10(x)


def exp2(x):
    return np.exp2(x)


def floor(x):
    return np.floor(x)


def ceil(x):
    return np.ceil(x)


def sign(x):
    return np.sign(x)


def float32(x):
    """numpy's `np.float32(x)`: `x` rounded to float32 (a value of the program already is)."""
    return np.float32(x)


def rounded(x: float) -> np.float32:
    """A Python number rounded to float32 as numpy rounds it (past float32's range: inf),
    without numpy's overflow warning (a constant the backends and the desugaring write)."""
    if abs(x) <= 3.4e38 or x != x:
        return np.float32(x)
    with np.errstate(over="ignore"):
        return np.float32(x)


def clip_below(x, lo):
    """The lower side of numpy's two-bound `np.clip(x, lo, hi)`: lo where lo > x or lo is
    NaN, else x (x itself on a tie: `np.clip(-0.0, 0.0, 1.0)` is -0.0, where
    `np.maximum(-0.0, 0.0)` is 0.0; `np.clip(x, lo, None)` is np.maximum's, by numpy)."""
    return np.clip(x, lo, np.inf)


def clip_above(x, hi):
    """The upper side of numpy's two-bound clip: hi where hi < x or hi is NaN, else x."""
    return np.clip(x, -np.inf, hi)


def float64(x):
    """numpy's `np.float64(x)` (a module constant that is one: no term, `NO_TERM`)."""
    return np.float64(x)


def pyfloat(x):
    """Python's `float(x)` of a number of the program (an element, a float32 local): a Python
    float, float64 and weak under numpy's rules (`float(x[i]) * 1e30 * 1e20` computes in
    float64, `float(x[i]) * y[i]` in float32: `terms.python_number`); of an array (a backend
    evaluating elements together), its float64 values. Also what `math.exp(x[i])` computes
    in: its argument is made a Python float first (the desugaring writes `float`)."""
    return np.float64(x)


def arctan2(y, x):
    return np.arctan2(y, x)


def hypot(x, y):
    return np.hypot(x, y)


def absolute(x):
    """What builtin `abs` means on a value (the language spells it `abs`)."""
    return np.abs(x)


def maximum(x, y):
    return np.maximum(x, y)


def minimum(x, y):
    return np.minimum(x, y)


UNARY = {"relu": relu, "gelu": gelu, "silu": silu, "sigmoid": sigmoid, "tanh": tanh, "exp": exp, "sqrt": sqrt,
         "log": log, "abs": absolute, "sin": sin, "cos": cos,
         "tan": tan, "arcsin": arcsin, "arccos": arccos, "arctan": arctan, "sinh": sinh, "cosh": cosh,
         "log1p": log1p, "expm1": expm1, "log2": log2, "log10": log10, "exp2": exp2, "floor": floor, "ceil": ceil, "sign": sign,
         "float32": float32, "float64": float64, "float": pyfloat}
# the functions of a Python number (`terms.python_number`) the backends compute in float64,
# as the reference does (math's functions of a float, numpy's of a Python float); of the
# others (relu, gelu, sigmoid, silu) the language's float32 function, widened
WIDE = frozenset({"exp", "log", "sqrt", "tanh", "sin", "cos", "abs"})
BINARY = {"maximum": maximum, "minimum": minimum, "clip_below": clip_below, "clip_above": clip_above,
          "arctan2": arctan2, "hypot": hypot}
# the functions above with no term (lowering keeps a nest that reads one as written)
NO_TERM = frozenset({"tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "log1p", "expm1", "log2", "log10",
                     "exp2", "floor", "ceil", "sign", "arctan2", "hypot", "float64"})
BUILDERS = {"empty": empty, "zeros": zeros}
