"""The cost model: target profiles as data, and short formulas a user can read.

A kernel costs ``max(flops / peak, bytes / bandwidth, latency) + launch``:

- a matmul (`matmul`, or `fused` with its epilogue) runs at the tensor-core peak and
  reads each operand once (tiling); its epilogue reads its own operands and writes the
  output, and the accumulator is never stored; an operand that is an elementwise
  computation (a prologue, `relu(a) @ b`) is evaluated as its tiles are loaded: the
  matmul reads the prologue's inputs instead and does its flops, no kernel of its own;
- an elementwise or reduction kernel (`compute`) runs at the SIMT peak; each distinct
  load outside a reduction reads `min(elements, size of the tensor)` items (broadcasts
  are cached), each load inside a reduction is re-read on every step (no tiling);
- `latency` is the chain of dependent memory round trips one thread makes, each a
  `load_latency`: a tiled matmul makes one per `tiles_in_flight` K-tiles (its loads run
  that many tiles ahead; its epilogue operands are fetched alongside the first tile); an
  untiled kernel issues the loads of
  its element `loads_in_flight` at a time, and adds each step of its reductions as a
  dependent multiply-add (`fma_latency`). A reduction of n steps is a tree over
  `lanes = min(next power of two >= n, red_lanes)` lanes: each lane runs ceil(n / lanes)
  steps and the lanes combine in log2(lanes) levels, a shuffle each within a warp and one
  trip through shared memory across warps (Triton's block-wide `tl.sum` over a block of
  the axis; numpy's pairwise sums); a reduction nested inside another one runs
  as a chain in each lane of the outer one. This is what
  makes a matmul recomputed inside another kernel's reduction lose to two matmul
  kernels, even at sizes where one launch more would otherwise dominate;
- a loop nest kept as written (`loop`) runs as what it is: one thread's sequence of scalar
  operations (on the CPU target one core, compiled), each `loop_op_time` (operations and
  loads; constants and names are registers), its loads and stores at the
  `loop_bandwidth` one thread reaches, plus one launch per library call
  inside it; the work inside the loops that run in parallel (`eqsat/parallel.py`) is
  spread over `loop_cores`. So a sum over 2^24 elements written as a loop costs what a sequential loop
  costs, and lifting it into a parallel reduction kernel pays. On a GPU target the backend
  runs a kept nest on the host (compiled, as on the CPU target), so it is charged the
  host's loop rates plus its tensors' trip across the link (`host_link` bytes/s, and
  `host_latency` for each direction);
- views (`transpose`, `slice`, inputs) cost nothing.

Costs are seconds as floats. A tensor used twice is paid for once: every cost carries
the set of kernels it depends on, and sums over the union. Those maps are shared between
infos and never changed once made (`union` returns an input where it holds the others).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

INF = math.inf
GPU_RED_LANES = 512  # the Triton backend's widest block of a reduced axis (RBLOCK)
# modeled operations (elements x flops) from which a target with `compiled_kernels` runs a
# pointwise or reduction kernel compiled (`backends/cpu_kernels.py`): below, numpy
# evaluates it in a few passes before numba would have compiled it
COMPILE_MIN_OPS = 2_000_000


@dataclass(frozen=True)
class Target:
    name: str
    simt_flops: float  # FP32 non-tensor-core peak, flop/s
    tc_flops: float  # tensor-core peak for f32 inputs (TF32), flop/s
    bandwidth: float  # DRAM bytes/s
    launch: float  # seconds per kernel launch
    loop_op_time: float = 2.5e-9  # seconds per scalar operation of a kept loop (one thread, dependent)
    loop_bandwidth: float = 9.1e7  # bytes/s one thread reaches (8 loads of 4 B per 350 ns round trip)
    load_latency: float = 3.5e-7  # a global load's latency (~600 cycles at 1.7 GHz)
    loads_in_flight: int = 8  # independent loads one thread keeps outstanding
    tile_k: int = 32  # K-depth of one matmul tile step
    # K-tiles whose loads a matmul keeps in flight (software pipelining: Triton's default
    # num_stages = 3 loads two tiles ahead of the one it multiplies)
    tiles_in_flight: int = 2
    fma_latency: float = 2.5e-9  # a dependent fused multiply-add (~4 cycles)
    # an elementwise operand of a matmul evaluated on its tiles as they load (Triton on a
    # GPU); False where the backend computes it as a tensor first (numpy on the CPU), so
    # it is a kernel there, paid once however many matmuls read it
    fused_prologues: bool = True
    # seconds per element for each operation of a kernel body (its epilogue's, for a
    # matmul) evaluated one at a time: 0 where a kernel keeps its intermediates in
    # registers (a GPU kernel); numpy makes each operation a pass over a temporary (a
    # reduction's over its whole broadcast space), a select (np.where) a slower one, and a
    # load at an index that is not a view of its tensor (shifted, or two variables on one
    # axis) a gather (fancy indexing); measured on this project's 2-core VM on 2.4M-element
    # arrays: a multiply 0.11 ns an element, np.where 1.9 ns, a 2-D gather 4.7 ns
    pass_time: float = 0.0
    select_time: float = 0.0
    gather_time: float = 0.0
    # kernels of at least COMPILE_MIN_OPS operations run compiled, one pass at the kept
    # loops' rates over `loop_cores` (the numpy backend, `backends/cpu_kernels.py`)
    compiled_kernels: bool = False
    # where kept loop nests run on a host across a link (a GPU target: the Triton backend
    # runs them on the CPU, compiled): the link's bytes/s and one copy's latency; 0 where
    # they run beside the data (the CPU target)
    host_link: float = 0.0
    host_latency: float = 0.0
    # cores a kept nest's parallel loops (eqsat/parallel.py) spread over, where kept nests run
    loop_cores: int = 1
    # lanes one output element's reduction is split over (a tree): a GPU kernel's block of
    # the reduced axis (`backends/triton_backend.py` uses the same number), numpy's
    # unrolled pairwise sums on the CPU
    red_lanes: int = 1
    # combining the lanes of a tree: each level within a warp is a shuffle; beyond a warp
    # the warps' partials meet once in shared memory behind a barrier
    warp: int = 32
    shuffle_latency: float = 2e-8  # ~30 cycles
    barrier_latency: float = 6e-8  # a shared-memory round trip and a barrier, ~100 cycles


TARGETS = {
    # H100 SXM datasheet: 67 TF FP32, 495 TF TF32 dense, 3.35 TB/s HBM3
    # (PCIe 5.0 x16: ~25 GB/s in practice, ~10 us a copy)
    "h100": Target("h100", 67e12, 495e12, 3.35e12, 4e-6, host_link=25e9, host_latency=1e-5,
                   red_lanes=GPU_RED_LANES),
    # A100 SXM 80GB: 19.5 TF FP32, 156 TF TF32 dense, 2.04 TB/s HBM2e (PCIe 4.0 x16)
    "a100": Target("a100", 19.5e12, 156e12, 2.04e12, 4e-6, host_link=12.5e9, host_latency=1e-5,
                   red_lanes=GPU_RED_LANES),
    # a 2-core x86 machine running numpy: no tensor cores; BLAS reaches ~the SIMT peak
    # kept loops on the CPU run compiled (numba) on one core: 0.3 ns an operation and 20 GB/s
    # (a compiled loop's independent operations overlap and its data is mostly in cache:
    # calibrated on PolyBench's kept nests at MEDIUM, where 1 ns and 5 GB/s modeled them
    # 2.5-36x slower than they run; now 0.7-9.5x, the vectorized stencils the highest)
    "cpu": Target("cpu", 100e9, 100e9, 20e9, 2e-6, loop_op_time=3e-10, loop_bandwidth=2e10,
                  load_latency=1e-8, loads_in_flight=4, tile_k=256, tiles_in_flight=1, fma_latency=1e-9,
                  fused_prologues=False,
                  pass_time=1.5e-10, select_time=2e-9, gather_time=5e-9, compiled_kernels=True, loop_cores=2,
                  red_lanes=8, warp=8, shuffle_latency=1e-9, barrier_latency=0.0),
}

# flops charged per application of a function
# functions a compiled kernel calls per element (numba: libm's scalar sin and cos, ~10 ns
# each), where numpy's passes are vectorized: 1000x1000 of `sin(x) * cos(y) + sin(..)**2`
# ran 9.5 ms compiled against 2.4 ms in numpy passes (this machine)
PER_ELEMENT_CALLS = frozenset({"sin", "cos"})
FN_FLOPS = {"relu": 1, "neg": 1, "abs": 1, "exp": 4, "log": 4, "sqrt": 4, "tanh": 8, "sigmoid": 6, "silu": 7,
            "gelu": 14, "sin": 8, "cos": 8}
ITEM = 4  # bytes per f32 element
# binary scalar operations that cost a flop and a pass over their two operands
ARITHMETIC = frozenset({"Sc.add", "Sc.sub", "Sc.mul", "Sc.div", "Sc.max", "Sc.min"})


@dataclass(slots=True)
class ScInfo:
    """Cost of one evaluation of a scalar expression."""

    flops: float = 0.0
    loads: frozenset = frozenset()  # (tensor key, index key) read outside any reduction
    red_bytes: float = 0.0  # bytes read inside reductions (re-read per step)
    deps: dict = field(default_factory=dict)  # kernel key -> its own cost
    has_red: bool = False
    steps: float = 0.0  # dependent reduction steps per evaluation, every reduction a chain
    # one lane's chain where the outermost reductions are trees (`lanes`): its steps and
    # the bytes it reads inside reductions
    tree_steps: float = 0.0
    tree_bytes: float = 0.0
    combine: float = 0.0  # seconds its trees spend combining lanes (`combine_latency`)
    passes: float = 0.0  # seconds per evaluation of its operations' passes (`Target.pass_time`)
    # variables that move a load across rows (in an axis before its last, not in its last)
    # outside any reduction here; whether a reduction's own variable does that in its body
    # (a compiled loop would stride through memory: `Target.compiled_kernels` does not apply)
    strided: frozenset = frozenset()
    # numpy's whole-array passes run it faster than one compiled pass: a reduction whose own
    # variable strides in its body, or a function compiled code calls per element where
    # numpy's are vectorized (`PER_ELEMENT_CALLS`)
    uncompiled: bool = False


@dataclass(slots=True)
class TenInfo:
    own: float = 0.0  # this node's own kernel time (0 for views)
    deps: dict = field(default_factory=dict)
    view: bool = False
    mm: tuple | None = None  # for a matmul node: (flops, operand+output bytes, deps, latency, prologue flops)
    prologue: bool = False  # an elementwise compute (or a view of one): a matmul reading it fuses it
    pro_deps: dict | None = None  # the prologue's own dependencies (its inputs' kernels)
    bytes: float = 0.0  # DRAM bytes this kernel reads and writes
    flops: float = 0.0
    compiled: bool = False  # a pointwise or reduction kernel run compiled (`Target.compiled_kernels`)

    @property
    def total(self) -> float:
        return self.own + math.fsum(self.deps.values())


def union(*ds) -> dict:
    """The kernels of several dependency maps. Maps are never changed once made, so where
    every map is contained in the largest (the same kernels at the same prices: a chain's
    scalar ops all reading the kernels before them) that one is returned as it is; copying
    it at every op made a deep chain's extraction quadratic (a 1500-deep chain: 27k copies
    of ~800 entries)."""
    if len(ds) == 2:  # the common case, without the general loop
        a, b = ds
        if not b or a is b:
            return a if a else {}
        if not a:
            return b
    big = None
    for d in ds:
        if d and (big is None or len(d) > len(big)):
            big = d
    if big is None:
        return {}
    if all(d is big or not d or d.items() <= big.items() for d in ds):
        return big
    out: dict = {}
    for d in ds:
        out.update(d)
    return out


_NOTHING = ScInfo()  # (never changed: `_binary` makes a new info)


def _binary(a: ScInfo, b: ScInfo, flops: float, passes: float) -> ScInfo:
    """`_combine` of two parts (most scalar e-nodes): the same sums, unrolled."""
    return ScInfo(a.flops + b.flops + flops, a.loads | b.loads if b.loads else a.loads,
                  a.red_bytes + b.red_bytes, union(a.deps, b.deps), a.has_red or b.has_red,
                  a.steps + b.steps, a.tree_steps + b.tree_steps, a.tree_bytes + b.tree_bytes,
                  a.combine + b.combine, a.passes + b.passes + passes,
                  a.strided | b.strided if b.strided else a.strided, a.uncompiled or b.uncompiled)


def _combine(parts: list, flops: float, passes: float) -> ScInfo:
    """An operation over scalar `parts` that costs `flops` and `passes` itself: all parts
    are evaluated."""
    if len(parts) == 2:
        return _binary(parts[0], parts[1], flops, passes)
    return ScInfo(sum(p.flops for p in parts) + flops, frozenset().union(*(p.loads for p in parts)),
                  sum(p.red_bytes for p in parts), union(*(p.deps for p in parts)),
                  any(p.has_red for p in parts), sum(p.steps for p in parts),
                  sum(p.tree_steps for p in parts), sum(p.tree_bytes for p in parts), sum(p.combine for p in parts),
                  sum(p.passes for p in parts) + passes, frozenset().union(*(p.strided for p in parts)),
                  any(p.uncompiled for p in parts))


def pow2(n: int) -> int:
    """The least power of two >= n (1 for n <= 1)."""
    return 1 << max(0, math.ceil(math.log2(max(n, 1))))


def lanes(t: Target, n: int) -> int:
    """Lanes a reduction of `n` steps is split over on target `t` (a power of two)."""
    return min(pow2(n), t.red_lanes)


def kernel_time(t: Target, flops: float, bytes_: float, latency: float = 0.0, tensor_cores: bool = False) -> float:
    peak = t.tc_flops if tensor_cores else t.simt_flops
    return max(flops / peak, bytes_ / t.bandwidth, latency) + t.launch


def combine_latency(t: Target, lanes_: int) -> float:
    """Combining `lanes_` partial results: a shuffle a level within a warp, and the warps'
    partials through shared memory."""
    levels = math.log2(lanes_)
    in_warp = min(levels, math.log2(t.warp))
    cross = levels - in_warp
    return in_warp * t.shuffle_latency + (t.barrier_latency + cross * t.shuffle_latency if cross > 0 else 0.0)


def untiled_latency(t: Target, body: "ScInfo", tree: bool = True) -> float:
    """Dependent load steps of one element of an untiled kernel: its outermost reductions
    as trees over lanes (`tree`), or every reduction a chain (inside another reduction)."""
    chain, steps, combine = (body.tree_bytes, body.tree_steps, body.combine) if tree else \
        (body.red_bytes, body.steps, 0.0)
    trips = math.ceil((len(body.loads) + chain / ITEM) / t.loads_in_flight)
    return trips * t.load_latency + steps * t.fma_latency + combine


def matmul_latency(t: Target, k: int) -> float:
    return math.ceil(math.ceil(k / t.tile_k) / t.tiles_in_flight) * t.load_latency


def loop_rates(t: Target) -> Target:
    """The target whose loop rates a kept nest runs at: the host's where `t` has one."""
    return TARGETS["cpu"] if t.host_link else t


def loop_terms(t: Target, work: dict) -> dict:
    """The terms of a kept nest's cost, in seconds: its sequential chain's compute and
    memory (at the rates of where it runs) and, on a target with a host, the copies of
    what it reads and writes across the link."""
    r = loop_rates(t)
    # the work inside its parallel loops is spread over the cores (memory up to the bandwidth)
    pops, pbytes = work.get("parallel_ops", 0.0), work.get("parallel_bytes", 0.0)
    par_bw = min(r.loop_bandwidth * r.loop_cores, r.bandwidth)
    terms = {"compute": (work["ops"] - pops) * r.loop_op_time + pops * r.loop_op_time / r.loop_cores,
             "memory": (work["bytes"] - pbytes) / r.loop_bandwidth + pbytes / par_bw}
    if t.host_link:
        terms["link"] = work.get("io_bytes", 0) / t.host_link + 2 * t.host_latency
    return terms


def loop_time(t: Target, work: dict) -> float:
    """A kept nest: max(compute, memory) of its chain, plus the link, its library calls,
    one launch."""
    terms = loop_terms(t, work)
    scalar = max(terms["compute"], terms["memory"]) + terms.get("link", 0.0)
    return scalar + work["lib_flops"] / t.tc_flops + work["lib_calls"] * t.launch + t.launch


class Model:
    """Combines child costs into a node's cost; shared by extraction and plan costing.

    `shape(key)` gives a tensor's concrete shape (or None), `nest_work(id)` a loop
    kernel's modeled work. Keys are e-class ids during extraction and terms afterwards.
    """

    def __init__(self, target: Target, shape, nest_work, item=None, gather=None, strided=None, last_var=None):
        self.t = target
        self.shape = shape
        self.nest_work = nest_work
        # whether a load's index list (its key) reads other than a view of its tensor: a
        # gather where a backend evaluates loads as arrays (numpy)
        self.gather = gather or (lambda key: False)
        # the variables that move a load at index list `key` across rows (`ScInfo.strided`),
        # and the last variable of a Dims list (the innermost loop of a compiled kernel)
        self.strided = strided or (lambda key: frozenset())
        self.last_var = last_var or (lambda key: None)
        # bytes an element of a tensor takes in memory: its dtype's for a program input of
        # f16 or bf16 (and views of one), 4 for everything eqsat computes (f32)
        self.item = item or (lambda key: ITEM)
        self._sizes: dict = {}  # key -> elements (`size`)

    def size(self, key) -> float:
        got = self._sizes.get(key)
        if got is None:
            s = self.shape(key)
            got = self._sizes[key] = INF if s is None else float(math.prod(s))
        return got

    def evaluations(self, info: ScInfo, m: float) -> float:
        """A scalar evaluated `m` times (once for each point of its free variables): its
        operations and reductions m times, and each distinct load read at most as many
        elements as its tensor holds, as a compute kernel's bytes count them (`ten`): `x[i,
        f] - c[k, f]` over i, k, f reads x and c once each, not once per (i, k, f); the
        tensor of those differences, loaded, reads all of it."""
        t = self.t
        by = math.fsum(min(m, self.size(k)) * self.item(k) for k, _ in info.loads) if info.loads else 0.0
        return (info.flops / t.simt_flops + info.red_bytes / t.bandwidth + info.passes) * m + by / t.bandwidth

    def entry(self, key, info: TenInfo) -> dict:
        return union(info.deps, {key: info.own}) if not info.view else info.deps

    # -------------------------------------------------------------- scalars
    def sc(self, op: str, a: list) -> ScInfo | None:
        """`a`: ScInfo for scalar children, (key, TenInfo) for tensors, raw values otherwise."""
        if op in ("Sc.lit", "Sc.param", "Sc.acc"):
            return ScInfo()
        if op == "Sc.idx":
            return ScInfo(1.0)
        if op == "Sc.load":
            key, info = a[0]
            if info.own == INF:
                return None
            return ScInfo(0.0, frozenset({(key, a[1])}), 0.0, self.entry(key, info),
                          passes=self.t.gather_time if self.gather(a[1]) else 0.0, strided=self.strided(a[1]))
        if op in ARITHMETIC:
            return self.arithmetic(a[0], a[1])
        if op == "Sc.fn":
            x = a[1]
            if a[0] in ("float32", "float"):  # (a rounding where the value is made, or a widening: no operation)
                return x
            return ScInfo(x.flops + FN_FLOPS.get(a[0], 4), x.loads, x.red_bytes, x.deps, x.has_red, x.steps,
                          x.tree_steps, x.tree_bytes, x.combine, x.passes + self.t.pass_time, x.strided,
                          x.uncompiled or a[0] in PER_ELEMENT_CALLS)
        if op == "Sc.select":  # a compare and a select; both values are computed
            return _combine(a[1:], 2, self.t.pass_time + self.t.select_time)
        if op == "Sc.red":
            n, x = a[2], a[3]
            step_bytes = math.fsum(self.item(k) for k, _ in x.loads) + x.red_bytes
            w = lanes(self.t, n)
            per_lane = math.ceil(n / w)
            return ScInfo(n * (x.flops + 1), frozenset(), n * step_bytes, x.deps, True, n * (x.steps + 1),
                          per_lane * (x.steps + 1), per_lane * step_bytes, combine_latency(self.t, w),
                          n * (x.passes + self.t.pass_time), frozenset(), x.uncompiled or a[1] in x.strided)
        return None

    def arithmetic(self, a: ScInfo, b: ScInfo) -> ScInfo:
        """A binary arithmetic operation (`ARITHMETIC`) over two evaluated scalars. Over one
        value twice (`d * d`: the same info, one class or one term) that value is paid once:
        every backend computes a kernel body's shared term once (a memo per term)."""
        return _binary(a, _NOTHING if a is b else b, 1, self.t.pass_time)

    # -------------------------------------------------------------- tensors
    def ten(self, key, op: str, a: list, closed: bool, extents=None) -> TenInfo | None:
        """`extents`: the output extents for compute/fused nodes."""
        t = self.t
        if op == "Ten.input":
            return TenInfo(0.0, {}, view=True)
        if op in ("Ten.transpose", "Ten.slice", "Ten.reshape"):
            if not closed:
                return TenInfo(INF, {}, view=True)
            ck, ci = a[0]
            if op == "Ten.transpose" and ci.prologue:  # a transposed prologue is still one
                return TenInfo(0.0, self.entry(ck, ci), view=True, prologue=True, pro_deps=ci.pro_deps,
                               bytes=ci.bytes, flops=ci.flops)
            return TenInfo(ci.own if ci.own == INF else 0.0, self.entry(ck, ci), view=True)
        if not closed:
            return TenInfo(INF, {})
        if op == "Ten.compute":
            body = a[1]
            elems = float(math.prod(extents))
            by = math.fsum(min(elems, self.size(k)) * self.item(k) for k, _ in body.loads) + elems * body.red_bytes + \
                elems * ITEM
            compiled = t.compiled_kernels and elems * body.flops >= COMPILE_MIN_OPS and not body.uncompiled and \
                self.last_var(a[0]) not in body.strided
            if compiled:
                # one pass, its outermost axis in parallel (at most the loops' bandwidth)
                own = max(elems * body.flops * t.loop_op_time / t.loop_cores,
                          by / min(t.loop_bandwidth * t.loop_cores, t.bandwidth)) + t.launch
            else:
                own = kernel_time(t, elems * body.flops, by, untiled_latency(t, body)) + elems * body.passes
            return TenInfo(own, body.deps, compiled=compiled,
                           bytes=by, flops=elems * body.flops, prologue=not body.has_red,
                           pro_deps=None if body.has_red else body.deps)
        if op == "Ten.matmul":
            (ka, ia), (kb, ib) = a
            sa, sb, so = self.shape(ka), self.shape(kb), self.shape(key)
            if sa is None or sb is None or so is None or ia.own == INF or ib.own == INF:
                return None
            flops = 2.0 * math.prod(so) * sa[-1]
            (ba, pa, da), (bb, pb, db) = self.operand(ka, ia, sa), self.operand(kb, ib, sb)
            by = ba + bb + ITEM * math.prod(so)
            deps = union(da, db)
            lat = matmul_latency(t, sa[-1])
            own = max(flops / t.tc_flops + (pa + pb) / t.simt_flops, by / t.bandwidth, lat) + t.launch
            return TenInfo(own, deps, mm=(flops, by, deps, lat, pa + pb), bytes=by, flops=flops + pa + pb)
        if op == "Ten.fused":
            body, imm = a[1], a[2][1]
            if imm.mm is None:
                return None
            flops, by, deps, lat, pro = imm.mm
            elems = float(math.prod(extents))
            epi = math.fsum(min(elems, self.size(k)) * self.item(k) for k, _ in body.loads) + elems * body.red_bytes
            # an epilogue's reductions run as chains on the accumulator tile
            lat += math.ceil(body.red_bytes / ITEM / t.loads_in_flight) * t.load_latency + body.steps * t.fma_latency
            simt = pro + elems * body.flops
            own = max(flops / t.tc_flops + simt / t.simt_flops, (by + epi) / t.bandwidth, lat) + t.launch + \
                elems * body.passes
            return TenInfo(own, union(deps, body.deps), bytes=by + epi, flops=flops + simt)
        if op == "Ten.opaque":
            nest = a[0]
            deps = union(a[2], a[3], {("nest", nest): loop_time(t, self.nest_work(nest))})
            return TenInfo(0.0, deps, view=True)
        return None

    def operand(self, key, info: TenInfo, shape) -> tuple:
        """(bytes, flops, deps) of a matmul reading one operand. An elementwise compute is a
        prologue: evaluated as each tile is loaded, it reads its own inputs and is never
        stored, so its kernel is not paid (a plan that also needs the tensor elsewhere
        pays that kernel there)."""
        if info.prologue and self.t.fused_prologues:
            return info.bytes - ITEM * math.prod(shape), info.flops, info.pro_deps
        return self.item(key) * math.prod(shape), 0.0, self.entry(key, info)

    def lists(self, op: str, a: list) -> dict | None:
        """Tens/Scs lists carry the dependencies of their items."""
        if op in ("Tens.nil", "Scs.nil"):
            return {}
        if op == "Tens.cons":
            key, info = a[0]
            if info.own == INF:
                return None
            return union(self.entry(key, info), a[1])
        if op == "Scs.cons":
            return union(a[0].deps, a[1])
        return None
