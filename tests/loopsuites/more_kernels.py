"""More loop kernels, written the way people write them in Python: BLAS levels 1-3,
image processing, DSP filters, ML layers written as loops, physics stencils, and mixed
loop/library forms (ported by this project's held-out-kernel probe of 2026-11-26, which
found the batchnorm nest running interpreted, the 2-D convolution's clamped reads, the
missed symmetric matmul and the refused output-only dimension).

K[name] = (program, sizes at which bench/loopsuites_bench.py times it, extra): `extra`
holds the values of its scalar and integer parameters. SMALL[name]: the sizes
tests/test_loop_suites.py runs it at against `reference`. NP[name]: the same computation
in plain numpy, where one is natural.
"""
import numpy as np
from eqsat import f32, program, zeros, empty, exp, sqrt, log, relu, gelu, tanh, transpose, maximum

K, SMALL, NP = {}, {}, {}


def reg(sizes, small, **extra):
    def deco(p):
        K[p.name] = (p, dict(sizes), extra)
        SMALL[p.name] = dict(small)
        return p
    return deco


V = {"N": 1_000_000}
VS = {"N": 300}
MAT = {"M": 2000, "N": 2000}
MATS = {"M": 24, "N": 20}

# ------------------------------------------------------------------ BLAS level 1
@reg(V, VS, alpha=1.5, beta=0.5)
@program
def axpby(alpha: f32, beta: f32, x: f32["N"], y: f32["N"]) -> f32["N"]:
    for i in range(N):
        y[i] = alpha * x[i] + beta * y[i]
    return y
NP["axpby"] = lambda alpha, beta, x, y: np.float32(alpha) * x + np.float32(beta) * y


@reg(V, VS, sb=0.25)
@program
def sdsdot(sb: f32, x: f32["N"], y: f32["N"]) -> f32:
    s = sb
    for i in range(N):
        s += x[i] * y[i]
    return s
NP["sdsdot"] = lambda sb, x, y: np.float32(sb) + x @ y


@reg(V, VS)
@program
def nrm2(x: f32["N"]) -> f32:
    ssq = 0.0
    for i in range(N):
        ssq = ssq + x[i] * x[i]
    return sqrt(ssq)
NP["nrm2"] = lambda x: np.sqrt(x @ x)


@reg(V, VS)
@program
def asum(x: f32["N"]) -> f32:
    s = 0.0
    for i in range(N):
        s += abs(x[i])
    return s
NP["asum"] = lambda x: np.abs(x).sum()


@reg(V, VS, c=0.8, s=0.6)
@program
def drot(c: f32, s: f32, x: f32["N"], y: f32["N"]):
    for i in range(N):
        t = c * x[i] + s * y[i]
        y[i] = c * y[i] - s * x[i]
        x[i] = t
    return x, y


@reg(V, VS)
@program
def amax_abs(x: f32["N"]) -> f32:
    m = 0.0
    for i in range(N):
        m = max(m, abs(x[i]))
    return m
NP["amax_abs"] = lambda x: np.abs(x).max()


# ------------------------------------------------------------------ BLAS level 2
@reg(MAT, MATS, alpha=1.5, beta=0.5)
@program
def gemv_n(alpha: f32, beta: f32, A: f32["M", "N"], x: f32["N"], y: f32["M"]) -> f32["M"]:
    for i in range(M):
        acc = 0.0
        for j in range(N):
            acc += A[i, j] * x[j]
        y[i] = alpha * acc + beta * y[i]
    return y
NP["gemv_n"] = lambda alpha, beta, A, x, y: np.float32(alpha) * (A @ x) + np.float32(beta) * y


@reg(MAT, MATS)
@program
def gemv_t(A: f32["M", "N"], x: f32["M"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(M):
        for j in range(N):
            y[j] += A[i, j] * x[i]
    return y
NP["gemv_t"] = lambda A, x: x @ A


@reg(MAT, MATS, alpha=0.5)
@program
def ger(alpha: f32, A: f32["M", "N"], x: f32["M"], y: f32["N"]) -> f32["M", "N"]:
    for i in range(M):
        for j in range(N):
            A[i, j] += alpha * x[i] * y[j]
    return A
NP["ger"] = lambda alpha, A, x, y: A + np.float32(alpha) * np.outer(x, y)


@reg({"N": 2000}, {"N": 20})
@program
def symv_lower(A: f32["N", "N"], x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    for i in range(N):
        t = 0.0
        for j in range(N):
            if j <= i:
                t += A[i, j] * x[j]
            else:
                t += A[j, i] * x[j]
        y[i] = t
    return y
NP["symv_lower"] = lambda A, x: (np.tril(A) + np.tril(A, -1).T) @ x


@reg({"N": 2000}, {"N": 20})
@program
def trmv_upper(A: f32["N", "N"], x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(N):
        for j in range(i, N):
            y[i] += A[i, j] * x[j]
    return y
NP["trmv_upper"] = lambda A, x: np.triu(A) @ x


@reg({"N": 2000}, {"N": 20})
@program
def trsv_upper(U: f32["N", "N"], b: f32["N"]) -> f32["N"]:
    x = empty((N,))
    for i in range(N - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, N):
            s -= U[i, j] * x[j]
        x[i] = s / U[i, i]
    return x


@reg(MAT, MATS, alpha=0.5)
@program
def syr2_full(alpha: f32, A: f32["M", "N"], x: f32["M"], y: f32["N"], u: f32["M"], v: f32["N"]) -> f32["M", "N"]:
    for i in range(M):
        for j in range(N):
            A[i, j] = A[i, j] + alpha * (x[i] * y[j] + u[i] * v[j])
    return A


# ------------------------------------------------------------------ BLAS level 3
G = {"M": 256, "N": 256, "K": 256}
GS = {"M": 12, "N": 10, "K": 8}


@reg(G, GS, alpha=1.5, beta=0.5)
@program
def gemm_nt_ab(alpha: f32, beta: f32, A: f32["M", "K"], B: f32["N", "K"], C: f32["M", "N"]) -> f32["M", "N"]:
    out = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += A[i, k] * B[j, k]
            out[i, j] = alpha * acc + beta * C[i, j]
    return out
NP["gemm_nt_ab"] = lambda alpha, beta, A, B, C: np.float32(alpha) * (A @ B.T) + np.float32(beta) * C


@reg(G, GS)
@program
def gemm_tn(A: f32["K", "M"], B: f32["K", "N"]) -> f32["M", "N"]:
    C = zeros((M, N))
    for k in range(K):
        for i in range(M):
            for j in range(N):
                C[i, j] += A[k, i] * B[k, j]
    return C
NP["gemm_tn"] = lambda A, B: A.T @ B


@reg(G, GS)
@program
def gemm_jki(A: f32["M", "K"], B: f32["K", "N"]) -> f32["M", "N"]:
    C = empty((M, N))
    for j in range(N):
        for i in range(M):
            C[i, j] = 0.0
        for k in range(K):
            for i in range(M):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]
    return C
NP["gemm_jki"] = lambda A, B: A @ B


@reg({"M": 256, "N": 512}, {"M": 8, "N": 12})
@program
def gram(X: f32["M", "N"]) -> f32["N", "N"]:
    G = empty((N, N))
    for i in range(N):
        for j in range(N):
            s = 0.0
            for k in range(M):
                s += X[k, i] * X[k, j]
            G[i, j] = s
    return G
NP["gram"] = lambda X: X.T @ X


@reg({"M": 256, "N": 256}, {"M": 10, "N": 8})
@program
def trmm_right_upper(B: f32["M", "N"], A: f32["N", "N"]) -> f32["M", "N"]:
    out = zeros((M, N))
    for i in range(M):
        for j in range(N):
            for k in range(j + 1):
                out[i, j] += B[i, k] * A[k, j]
    return out
NP["trmm_right_upper"] = lambda B, A: B @ np.triu(A)


@reg({"M": 256, "N": 256}, {"M": 10, "N": 8}, alpha=1.5)
@program
def symm_right_lower(alpha: f32, B: f32["M", "N"], A: f32["N", "N"]) -> f32["M", "N"]:
    C = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(N):
                a = A[k, j] if k >= j else A[j, k]
                acc += B[i, k] * a
            C[i, j] = alpha * acc
    return C
NP["symm_right_lower"] = lambda alpha, B, A: np.float32(alpha) * (B @ (np.tril(A) + np.tril(A, -1).T))


@reg({"M": 256, "N": 256}, {"M": 6, "N": 8}, alpha=0.5, beta=1.5)
@program
def syr2k_full(alpha: f32, beta: f32, A: f32["N", "M"], B: f32["N", "M"], C: f32["N", "N"]) -> f32["N", "N"]:
    for i in range(N):
        for j in range(N):
            C[i, j] *= beta
            for k in range(M):
                C[i, j] += alpha * (A[i, k] * B[j, k] + B[i, k] * A[j, k])
    return C
NP["syr2k_full"] = lambda alpha, beta, A, B, C: np.float32(beta) * C + np.float32(alpha) * (A @ B.T + B @ A.T)


# ------------------------------------------------------------------ image processing
IMG = {"H": 1024, "W": 1024}
IMGS = {"H": 14, "W": 12}


@reg(IMG, IMGS)
@program
def rgb2gray(img: f32["H", "W", 3]) -> f32["H", "W"]:
    g = empty((H, W))
    for i in range(H):
        for j in range(W):
            g[i, j] = 0.299 * img[i, j, 0] + 0.587 * img[i, j, 1] + 0.114 * img[i, j, 2]
    return g
NP["rgb2gray"] = lambda img: np.float32(0.299) * img[..., 0] + np.float32(0.587) * img[..., 1] + np.float32(0.114) * img[..., 2]


@reg(IMG, IMGS)
@program
def alpha_blend(fg: f32["H", "W"], bg: f32["H", "W"], a: f32["H", "W"]) -> f32["H", "W"]:
    out = empty((H, W))
    for i in range(H):
        for j in range(W):
            out[i, j] = a[i, j] * fg[i, j] + (1.0 - a[i, j]) * bg[i, j]
    return out
NP["alpha_blend"] = lambda fg, bg, a: a * fg + (np.float32(1) - a) * bg


@reg(IMG, IMGS)
@program
def box3x3(img: f32["H", "W"]) -> f32["H", "W"]:
    out = zeros((H, W))
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s += img[i + di - 1, j + dj - 1]
            out[i, j] = s / 9.0
    return out


@reg(IMG, IMGS)
@program
def box3x3_sep(img: f32["H", "W"]) -> f32["H", "W"]:
    tmp = zeros((H, W))
    out = zeros((H, W))
    for i in range(H):
        for j in range(1, W - 1):
            tmp[i, j] = img[i, j - 1] + img[i, j] + img[i, j + 1]
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            out[i, j] = (tmp[i - 1, j] + tmp[i, j] + tmp[i + 1, j]) * (1.0 / 9.0)
    return out


@reg(IMG, IMGS)
@program
def gauss5_sep(img: f32["H", "W"], wt: f32[5]) -> f32["H", "W"]:
    tmp = zeros((H, W))
    out = zeros((H, W))
    for i in range(H):
        for j in range(2, W - 2):
            s = 0.0
            for k in range(5):
                s += wt[k] * img[i, j + k - 2]
            tmp[i, j] = s
    for i in range(2, H - 2):
        for j in range(W):
            s = 0.0
            for k in range(5):
                s += wt[k] * tmp[i + k - 2, j]
            out[i, j] = s
    return out


@reg(IMG, IMGS, amount=0.7)
@program
def unsharp(amount: f32, img: f32["H", "W"]) -> f32["H", "W"]:
    out = empty((H, W))
    for i in range(H):
        for j in range(W):
            out[i, j] = img[i, j]
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            blur = (img[i - 1, j - 1] + 2.0 * img[i - 1, j] + img[i - 1, j + 1]
                    + 2.0 * img[i, j - 1] + 4.0 * img[i, j] + 2.0 * img[i, j + 1]
                    + img[i + 1, j - 1] + 2.0 * img[i + 1, j] + img[i + 1, j + 1]) / 16.0
            out[i, j] = img[i, j] + amount * (img[i, j] - blur)
    return out


@reg(IMG, IMGS)
@program
def sobel(img: f32["H", "W"]) -> f32["H", "W"]:
    mag = zeros((H, W))
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            gx = (img[i - 1, j + 1] + 2.0 * img[i, j + 1] + img[i + 1, j + 1]
                  - img[i - 1, j - 1] - 2.0 * img[i, j - 1] - img[i + 1, j - 1])
            gy = (img[i + 1, j - 1] + 2.0 * img[i + 1, j] + img[i + 1, j + 1]
                  - img[i - 1, j - 1] - 2.0 * img[i - 1, j] - img[i - 1, j + 1])
            mag[i, j] = sqrt(gx * gx + gy * gy)
    return mag


@reg(IMG, IMGS, kappa=0.04)
@program
def harris(kappa: f32, img: f32["H", "W"]) -> f32["H", "W"]:
    ixx = zeros((H, W))
    iyy = zeros((H, W))
    ixy = zeros((H, W))
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            ix = 0.5 * (img[i, j + 1] - img[i, j - 1])
            iy = 0.5 * (img[i + 1, j] - img[i - 1, j])
            ixx[i, j] = ix * ix
            iyy[i, j] = iy * iy
            ixy[i, j] = ix * iy
    r = zeros((H, W))
    for i in range(2, H - 2):
        for j in range(2, W - 2):
            sxx = 0.0
            syy = 0.0
            sxy = 0.0
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    sxx += ixx[i + di, j + dj]
                    syy += iyy[i + di, j + dj]
                    sxy += ixy[i + di, j + dj]
            det = sxx * syy - sxy * sxy
            tr = sxx + syy
            r[i, j] = det - kappa * tr * tr
    return r


@reg(IMG, IMGS, t=0.1)
@program
def threshold(t: f32, img: f32["H", "W"]) -> f32["H", "W"]:
    out = empty((H, W))
    for i in range(H):
        for j in range(W):
            if img[i, j] > t:
                out[i, j] = 1.0
            else:
                out[i, j] = 0.0
    return out
NP["threshold"] = lambda t, img: (img > np.float32(t)).astype(np.float32)


@reg({"H": 1024, "W": 1024}, {"H": 8, "W": 10})
@program
def downsample2(img: f32["H", "W"]):
    out = empty((H // 2, W // 2))
    for i in range(H // 2):
        for j in range(W // 2):
            out[i, j] = 0.25 * (img[2 * i, 2 * j] + img[2 * i + 1, 2 * j] + img[2 * i, 2 * j + 1] + img[2 * i + 1, 2 * j + 1])
    return out
NP["downsample2"] = lambda img: np.float32(0.25) * (img[0::2, 0::2] + img[1::2, 0::2] + img[0::2, 1::2] + img[1::2, 1::2])


@reg(IMG, IMGS)
@program
def local_contrast(img: f32["H", "W"]) -> f32["H", "W"]:
    out = zeros((H, W))
    for i in range(1, H - 1):
        for j in range(1, W - 1):
            m = 0.0
            q = 0.0
            for di in range(3):
                for dj in range(3):
                    v = img[i + di - 1, j + dj - 1]
                    m += v
                    q += v * v
            m = m / 9.0
            var = q / 9.0 - m * m
            out[i, j] = (img[i, j] - m) / sqrt(max(var, 0.0) + 1e-3)
    return out


# ------------------------------------------------------------------ DSP
@reg({"N": 1_000_000}, {"N": 200}, b0=0.2, b1=0.3, b2=0.2, a1=-0.5, a2=0.1)
@program
def biquad(b0: f32, b1: f32, b2: f32, a1: f32, a2: f32, x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    y[0] = b0 * x[0]
    y[1] = b0 * x[1] + b1 * x[0] - a1 * y[0]
    for n in range(2, N):
        y[n] = b0 * x[n] + b1 * x[n - 1] + b2 * x[n - 2] - a1 * y[n - 1] - a2 * y[n - 2]
    return y


@reg({"N": 500_000, "T": 16}, {"N": 200, "T": 5})
@program
def conv1d_full(x: f32["N"], h: f32["T"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(T - 1, N):
        for k in range(T):
            y[i] += h[k] * x[i - k]
    return y
NP["conv1d_full"] = lambda x, h: np.concatenate([np.zeros(len(h) - 1, np.float32), np.convolve(x, h, "valid").astype(np.float32)])


@reg({"H": 512, "W": 512, "R": 5}, {"H": 12, "W": 11, "R": 3})
@program
def conv2d_valid(img: f32["H", "W"], w: f32["R", "R"]) -> f32["H", "W"]:
    out = zeros((H, W))
    for i in range(H - R + 1):
        for j in range(W - R + 1):
            for u in range(R):
                for v in range(R):
                    out[i, j] += img[i + u, j + v] * w[u, v]
    return out


@reg({"N": 1_000_000}, {"N": 200})
@program
def moving_avg8(x: f32["N"]) -> f32["N"]:
    y = zeros((N,))
    for i in range(N - 7):
        s = 0.0
        for k in range(8):
            s += x[i + k]
        y[i] = s * 0.125
    return y


@reg({"N": 250_000, "T": 16, "L": 1_000_016}, {"N": 40, "T": 4, "L": 164})
@program
def decimate4(x: f32["L"], h: f32["T"], y: f32["N"]) -> f32["N"]:
    for i in range(N):
        acc = 0.0
        for k in range(T):
            acc += x[4 * i + k] * h[k]
        y[i] = acc
    return y


@reg(V, VS)
@program
def prefix_sum(x: f32["N"]) -> f32["N"]:
    s = empty((N,))
    s[0] = x[0]
    for i in range(1, N):
        s[i] = s[i - 1] + x[i]
    return s
NP["prefix_sum"] = lambda x: np.cumsum(x, dtype=np.float32)


@reg(V, VS)
@program
def running_mean(x: f32["N"]) -> f32["N"]:
    y = empty((N,))
    acc = 0.0
    for i in range(N):
        acc += x[i]
        y[i] = acc / (i + 1)
    return y


@reg({"R": 5, "MP": 260, "NP": 260}, {"R": 3, "MP": 10, "NP": 11})
@program
def xcorr2d_same(a: f32["MP", "NP"], t: f32["R", "R"]):
    out = empty((MP - R + 1, NP - R + 1))
    for i in range(MP - R + 1):
        for j in range(NP - R + 1):
            s = 0.0
            for u in range(R):
                for v in range(R):
                    s += a[i + u, j + v] * t[R - 1 - u, R - 1 - v]
            out[i, j] = s
    return out


# ------------------------------------------------------------------ ML layers
ROWS = {"M": 2048, "D": 512}
ROWSS = {"M": 6, "D": 16}


@reg(ROWS, ROWSS)
@program
def layernorm(x: f32["M", "D"], g: f32["D"], b: f32["D"]) -> f32["M", "D"]:
    y = empty((M, D))
    for i in range(M):
        mean = 0.0
        for j in range(D):
            mean += x[i, j]
        mean = mean / D
        var = 0.0
        for j in range(D):
            var += (x[i, j] - mean) * (x[i, j] - mean)
        var = var / D
        rstd = 1.0 / sqrt(var + 1e-5)
        for j in range(D):
            y[i, j] = (x[i, j] - mean) * rstd * g[j] + b[j]
    return y
def _ln(x, g, b):
    m = x.mean(1, keepdims=True); v = ((x - m) ** 2).mean(1, keepdims=True)
    return (x - m) / np.sqrt(v + np.float32(1e-5)) * g + b
NP["layernorm"] = _ln


@reg(ROWS, ROWSS)
@program
def rmsnorm(x: f32["M", "D"], g: f32["D"]) -> f32["M", "D"]:
    y = empty((M, D))
    for i in range(M):
        ss = 0.0
        for j in range(D):
            ss += x[i, j] ** 2
        r = 1.0 / sqrt(ss / D + 1e-6)
        for j in range(D):
            y[i, j] = x[i, j] * r * g[j]
    return y
NP["rmsnorm"] = lambda x, g: x / np.sqrt((x * x).mean(1, keepdims=True) + np.float32(1e-6)) * g


@reg(ROWS, ROWSS)
@program
def softmax_rows(x: f32["M", "D"]) -> f32["M", "D"]:
    y = empty((M, D))
    for i in range(M):
        m = x[i, 0]
        for j in range(1, D):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(D):
            y[i, j] = exp(x[i, j] - m)
            s += y[i, j]
        for j in range(D):
            y[i, j] = y[i, j] / s
    return y
def _sm(x):
    e = np.exp(x - x.max(1, keepdims=True)); return e / e.sum(1, keepdims=True)
NP["softmax_rows"] = _sm


@reg({"S": 512, "D": 64}, {"S": 8, "D": 4})
@program
def attention(q: f32["S", "D"], k: f32["S", "D"], v: f32["S", "D"]) -> f32["S", "D"]:
    p = empty((S, S))
    o = zeros((S, D))
    for i in range(S):
        mx = -1e30
        for j in range(S):
            s = 0.0
            for d in range(D):
                s += q[i, d] * k[j, d]
            p[i, j] = s * 0.125
            mx = max(mx, p[i, j])
        tot = 0.0
        for j in range(S):
            p[i, j] = exp(p[i, j] - mx)
            tot += p[i, j]
        for j in range(S):
            for d in range(D):
                o[i, d] += p[i, j] / tot * v[j, d]
    return o
def _att(q, k, v):
    return _sm((q @ k.T) * np.float32(0.125)) @ v
NP["attention"] = _att


@reg({"C": 16, "F": 32, "HP": 66, "WP": 66}, {"C": 2, "F": 3, "HP": 8, "WP": 7})
@program
def conv2d_nchw(x: f32["C", "HP", "WP"], w: f32["F", "C", 3, 3], bias: f32["F"]):
    y = empty((F, HP - 2, WP - 2))
    for f in range(F):
        for i in range(HP - 2):
            for j in range(WP - 2):
                acc = bias[f]
                for c in range(C):
                    for u in range(3):
                        for v in range(3):
                            acc += w[f, c, u, v] * x[c, i + u, j + v]
                y[f, i, j] = acc
    return y


@reg({"C": 64, "HP": 130, "WP": 130}, {"C": 3, "HP": 8, "WP": 7})
@program
def depthwise3x3(x: f32["C", "HP", "WP"], w: f32["C", 3, 3]):
    y = zeros((C, HP - 2, WP - 2))
    for c in range(C):
        for i in range(HP - 2):
            for j in range(WP - 2):
                for u in range(3):
                    for v in range(3):
                        y[c, i, j] += w[c, u, v] * x[c, i + u, j + v]
    return y


@reg({"C": 64, "H": 128, "W": 128}, {"C": 2, "H": 6, "W": 8})
@program
def maxpool2(x: f32["C", "H", "W"]):
    y = empty((C, H // 2, W // 2))
    for c in range(C):
        for i in range(H // 2):
            for j in range(W // 2):
                m = x[c, 2 * i, 2 * j]
                m = max(m, x[c, 2 * i, 2 * j + 1])
                m = max(m, x[c, 2 * i + 1, 2 * j])
                m = max(m, x[c, 2 * i + 1, 2 * j + 1])
                y[c, i, j] = m
    return y


@reg({"C": 64, "HP": 130, "WP": 130}, {"C": 2, "HP": 8, "WP": 11})
@program
def avgpool3_s1(x: f32["C", "HP", "WP"]):
    y = empty((C, HP - 2, WP - 2))
    for c in range(C):
        for i in range(HP - 2):
            for j in range(WP - 2):
                s = 0.0
                for u in range(3):
                    for v in range(3):
                        s += x[c, i + u, j + v]
                y[c, i, j] = s / 9.0
    return y


@reg({"C": 64, "P": 16384}, {"C": 3, "P": 10})
@program
def batchnorm_inf(x: f32["C", "P"], mean: f32["C"], var: f32["C"], gamma: f32["C"], beta: f32["C"]) -> f32["C", "P"]:
    y = empty((C, P))
    for c in range(C):
        scale = gamma[c] / sqrt(var[c] + 1e-5)
        shift = beta[c] - mean[c] * scale
        for p in range(P):
            y[c, p] = x[c, p] * scale + shift
    return y


@reg({"M": 512, "K": 512, "N": 1024}, {"M": 6, "K": 5, "N": 7})
@program
def linear_bias_gelu(x: f32["M", "K"], w: f32["K", "N"], b0: f32["N"], b1: f32["N"]) -> f32["M", "N"]:
    b = empty((N,))
    for j in range(N):
        b[j] = b0[j] + b1[j]
    return gelu(x @ w + b)


@reg({"B": 4096, "D": 128, "V": 32768}, {"B": 5, "D": 4, "V": 40}, L=8)
@program
def embedding_bag(L: int, emb: f32["V", "D"], out: f32["B", "D"]) -> f32["B", "D"]:
    # bag b holds rows b*L .. b*L+L-1 (affine gather), mean-pooled
    for b in range(B):
        for d in range(D):
            out[b, d] = 0.0
    for b in range(B):
        for l in range(L):
            for d in range(D):
                out[b, d] += emb[b * L + l, d]
    for b in range(B):
        for d in range(D):
            out[b, d] = out[b, d] / L
    return out


@reg({"M": 512, "D": 512, "F": 1024}, {"M": 4, "D": 6, "F": 8})
@program
def residual_mlp(x: f32["M", "D"], w1: f32["D", "F"], b1: f32["F"], w2: f32["F", "D"], b2: f32["D"]) -> f32["M", "D"]:
    h = empty((M, F))
    for i in range(M):
        for f in range(F):
            acc = b1[f]
            for d in range(D):
                acc += x[i, d] * w1[d, f]
            h[i, f] = relu(acc)
    y = empty((M, D))
    for i in range(M):
        for d in range(D):
            acc = 0.0
            for f in range(F):
                acc += h[i, f] * w2[f, d]
            y[i, d] = x[i, d] + acc + b2[d]
    return y
NP["residual_mlp"] = lambda x, w1, b1, w2, b2: x + np.maximum(x @ w1 + b1, 0) @ w2 + b2


@reg(ROWS, ROWSS)
@program
def logsumexp_rows(x: f32["M", "D"]) -> f32["M"]:
    out = empty((M,))
    for i in range(M):
        m = -1e30
        for j in range(D):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(D):
            s += exp(x[i, j] - m)
        out[i] = m + log(s)
    return out
NP["logsumexp_rows"] = lambda x: (lambda m: m[:, 0] + np.log(np.exp(x - m).sum(1)))(x.max(1, keepdims=True))


@reg(ROWS, ROWSS)
@program
def cross_entropy(x: f32["M", "D"], t: f32["M", "D"]) -> f32:
    loss = 0.0
    for i in range(M):
        m = -1e30
        for j in range(D):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(D):
            s += exp(x[i, j] - m)
        lse = m + log(s)
        for j in range(D):
            loss -= t[i, j] * (x[i, j] - lse)
    return loss / M


@reg({"B": 32, "M": 128, "K": 128, "N": 128}, {"B": 3, "M": 4, "K": 5, "N": 6})
@program
def batched_matmul_loop(x: f32["B", "M", "K"], w: f32["K", "N"]) -> f32["B", "M", "N"]:
    out = empty((B, M, N))
    for b in range(B):
        out[b] = x[b] @ w
    return out
NP["batched_matmul_loop"] = lambda x, w: x @ w


@reg({"B": 32, "M": 128, "K": 128, "N": 128}, {"B": 3, "M": 4, "K": 5, "N": 6})
@program
def batched_bmm_T(a: f32["B", "M", "K"], c: f32["B", "N", "K"]) -> f32["B", "M", "N"]:
    out = empty((B, M, N))
    for b in range(B):
        out[b] = a[b] @ c[b].T
    return out
NP["batched_bmm_T"] = lambda a, c: a @ np.transpose(c, (0, 2, 1))


@reg({"M": 512, "K": 512, "N": 512}, {"M": 4, "K": 5, "N": 6})
@program
def bias_then_matmul(x: f32["M", "K"], w: f32["K", "N"], s: f32["N"], t: f32["N"]) -> f32["M", "N"]:
    b = empty((N,))
    for j in range(N):
        b[j] = s[j] * t[j] - 1.0
    y = x @ w + b
    return y
NP["bias_then_matmul"] = lambda x, w, s, t: x @ w + (s * t - np.float32(1))


# ------------------------------------------------------------------ physics / stencils
@reg(V, VS, c2=0.25)
@program
def wave1d(c2: f32, u: f32["N"], up: f32["N"]) -> f32["N"]:
    un = zeros((N,))
    for i in range(1, N - 1):
        un[i] = 2.0 * u[i] - up[i] + c2 * (u[i + 1] - 2.0 * u[i] + u[i - 1])
    return un


@reg({"N": 1000}, {"N": 12}, c2=0.1)
@program
def wave2d(c2: f32, u: f32["N", "N"], up: f32["N", "N"]) -> f32["N", "N"]:
    un = zeros((N, N))
    for i in range(1, N - 1):
        for j in range(1, N - 1):
            lap = u[i + 1, j] + u[i - 1, j] + u[i, j + 1] + u[i, j - 1] - 4.0 * u[i, j]
            un[i, j] = 2.0 * u[i, j] - up[i, j] + c2 * lap
    return un


@reg({"N": 128}, {"N": 7}, c2=0.1)
@program
def wave3d(c2: f32, u: f32["N", "N", "N"], up: f32["N", "N", "N"]) -> f32["N", "N", "N"]:
    un = zeros((N, N, N))
    for i in range(1, N - 1):
        for j in range(1, N - 1):
            for k in range(1, N - 1):
                un[i, j, k] = (2.0 * u[i, j, k] - up[i, j, k]
                               + c2 * (u[i + 1, j, k] + u[i - 1, j, k] + u[i, j + 1, k] + u[i, j - 1, k]
                                       + u[i, j, k + 1] + u[i, j, k - 1] - 6.0 * u[i, j, k]))
    return un


@reg(V, VS, dtdx=0.3)
@program
def advect_upwind(dtdx: f32, q: f32["N"], vel: f32["N"]) -> f32["N"]:
    qn = empty((N,))
    qn[0] = q[0]
    qn[N - 1] = q[N - 1]
    for i in range(1, N - 1):
        if vel[i] > 0.0:
            qn[i] = q[i] - dtdx * vel[i] * (q[i] - q[i - 1])
        else:
            qn[i] = q[i] - dtdx * vel[i] * (q[i + 1] - q[i])
    return qn


@reg({"R": 1024, "C": 1024}, {"R": 9, "C": 8}, cap=0.5, rx=1.0, ry=1.0, rz=2.0, amb=80.0)
@program
def hotspot(cap: f32, rx: f32, ry: f32, rz: f32, amb: f32, temp: f32["R", "C"], power: f32["R", "C"]) -> f32["R", "C"]:
    out = empty((R, C))
    for r in range(R):
        for c in range(C):
            n = temp[r - 1, c] if r > 0 else temp[r, c]
            s = temp[r + 1, c] if r < R - 1 else temp[r, c]
            w = temp[r, c - 1] if c > 0 else temp[r, c]
            e = temp[r, c + 1] if c < C - 1 else temp[r, c]
            t = temp[r, c]
            out[r, c] = t + cap * (power[r, c] + (s + n - 2.0 * t) / ry + (e + w - 2.0 * t) / rx + (amb - t) / rz)
    return out


@reg({"R": 1024, "C": 1024}, {"R": 9, "C": 8}, lam=0.25, q0=0.5)
@program
def srad_like(lam: f32, q0: f32, J: f32["R", "C"]) -> f32["R", "C"]:
    cf = zeros((R, C))
    dN = zeros((R, C))
    dS = zeros((R, C))
    dW = zeros((R, C))
    dE = zeros((R, C))
    for i in range(1, R - 1):
        for j in range(1, C - 1):
            jc = J[i, j]
            dN[i, j] = J[i - 1, j] - jc
            dS[i, j] = J[i + 1, j] - jc
            dW[i, j] = J[i, j - 1] - jc
            dE[i, j] = J[i, j + 1] - jc
            g2 = (dN[i, j] ** 2 + dS[i, j] ** 2 + dW[i, j] ** 2 + dE[i, j] ** 2) / (jc * jc)
            l = (dN[i, j] + dS[i, j] + dW[i, j] + dE[i, j]) / jc
            num = 0.5 * g2 - 0.0625 * l * l
            den = 1.0 + 0.25 * l
            qsq = num / (den * den)
            c = 1.0 / (1.0 + (qsq - q0) / (q0 * (1.0 + q0)))
            cf[i, j] = min(max(c, 0.0), 1.0)
    out = empty((R, C))
    for i in range(R):
        for j in range(C):
            out[i, j] = J[i, j]
    for i in range(1, R - 2):
        for j in range(1, C - 2):
            d = cf[i, j] * dN[i, j] + cf[i + 1, j] * dS[i, j] + cf[i, j] * dW[i, j] + cf[i, j + 1] * dE[i, j]
            out[i, j] = J[i, j] + 0.25 * lam * d
    return out


@reg({"M": 1024, "N": 1024, "D": 3}, {"M": 6, "N": 5, "D": 3})
@program
def pairwise_gauss(X: f32["M", "D"], Y: f32["N", "D"]) -> f32["M", "N"]:
    Kmat = empty((M, N))
    for i in range(M):
        for j in range(N):
            d2 = 0.0
            for k in range(D):
                diff = X[i, k] - Y[j, k]
                d2 += diff * diff
            Kmat[i, j] = exp(-0.5 * d2)
    return Kmat


@reg({"M": 512, "N": 512, "D": 64}, {"M": 6, "N": 5, "D": 4})
@program
def sqdist_expand(X: f32["M", "D"], Y: f32["N", "D"]) -> f32["M", "N"]:
    xx = empty((M,))
    yy = empty((N,))
    for i in range(M):
        s = 0.0
        for k in range(D):
            s += X[i, k] * X[i, k]
        xx[i] = s
    for j in range(N):
        s = 0.0
        for k in range(D):
            s += Y[j, k] * Y[j, k]
        yy[j] = s
    out = empty((M, N))
    for i in range(M):
        for j in range(N):
            dot = 0.0
            for k in range(D):
                dot += X[i, k] * Y[j, k]
            out[i, j] = xx[i] + yy[j] - 2.0 * dot
    return out
NP["sqdist_expand"] = lambda X, Y: (X * X).sum(1)[:, None] + (Y * Y).sum(1)[None, :] - np.float32(2) * (X @ Y.T)


@reg({"N": 2000}, {"N": 9})
@program
def jacobi_sweep_rhs(A: f32["N", "N"], x: f32["N"], b: f32["N"]) -> f32["N"]:
    # one Jacobi iteration x' = D^-1 (b - (A - D) x)
    xn = empty((N,))
    for i in range(N):
        s = b[i]
        for j in range(N):
            if j != i:
                s -= A[i, j] * x[j]
        xn[i] = s / A[i, i]
    return xn


@reg({"N": 2000}, {"N": 9})
@program
def trsv_dot(L: f32["N", "N"], b: f32["N"]) -> f32["N"]:
    # forward substitution with np.dot of the row so far (a probe's port, 2026-11-28)
    x = zeros((N,))
    for i in range(N):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


RANGES = {
    "trsv_dot": {},
    "biquad": {},
    "srad_like": {"J": (0.5, 1.5)},
    "trsv_upper": {},
    "jacobi_sweep_rhs": {},
    "alpha_blend": {"a": (0.0, 1.0)},
    "batchnorm_inf": {"var": (0.1, 1.0)},
    "cross_entropy": {"t": (0.0, 1.0)},
}


def make_args(name, prog, sizes, extra, rng):
    args = []
    for p in prog.params:
        if p.dtype is int:
            args.append(int(sizes[p.name]) if p.name in sizes else int(extra[p.name]))
        elif p.shape is None:
            args.append(float(extra.get(p.name, 0.5)))
        else:
            shape = tuple(int(eval(d, {}, dict(sizes))) if isinstance(d, str) else d for d in p.shape)
            lo, hi = RANGES.get(name, {}).get(p.name, (-0.5, 0.5))
            a = rng.uniform(lo, hi, size=shape).astype(np.float32)
            if name in ("trsv_upper", "jacobi_sweep_rhs", "trsv_dot") and a.ndim == 2:  # (diagonally dominant)
                a += np.float32(a.shape[0]) * np.eye(a.shape[0], dtype=np.float32)
            args.append(a)
    return args


def small(name: str) -> dict:
    return SMALL[name]


def shapes_of(prog, sizes: dict, extra: dict) -> dict:
    """`sizes` with the values of the integer parameters (a plan is made for one value)."""
    return {**sizes, **{p.name: int(extra[p.name]) for p in prog.params if p.dtype is int and p.name in extra}}
