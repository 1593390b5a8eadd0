"""The viewer: one self-contained HTML page (no scripts from the network) for a Plan.

It answers the user's questions about an extraction: what form was chosen, what each
kernel costs and why (the formula's terms), what the program looked like as written,
which rule families produced each kernel, and how saturation went.
"""
from __future__ import annotations

import html
import inspect

from .terms import walk

PROVENANCE = {
    "Ten.matmul": "matmul (loop nest to matmul) or a library call",
    "Ten.fused": "epilogue (fusion), after anti_inline / inline",
    "Ten.transpose": "transpose / uncache (a view)",
    "Ten.reshape": "matmul (flattened contraction or split loop; a view)",
    "Ten.compute": "inline / anti_inline (elementwise or reduction)",
}

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.4em} h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;width:100%} td,th{border:1px solid #ddd;padding:4px 8px;vertical-align:top}
th{background:#f4f4f4;text-align:left} code,pre{font:12px/1.4 ui-monospace,monospace}
pre{background:#f8f8f8;padding:8px;overflow-x:auto} .k-matmul{color:#05a} .k-loop{color:#a40}
.num{text-align:right;font-variant-numeric:tabular-nums} details{margin:.3em 0}
"""


def _e(x) -> str:
    return html.escape(str(x))


def render(plan) -> str:
    from .plan import describe

    r = plan.report
    names = plan.names()
    rows = []
    for k in plan.kernels:
        if k.kind == "loop":
            nest = plan.lowered.nests[k.nest]
            what = f"loop nest #{k.nest} kept as written: {nest.reason or 'no cheaper form'}"
            prov = "none (runs as written)"
        else:
            what = describe(k.term, {n: m for n, m in names.items() if n is not k.term})
            ops = {x.op for x in walk(k.term) if x.sort == "Ten"}
            prov = "; ".join(PROVENANCE[o] for o in ("Ten.fused", "Ten.matmul", "Ten.compute", "Ten.transpose", "Ten.reshape")
                             if o in ops)
        epi = ", ".join(k.epilogue) or "-"
        rows.append(f"<tr><td><code>{_e(k.name)}</code></td><td class='k-{_e(k.kind)}'>{_e(k.kind)}</td>"
                    f"<td>{_e(epi)}</td><td class=num>{k.cost * 1e6:.3f}</td><td><code>{_e(what)}</code></td>"
                    f"<td>{_e(prov)}</td></tr>")
    t = plan.costing.model.t
    try:
        src = inspect.getsource(plan.program.fn)
    except (OSError, TypeError):
        src = "(source unavailable)"
    nests = "".join(f"<li>nest #{n.id}: {_e(n.reason) if n.reason else 'has a functional form'}</li>"
                    for n in plan.lowered.nests.values()) or "<li>none</li>"
    fam = "".join(f"<li><code>{_e(f)}</code></li>" for f in plan.rules) or "<li>(none: rules=[])</li>"
    growth = ", ".join(str(x) for x in r.per_iteration_nodes)
    try:
        triton_src = plan.triton_source()
    except Exception as e:  # the page must not depend on the Triton backend
        triton_src = f"(Triton source unavailable: {type(e).__name__}: {e})"
    sizes = ", ".join(f"{k}={v}" for k, v in plan.dims.items())
    speed = plan.baseline_cost / plan.cost if plan.cost else 1.0
    return f"""<!doctype html><html><head><meta charset=utf-8><title>eqsat: {_e(plan.program.name)}</title>
<style>{CSS}</style></head><body>
<h1>eqsat plan for <code>{_e(plan.program.name)}</code></h1>
<p>Target <b>{_e(plan.target)}</b>, sizes {_e(sizes)}. Modeled cost <b>{plan.cost * 1e6:.3f} us</b>
against <b>{plan.baseline_cost * 1e6:.3f} us</b> as written ({speed:.2f}x), in {len(plan.kernels)} kernel(s).</p>
<h2>Kernels (in launch order)</h2>
<table><tr><th>kernel</th><th>kind</th><th>fused epilogue</th><th>modeled us</th><th>computes</th>
<th>made by rule families</th></tr>{''.join(rows)}</table>
<h2>Why this form</h2>
<p>Each kernel costs <code>max(flops / peak, bytes / bandwidth, latency) + launch</code>; the cheapest
equivalent form in the e-graph wins, with shared tensors paid once. Target data:
peak SIMT {t.simt_flops:.3g} flop/s, tensor cores {t.tc_flops:.3g} flop/s, bandwidth {t.bandwidth:.3g} B/s,
launch {t.launch * 1e6:.1f} us, load latency {t.load_latency * 1e9:.0f} ns
({t.loads_in_flight} in flight), matmul K-tile {t.tile_k}. Loop nests kept as written run as one
sequential chain: {t.loop_op_time * 1e9:.3g} ns an operation, {t.loop_bandwidth:.3g} B/s.</p>
<h2>Chosen program</h2><pre>{_e(str(plan))}</pre>
<h2>As written</h2><pre>{_e(src)}</pre>
<details><summary>Generated Triton kernels</summary><pre>{_e(triton_src)}</pre></details>
<p>Loop nests: </p><ul>{nests}</ul>
<h2>Saturation</h2>
<p>{r.nodes} e-nodes after {r.iterations} rounds; stopped: <b>{_e(r.stop_reason)}</b>;
saturation {r.seconds * 1e3:.1f} ms, build {r.build_seconds * 1e3:.1f} ms, extraction
{getattr(plan, 'extract_seconds', 0) * 1e3:.1f} ms. E-nodes after each chunk of rounds: {_e(growth)}.</p>
<p>Rule families run:</p><ul>{fam}</ul>
</body></html>
"""


def write(plan, path) -> str:
    text = render(plan)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)
