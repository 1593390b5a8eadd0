"""Loop kernels from public suites other than PolyBench, in eqsat's language: TSVC (the
vectorizing-compiler test loops), the Livermore loops and NPB-style stencils and vector
updates, ported by hand (the index arithmetic TSVC writes with global counters becomes
loop variables; kernels the language cannot express, with data-dependent indices,
`break` or sin/cos, are left out).

K[name] = (program, sizes at which bench/loopsuites_bench.py times it, extra): `extra`
holds the values of its scalar and integer parameters. RANGES: inputs drawn from a
narrower range where a recurrence would overflow otherwise.
"""
from eqsat import f32, program, zeros, empty, exp, sqrt

K = {}
V1 = {"N": 1_000_000}
V2 = {"N": 1000}


def reg(sizes, **extra):
    def deco(p):
        K[p.name] = (p, dict(sizes), extra)
        return p
    return deco


# ---------------------------------------------------------------- TSVC
@reg(V1)
@program
def s000(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] = b[i] + 1.0
    return a


@reg(V1)
@program
def s111(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(1, N, 2):
        a[i] = a[i - 1] + b[i]
    return a


@reg(V1)
@program
def s1111(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]) -> f32["N"]:
    for i in range(N // 2):
        a[2 * i] = c[i] * b[i] + d[i] * b[i] + c[i] * c[i] + d[i] * b[i] + d[i] * c[i]
    return a


@reg(V1)
@program
def s112(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N - 2, -1, -1):
        a[i + 1] = a[i] + b[i]
    return a


@reg(V1)
@program
def s113(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(1, N):
        a[i] = a[0] + b[i]
    return a


@reg(V1)
@program
def s121(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N - 1):
        a[i] = a[i + 1] + b[i]
    return a


@reg(V1)
@program
def s122(a: f32["N"], b: f32["N"]) -> f32["N"]:
    # n1 = 1, n3 = 3: i = 3t, k = t + 1, a[i] += b[N - k]
    for t in range(N // 3):
        a[3 * t] += b[N - 1 - t]
    return a


@reg(V1)
@program
def s124(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]) -> f32["N"]:
    for i in range(N):
        if b[i] > 0.0:
            a[i] = b[i] + d[i] * e[i]
        else:
            a[i] = c[i] + d[i] * e[i]
    return a


@reg(V1)
@program
def s131(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N - 1):
        a[i] = a[i + 1] + b[i]
    return a


@reg(V1)
@program
def s152(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N):
        b[i] = d[i] * e[i]
        a[i] += b[i] * c[i]
    return a, b


@reg(V1)
@program
def s161(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N - 1):
        if b[i] < 0.0:
            c[i + 1] = a[i] + d[i] * d[i]
        else:
            a[i] = c[i] + d[i] * e[i]
    return a, c


@reg(V1, k=1)
@program
def s162(k: int, a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for i in range(N - 1):
        a[i] = a[i + k] + b[i] * c[i]
    return a


@reg(V1)
@program
def s172(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(0, N, 3):
        a[i] += b[i]
    return a


@reg(V1)
@program
def s173(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N // 2):
        a[i + N // 2] = a[i] + b[i]
    return a


@reg({"N": 4000})
@program
def s176(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for j in range(N // 2):
        for i in range(N // 2):
            a[i] += b[i + N // 2 - j - 1] * c[j]
    return a


@reg(V1)
@program
def s211(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(1, N - 1):
        a[i] = b[i - 1] + c[i] * d[i]
        b[i] = b[i + 1] - e[i] * d[i]
    return a, b


@reg(V1)
@program
def s212(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]):
    for i in range(N - 1):
        a[i] *= c[i]
        b[i] += a[i + 1] * d[i]
    return a, b


@reg(V1)
@program
def s221(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]):
    for i in range(1, N):
        a[i] += c[i] * d[i]
        b[i] = b[i - 1] + a[i] + d[i]
    return a, b


@reg(V1)
@program
def s222(a: f32["N"], b: f32["N"], c: f32["N"], e: f32["N"]):
    for i in range(1, N):
        a[i] += b[i] * c[i]
        e[i] = e[i - 1] * e[i - 1]
        a[i] -= b[i] * c[i]
    return a, e


@reg(V2)
@program
def s231(aa: f32["N", "N"], bb: f32["N", "N"]) -> f32["N", "N"]:
    for i in range(N):
        for j in range(1, N):
            aa[j, i] = aa[j - 1, i] + bb[j, i]
    return aa


@reg(V2)
@program
def s232(aa: f32["N", "N"], bb: f32["N", "N"]) -> f32["N", "N"]:
    for j in range(1, N):
        for i in range(1, j + 1):
            aa[j, i] = aa[j, i - 1] * aa[j, i - 1] + bb[j, i]
    return aa


@reg(V2)
@program
def s233(aa: f32["N", "N"], bb: f32["N", "N"], cc: f32["N", "N"]):
    for i in range(1, N):
        for j in range(1, N):
            aa[j, i] = aa[j - 1, i] + cc[j, i]
        for j in range(1, N):
            bb[j, i] = bb[j, i - 1] + cc[j, i]
    return aa, bb


@reg(V2)
@program
def s235(a: f32["N"], b: f32["N"], c: f32["N"], aa: f32["N", "N"], bb: f32["N", "N"]):
    for i in range(N):
        a[i] += b[i] * c[i]
        for j in range(1, N):
            aa[j, i] = aa[j - 1, i] + bb[j, i] * a[i]
    return a, aa


@reg(V1)
@program
def s241(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]):
    for i in range(N - 1):
        a[i] = b[i] * c[i] * d[i]
        b[i] = a[i] * a[i + 1] * d[i]
    return a, b


@reg(V1)
@program
def s242(s1: f32, s2: f32, a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]) -> f32["N"]:
    for i in range(1, N):
        a[i] = a[i - 1] + s1 + s2 + b[i] + c[i] + d[i]
    return a


@reg(V1)
@program
def s243(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N - 1):
        a[i] = b[i] + c[i] * d[i]
        b[i] = a[i] + d[i] * e[i]
        a[i] = b[i] + a[i + 1] * d[i]
    return a, b


@reg(V1)
@program
def s244(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]):
    for i in range(N - 1):
        a[i] = b[i] + c[i] * d[i]
        b[i] = c[i] + b[i]
        a[i + 1] = b[i] + a[i + 1] * d[i]
    return a, b


@reg(V1)
@program
def s251(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]) -> f32["N"]:
    for i in range(N):
        s = b[i] + c[i] * d[i]
        a[i] = s * s
    return a


@reg(V1)
@program
def s252(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    t = 0.0
    for i in range(N):
        s = b[i] * c[i]
        a[i] = s + t
        t = s
    return a


@reg(V1)
@program
def s253(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]):
    for i in range(N):
        if a[i] > b[i]:
            s = a[i] - b[i] * d[i]
            c[i] += s
            a[i] = s
    return a, c


@reg(V1)
@program
def s254(a: f32["N"], b: f32["N"]) -> f32["N"]:
    x = b[N - 1]
    for i in range(N):
        a[i] = (b[i] + x) * 0.5
        x = b[i]
    return a


@reg(V1)
@program
def s255(a: f32["N"], b: f32["N"]) -> f32["N"]:
    x = b[N - 1]
    y = b[N - 2]
    for i in range(N):
        a[i] = (b[i] + x + y) * 0.333
        y = x
        x = b[i]
    return a


@reg(V2)
@program
def s256(a: f32["N"], d: f32["N"], aa: f32["N", "N"], bb: f32["N", "N"]):
    for i in range(N):
        for j in range(1, N):
            a[j] = 1.0 - a[j - 1]
            aa[j, i] = a[j] + bb[j, i] * d[j]
    return a, aa


@reg(V2)
@program
def s257(a: f32["N"], aa: f32["N", "N"], bb: f32["N", "N"]):
    for i in range(1, N):
        for j in range(N):
            a[i] = aa[j, i] - a[i - 1]
            aa[j, i] = a[i] + bb[j, i]
    return a, aa


@reg(V1)
@program
def s258(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"], aa0: f32["N"]):
    s = 0.0
    for i in range(N):
        if a[i] > 0.0:
            s = d[i] * d[i]
        b[i] = s * c[i] + d[i]
        e[i] = (s + 1.0) * aa0[i]
    return b, e


@reg(V1)
@program
def s261(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]):
    for i in range(1, N):
        t = a[i] + b[i]
        a[i] = t + c[i - 1]
        t = c[i] * d[i]
        c[i] = t
    return a, c


@reg(V1)
@program
def s271(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for i in range(N):
        if b[i] > 0.0:
            a[i] += b[i] * c[i]
    return a


@reg(V1, t=0.0)
@program
def s272(t: f32, a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N):
        if e[i] >= t:
            a[i] += c[i] * d[i]
            b[i] += c[i] * c[i]
    return a, b


@reg(V1)
@program
def s273(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N):
        a[i] += d[i] * e[i]
        if a[i] < 0.0:
            b[i] += d[i] * e[i]
        c[i] += a[i] * d[i]
    return a, b, c


@reg(V1)
@program
def s274(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N):
        a[i] = c[i] + e[i] * d[i]
        if a[i] > 0.0:
            b[i] = a[i] + b[i]
        else:
            a[i] = d[i] * e[i]
    return a, b


@reg(V2)
@program
def s275(aa: f32["N", "N"], bb: f32["N", "N"], cc: f32["N", "N"]) -> f32["N", "N"]:
    for i in range(N):
        if aa[0, i] > 0.0:
            for j in range(1, N):
                aa[j, i] = aa[j - 1, i] + bb[j, i] * cc[j, i]
    return aa


@reg(V1)
@program
def s276(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]) -> f32["N"]:
    for i in range(N):
        if i + 1 < N // 2:
            a[i] += b[i] * c[i]
        else:
            a[i] += b[i] * d[i]
    return a


@reg(V1)
@program
def s277(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N - 1):
        if a[i] < 0.0:
            if b[i] < 0.0:
                a[i] += c[i] * d[i]
            b[i + 1] = c[i] + d[i] * e[i]
    return a, b


@reg(V1)
@program
def s278(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N):
        if a[i] > 0.0:
            c[i] = -c[i] + d[i] * e[i]
        else:
            b[i] = -b[i] + d[i] * e[i]
        a[i] = b[i] + c[i] * d[i]
    return a, b, c


@reg(V1)
@program
def s281(a: f32["N"], b: f32["N"], c: f32["N"]):
    for i in range(N):
        x = a[N - i - 1] + b[i] * c[i]
        a[i] = x - 1.0
        b[i] = x
    return a, b


@reg(V1)
@program
def s291(a: f32["N"], b: f32["N"]) -> f32["N"]:
    im1 = N - 1
    a[0] = (b[0] + b[N - 1]) * 0.5
    for i in range(1, N):
        a[i] = (b[i] + b[i - 1]) * 0.5
    return a


@reg(V1)
@program
def s293(a: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] = a[0]
    return a


@reg(V1)
@program
def s311(a: f32["N"]) -> f32:
    s = 0.0
    for i in range(N):
        s += a[i]
    return s


@reg(V1)
@program
def s313(a: f32["N"], b: f32["N"]) -> f32:
    dot = 0.0
    for i in range(N):
        dot += a[i] * b[i]
    return dot


@reg(V1)
@program
def s314(a: f32["N"]) -> f32:
    x = a[0]
    for i in range(N):
        if a[i] > x:
            x = a[i]
    return x


@reg(V1)
@program
def s315(a: f32["N"]) -> f32:
    x = a[0]
    index = 0.0
    for i in range(N):
        if a[i] > x:
            x = a[i]
            index = i
    return x + index + 1.0


@reg(V1)
@program
def s318(a: f32["N"]) -> f32:
    index = 0.0
    mx = abs(a[0])
    for i in range(1, N):
        if abs(a[i]) > mx:
            index = i
            mx = abs(a[i])
    return mx + index + 1.0


@reg(V1)
@program
def s319(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    s = 0.0
    for i in range(N):
        a[i] = c[i] + d[i]
        s += a[i]
        b[i] = c[i] + e[i]
        s += b[i]
    return a, b, s


@reg(V2)
@program
def s3110(aa: f32["N", "N"]) -> f32:
    mx = aa[0, 0]
    xi = 0.0
    yj = 0.0
    for i in range(N):
        for j in range(N):
            if aa[i, j] > mx:
                mx = aa[i, j]
                xi = i
                yj = j
    return mx + xi + 1.0 + yj + 1.0


@reg(V1)
@program
def s321(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(1, N):
        a[i] += a[i - 1] * b[i]
    return a


@reg(V1)
@program
def s322(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for i in range(2, N):
        a[i] = a[i] + a[i - 1] * b[i] + a[i - 2] * c[i]
    return a


@reg(V1)
@program
def s323(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(1, N):
        a[i] = b[i - 1] + c[i] * d[i]
        b[i] = a[i] + c[i] * e[i]
    return a, b


@reg(V1)
@program
def s331(a: f32["N"]) -> f32:
    j = -1.0
    for i in range(N):
        if a[i] < 0.0:
            j = i
    return j


@reg(V1, alpha=0.7)
@program
def s351(alpha: f32, a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(0, N, 5):
        a[i] += alpha * b[i]
        a[i + 1] += alpha * b[i + 1]
        a[i + 2] += alpha * b[i + 2]
        a[i + 3] += alpha * b[i + 3]
        a[i + 4] += alpha * b[i + 4]
    return a


@reg(V1)
@program
def s352(a: f32["N"], b: f32["N"]) -> f32:
    dot = 0.0
    for i in range(0, N, 5):
        dot = dot + a[i] * b[i] + a[i + 1] * b[i + 1] + a[i + 2] * b[i + 2] + a[i + 3] * b[i + 3] + a[i + 4] * b[i + 4]
    return dot


@reg({"N": 1_000_000, "P": 1_000_016})
@program
def s422(flat: f32["P"], a: f32["N"]) -> f32["P"]:
    # xx = flat_2d_array + 4; xx[i] = flat_2d_array[i + 8] + a[i]
    for i in range(N):
        flat[i + 4] = flat[i + 8] + a[i]
    return flat


@reg(V1)
@program
def s441(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]) -> f32["N"]:
    for i in range(N):
        if d[i] < 0.0:
            a[i] += b[i] * c[i]
        elif d[i] == 0.0:
            a[i] += b[i] * b[i]
        else:
            a[i] += c[i] * c[i]
    return a


@reg(V1)
@program
def s443(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]) -> f32["N"]:
    for i in range(N):
        if d[i] <= 0.0:
            a[i] += b[i] * c[i]
        else:
            a[i] += b[i] * b[i]
    return a


@reg(V1)
@program
def s452(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] = b[i] + c[i] * (i + 1)
    return a


@reg(V1)
@program
def s453(a: f32["N"], b: f32["N"]) -> f32["N"]:
    s = 0.0
    for i in range(N):
        s += 2.0
        a[i] = s * b[i]
    return a


@reg(V1)
@program
def s471(x: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"]):
    for i in range(N):
        x[i] = b[i] + d[i] * d[i]
        b[i] = c[i] + d[i] * e[i]
    return x, b


@reg(V1)
@program
def s4117(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] = b[i] + c[i // 2] * d[i]
    return a


@reg(V1)
@program
def vpvtv(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] += b[i] * c[i]
    return a


@reg(V1)
@program
def vtvtv(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] = a[i] * b[i] * c[i]
    return a


@reg(V1)
@program
def vbor(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"], x: f32["N"]) -> f32["N"]:
    for i in range(N):
        a1 = a[i]
        b1 = b[i]
        c1 = c[i]
        d1 = d[i]
        e1 = e[i]
        f1 = a[i]
        a1 = a1 * b1 * c1 + a1 * b1 * d1 + a1 * b1 * e1 + a1 * b1 * f1 + a1 * c1 * d1 + a1 * c1 * e1 + a1 * c1 * f1 + a1 * d1 * e1 + a1 * d1 * f1 + a1 * e1 * f1
        b1 = b1 * c1 * d1 + b1 * c1 * e1 + b1 * c1 * f1 + b1 * d1 * e1 + b1 * d1 * f1 + b1 * e1 * f1
        c1 = c1 * d1 * e1 + c1 * d1 * f1 + c1 * e1 * f1
        d1 = d1 * e1 * f1
        x[i] = a1 * b1 * c1 * d1
    return x


# ---------------------------------------------------------------- Livermore
@reg({"N": 1_000_000, "P": 1_000_011}, q=0.5, r=0.25, t=0.125)
@program
def lfk1_hydro(q: f32, r: f32, t: f32, y: f32["N"], z: f32["P"]) -> f32["N"]:
    x = empty((N,))
    for k in range(N):
        x[k] = q + y[k] * (r * z[k + 10] + t * z[k + 11])
    return x


@reg({"M": 200, "NB": 2000})
@program
def lfk4_banded(M: int, x: f32["NB"], y: f32["NB"]) -> f32["NB"]:
    # for k = 6, 11, ... : lw = k - 6; temp = x[k-1]; for j = 4, 9, ...: temp -= x[lw] * y[j]; lw++
    for kk in range(M):
        temp = x[5 * kk + 5]
        for jj in range(NB // 5 - 1):
            temp -= x[5 * kk + jj] * y[5 * jj + 4]
        x[5 * kk + 5] = y[4] * temp
    return x


@reg(V1)
@program
def lfk5_tridiag(x: f32["N"], y: f32["N"], z: f32["N"]) -> f32["N"]:
    for i in range(1, N):
        x[i] = z[i] * (y[i] - x[i - 1])
    return x


@reg({"N": 2000})
@program
def lfk6_linrec(b: f32["N", "N"], w: f32["N"]) -> f32["N"]:
    for i in range(1, N):
        w[i] = 0.01
        for k in range(i):
            w[i] += b[k, i] * w[i - k - 1]
    return w


@reg({"N": 1_000_000, "P": 1_000_006}, q=0.5, r=0.25, t=0.125)
@program
def lfk7_eos(q: f32, r: f32, t: f32, u: f32["P"], y: f32["N"], z: f32["N"]) -> f32["N"]:
    x = empty((N,))
    for k in range(N):
        x[k] = u[k] + r * (z[k] + r * y[k]) + t * (u[k + 3] + r * (u[k + 2] + r * u[k + 1]) + t * (u[k + 6] + q * (u[k + 5] + q * u[k + 4])))
    return x


@reg({"N": 200_000}, c0=0.3)
@program
def lfk9_integrate(c0: f32, px: f32["N", 13]) -> f32["N", 13]:
    dm28 = 0.5
    dm27 = 0.4
    dm26 = 0.3
    dm25 = 0.2
    dm24 = 0.1
    dm23 = 0.05
    dm22 = 0.025
    for i in range(N):
        px[i, 0] = dm28 * px[i, 12] + dm27 * px[i, 11] + dm26 * px[i, 10] + dm25 * px[i, 9] + dm24 * px[i, 8] + dm23 * px[i, 7] + dm22 * px[i, 6] + c0 * (px[i, 4] + px[i, 5]) + px[i, 2]
    return px


@reg({"N": 200_000})
@program
def lfk10_diffpred(px: f32["N", 13], cx: f32["N", 13]) -> f32["N", 13]:
    for i in range(N):
        ar = cx[i, 4]
        br = ar - px[i, 4]
        px[i, 4] = ar
        cr = br - px[i, 5]
        px[i, 5] = br
        ar = cr - px[i, 6]
        px[i, 6] = cr
        br = ar - px[i, 7]
        px[i, 7] = ar
        cr = br - px[i, 8]
        px[i, 8] = br
        ar = cr - px[i, 9]
        px[i, 9] = cr
        br = ar - px[i, 10]
        px[i, 10] = ar
        cr = br - px[i, 11]
        px[i, 11] = br
        px[i, 13 - 1] = cr
    return px


@reg(V1)
@program
def lfk11_firstsum(x: f32["N"], y: f32["N"]) -> f32["N"]:
    x[0] = y[0]
    for k in range(1, N):
        x[k] = x[k - 1] + y[k]
    return x


@reg({"N": 1_000_000, "P": 1_000_001})
@program
def lfk12_firstdiff(x: f32["N"], y: f32["P"]) -> f32["N"]:
    for k in range(N):
        x[k] = y[k + 1] - y[k]
    return x


@reg({"J": 7, "K": 200_000}, s=0.0041, t=0.0037)
@program
def lfk18_hydro2d(s: f32, t: f32, zp: f32["J", "K"], zq: f32["J", "K"], zr: f32["J", "K"],
                  zm: f32["J", "K"], zz: f32["J", "K"], zu: f32["J", "K"], zv: f32["J", "K"]):
    za = zeros((J, K))
    zb = zeros((J, K))
    for k in range(1, J - 1):
        for j in range(1, K - 1):
            za[k, j] = (zp[k + 1, j - 1] + zq[k + 1, j - 1] - zp[k, j - 1] - zq[k, j - 1]) * (zr[k, j] + zr[k, j - 1]) / (zm[k, j - 1] + zm[k + 1, j - 1])
            zb[k, j] = (zp[k, j - 1] + zq[k, j - 1] - zp[k, j] - zq[k, j]) * (zr[k, j] + zr[k - 1, j]) / (zm[k, j] + zm[k, j - 1])
    for k in range(1, J - 1):
        for j in range(1, K - 1):
            zu[k, j] += s * (za[k, j] * (zz[k, j] - zz[k, j + 1]) - za[k, j - 1] * (zz[k, j] - zz[k, j - 1]) - zb[k, j] * (zz[k, j] - zz[k - 1, j]) + zb[k + 1, j] * (zz[k, j] - zz[k + 1, j]))
            zv[k, j] += s * (za[k, j] * (zr[k, j] - zr[k, j + 1]) - za[k, j - 1] * (zr[k, j] - zr[k, j - 1]) - zb[k, j] * (zr[k, j] - zr[k - 1, j]) + zb[k + 1, j] * (zr[k, j] - zr[k + 1, j]))
    for k in range(1, J - 1):
        for j in range(1, K - 1):
            zr[k, j] = zr[k, j] + t * zu[k, j]
            zz[k, j] = zz[k, j] + t * zv[k, j]
    return zr, zz


@reg(V1, stb5=0.1)
@program
def lfk19_linrec(stb5: f32, sa: f32["N"], sb: f32["N"]) -> f32["N"]:
    b5 = empty((N,))
    for k in range(N):
        b5[k] = sa[k] + stb5 * sb[k]
        stb5 = b5[k] - stb5
    for k in range(N - 1, -1, -1):
        b5[k] = sa[k] + stb5 * sb[k]
        stb5 = b5[k] - stb5
    return b5


@reg({"N": 200, "M": 200, "K": 25})
@program
def lfk21_matmul(px: f32["M", "N"], vy: f32["K", "N"], cx: f32["M", "K"]) -> f32["M", "N"]:
    for k in range(K):
        for i in range(N):
            for j in range(M):
                px[j, i] += vy[k, i] * cx[j, k]
    return px


@reg(V1)
@program
def lfk22_planck(u: f32["N"], v: f32["N"], x: f32["N"]):
    y = empty((N,))
    w = empty((N,))
    for k in range(N):
        y[k] = u[k] / v[k]
        w[k] = x[k] / (exp(y[k]) - 1.0)
    return y, w


@reg({"J": 7, "K": 100_000})
@program
def lfk23_implicit(za: f32["J", "K"], zb: f32["J", "K"], zr: f32["J", "K"], zu: f32["J", "K"], zv: f32["J", "K"], zz: f32["J", "K"]) -> f32["J", "K"]:
    for j in range(1, J - 1):
        for k in range(1, K - 1):
            qa = za[j + 1, k] * zr[j, k] + za[j - 1, k] * zb[j, k] + za[j, k + 1] * zu[j, k] + za[j, k - 1] * zv[j, k] + zz[j, k]
            za[j, k] += 0.175 * (qa - za[j, k])
    return za


@reg(V1)
@program
def lfk24_firstmin(x: f32["N"]) -> f32:
    m = 0.0
    xm = x[0]
    for k in range(1, N):
        if x[k] < xm:
            xm = x[k]
            m = k
    return m


# ---------------------------------------------------------------- NPB-style
@reg({"N": 128})
@program
def npb_stencil7(u: f32["N", "N", "N"]) -> f32["N", "N", "N"]:
    r = zeros((N, N, N))
    for i in range(1, N - 1):
        for j in range(1, N - 1):
            for k in range(1, N - 1):
                r[i, j, k] = 0.5 * u[i, j, k] + 0.1 * (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1])
    return r


@reg({"N": 128})
@program
def npb_mg_resid(u: f32["N", "N", "N"], v: f32["N", "N", "N"]) -> f32["N", "N", "N"]:
    r = zeros((N, N, N))
    for i in range(1, N - 1):
        for j in range(1, N - 1):
            for k in range(1, N - 1):
                u1 = u[i, j - 1, k] + u[i, j + 1, k] + u[i - 1, j, k] + u[i + 1, j, k]
                u2 = u[i - 1, j - 1, k] + u[i - 1, j + 1, k] + u[i + 1, j - 1, k] + u[i + 1, j + 1, k]
                r[i, j, k] = v[i, j, k] - (-8.0 / 3.0) * u[i, j, k] - 0.0 * (u[i, j, k - 1] + u[i, j, k + 1] + u1) - (1.0 / 6.0) * (u2 + u1) - (1.0 / 12.0) * u2
    return r


@reg(V1, alpha=0.3)
@program
def npb_cg_update(alpha: f32, z: f32["N"], r: f32["N"], p: f32["N"], q: f32["N"]):
    rho = 0.0
    for j in range(N):
        z[j] = z[j] + alpha * p[j]
        r[j] = r[j] - alpha * q[j]
    for j in range(N):
        rho += r[j] * r[j]
    for j in range(N):
        p[j] = r[j] + rho * 1e-6 * p[j]
    return z, r, p, rho


@reg({"N": 64, "T": 4})
@program
def npb_jacobi3d(T: int, u: f32["N", "N", "N"], v: f32["N", "N", "N"]) -> f32["N", "N", "N"]:
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                for k in range(1, N - 1):
                    v[i, j, k] = (u[i - 1, j, k] + u[i + 1, j, k] + u[i, j - 1, k] + u[i, j + 1, k] + u[i, j, k - 1] + u[i, j, k + 1]) / 6.0
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                for k in range(1, N - 1):
                    u[i, j, k] = (v[i - 1, j, k] + v[i + 1, j, k] + v[i, j - 1, k] + v[i, j + 1, k] + v[i, j, k - 1] + v[i, j, k + 1]) / 6.0
    return u


# ---------------------------------------------------------------- more TSVC
@reg(V1)
@program
def vpv(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] += b[i]
    return a


@reg(V1)
@program
def vtv(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] *= b[i]
    return a


@reg(V1, s=0.3)
@program
def vpvts(s: f32, a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] += b[i] * s
    return a


@reg(V1)
@program
def vpvpv(a: f32["N"], b: f32["N"], c: f32["N"]) -> f32["N"]:
    for i in range(N):
        a[i] += b[i] + c[i]
    return a


@reg(V1)
@program
def vsumr(a: f32["N"]) -> f32:
    s = 0.0
    for i in range(N):
        s += a[i]
    return s


@reg(V1)
@program
def vdotr(a: f32["N"], b: f32["N"]) -> f32:
    dot = 0.0
    for i in range(N):
        dot += a[i] * b[i]
    return dot


@reg(V2)
@program
def s234(aa: f32["N", "N"], bb: f32["N", "N"], cc: f32["N", "N"]) -> f32["N", "N"]:
    for i in range(N):
        for j in range(1, N):
            aa[j, i] = aa[j - 1, i] + bb[j - 1, i] * cc[j - 1, i]
    return aa


@reg(V1)
@program
def s174(a: f32["N"], b: f32["N"]) -> f32["N"]:
    for i in range(N // 2):
        a[i + N // 2] = a[i] + b[i]
    return a


@reg(V1)
@program
def s292(a: f32["N"], b: f32["N"]) -> f32["N"]:
    a[0] = (b[0] + b[N - 1] + b[N - 2]) * 0.333
    a[1] = (b[1] + b[0] + b[N - 1]) * 0.333
    for i in range(2, N):
        a[i] = (b[i] + b[i - 1] + b[i - 2]) * 0.333
    return a


@reg(V1)
@program
def s312(a: f32["N"]) -> f32:
    prod = 1.0
    for i in range(N):
        prod *= a[i]
    return prod


@reg(V1)
@program
def s316(a: f32["N"]) -> f32:
    x = a[0]
    for i in range(1, N):
        if a[i] < x:
            x = a[i]
    return x


@reg(V1)
@program
def s421(xx: f32["N"], a: f32["N"]) -> f32["N"]:
    yy = xx
    for i in range(N - 1):
        xx[i] = yy[i + 1] + a[i]
    return xx


@reg({"N": 1_000_000, "P": 1_000_016})
@program
def s424(flat: f32["P"], a: f32["N"]) -> f32["P"]:
    # xx = flat + 63 (here + 4); xx[i+1] = flat[i] + a[i]
    for i in range(N - 1):
        flat[i + 5] = flat[i] + a[i]
    return flat


@reg(V1)
@program
def s442(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], e: f32["N"], indx: f32["N"]) -> f32["N"]:
    for i in range(N):
        if indx[i] < 1.0:
            a[i] += b[i] * b[i]
        elif indx[i] < 2.0:
            a[i] += c[i] * c[i]
        elif indx[i] < 3.0:
            a[i] += d[i] * d[i]
        else:
            a[i] += e[i] * e[i]
    return a


@reg(V2)
@program
def s2275(a: f32["N"], b: f32["N"], c: f32["N"], d: f32["N"], aa: f32["N", "N"], bb: f32["N", "N"], cc: f32["N", "N"]):
    for i in range(N):
        for j in range(N):
            aa[j, i] = aa[j, i] + bb[j, i] * cc[j, i]
        a[i] = b[i] + c[i] * d[i]
    return a, aa


@reg({"N": 500_000, "T": 32})
@program
def fir(x: f32["N"], h: f32["T"], y: f32["N"]) -> f32["N"]:
    # s176-like direct convolution (DSP / TSVC s176 family), valid part only
    for i in range(N - T):
        acc = 0.0
        for k in range(T):
            acc += x[i + k] * h[k]
        y[i] = acc
    return y


@reg({"N": 1000})
@program
def jacobi2d_5pt(a: f32["N", "N"]) -> f32["N", "N"]:
    b = zeros((N, N))
    for i in range(1, N - 1):
        for j in range(1, N - 1):
            b[i, j] = 0.2 * (a[i, j] + a[i, j - 1] + a[i, j + 1] + a[i - 1, j] + a[i + 1, j])
    return b


RANGES = {
    "lfk6_linrec": {"b": (-0.01, 0.01)},
    "lfk19_linrec": {"sb": (0.5, 1.5)},
    "lfk22_planck": {"u": (0.1, 1.0), "v": (0.5, 1.5)},
    "lfk18_hydro2d": {"zm": (0.5, 1.5)},
    "s312": {"a": (0.9999, 1.0001)},
    "s442": {"indx": (0.0, 4.0)},
    "s232": {"aa": (-0.3, 0.3), "bb": (-0.2, 0.2)},
}


def make_args(name, prog, sizes, extra, rng):
    """Arguments of kernel `name` at `sizes`: uniform in (-0.5, 0.5) or its RANGES."""
    import numpy as np

    args = []
    for p in prog.params:
        if p.dtype is int:
            args.append(int(sizes[p.name]) if p.name in sizes else int(extra[p.name]))
        elif p.shape is None:
            args.append(float(extra.get(p.name, 0.5)))
        else:
            shape = tuple(sizes[d] if isinstance(d, str) else d for d in p.shape)
            lo, hi = RANGES.get(name, {}).get(p.name, (-0.5, 0.5))
            args.append(rng.uniform(lo, hi, size=shape).astype(np.float32))
    return args


def small(sizes: dict) -> dict:
    """Sizes a test runs a kernel at (the reference is plain Python loops)."""
    if "NB" in sizes:
        return {"M": 20, "NB": 200}
    out = {k: 2000 if v >= 100_000 else 100 if v >= 1000 else 20 if v >= 100 else v for k, v in sizes.items()}
    if sizes.get("N") == 128:
        out["N"] = 24
    if sizes.get("N") == 64:
        out["N"] = 16
    if "P" in sizes and "N" in sizes:  # a padded axis keeps its padding
        out["P"] = out["N"] + (sizes["P"] - sizes["N"])
    return out


def shapes_of(prog, sizes: dict, extra: dict) -> dict:
    """`sizes` with the values of the integer parameters (a plan is made for one value)."""
    return {**sizes, **{p.name: int(extra[p.name]) for p in prog.params if p.dtype is int and p.name in extra}}
