"""A plan's Triton kernels, loaded once, run with every intermediate on the device.

`Plan.compiled("triton")` builds this once per plan: the kernel source is generated and
loaded once, each launch's argument list is fixed. A call moves the caller's arrays to the
device once (torch tensors already there are used as they are), launches the kernels in
order with their outputs kept as device tensors (views of them are torch views: a
transposed operand is read through its strides), and returns the results in the caller's
kind: torch tensors on the device for torch inputs, numpy arrays for numpy inputs.

A loop nest kept as written has no Triton kernel yet: it runs on the host (compiled by
numba like the numpy backend's), its inputs copied to the host and its outputs back.
`how` says so; those are the only transfers between kernels.

Matmul kernels launch with `tuning.DEFAULT`'s tile without a GPU; on a CUDA device the
first call tunes each one's config for its shape (`backends/tuning.py`, kept in `tuner`
for the life of this runner). `configs` says what each used and why.
"""
from __future__ import annotations

import contextlib
import os
import threading

import numpy as np

from eqsat import lang
from eqsat.args import bind_args, scalar_arg, to_numpy
from eqsat.terms import unlist, walk

from . import numpy_backend, tuning
from .triton_backend import DOT16, DOT16_INTERPRETED, _cache_dir, _ensure_triton, _kernels, source, write_source

_STATE = threading.local()  # `launching`: inside a kernel launch (the interpreter's own copies)
# Triton's interpreter patches `triton.language` for the kernel it runs, process-wide: two
# interpreted launches at once break each other ("Did you forget to add @triton.jit ?"),
# so interpreted launches take turns (compiled ones on a GPU need no lock)
_INTERPRETER_LOCK = threading.Lock()
INTERPRETED = [False]  # whether a launch went through Triton's interpreter in this process


def launching() -> bool:
    return getattr(_STATE, "launching", False)


class TritonCompiled:
    def __init__(self, plan):
        interpret = _ensure_triton()
        import torch

        self.torch = torch
        self.plan = plan
        self.device = "cpu" if interpret else "cuda"
        self.lock = _INTERPRETER_LOCK if interpret else contextlib.nullcontext()
        if interpret:
            INTERPRETED[0] = True  # (its kernel definitions below patch triton for the process)
        self.precision = "ieee" if interpret else os.environ.get("EQSAT_TRITON_PRECISION", "tf32")
        generated = _kernels(plan, self.precision, DOT16_INTERPRETED if interpret else DOT16)
        src = source(plan, kernels=generated)
        path = os.path.join(_cache_dir(), f"eqsat_{plan.program.name}_{abs(hash(src)) & 0xffffffff:x}.py")
        write_source(path, src)  # triton.jit reads its kernel's source from a file
        ns: dict = {}
        exec(compile(src, path, "exec"), ns)
        gen = {g.name: g for g in generated}
        self.steps = [("loop", k, None) if k.kind == "loop" else ("kernel", gen[k.name], ns[k.name])
                      for k in plan.kernels]
        host = [k.nest for k in plan.kernels if k.kind == "loop"]
        self.tuner = tuning.Tuner()
        self._checked: set = set()  # the call signatures `_bind` has checked (`_signature`)
        self.narrow = self._narrow_outputs()
        tiles = (f"matmul tiles tuned per shape on the first call ({len(self.tuner.configs)} configs; see .configs)"
                 if self.tuner.on else f"matmul tiles {tuning.DEFAULT} (the default, not tuned)")
        self.how = "triton kernels, intermediates on the device" + (
            f"; loop nest(s) {', '.join(f'#{n}' for n in host)} run on the host (their inputs and outputs "
            f"cross to and from the device)" if host else "") + (
            f"; {tiles}" if any(g.gemm_size for kind, g, _ in self.steps if kind == "kernel") else "")

    @property
    def configs(self) -> dict:
        """Matmul kernel name -> `tuning.Choice`: the tile config its launches use (the
        default until a call on a GPU tunes it), whether it was tuned, why, the timings."""
        return {g.name: self.tuner.choice(g.name) for kind, g, _ in self.steps if kind == "kernel" and g.gemm_size}

    # ------------------------------------------------------------------ a call
    def __call__(self, args):
        torch = self.torch
        plan = self.plan
        as_torch = any(isinstance(a, torch.Tensor) for a in args)
        # torch results go back where the caller's tensors are: on the device if any input is
        # there, else on the host (CPU tensors in, CPU tensors out, also on a GPU machine)
        out_device = next((a.device for a in args if isinstance(a, torch.Tensor) and a.device.type != "cpu"),
                          torch.device("cpu"))
        signature = self._signature(args)
        if signature is not None and signature in self._checked:
            inputs, scalars = self._bind_checked(args)
        else:
            inputs, scalars = self._bind(args)
            if signature is not None:
                self._checked.add(signature)
        env = _Env(self, inputs, scalars)
        for kind, g, fn in self.steps:
            if kind == "loop":
                env.run_nest(g.nest)
                continue
            call = []
            for t in g.inputs:
                arr = env.tensor(t)
                call += [arr, *arr.stride()]
            call += [scalars[p] for p in g.params]
            out = torch.empty(g.shape, dtype=self.narrow.get(g.k.term, torch.float32), device=self.device)
            _STATE.launching = True
            try:
                if g.gemm_size and self.tuner.on:
                    self._launch_tuned(g, fn, out, call)
                else:  # no GPU: the default tile, launched as it always was
                    with self.lock:
                        fn[g.grid](out, *call, **g.meta)
            finally:
                _STATE.launching = False
            env.values[g.k.term] = out
        outs = []
        for root, is_scalar in zip(plan.roots, plan.lowered.outputs_scalar):
            v = env.tensor(root)
            if root not in env.values:  # a view (of an input, say): the caller gets its own copy
                v = v.clone()
            v = v.contiguous()
            if is_scalar:
                v = v.reshape(())
            outs.append(v.to(out_device) if as_torch else self._to_host(v))
        if not as_torch:
            outs = [numpy_backend.number_out(numpy_backend.returns_number(plan, i))(np.asarray(o)) if o.ndim == 0
                    else o for i, o in enumerate(outs)]
        for i, dtype in enumerate(plan.program.out_dtypes):
            # computed in f32 (an input returned as it is: in its own dtype), returned in the
            # declared dtype
            if as_torch:
                outs[i] = outs[i].to(self._torch_dtype(dtype))
            elif dtype is not lang.f32:
                outs[i] = lang.as_dtype(outs[i], dtype)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _narrow_outputs(self) -> dict:
        """Kernel output term -> the 16-bit torch dtype its kernel stores it in: a result
        declared f16 that no other step reads is rounded by the kernel's store (as
        `.to()` after it would round the f32 value: to nearest even), not written in f32 and
        converted by another pass over it."""
        plan = self.plan
        declared: dict = {}
        for root, dtype, is_scalar in zip(plan.roots, plan.program.out_dtypes, plan.lowered.outputs_scalar):
            declared.setdefault(root, set()).add(None if is_scalar else dtype.name)
        read = set()
        for kind, g, _ in self.steps:
            for t in ([plan.nest_terms[g.nest]] if kind == "loop" else g.inputs):
                read.update(walk(t))
        # (not bf16: Triton's interpreter truncates a store's f32 -> bf16 where .to() rounds)
        narrow = {"f16": self.torch.float16}
        return {g.k.term: narrow[d] for kind, g, _ in self.steps if kind == "kernel" and g.k.term not in read
                for d in declared.get(g.k.term, ()) if d in narrow and len(declared[g.k.term]) == 1}

    def _bind(self, args) -> tuple[dict, dict]:
        """The call's tensors on the device (by parameter name) and its float scalars, every
        argument checked (`args.bind_args`)."""
        torch, plan = self.torch, self.plan
        # device tensors stay where they are: every argument is checked as on the host, a
        # device tensor through a stand-in of its shape (no copy)
        device = frozenset(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.device.type != "cpu")
        host_args = [_stand_in(a) if i in device else to_numpy(a) if isinstance(a, torch.Tensor) else a
                     for i, a in enumerate(args)]
        if device:
            self._check_device_dtypes(args, device)
        vals, dims = bind_args(plan.program, host_args, plan.unbound_dims(), copy=False, keep=device)
        plan.check_dims_of_call(dims)
        return self._placed([args[i] if i in device else v for i, v in enumerate(vals)])

    def _placed(self, vals: list) -> tuple[dict, dict]:
        """Checked argument values -> (tensors on the device in their declared dtype, by
        parameter name; float scalars)."""
        inputs, scalars = {}, {}
        for p, v in zip(self.plan.program.params, vals):
            if p.dtype is int:
                continue
            if p.shape is None:
                scalars[p.name] = float(v)
            else:
                inputs[p.name] = self._input_to_device(v, p.dtype)
        return inputs, scalars

    def _signature(self, args) -> tuple | None:
        """What `_bind`'s checks read of a call whose tensors are all float torch tensors
        where the kernels run (on the GPU; on the host under the interpreter): each one's
        dtype, shape and device, each scalar's type; None for any other call (numpy arrays,
        tensors elsewhere, integer parameters: checked every time)."""
        torch = self.torch
        params = self.plan.program.params
        if len(args) != len(params):
            return None
        sig = []
        for p, a in zip(params, args):
            if p.dtype is int:
                return None
            if p.shape is None:
                if isinstance(a, torch.Tensor) or type(a) not in (float, int, np.float32, np.float64):
                    return None
                sig.append(type(a))
            elif (isinstance(a, torch.Tensor) and a.device.type == self.device and not a.requires_grad
                  and a.dtype in (torch.float32, torch.float16, torch.bfloat16)):
                sig.append((a.dtype, tuple(a.shape), a.device))
            else:
                return None
        return tuple(sig)

    def _bind_checked(self, args) -> tuple[dict, dict]:
        """`_bind` for a call of a signature `_bind` has checked: the same tensors (on the
        device, as they are, in their declared dtype) and scalars, no check repeated."""
        prog = self.plan.program
        return self._placed([a if p.shape is not None else scalar_arg(p, prog, a) for p, a in zip(prog.params, args)])

    def _launch_tuned(self, g, fn, out, call):
        """Launch a matmul kernel with its config for this shape, tuned on first use (the
        timed launches each write all of `out`; the chosen config then writes it once more)."""
        dtypes = tuple(str(a.dtype) for a in (out, *call) if isinstance(a, self.torch.Tensor))
        key = (g.name, g.shape, dtypes, self.precision)
        def shared():  # (made on the first launch of a key only: it hashes the source)
            strides = tuple(x for x in call if type(x) is int)  # (scalar parameters are floats)
            return tuning.launch_key(self._device_name(), g.source, g.name, (*g.gemm_size, *g.shape),
                                     (*strides, *dtypes), self.precision)

        cfg = self.tuner.config(key, lambda c: fn[c.grid(*g.gemm_size)](out, *call, **c.launch), shared, g.flops)
        fn[cfg.grid(*g.gemm_size)](out, *call, **cfg.launch)

    def _device_name(self) -> str:
        torch = self.torch
        if self.device == "cuda":
            return torch.cuda.get_device_name()
        return "no GPU (Triton's interpreter)"

    def _torch_dtype(self, dtype):
        return {"f32": self.torch.float32, "f16": self.torch.float16, "bf16": self.torch.bfloat16}[dtype.name]

    def _input_to_device(self, v, dtype):
        """A tensor parameter on the device in its declared dtype: f16 and bf16 inputs stay
        that narrow there (the kernels load them as they are, widen them to f32 to compute,
        and feed a matmul of two such operands to a 16-bit tensor-core dot that accumulates
        in f32); a value passed wider is rounded to the declared dtype, as the reference
        rounds it."""
        torch = self.torch
        want = self._torch_dtype(dtype)
        if not isinstance(v, torch.Tensor):
            v = torch.from_numpy(_writable(np.asarray(v, dtype=np.float32, order="C")))  # keeps 0-d
        if v.dtype not in (torch.float32, torch.float16, torch.bfloat16, want):
            v = v.to(torch.float32)  # ints, float64: to f32 first (as bind_args does), then rounded
        return v.to(device=self.device, dtype=want)

    def _check_device_dtypes(self, args, device):
        for i in device:
            a, p = args[i], self.plan.program.params[i] if i < len(self.plan.program.params) else None
            if p is not None and p.shape is not None and (a.is_complex() or a.dtype == self.torch.bool):
                from eqsat.errors import ArgumentError

                raise ArgumentError(f"parameter {p.name!r} of {self.plan.program.name} must be a real numeric "
                                    f"tensor, got dtype {a.dtype}")

    def _to_device(self, v, number: bool = False):
        """`v` as a float32 device tensor; float64 for a `number`, a scalar a kept nest leaves
        holding a Python number (`lower.Nest.numbers`)."""
        torch = self.torch
        if isinstance(v, torch.Tensor):
            return v.to(device=self.device, dtype=torch.float64 if number else torch.float32)
        dtype = np.float64 if number else np.float32
        return torch.from_numpy(_writable(np.asarray(v, dtype=dtype, order="C"))).to(self.device)  # keeps 0-d

    def _to_host(self, t):
        """A float32 numpy array (the host computes in f32; an f16 input read there widens),
        float64 for a float64 one (a Python number a kept nest left: `_to_device`)."""
        torch = self.torch
        return t.detach().cpu().to(torch.float64 if t.dtype == torch.float64 else torch.float32).numpy()


class _TorchViews:
    """The view operations `numpy_backend.Runner` uses, on torch tensors (device-resident)."""

    @staticmethod
    def transpose(x, perm):
        return x.permute(*perm)

    @staticmethod
    def reshape(x, shape):
        return x.reshape(shape)

    @staticmethod
    def call(fn, *args, **kw):
        return fn(*args, **kw)


class _Env(numpy_backend.Runner):
    """The tensors of one call: inputs, kernel outputs, nest outputs (all on the device),
    and the views the plan reads them through (the numpy runner's, as torch views)."""

    def __init__(self, compiled: TritonCompiled, inputs: dict, scalars: dict):
        plan = compiled.plan
        super().__init__(plan, [inputs.get(p.name) for p in plan.program.params], scalars, _TorchViews())
        self.c = compiled

    def stand_in(self, shape):
        return self.c._to_device(np.full(tuple(shape), np.nan, np.float32))

    def run_nest(self, nid: int):
        """A nest kept as written, on the host: its tensor inputs and the tensors its scalar
        inputs read are copied there, its outputs copied back."""
        c, plan = self.c, self.c.plan
        nest = plan.lowered.nests[nid]
        term = plan.nest_terms[nid]
        tensors = [c._to_host(self.tensor(t)) for t in unlist(term.args[2])]
        host = numpy_backend.Runner(plan, [], {k: np.float32(v) for k, v in self.scalars.items()})
        inputs = self.nest_scalar_inputs(nid)
        for _, s in inputs:
            for x in walk(s):
                if x.op == "Sc.load" and x.args[0] not in host.values:
                    host.values[x.args[0]] = c._to_host(self.tensor(x.args[0]))
        scalars = [numpy_backend.scalar_input(numpy_backend._Eval(host, {}, 0), s) for _, s in inputs]
        outs = numpy_backend._nest_call(plan, nid, tuple(n for n, _ in inputs))(*tensors, *scalars)
        self.nest_out[nid] = {name: None if v is None else c._to_device(v, name in nest.numbers)
                              for name, v in zip(nest.outputs, outs)}


def _stand_in(t):
    """A zero-stride numpy array of a device tensor's shape: what the argument checks read
    of it, without copying it to the host."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=tuple(t.shape), strides=(0,) * t.dim())


def _writable(a: np.ndarray) -> np.ndarray:
    """`a`, or a copy where it is read-only (torch.from_numpy warns of a read-only array,
    which a run never writes: parameters are passed by value)."""
    return a if a.flags.writeable else a.copy()
