"""The viewer: one self-contained HTML page for a Plan (inline CSS, JS and SVG; no network).

It answers the user's questions about an extraction: what form was chosen and which
candidate won, what each kernel costs and which term of the formula binds, which source
lines it comes from, what else the e-graph held and by how much it lost, which rules
built the chosen form, and how saturation went. The data comes from eqsat/viewdata.py;
the parts that need no interaction are rendered here, the rest by the page's script
from one JSON block.
"""
from __future__ import annotations

import html
import json
import math
import os

from .viewdata import page_data


def render(plan) -> str:
    data = page_data(plan)
    body = "".join([
        header_html(data),
        program_html(data),
        kernels_html(data),
        egraph_html(data),
        provenance_html(data),
        saturation_html(data),
        model_html(data),
    ])
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>eqsat: {_e(data['program'])}</title><style>{CSS}</style></head><body>{body}"
            f"<script type='application/json' id=page-data>{embed_json(data)}</script>"
            f"<script>{SCRIPT}</script></body></html>\n")


def write(plan, path) -> str:
    """Write the page to the file `path` (a str or os.PathLike; an int would be a file
    descriptor to `open`, which it then closes: refused)."""
    from .errors import ArgumentError

    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)) or not str(path):
        raise ArgumentError(f"plan.view(path): path must be a file name, got {path!r}")
    if os.path.isdir(path):
        raise ArgumentError(f"plan.view(path): {str(path)!r} is a directory; name the HTML file to write")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ArgumentError(f"plan.view(path): the directory {parent!r} does not exist")
    text = render(plan)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise ArgumentError(f"plan.view(path): cannot write {str(path)!r}: {e.strerror}") from None
    return str(path)


# ------------------------------------------------------------------ helpers
def _e(x) -> str:
    return html.escape(str(x))


def us(seconds) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    return f"{seconds * 1e6:.3f} us"


def finite(x):
    """JSON.parse rejects NaN and Infinity: a non-finite number becomes null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x


def embed_json(data) -> str:
    """JSON safe inside a <script> element: no `<`, `>` or `&` survives to end it early."""
    text = json.dumps(finite(data), default=str, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def section(sid: str, title: str, inner: str) -> str:
    return f"<section id={sid}><h2>{_e(title)}</h2>{inner}</section>"


NOT_RECORDED = "<p class=muted>not recorded (this plan does not carry it)</p>"


# ------------------------------------------------------------------ header
def header_html(d: dict) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in d["sizes"].items())
    cost, base = d["cost"], d["baseline_cost"]
    speed = f" ({base / cost:.2f}x)" if cost else ""
    return (f"<header><h1>eqsat plan for <code>{_e(d['program'])}</code></h1>"
            f"<p>Target <b>{_e(d['target'])}</b>, sizes <code>{_e(sizes)}</code>. Modeled cost "
            f"<b>{us(cost)}</b> against <b>{us(base)}</b> as written{speed}, in {len(d['kernels'])} kernel(s).</p>"
            f"{extraction_html(d['extraction'])}</header>")


def extraction_html(ex) -> str:
    if not ex:
        return "<p>Extraction candidates: <span class=muted>not recorded</span></p>"
    items = []
    for name, price in sorted(ex["cost"].items(), key=lambda kv: (kv[1] is None, kv[1] or 0)):
        won = name == ex["chosen"]
        items.append(f"<li class='cand{' won' if won else ''}'><b>{_e(name)}</b>: {us(price)}"
                     f"{' &larr; chosen' if won else ''}</li>")
    tie = [n for n, p in ex["cost"].items() if n != ex["chosen"] and p == ex["cost"].get(ex["chosen"])]
    note = (f" It ties with {_e(', '.join(tie))}: on a tie the exact (ILP) extraction is preferred, then greedy's."
            if tie else "")
    return (f"<p>Extraction: every candidate is priced by the one cost model and the cheapest wins; "
            f"<b>{_e(ex['chosen'])}</b> won.{note}</p><ul class=cands>{''.join(items)}</ul>")


# ------------------------------------------------------------------ source and chosen program
def program_html(d: dict) -> str:
    first = d["first_line"]
    if first:
        lines = "".join(f"<span class=src-line data-line={first + i}><span class=ln>{first + i}</span>"
                        f"{_e(line)}\n</span>" for i, line in enumerate(d["source"].splitlines()))
    else:
        lines = _e(d["source"])
    inner = (f"<div class=two><div><h3>As written</h3><pre id=source>{lines}</pre></div>"
             f"<div><h3>Chosen program</h3><pre id=chosen-program>{_e(d['chosen_text'])}</pre></div></div>")
    return section("program", "Source and chosen program", inner)


# ------------------------------------------------------------------ kernels
def kernels_html(d: dict) -> str:
    rows = []
    for k in d["kernels"]:
        epi = ", ".join(k["epilogue"]) or "-"
        pro = ", ".join(k["prologue"]) or "-"
        rows.append(f"<tr class=kernel-row data-kernel='{_e(k['name'])}' tabindex=0>"
                    f"<td><code>{_e(k['name'])}</code></td><td class='k-{_e(k['kind'])}'>{_e(k['kind'])}</td>"
                    f"<td>{_e(pro)}</td><td>{_e(epi)}</td><td class=num>{us(k['cost'])}</td>"
                    f"<td><code>{_e(k['computes'])}</code></td></tr>")
    table = ("<table id=kernel-table><tr><th>kernel</th><th>kind</th><th>prologue</th><th>fused epilogue</th>"
             f"<th>modeled</th><th>computes</th></tr>{''.join(rows)}</table>")
    hint = "<p class=muted>Click a kernel for its cost breakdown, roofline, code, source lines and provenance.</p>"
    detail = "<div id=kernel-detail aria-live=polite><p class=muted>No kernel selected.</p></div>"
    return section("kernels", "Kernels (in launch order)", hint + table + detail)


# ------------------------------------------------------------------ e-graph
def egraph_html(d: dict) -> str:
    eg = d["egraph"]
    if not eg:
        return section("egraph", "The e-graph around the chosen form", NOT_RECORDED)
    shown, total = eg.get("shown", len(eg.get("classes", {}))), eg.get("total")
    count = f"{shown} of {total}" if total is not None else f"{shown}"
    inner = (f"<p>{_e(count)} e-classes (those around the chosen form). Each class lists its equivalent "
             "e-nodes with their modeled cost and how much each lost by against the chosen one "
             "(<span class=chosen-key>highlighted</span>). The roots (the program's outputs) are open; "
             "click a class to open it, a class id to jump to it.</p>"
             "<p><input id=egraph-search type=search placeholder='filter by op (Ten.matmul) or class id' size=40>"
             " <span id=egraph-count class=muted></span></p><div id=egraph-classes></div>")
    return section("egraph", "The e-graph around the chosen form", inner)


# ------------------------------------------------------------------ provenance
def provenance_html(d: dict) -> str:
    parts = ["<h3>Rule chains per kernel</h3>"]
    if all(k["provenance"] is None for k in d["kernels"]):
        parts.append(NOT_RECORDED)
    else:
        parts.append("<ul class=chains>" + "".join(chain_html(k) for k in d["kernels"]) + "</ul>")
    parts.append("<h3>Explanation</h3>")
    parts.append(f"<pre id=explain>{_e(d['explain'])}</pre>" if d["explain"] is not None else NOT_RECORDED)
    parts.append("<h3>Rules that fired</h3>")
    parts.append(rules_table(d["saturation"]["rule_matches"]))
    return section("provenance", "Provenance: which rules built it", "".join(parts))


def chain_html(k: dict) -> str:
    steps = k["provenance"]
    if steps is None:
        return f"<li><code>{_e(k['name'])}</code>: <span class=muted>not recorded</span></li>"
    if not steps:
        return f"<li><code>{_e(k['name'])}</code>: runs as written (no rule involved)</li>"
    chain = " &rarr; ".join(f"<code>{_e(s.get('op', '?'))}</code> <span class=muted>"
                            f"[{_e(', '.join(s.get('rules') or []) or 'no rule recorded')}]</span>"
                            for s in steps)
    return f"<li><code>{_e(k['name'])}</code>: {chain}</li>"


def rules_table(matches) -> str:
    if matches is None:
        return NOT_RECORDED
    if not matches:
        return "<p>No rule matched.</p>"
    rows = "".join(f"<tr><td><code>{_e(name)}</code></td><td class=num>{n}</td></tr>" for name, n in matches)
    return (f"<p>{len(matches)} rules matched; by match count:</p><div class=scroll><table id=rule-table>"
            f"<tr><th>rule</th><th>matches</th></tr>{rows}</table></div>")


# ------------------------------------------------------------------ saturation
def saturation_html(d: dict) -> str:
    s = d["saturation"]
    ext = f", extraction {s['extract_seconds'] * 1e3:.1f} ms" if s["extract_seconds"] is not None else ""
    fams = ", ".join(s["families"]) or "(none: rules=[])"
    text = (f"<p>{s['nodes']} e-nodes after {s['iterations']} rounds; stopped: <b id=stop-reason>"
            f"{_e(s['stop_reason'])}</b>. Saturation {s['seconds'] * 1e3:.1f} ms, build "
            f"{s['build_seconds'] * 1e3:.1f} ms{ext}. Rule families run: {_e(fams)}.</p>")
    if s.get("assumes"):
        text += (f"<p id=assumes>This plan assumes {_e(s['assumes'])}: every call checks its arguments "
                 f"and runs the exact plan (modeled {s['fallback_cost'] * 1e6:.3f} us) where they fail.</p>")
    rounds = s["rounds"]
    if rounds:
        points = [(r["round"], r["nodes"], r) for r in rounds]
        plot = growth_svg(points)
        table = rounds_table(rounds)
    elif s["per_iteration_nodes"]:
        plot = ("<p class=muted>Per-round records not recorded; e-nodes after each call into the rule "
                "engine:</p>" + growth_svg([(i + 1, n, None) for i, n in enumerate(s["per_iteration_nodes"])]))
        table = ""
    else:
        plot, table = NOT_RECORDED, ""
    return section("saturation", "Saturation", text + plot + table)


def growth_svg(points: list, width: int = 640, height: int = 220) -> str:
    """E-nodes after each round, as a line plot; each point's tooltip gives its round."""
    pad_l, pad_r, pad_t, pad_b = 60, 16, 12, 34
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1 = min(xs + [0]), max(xs + [1])
    y1 = max(ys + [1])

    def sx(x):
        return pad_l + (x - x0) / max(x1 - x0, 1) * (width - pad_l - pad_r)

    def sy(y):
        return height - pad_b - y / y1 * (height - pad_t - pad_b)

    line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys))
    dots = "".join(f"<circle cx={sx(x):.1f} cy={sy(y):.1f} r=3.5><title>{_e(point_title(x, y, r))}</title></circle>"
                   for x, y, r in points)
    ticks = "".join(f"<text x={pad_l - 6} y={sy(v) + 4:.1f} text-anchor=end>{v}</text>"
                    f"<line x1={pad_l} x2={width - pad_r} y1={sy(v):.1f} y2={sy(v):.1f} class=grid />"
                    for v in sorted({0, y1 // 2, y1}))
    xticks = "".join(f"<text x={sx(x):.1f} y={height - pad_b + 16} text-anchor=middle>{x}</text>"
                     for x in sorted(set(xs)))
    return (f"<svg id=growth class=plot viewBox='0 0 {width} {height}' width={width} height={height} role=img "
            f"aria-label='e-nodes per round'>{ticks}{xticks}"
            f"<text x={(pad_l + width) / 2:.0f} y={height - 4} text-anchor=middle>round</text>"
            f"<text x=12 y={height / 2:.0f} transform='rotate(-90 12 {height / 2:.0f})' text-anchor=middle>"
            f"e-nodes</text><polyline points='{line}' class=series />{dots}</svg>")


def point_title(x, y, r) -> str:
    if r is None:
        return f"call {x}: {y} e-nodes"
    top = sorted(r.get("matches", {}).items(), key=lambda kv: -kv[1])[:5]
    rules = "; ".join(f"{name} x{n}" for name, n in top)
    return f"round {x}: {y} e-nodes, {r.get('seconds', 0) * 1e3:.1f} ms" + (f"; top rules: {rules}" if rules else "")


def rounds_table(rounds: list) -> str:
    rows = []
    for r in rounds:
        matches = r.get("matches", {})
        top = sorted(matches.items(), key=lambda kv: -kv[1])[:4]
        rules = ", ".join(f"{name} x{n}" for name, n in top)
        more = f" (+{len(matches) - len(top)} more)" if len(matches) > len(top) else ""
        rows.append(f"<tr><td class=num>{r['round']}</td><td class=num>{r['nodes']}</td>"
                    f"<td class=num>{r.get('seconds', 0) * 1e3:.1f} ms</td><td>{_e(r.get('scheduler', ''))}</td>"
                    f"<td>{_e(rules)}{more}</td></tr>")
    return ("<details><summary>Rounds</summary><table id=rounds-table><tr><th>round</th><th>e-nodes</th>"
            "<th>time</th><th title='plain: every match applied (small e-graphs); back-off: a rule over "
            "Limits.match_limit matches skips the step'>scheduler</th><th>most matched rules</th></tr>"
            f"{''.join(rows)}</table></details>")


# ------------------------------------------------------------------ cost model
def model_html(d: dict) -> str:
    p = d["peaks"]
    text = (f"<p>Each kernel costs <code>max(flops / peak, bytes / bandwidth, latency) + launch</code>; a "
            "matmul's own flops run at the tensor-core peak, its prologue and epilogue at the SIMT peak. The "
            "cheapest equivalent form in the e-graph wins, with shared tensors paid once. Target data: peak SIMT "
            f"{p['simt_flops']:.3g} flop/s, tensor cores {p['tc_flops']:.3g} flop/s, bandwidth "
            f"{p['bandwidth']:.3g} B/s, launch {p['launch'] * 1e6:.1f} us, load latency "
            f"{p['load_latency'] * 1e9:.0f} ns ({p['loads_in_flight']} in flight), matmul K-tile {p['tile_k']} "
            f"({p['tiles_in_flight']} in flight); a reduction is a tree over up to {p['red_lanes']} lanes. "
            "Loop nests kept as written run as one sequential chain: "
            f"{p['loop_op_time'] * 1e9:.3g} ns an operation, {p['loop_bandwidth']:.3g} B/s"
            + (f", on the host: what they read and write crosses a {p['host_link']:.3g} B/s link, "
               f"{p['host_latency'] * 1e6:.0f} us a copy each way" if p.get("host_link") else "") + ".</p>")
    return section("model", "The cost model", text)


CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1280px;padding:0 1em;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd} h3{font-size:1em}
table{border-collapse:collapse;width:100%} td,th{border:1px solid #ddd;padding:3px 8px;vertical-align:top}
th{background:#f4f4f4;text-align:left} code,pre{font:12px/1.4 ui-monospace,monospace}
pre{background:#f8f8f8;padding:8px;overflow:auto;max-height:32em;margin:0}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap} .muted{color:#777}
.two{display:grid;grid-template-columns:1fr 1fr;gap:1em} .two>div{min-width:0}
.k-matmul{color:#05a} .k-loop{color:#a40} .k-pointwise{color:#070} .k-reduction{color:#707}
.cands{margin:.2em 0} .cand.won{font-weight:600;color:#05a}
.kernel-row{cursor:pointer} .kernel-row:hover{background:#f3f7ff} .kernel-row.selected{background:#dde9ff}
#kernel-detail{border:1px solid #cdd;border-radius:6px;padding:.5em 1em;margin-top:1em;background:#fcfdff}
#kernel-detail .grid{display:grid;grid-template-columns:minmax(0,1fr) 360px;gap:1em}
.src-line{display:block} .src-line .ln{display:inline-block;width:3em;color:#999;user-select:none}
.src-line.hl{background:#fff1b8} .src-line.linked{cursor:pointer}
.binds{font-weight:600;color:#b30}
svg.plot{background:#fff;border:1px solid #eee;max-width:100%;height:auto}
svg.plot text{font:11px system-ui,sans-serif;fill:#444} svg.plot .grid{stroke:#eee}
svg.plot .series{fill:none;stroke:#05a;stroke-width:2} svg.plot circle{fill:#05a}
svg.plot .roof{stroke:#888;stroke-width:1.5;fill:none} svg.plot .point{fill:#d33;stroke:#fff}
.eclass{border:1px solid #e3e3e3;border-radius:4px;margin:3px 0;padding:2px 6px}
.eclass>summary{cursor:pointer} .eclass.flash{outline:2px solid #f90}
.eclass .cid{font-family:ui-monospace,monospace;color:#555} .badge{font-size:11px;border-radius:3px;
padding:0 4px;margin-left:4px;background:#e8eef8;color:#05a}
.enodes td{font-size:12px} .enodes tr.chosen{background:#d8f5d0;outline:2px solid #3a3;font-weight:600}
.chosen-key{background:#d8f5d0;outline:2px solid #3a3;padding:0 3px}
a.goto{color:#05a;cursor:pointer;text-decoration:underline}
.chains li{margin:.2em 0} .scroll{max-height:24em;overflow:auto;border:1px solid #eee}
#explain{white-space:pre-wrap} #egraph-classes{max-height:48em;overflow:auto;padding-right:4px}
"""

# The page's script: vanilla JS, reading the JSON block. Everything user-written is put in
# with textContent, or through esc() where SVG is built as markup.
SCRIPT = r"""
"use strict";
const DATA = JSON.parse(document.getElementById("page-data").textContent);
const KERNELS = new Map(DATA.kernels.map(k => [k.name, k]));

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of kids) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}
function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
}
function us(s) {
  if (s === null || s === undefined) return "n/a";
  // terms far below a microsecond would all read 0.000 us: show them in ns
  return (s !== 0 && Math.abs(s) < 1e-8) ? (s * 1e9).toPrecision(3) + " ns" : (s * 1e6).toFixed(3) + " us";
}
function sci(x) { return (x === null || x === undefined) ? "n/a" : Number(x).toPrecision(3); }
function row(...cells) { return el("tr", {}, ...cells.map(c => el("td", {}, c))); }

// ---------------------------------------------------------------- kernels
function selectKernel(name) {
  const k = KERNELS.get(name);
  if (!k) return;
  for (const r of document.querySelectorAll(".kernel-row"))
    r.classList.toggle("selected", r.dataset.kernel === name);
  highlightSource(k.lines);
  const d = document.getElementById("kernel-detail");
  d.replaceChildren(
    el("h3", {}, "Kernel ", el("code", {}, k.name)),
    el("div", {class: "grid"},
      el("div", {}, kernelFacts(k), costTable(k)),
      el("div", {}, rooflineSvg(k))),
    sourceNote(k),
    el("h4", {}, "Code"), kernelCode(k),
    el("h4", {}, "Provenance"), provenanceList(k.provenance));
}

function kernelFacts(k) {
  const t = el("table", {class: "facts"});
  t.append(row("kind", k.kind));
  t.append(row("computes", el("code", {}, k.computes)));
  if (k.kind === "matmul") {
    t.append(row("prologue", k.prologue.join(", ") || "-"));
    t.append(row("fused epilogue", k.epilogue.join(", ") || "-"));
  }
  if (k.nest_reason !== null) t.append(row("why kept as written", k.nest_reason));
  t.append(row("modeled cost", el("b", {class: "kernel-cost"}, us(k.cost))));
  return t;
}

function costTable(k) {
  const r = k.roofline;
  const t = el("table", {class: "cost-breakdown"});
  t.append(el("tr", {}, el("th", {}, "term"), el("th", {}, "value")));
  t.append(row(k.kind === "loop" ? "operations" : "flops", sci(r.flops)));
  t.append(row("bytes", sci(r.bytes)));
  for (const [name, secs] of Object.entries(r.terms)) {
    const label = {compute: k.kind === "loop" ? "compute (ops x op time)" : "compute (flops / peak)",
                   memory: "memory (bytes / bandwidth)", latency: "latency (dependent loads)"}[name] || name;
    const cell = el("span", {}, us(secs), name === r.binds ? el("span", {class: "binds"}, "  binds") : null);
    t.append(row(label, cell));
  }
  if (r.library) t.append(row("library calls inside", us(r.library)));
  t.append(row("launch", us(r.launch)));
  t.append(row("total", el("b", {}, us(r.cost))));
  t.append(row("formula", el("code", {}, r.formula)));
  return t;
}

function rooflineSvg(k) {
  const r = k.roofline, W = 340, H = 240, L = 52, R = 10, T = 10, B = 36;
  const unit = k.kind === "loop" ? "op" : "flop";  // a kept loop's rate is scalar operations
  const box = el("div", {class: "roofline"});
  const peak = Math.max(...r.roofs.map(x => x.flops));
  const I = r.bytes > 0 ? r.flops / r.bytes : null;
  const perf = r.cost > 0 ? r.flops / r.cost : null;
  const ridge = peak / r.bandwidth;
  const xlo = Math.min(ridge / 100, I ? I / 10 : Infinity), xhi = Math.max(ridge * 100, I ? I * 10 : 0);
  const ylo = Math.min(peak / 1e5, perf ? perf / 10 : Infinity), yhi = peak * 3;
  const lx = x => L + (Math.log10(x) - Math.log10(xlo)) / (Math.log10(xhi) - Math.log10(xlo)) * (W - L - R);
  const ly = y => H - B - (Math.log10(y) - Math.log10(ylo)) / (Math.log10(yhi) - Math.log10(ylo)) * (H - T - B);
  let s = "";
  for (const roof of r.roofs) {
    const knee = roof.flops / r.bandwidth;
    s += `<polyline class="roof" points="${lx(xlo)},${ly(Math.max(r.bandwidth * xlo, ylo))} ` +
         `${lx(knee)},${ly(roof.flops)} ${lx(xhi)},${ly(roof.flops)}"/>` +
         `<text x="${W - R - 2}" y="${ly(roof.flops) - 4}" text-anchor="end">${esc(roof.name)} ${esc(sci(roof.flops))}</text>`;
  }
  if (I && perf) {
    s += `<circle class="point" cx="${lx(I)}" cy="${ly(perf)}" r="6"><title>${esc(k.name)}: ` +
         `${esc(sci(I))} ${unit}/B, ${esc(sci(perf))} ${unit}/s</title></circle>`;
  }
  s += decadeTicks(xlo, xhi, d => `<text x="${lx(d)}" y="${H - B + 13}" text-anchor="middle">${fmtDecade(d)}</text>`);
  s += decadeTicks(ylo, yhi, d => `<text x="${L - 4}" y="${ly(d) + 4}" text-anchor="end">${fmtDecade(d)}</text>`);
  s += `<text x="${(L + W) / 2}" y="${H - 6}" text-anchor="middle">intensity (${unit}/byte, log)</text>` +
       `<text x="12" y="${H / 2}" transform="rotate(-90 12 ${H / 2})" text-anchor="middle">${unit}/s (log)</text>` +
       `<line class="grid" x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}"/>` +
       `<line class="grid" x1="${L}" y1="${T}" x2="${L}" y2="${H - B}"/>`;
  box.innerHTML = `<svg class="plot" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" ` +
                  `aria-label="roofline">${s}</svg>`;
  box.append(el("p", {class: "muted"}, I && perf
    ? `The point: this kernel's intensity and the ${unit} rate its modeled time gives (launch included); ` +
      `the roofs: ${r.roofs.map(x => x.name).join(", ")} and the bandwidth slope.`
    : "No point: the kernel moves no bytes or does no arithmetic."));
  return box;
}

// a label at every power of ten in [lo, hi], thinned to at most five
function decadeTicks(lo, hi, draw) {
  const a = Math.ceil(Math.log10(lo)), b = Math.floor(Math.log10(hi));
  const step = Math.max(1, Math.ceil((b - a + 1) / 5));
  let out = "";
  for (let e = a; e <= b; e += step) out += draw(Math.pow(10, e));
  return out;
}
function fmtDecade(d) { return "1e" + Math.round(Math.log10(d)); }

function sourceNote(k) {
  if (!k.lines.length) return el("p", {class: "muted"}, "Source lines: " + k.lines_how + ".");
  return el("p", {}, `Source lines ${k.lines[0]}-${k.lines[k.lines.length - 1]} highlighted (${k.lines_how}).`);
}

function kernelCode(k) {
  if (k.kind === "loop") {
    const pane = document.getElementById("source");
    const lines = k.lines.map(n => pane.querySelector(`[data-line="${n}"]`)).filter(x => x)
      .map(x => x.textContent.replace(/^\d+/, "")).join("");
    return el("div", {}, el("p", {class: "muted"}, "No Triton kernel: the nest runs as written (numba on the host)."),
              el("pre", {class: "kernel-code"}, lines || "(source unavailable)"));
  }
  if (k.triton) return el("div", {}, el("pre", {class: "kernel-code"}, k.triton), vectorTable(k.vectors));
  return el("div", {}, el("p", {class: "muted"}, "This kernel's part could not be cut out; all kernels:"),
            el("pre", {class: "kernel-code"}, DATA.triton_all));
}

function vectorTable(rows) {
  if (!rows || !rows.length) return el("p", {class: "muted"}, "Vectorization: not recorded.");
  const t = el("table", {class: "vectors"}, el("tr", {}, ...["access", "tensor", "shape", "strides",
    "contiguous axis", "vector", "why"].map(h => el("th", {}, h))));
  for (const r of rows) {
    t.append(el("tr", {}, el("td", {}, r.role), el("td", {}, r.tensor), el("td", {}, r.shape.join(" x ")),
      el("td", {}, r.strides.join(", ")), el("td", {}, r.axis === null ? "-" : String(r.axis)),
      el("td", {class: "num"}, `${r.width} x f32`), el("td", {}, r.why)));
  }
  return el("div", {}, el("h4", {}, "Vectorization (what Triton can prove at launch)"), t);
}

function provenanceList(steps) {
  if (steps === null || steps === undefined) return el("p", {class: "muted"}, "not recorded");
  if (!steps.length) return el("p", {}, "Runs as written: no rule involved.");
  const ol = el("ol", {class: "provenance"});
  for (const s of steps) {
    const link = s.class !== undefined && s.class !== null ? classLink(s.class) : null;
    ol.append(el("li", {}, el("code", {}, s.op), link ? " in " : "", link,
                 " ", el("span", {class: "muted"}, "by " + ((s.rules || []).join(", ") || "no rule recorded"))));
  }
  return ol;
}

const LINE_KERNELS = new Map();
for (const k of DATA.kernels) for (const n of k.lines) {
  if (!LINE_KERNELS.has(n)) LINE_KERNELS.set(n, k.name);
}

function highlightSource(lines) {
  const set = new Set(lines);
  for (const s of document.querySelectorAll("#source .src-line"))
    s.classList.toggle("hl", set.has(Number(s.dataset.line)));
  const first = document.querySelector("#source .src-line.hl");
  if (first) first.parentElement.scrollTop = first.offsetTop - first.parentElement.offsetTop - 40;
}

function setupKernels() {
  for (const r of document.querySelectorAll(".kernel-row")) {
    r.addEventListener("click", () => selectKernel(r.dataset.kernel));
    r.addEventListener("keydown", e => { if (e.key === "Enter") selectKernel(r.dataset.kernel); });
  }
  for (const s of document.querySelectorAll("#source .src-line")) {
    const name = LINE_KERNELS.get(Number(s.dataset.line));
    if (name) {
      s.classList.add("linked");
      s.title = "from kernel " + name;
      s.addEventListener("click", () => selectKernel(name));
    }
  }
  if (DATA.kernels.length) selectKernel(DATA.kernels[0].name);
}

// ---------------------------------------------------------------- e-graph
const EG = DATA.egraph;
const CLASS_BOXES = new Map();

function classOrder() {
  // roots first, then breadth-first through the arguments, then whatever is left
  const order = [], seen = new Set(), queue = [...EG.roots];
  while (queue.length) {
    const c = queue.shift();
    if (seen.has(c) || !(c in EG.classes)) continue;
    seen.add(c); order.push(c);
    for (const n of EG.classes[c].nodes) for (const a of n.args) if (a.class !== undefined) queue.push(a.class);
  }
  for (const c of Object.keys(EG.classes)) if (!seen.has(c)) order.push(c);
  return order;
}

// "eqsat.sorts.Ten-27" reads as "Ten-27"; the search matches either
function shortId(cid) { return String(cid).replace(/^.*\./, ""); }

function chosenNode(cls) {
  return cls.chosen === null || cls.chosen === undefined ? null : cls.nodes[cls.chosen];
}

function classLink(cid) {
  const a = el("a", {class: "goto", href: "#egraph", "data-goto": cid, title: cid}, "e-class " + shortId(cid));
  a.addEventListener("click", e => { e.preventDefault(); openClass(cid); });
  return a;
}

function openClass(cid) {
  const box = CLASS_BOXES.get(String(cid));
  if (!box) return;
  box.hidden = false;
  box.open = true;
  box.scrollIntoView({block: "center"});
  box.classList.add("flash");
  setTimeout(() => box.classList.remove("flash"), 1200);
}

function classSummary(cid, cls) {
  const ch = chosenNode(cls);
  const ops = [...new Set(cls.nodes.map(n => n.op))];
  const sort = shortId(cid).startsWith(cls.sort) ? null : el("code", {class: "muted"}, cls.sort + " ");
  return el("summary", {}, el("span", {class: "cid", title: cid}, shortId(cid)), " ", sort,
            ch ? el("b", {}, ch.op) : el("span", {class: "muted", title: "no node of it is chosen on its own " +
              "(a scalar is evaluated inside its kernel; a tensor may be computed inside another kernel)"},
              "not chosen"),
            el("span", {class: "muted"}, ` \u2014 ${cls.nodes.length} node(s)` +
               (ops.length > 1 ? ": " + ops.join(", ") : "")),
            EG.roots.includes(cid) ? el("span", {class: "badge"}, "root") : null);
}

function nodeArgs(n) {
  const span = el("span", {});
  n.args.forEach((a, i) => {
    if (i) span.append(", ");
    if (a.class !== undefined) span.append(classLink(a.class));
    else span.append(el("code", {}, a.text));
  });
  return span;
}

function lostBy(n, ch) {
  if (n.chosen) return "chosen";
  if (n.cost === null) return "not executable";
  if (!ch || ch.cost === null) return "-";
  const diff = n.cost - ch.cost;
  const ratio = ch.cost > 0 ? ` (${(n.cost / ch.cost).toFixed(2)}x)` : "";
  return (diff >= 0 ? "+" : "") + us(diff) + ratio;
}

function classBody(cls) {
  const ch = chosenNode(cls);
  const t = el("table", {class: "enodes"});
  t.append(el("tr", {}, ...["op", "arguments", "modeled cost", "lost by", "rules that may have built it"]
    .map(h => el("th", {}, h))));
  for (const n of cls.nodes) {
    const tr = el("tr", n.chosen ? {class: "chosen"} : {},
                  el("td", {}, el("code", {}, n.op)), el("td", {}, nodeArgs(n)),
                  el("td", {class: "num"}, n.cost === null ? "not executable" : us(n.cost)),
                  el("td", {class: "num"}, lostBy(n, ch)),
                  el("td", {}, (n.rules || []).join(", ") || "-"));
    t.append(tr);
  }
  return t;
}

function classBox(cid, cls) {
  const box = el("details", {class: "eclass", "data-class": cid});
  box.append(classSummary(cid, cls));
  let filled = false;
  const fill = () => { if (!filled && box.open) { filled = true; box.append(classBody(cls)); } };
  box.addEventListener("toggle", fill);
  box.matchesQuery = q => cid.toLowerCase() === q || cid.toLowerCase().includes(q) ||
                      cls.nodes.some(n => n.op.toLowerCase().includes(q));
  if (EG.roots.includes(cid)) { box.open = true; fill(); }
  return box;
}

function filterClasses(query) {
  const q = query.trim().toLowerCase();
  let shown = 0;
  for (const box of CLASS_BOXES.values()) {
    const hit = !q || box.matchesQuery(q);
    box.hidden = !hit;
    if (hit) shown++;
  }
  document.getElementById("egraph-count").textContent = `${shown} of ${CLASS_BOXES.size} classes shown`;
}

function setupEgraph() {
  if (!EG) return;
  const list = document.getElementById("egraph-classes");
  const frag = document.createDocumentFragment();
  for (const cid of classOrder()) {
    const box = classBox(cid, EG.classes[cid]);
    CLASS_BOXES.set(cid, box);
    frag.append(box);
  }
  list.append(frag);
  const search = document.getElementById("egraph-search");
  search.addEventListener("input", () => filterClasses(search.value));
  filterClasses("");
}

setupEgraph();
setupKernels();
"""
