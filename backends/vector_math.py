"""exp, log, sigmoid, silu, tanh and gelu for compiled CPU code (numba), in a form LLVM vectorizes.

numba compiles `np.exp` on a scalar to a call of the C library's `expf`, which no loop
vectorizes: 1.2 ms for 512k float32 elements here, where numpy's own exp (SIMD) takes
0.23 ms, so a compiled kernel or kept nest with an exp in it (softmax, log-sum-exp,
sigmoid, silu) ran several times slower than the same pass in numpy. `expf` below is
straight-line float32 code without calls or branches (Cody-Waite range reduction, a
degree-6 polynomial as in Cephes' expf, the power of two built from its bits): inside a
loop LLVM vectorizes it, 0.25 ms for the same elements. It agrees with the exact value to
within 2e-7 relatively (numpy's float32 exp: within 2.4 ulp), keeps NaN, gives inf past
88.72, and subnormal results down to 2**-149. `tanhf` is Cephes' tanhf made branch-free:
an odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above (both computed, one
chosen), within 3e-7 of the exact value; `logf` Cephes' logf likewise (the exponent and
mantissa from the bits, subnormals scaled first), within 2e-7.

Generated kernels (`cpu_kernels`) call the scalar forms (`SCALAR`), inlined, so each
vectorizes; kept nests, whose calls may take arrays, call functions numba resolves by type
(`FUNCTIONS`: a scalar through the forms here, a float32 as the reference computes it, an
array through numpy's own), where LLVM inlines exp, log, sigmoid and silu but not tanh
and gelu."""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from eqsat import lang


@intrinsic
def _f32_bits(typingctx, i):
    """The float32 whose bits are int32 `i`."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return sig, codegen


@intrinsic
def _i32_bits(typingctx, f):
    """The int32 whose bits are float32 `f`."""
    sig = types.int32(types.float32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return sig, codegen


@numba.njit(inline="always", cache=True, error_model="numpy")
def expf(vm_in):
    vm_e_x = np.float32(vm_in)
    vm_e_xc = vm_e_x if vm_e_x == vm_e_x else np.float32(0.0)
    # past these the result is inf or 0 either way; inside them 2**k splits into two normal
    # powers of two, so subnormal results come out right
    vm_e_xc = np.float32(89.0) if vm_e_xc > np.float32(89.0) else (np.float32(-104.0) if vm_e_xc < np.float32(-104.0) else vm_e_xc)
    vm_e_fk = np.floor(vm_e_xc * np.float32(1.44269504088896341) + np.float32(0.5))
    vm_e_r = vm_e_xc - vm_e_fk * np.float32(0.693359375) + vm_e_fk * np.float32(2.12194440e-4)  # x - k ln 2, in two parts
    vm_e_p = np.float32(1.9875691500e-4)
    vm_e_p = vm_e_p * vm_e_r + np.float32(1.3981999507e-3)
    vm_e_p = vm_e_p * vm_e_r + np.float32(8.3334519073e-3)
    vm_e_p = vm_e_p * vm_e_r + np.float32(4.1665795894e-2)
    vm_e_p = vm_e_p * vm_e_r + np.float32(1.6666665459e-1)
    vm_e_p = vm_e_p * vm_e_r + np.float32(5.0000001201e-1)
    vm_e_p = vm_e_p * vm_e_r * vm_e_r + vm_e_r + np.float32(1.0)
    vm_e_k = np.int32(vm_e_fk)
    vm_e_k1 = vm_e_k >> 1
    vm_e_out = vm_e_p * _f32_bits(np.int32((vm_e_k1 + 127) << 23)) * _f32_bits(np.int32((vm_e_k - vm_e_k1 + 127) << 23))
    return vm_e_out if vm_e_x == vm_e_x else vm_e_x


@numba.njit(inline="always", cache=True, error_model="numpy")
def tanhf(vm_in):
    vm_t_x = np.float32(vm_in)
    vm_t_a = vm_t_x if vm_t_x >= np.float32(0.0) else -vm_t_x
    vm_t_z = vm_t_x * vm_t_x
    # (x * (1 + z p), not x + x z p: -0.0 stays -0.0, as numpy's tanh keeps it)
    vm_t_small = vm_t_x * (((((np.float32(-5.70498872745e-3) * vm_t_z + np.float32(2.06390887954e-2)) * vm_t_z
                           - np.float32(5.37397155531e-2)) * vm_t_z + np.float32(1.33314422036e-1)) * vm_t_z
                         - np.float32(3.33332819422e-1)) * vm_t_z + np.float32(1.0))
    vm_t_big = np.float32(1.0) - np.float32(2.0) / (expf(vm_t_a + vm_t_a) + np.float32(1.0))
    vm_t_big = vm_t_big if vm_t_x >= np.float32(0.0) else -vm_t_big
    vm_t_out = vm_t_small if vm_t_a < np.float32(0.625) else vm_t_big
    return vm_t_out if vm_t_x == vm_t_x else vm_t_x


@numba.njit(inline="always", cache=True, error_model="numpy")
def logf(vm_in):
    vm_l_x = np.float32(vm_in)
    vm_l_tiny = vm_l_x < np.float32(1.17549435e-38)  # subnormal (or zero, negative): scaled into the normals
    vm_l_v = vm_l_x * np.float32(8388608.0) if vm_l_tiny else vm_l_x
    vm_l_v = vm_l_v if vm_l_v > np.float32(0.0) else np.float32(1.0)  # (the result is decided below)
    vm_l_bits = _i32_bits(vm_l_v)
    vm_l_e = np.float32(((vm_l_bits >> 23) & 0xFF) - 126 - (23 if vm_l_tiny else 0))
    vm_l_m = _f32_bits(np.int32((vm_l_bits & 0x7FFFFF) | 0x3F000000))  # v = m 2**e, m in [0.5, 1)
    vm_l_low = vm_l_m < np.float32(0.707106781186547524)
    vm_l_e = vm_l_e - np.float32(1.0) if vm_l_low else vm_l_e
    vm_l_m = (vm_l_m + vm_l_m - np.float32(1.0)) if vm_l_low else (vm_l_m - np.float32(1.0))
    vm_l_z = vm_l_m * vm_l_m
    vm_l_y = np.float32(7.0376836292e-2)
    vm_l_y = vm_l_y * vm_l_m - np.float32(1.1514610310e-1)
    vm_l_y = vm_l_y * vm_l_m + np.float32(1.1676998740e-1)
    vm_l_y = vm_l_y * vm_l_m - np.float32(1.2420140846e-1)
    vm_l_y = vm_l_y * vm_l_m + np.float32(1.4249322787e-1)
    vm_l_y = vm_l_y * vm_l_m - np.float32(1.6668057665e-1)
    vm_l_y = vm_l_y * vm_l_m + np.float32(2.0000714765e-1)
    vm_l_y = vm_l_y * vm_l_m - np.float32(2.4999993993e-1)
    vm_l_y = vm_l_y * vm_l_m + np.float32(3.3333331174e-1)
    vm_l_y = vm_l_y * vm_l_m * vm_l_z
    vm_l_y = vm_l_y - np.float32(2.12194440e-4) * vm_l_e - np.float32(0.5) * vm_l_z
    vm_l_out = vm_l_m + vm_l_y + np.float32(0.693359375) * vm_l_e
    vm_l_out = vm_l_out if vm_l_x < np.float32(np.inf) else vm_l_x  # inf -> inf
    vm_l_out = vm_l_out if vm_l_x > np.float32(0.0) else (np.float32(-np.inf) if vm_l_x == np.float32(0.0) else np.float32(np.nan))
    return vm_l_out if vm_l_x == vm_l_x else vm_l_x


@numba.njit(inline="always", cache=True, error_model="numpy")
def sigmoidf(vm_in):
    return np.float32(1) / (np.float32(1) + expf(-np.float32(vm_in)))


@numba.njit(inline="always", cache=True, error_model="numpy")
def siluf(vm_in):
    return np.float32(vm_in) * (np.float32(1) / (np.float32(1) + expf(-np.float32(vm_in))))


_GELU_C = np.float32(np.sqrt(2.0 / np.pi))


@numba.njit(inline="always", cache=True, error_model="numpy")
def geluf(vm_in):
    vm_g = np.float32(vm_in)
    return np.float32(0.5) * vm_g * (np.float32(1) + tanhf(_GELU_C * (vm_g + np.float32(0.044715) * vm_g * vm_g * vm_g)))


# Generated kernels (`cpu_kernels`: every call on a scalar): the scalar forms, inlined, so
# every one of them vectorizes.
SCALAR = {"exp": expf, "log": logf, "sigmoid": sigmoidf, "silu": siluf, "tanh": tanhf, "gelu": geluf}


def _scalar(t) -> bool:
    return isinstance(t, (types.Float, types.Integer, types.Boolean))


def _by_type(name: str, scalar):
    """A function numba resolves by its argument's type: `scalar` (a form above) on a float32
    scalar, the language's own function (numpy's, compiled) on an array or a float64 or
    integer scalar. Its overload is not inlined
    at numba's level: an inlined overload in a loop that also wrote through a transposed view
    lost those writes (numba 0.68; a kept nest of the differential campaign)."""
    array = numba.njit(cache=True, error_model="numpy")(lang.UNARY[name])

    def stub(vm_a):
        raise NotImplementedError

    stub.__name__ = stub.__qualname__ = f"eqsat_{name}"

    @overload(stub)
    def impl(vm_a):
        if _scalar(vm_a) and not (isinstance(vm_a, types.Float) and vm_a.bitwidth == 64 or
                                  isinstance(vm_a, types.Integer)):
            return lambda vm_a: scalar(vm_a)
        # (an array; or a Python number, float64 as the reference computes it: `math.exp(x[i])`
        # is exp of a Python float, which float32's exp overflows past 88.7)
        return lambda vm_a: array(vm_a)

    return stub


# Kept nests (the user's code: a call may take a scalar or an array; `loops._scalar_calls`
# binds the calls it can prove scalar to SCALAR instead): LLVM still inlines exp, log,
# sigmoid and silu into the loops, not tanh and gelu.
FUNCTIONS = {name: _by_type(name, f) for name, f in SCALAR.items()}


def _float_zero(t):
    """A zero of the float type `t` (a numba type; float32 unless it is float64)."""
    return np.float64(0) if isinstance(t, types.Float) and t.bitwidth == 64 else np.float32(0)


def _stub(name: str):
    def stub(*vm_a):
        raise NotImplementedError

    stub.__name__ = stub.__qualname__ = f"eqsat_exact_{name}"
    return stub


def _exact():
    """relu, sign, maximum, minimum and np.clip's sides as numpy gives them, zeros' signs included: numba's
    own `np.maximum(-0.0, 0.0)` is -0.0 (numpy's 0.0: on a tie the second operand) and its
    `np.sign(-0.0)` -0.0 (numpy's 0.0), so a kept nest or compiled kernel computing
    `relu(x)` gave -0.0 where the reference gives 0.0."""
    relu, sign, maximum, minimum = (_stub(n) for n in ("relu", "sign", "maximum", "minimum"))

    @overload(relu)
    def relu_impl(vm_a):
        zero = _float_zero(getattr(vm_a, "dtype", vm_a))
        if _scalar(vm_a):
            return lambda vm_a: vm_a if (vm_a > zero or vm_a != vm_a) else zero
        return lambda vm_a: np.where((vm_a > zero) | (vm_a != vm_a), vm_a, zero)

    @overload(sign)
    def sign_impl(vm_a):
        zero = _float_zero(getattr(vm_a, "dtype", vm_a))
        return lambda vm_a: np.sign(vm_a) + zero  # (-0.0 + 0.0 is 0.0)

    def choice(greater: bool):
        def impl(vm_a, vm_b):  # numpy's: NaN from either, `a` where it wins, else `b`
            if _scalar(vm_a) and _scalar(vm_b):
                if greater:
                    return lambda vm_a, vm_b: vm_a if (vm_a != vm_a or vm_a > vm_b) else vm_b
                return lambda vm_a, vm_b: vm_a if (vm_a != vm_a or vm_a < vm_b) else vm_b
            if greater:
                return lambda vm_a, vm_b: np.where((vm_a != vm_a) | (vm_a > vm_b), vm_a, vm_b)
            return lambda vm_a, vm_b: np.where((vm_a != vm_a) | (vm_a < vm_b), vm_a, vm_b)
        return impl

    overload(maximum)(choice(True))
    overload(minimum)(choice(False))
    clip_below, clip_above = _stub("clip_below"), _stub("clip_above")

    def bound(below: bool):
        def impl(vm_a, vm_b):  # np.clip's side: the bound where it wins or is NaN, else `a`
            if _scalar(vm_a) and _scalar(vm_b):
                if below:
                    return lambda vm_a, vm_b: vm_b if (vm_b > vm_a or vm_b != vm_b) else vm_a
                return lambda vm_a, vm_b: vm_b if (vm_b < vm_a or vm_b != vm_b) else vm_a
            if below:
                return lambda vm_a, vm_b: np.where((vm_b > vm_a) | (vm_b != vm_b), vm_b, vm_a)
            return lambda vm_a, vm_b: np.where((vm_b < vm_a) | (vm_b != vm_b), vm_b, vm_a)
        return impl

    overload(clip_below)(bound(True))
    overload(clip_above)(bound(False))
    return {"relu": relu, "sign": sign, "maximum": maximum, "minimum": minimum,
            "clip_below": clip_below, "clip_above": clip_above}


# the language's functions whose numba forms differ from numpy's (`loops._lib` binds these)
EXACT = _exact()


_NOT_INLINED: dict = {}


def scalar_not_inlined() -> dict:
    """`SCALAR`'s forms compiled as functions numba calls rather than inlines (`loops.build`,
    for a nest with many calls: compiling stays linear in their number)."""
    if not _NOT_INLINED:
        for name, f in SCALAR.items():
            _NOT_INLINED[name] = numba.njit(cache=True, error_model="numpy", inline="never")(f.py_func)
    return _NOT_INLINED
