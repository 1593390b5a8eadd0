"""What the viewer shows, assembled from a Plan as plain JSON-able data.

`page_data(plan)` is the one entry point; eqsat/view.py renders it. Every field a newer
Plan may lack (the e-graph view, provenance, per-round records) comes out as None, and
the page says "not recorded" for it.
"""
from __future__ import annotations

import inspect
import re

from .cost import loop_rates, loop_terms
from .terms import Node

VIEW_OPS = ("Ten.transpose", "Ten.slice", "Ten.reshape")


def page_data(plan) -> dict:
    source, first_line = program_source(plan.program)
    triton_all, triton_by_kernel = triton_sources(plan)
    lines = SourceLines(plan, source, first_line)
    names = plan.names()
    provenance = getattr(plan, "provenance", None)
    vectors = vectorization(plan)
    kernels = []
    for i, k in enumerate(plan.kernels):
        entry = kernel_data(plan, k, lines, names)
        entry["triton"] = triton_by_kernel.get(k.name)
        entry["vectors"] = vectors.get(k.name)
        entry["provenance"] = provenance[i]["steps"] if provenance and i < len(provenance) else None
        kernels.append(entry)
    return {
        "program": plan.program.name,
        "target": plan.target,
        "sizes": dict(plan.dims),
        "cost": plan.cost,
        "baseline_cost": plan.baseline_cost,
        "extraction": extraction(plan),
        "source": source,
        "first_line": first_line,
        "chosen_text": str(plan),
        "peaks": peaks(plan),
        "kernels": kernels,
        "triton_all": triton_all,
        "egraph": getattr(plan, "egraph_view", None),
        "saturation": saturation(plan),
        "explain": explain_text(plan),
    }


def vectorization(plan) -> dict:
    """Kernel name -> its accesses' vector widths and why (backends/vector_report.py), from
    the analysis alone (no PTX compile while rendering)."""
    try:
        rows = plan.vectorization()
    except Exception:  # the page must not depend on the Triton backend
        return {}
    out: dict = {}
    for r in rows:
        out.setdefault(r.kernel, []).append({"role": r.role, "tensor": r.tensor, "shape": list(r.shape),
                                             "strides": list(r.strides), "axis": r.contiguous_axis,
                                             "width": r.width, "why": r.why})
    return out


# ------------------------------------------------------------------ program and header
def program_source(program) -> tuple[str, int]:
    """(the function's source, the file line it starts on); a placeholder when unavailable."""
    try:
        lines, start = inspect.getsourcelines(program.fn)
    except (OSError, TypeError):
        return "(source unavailable)", 0
    return "".join(lines), max(start, 1)


def extraction(plan) -> dict | None:
    ex = getattr(plan, "extraction", None)
    if not ex:
        return None
    return {"chosen": ex.get("chosen"), "cost": dict(ex.get("cost", {}))}


def peaks(plan) -> dict:
    t = plan.costing.model.t
    return {"simt_flops": t.simt_flops, "tc_flops": t.tc_flops, "bandwidth": t.bandwidth, "launch": t.launch,
            "loop_op_time": loop_rates(t).loop_op_time, "loop_bandwidth": loop_rates(t).loop_bandwidth,
            "host_link": t.host_link, "host_latency": t.host_latency,
            "load_latency": t.load_latency, "loads_in_flight": t.loads_in_flight, "tile_k": t.tile_k,
            "tiles_in_flight": t.tiles_in_flight, "red_lanes": t.red_lanes}


def explain_text(plan) -> str | None:
    explain = getattr(plan, "explain", None)
    if explain is None:
        return None
    try:
        return explain()
    except Exception as e:  # the page must render even if the explanation cannot be built
        return f"(explanation unavailable: {type(e).__name__}: {e})"


def saturation(plan) -> dict:
    r = plan.report
    rounds = getattr(r, "rounds", None)
    matches = getattr(r, "rule_matches", None)
    return {
        "stop_reason": r.stop_reason,
        "iterations": r.iterations,
        "nodes": r.nodes,
        "seconds": r.seconds,
        "build_seconds": r.build_seconds,
        "extract_seconds": getattr(plan, "extract_seconds", None),
        "per_iteration_nodes": list(r.per_iteration_nodes),
        "rounds": [dict(x) for x in rounds] if rounds else None,
        "rule_matches": None if matches is None else sorted(matches.items(), key=lambda kv: (-kv[1], kv[0])),
        "families": list(plan.rules),
        "assumes": plan.assumes,  # a plan under a checked assumption (eqsat/assume.py), else None
        "fallback_cost": plan.fallback.cost if plan.fallback is not None else None,
    }


# ------------------------------------------------------------------ kernels
def kernel_data(plan, k, lines: SourceLines, names: dict) -> dict:
    from .plan import describe

    if k.kind == "loop":
        nest = plan.lowered.nests[k.nest]
        computes = f"loop nest #{k.nest} kept as written"
        reason = nest.reason or "no cheaper equivalent form was found"
        var, src = None, lines.of_nest(nest)
    else:
        computes = describe(k.term, {n: m for n, m in names.items() if n is not k.term})
        reason = None
        var = output_var(plan, k.term)
        src = lines.of_var(var)
    return {
        "name": k.name, "kind": k.kind, "epilogue": list(k.epilogue), "prologue": list(k.prologue),
        "cost": k.cost, "flops": k.flops, "bytes": k.bytes, "computes": computes, "nest_reason": reason,
        "output": var, "lines": src["lines"], "lines_how": src["how"], "roofline": roofline(plan, k),
    }


def roofline(plan, k) -> dict:
    """The terms of the kernel's cost formula (eqsat/cost.py), each in seconds."""
    t = plan.costing.model.t
    if k.kind == "loop":
        work = plan.lowered.nests[k.nest].work
        terms = loop_terms(t, work)
        rates = loop_rates(t)
        library = work["lib_flops"] / t.tc_flops + work["lib_calls"] * t.launch
        formula = "max(ops x loop_op_time, bytes / loop_bandwidth) + library calls + launch"
        if "link" in terms:
            formula = ("max(ops x loop_op_time, bytes / loop_bandwidth) on the host + bytes in and out / "
                       "host_link + 2 host_latency + library calls + launch")
        return {"terms": terms, "binds": max(terms, key=terms.get), "launch": t.launch, "library": library,
                "formula": formula,
                "roofs": [{"name": "one thread" + (" (host)" if "link" in terms else ""),
                           "flops": 1.0 / rates.loop_op_time}],
                "bandwidth": rates.loop_bandwidth, "flops": k.flops, "bytes": k.bytes, "cost": k.cost}
    tc = tensor_core_flops(plan, k)
    compute = tc / t.tc_flops + (k.flops - tc) / t.simt_flops
    terms = {"compute": compute, "memory": k.bytes / t.bandwidth}
    floor = k.cost - t.launch
    if floor > max(terms.values()) * (1 + 1e-9) + 1e-15:
        # only the latency term is above the other two; when it does not bind the page
        # cannot know it, so it is left out rather than guessed
        terms["latency"] = floor
    roofs = [{"name": "SIMT peak", "flops": t.simt_flops}]
    if tc:
        roofs.append({"name": "tensor-core peak", "flops": t.tc_flops})
    return {"terms": terms, "binds": max(terms, key=terms.get), "launch": t.launch, "library": 0.0,
            "formula": ("max(matmul flops / tensor-core peak + other flops / SIMT peak, bytes / bandwidth, "
                        "latency) + launch" if tc else "max(flops / SIMT peak, bytes / bandwidth, latency) + launch"),
            "roofs": roofs, "bandwidth": t.bandwidth, "flops": k.flops, "bytes": k.bytes, "cost": k.cost}


def tensor_core_flops(plan, k) -> float:
    """The flops a matmul kernel runs on tensor cores (its prologue and epilogue run on SIMT)."""
    term = k.term
    if term is None or k.kind != "matmul":
        return 0.0
    mm = term.args[2] if term.op == "Ten.fused" else term
    info = plan.costing.info(mm)
    return float(info.mm[0]) if getattr(info, "mm", None) else 0.0


def output_var(plan, term: Node) -> str | None:
    """The program variable a kernel's tensor is bound to, when that can be read off exactly:
    an output of the program, or the functional form of a loop nest's output."""
    for root, ret in zip(plan.roots, plan.program.returns):
        while root.op in VIEW_OPS and root is not term:
            root = root.args[0]
        if root is term and hasattr(ret, "name"):
            return ret.name
    for opaque, functional in plan.lowered.unions:
        if functional is term and opaque.op == "Ten.opaque":
            return opaque.args[1]
    return None


class SourceLines:
    """File line numbers of the source a kernel comes from."""

    def __init__(self, plan, source: str, first_line: int):
        self.plan = plan
        self.text = source.splitlines() if first_line else []
        self.first = first_line

    def of_nest(self, nest) -> dict:
        span = stmt_span(nest.stmt)
        if span is None or not self.text:
            return {"lines": [], "how": "not mapped"}
        return {"lines": list(range(span[0], span[1] + 1)), "how": "the loop nest as written"}

    def of_var(self, var: str | None) -> dict:
        if var is None or not self.text:
            return {"lines": [], "how": "not mapped (the kernel's tensor has no name in the program)"}
        out: list = []
        for nest in self.plan.lowered.nests.values():
            if var in nest.outputs:
                out += self.of_nest(nest)["lines"]
        if out:
            return {"lines": sorted(set(out)), "how": f"the loop nests that write {var}"}
        word = re.compile(rf"\b{re.escape(var)}\b")
        body = [self.first + i for i, line in enumerate(self.text) if word.search(line)
                and not line.lstrip().startswith(("def ", "@"))]
        return {"lines": body, "how": f"lines that mention {var}"}


def stmt_span(stmt) -> tuple[int, int] | None:
    loc = getattr(stmt, "loc", None)
    if loc is None:
        return None
    node = getattr(stmt, "node", None)
    if node is not None and getattr(node, "end_lineno", None) is not None:
        return loc.line, loc.line + node.end_lineno - node.lineno
    return loc.line, loc.line


# ------------------------------------------------------------------ triton
KERNEL_HEAD = re.compile(r"^@triton\.jit\s*\n(?:@.*\n)*def (\w+)\(", re.MULTILINE)


def triton_sources(plan) -> tuple[str, dict]:
    """(all kernels' source or why it is unavailable, {kernel name: its own source})."""
    try:
        text = plan.triton_source()
    except Exception as e:  # the page must not depend on the Triton backend
        return f"(Triton source unavailable: {type(e).__name__}: {e})", {}
    return text, split_triton(text, {k.name for k in plan.kernels})


def split_triton(text: str, names: set) -> dict:
    """Each kernel's function, cut at the `@triton.jit` heads; only names of plan kernels
    are kept, so text the split misreads is never shown as some kernel's code."""
    heads = list(KERNEL_HEAD.finditer(text))
    out = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        if m.group(1) in names:
            out[m.group(1)] = text[m.start():end].rstrip() + "\n"
    return out
