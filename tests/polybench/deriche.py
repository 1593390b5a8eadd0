"""PolyBench/C 4.2 deriche: Deriche's recursive edge-detection filter (horizontal and vertical
passes, causal and anti-causal).

Deviations from the C:
- DATA_TYPE is f32 and the C's SCALAR_VAL literals are Python floats; EXP_FUN is eqsat's
  `exp`.
- `b1 = POW_FUN(2.0, -alpha)` is `exp(-alpha * LN2)` (LN2 = ln 2, a module constant): `**`
  is allowed by a constant exponent only, and here the exponent is the parameter alpha.
  (The C's 2^-alpha, not 2*e^-alpha, is kept: it is what PolyBench 4.2 computes.)
- `c1 = c2 = 1` (int literal into DATA_TYPE) is `c1 = c2 = 1.0`.
- w, h are the dims W, H.
- y1, y2 are parameters of the C kernel used only as scratch and imgOut is fully written;
  all are local buffers here. Returns imgOut, the array PolyBench prints.
"""
import numpy as np

from eqsat import empty, exp, f32, program

LN2 = 0.6931471805599453

SHAPES = {"W": 64, "H": 64}     # MINI_DATASET
MEDIUM = {"W": 720, "H": 480}   # MEDIUM_DATASET
LIFTABLE = False


@program
def deriche(alpha: f32, imgIn: f32["W", "H"]) -> f32["W", "H"]:
    imgOut = empty((W, H))
    y1 = empty((W, H))
    y2 = empty((W, H))
    k = (1.0 - exp(-alpha)) * (1.0 - exp(-alpha)) / (1.0 + 2.0 * alpha * exp(-alpha) - exp(2.0 * alpha))
    a1 = a5 = k
    a2 = a6 = k * exp(-alpha) * (alpha - 1.0)
    a3 = a7 = k * exp(-alpha) * (alpha + 1.0)
    a4 = a8 = -k * exp(-2.0 * alpha)
    b1 = exp(-alpha * LN2)
    b2 = -exp(-2.0 * alpha)
    c1 = c2 = 1.0

    for i in range(W):
        ym1 = 0.0
        ym2 = 0.0
        xm1 = 0.0
        for j in range(H):
            y1[i, j] = a1 * imgIn[i, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
            xm1 = imgIn[i, j]
            ym2 = ym1
            ym1 = y1[i, j]

    for i in range(W):
        yp1 = 0.0
        yp2 = 0.0
        xp1 = 0.0
        xp2 = 0.0
        for j in range(H - 1, -1, -1):
            y2[i, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
            xp2 = xp1
            xp1 = imgIn[i, j]
            yp2 = yp1
            yp1 = y2[i, j]

    for i in range(W):
        for j in range(H):
            imgOut[i, j] = c1 * (y1[i, j] + y2[i, j])

    for j in range(H):
        tm1 = 0.0
        ym1 = 0.0
        ym2 = 0.0
        for i in range(W):
            y1[i, j] = a5 * imgOut[i, j] + a6 * tm1 + b1 * ym1 + b2 * ym2
            tm1 = imgOut[i, j]
            ym2 = ym1
            ym1 = y1[i, j]

    for j in range(H):
        tp1 = 0.0
        tp2 = 0.0
        yp1 = 0.0
        yp2 = 0.0
        for i in range(W - 1, -1, -1):
            y2[i, j] = a7 * tp1 + a8 * tp2 + b1 * yp1 + b2 * yp2
            tp2 = tp1
            tp1 = imgOut[i, j]
            yp2 = yp1
            yp1 = y2[i, j]

    for i in range(W):
        for j in range(H):
            imgOut[i, j] = c2 * (y1[i, j] + y2[i, j])
    return imgOut


def _causal(x, a_0, a_1, b1, b2):
    """y[:, j] = a_0 x[:, j] + a_1 x[:, j-1] + b1 y[:, j-1] + b2 y[:, j-2], zero history."""
    y = np.empty_like(x)
    xm1 = ym1 = ym2 = np.zeros(x.shape[0], dtype=np.float32)
    for j in range(x.shape[1]):
        y[:, j] = a_0 * x[:, j] + a_1 * xm1 + b1 * ym1 + b2 * ym2
        xm1, ym2, ym1 = x[:, j], ym1, y[:, j]
    return y


def _anticausal(x, a_1, a_2, b1, b2):
    """y[:, j] = a_1 x[:, j+1] + a_2 x[:, j+2] + b1 y[:, j+1] + b2 y[:, j+2], zero history."""
    y = np.empty_like(x)
    z = np.zeros(x.shape[0], dtype=np.float32)
    xp1 = xp2 = yp1 = yp2 = z
    for j in range(x.shape[1] - 1, -1, -1):
        y[:, j] = a_1 * xp1 + a_2 * xp2 + b1 * yp1 + b2 * yp2
        xp2, xp1, yp2, yp1 = xp1, x[:, j], yp1, y[:, j]
    return y


def truth(alpha, imgIn):
    al = np.float32(alpha)
    e1, e2 = np.exp(-al), np.exp(np.float32(-2.0) * al)
    k = (1 - e1) * (1 - e1) / (1 + 2 * al * e1 - np.exp(2 * al))
    a1 = k
    a2 = k * e1 * (al - 1)
    a3 = k * e1 * (al + 1)
    a4 = -k * e2
    b1 = np.float32(2.0) ** -al
    b2 = -e2
    x = np.asarray(imgIn, dtype=np.float32)
    out = _causal(x, a1, a2, b1, b2) + _anticausal(x, a3, a4, b1, b2)
    out = _causal(out.T, a1, a2, b1, b2) + _anticausal(out.T, a3, a4, b1, b2)
    return out.T.copy()


def init(rng, sizes=None):
    s = sizes or SHAPES
    return 0.25, rng.random((s["W"], s["H"])).astype(np.float32)
