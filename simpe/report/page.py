"""The template of ``simpe report``'s page: HTML, CSS and JavaScript, kept verbatim (html.py fills it in).

``%NAME%`` placeholders are replaced by html.py; the script reads the embedded JSON
(``report_data``) and renders the interactive chart and the segment browser. No external
resource: the page must work offline.
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>simpe report: %TITLE%</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1250px;padding:0 18px 40px;color:#222}
h1{font-size:1.45em;margin:18px 0 2px} h2{font-size:1.15em;margin:26px 0 8px;border-bottom:1px solid #ddd}
.small{font-size:.85em;color:#555} .warn{color:#a40}
table#methods{border-collapse:collapse;font-size:.9em} #methods th,#methods td{padding:4px 8px;border-bottom:1px solid #e4e4e4;text-align:right}
#methods th:first-child{text-align:left} #methods .best{font-weight:bold} .delta{color:#666;font-size:.8em;white-space:nowrap} .tablebox{overflow-x:auto}
img{max-width:100%} code{font-size:.85em}
#controls{position:sticky;top:0;background:#fafafa;border:1px solid #ddd;padding:8px;display:flex;flex-wrap:wrap;gap:10px;align-items:center;z-index:2}
#controls label{font-size:.88em}
.seg{border:1px solid #ddd;border-radius:4px;margin:8px 0;padding:6px 10px} .seg.hl{border-color:#d60;box-shadow:0 0 0 2px #fc8}
.seg .head{font-size:.8em;color:#666} .line{margin:3px 0} .line b{display:inline-block;width:92px;font-size:.82em;color:#555}
.hyps{border-collapse:collapse;width:100%;font-size:.92em} .hyps td{padding:2px 6px;border-top:1px solid #f0f0f0;vertical-align:top}
.hyps td.m{white-space:nowrap;width:90px;font-weight:600} .hyps td.n{white-space:nowrap;text-align:right;width:150px;color:#555;font-size:.85em}
.t0{background:#fde2b8;border-bottom:2px solid #e08a00} .t1{background:#cfe8ff;border-bottom:2px solid #1f6fc0}
.tk{border-bottom:1px dotted #999} .hA{background:#bfe8b8} .hB{background:#9fdcd0} .hK{background:#e6f4e2}
.hx{color:#b00;text-decoration:underline dotted} .hr{background:#f7b4b4;color:#700;font-weight:600}
.miss{font-size:.8em;color:#a33} .legend span{margin-right:10px;padding:0 3px}
#chart svg{background:#fff;border:1px solid #ddd} #chart .pt{cursor:pointer}
.pos{color:#070} .neg{color:#b00} .own{font-size:.9em;color:#2d5a2d;white-space:pre-wrap}
table.effort{border-collapse:collapse;font-size:.9em} table.effort th,table.effort td{padding:4px 8px;border-bottom:1px solid #e4e4e4;text-align:right}
</style></head><body>
<h1>simpe report: %TITLE%</h1>
<p class="small">%COVERAGE%. Everything on this page is read from the runs' logs (segments.jsonl, snapshots.jsonl, summary.json); it works offline.</p>
%MISMATCH%
<h2>Methods against the baseline</h2>
%TABLE%
<h2>Cumulative difference to the baseline (Figure 2 of Simianer et al. (2019))</h2>
%FIGURE2%
<h3 class="small">Click a point to open its segment below</h3>
<div id="chart"><label>metric <select id="chart-metric"></select></label><div id="chart-svg"></div></div>
<h2>Ranking snapshots</h2>
%SNAPSHOTS%
<div id="snapshot-notes" class="small"></div>
<h2>What a reviewer asks: meaning, replicates, learning against forgetting</h2>
%REVIEW%
<h2>Segments</h2>
<p class="small legend">Post-edit: <span class="t0">R0 word</span> (first occurrence in the stream) <span class="t1">R1 word</span>
(second occurrence, seen once before) <span class="tk">seen more often</span>. Hypotheses: <span class="hA">R0 hit</span>
<span class="hB">R1 hit</span> <span class="hK">hit, seen more often</span> <span class="hx">content word not in the post-edit</span>
<span class="hr">repeated after being corrected</span>; misses are listed under each hypothesis. Tokens are the Moses-tokenised,
truecased texts the R metrics saw.</p>
<div id="controls">
<label>show <select id="filter">
<option value="all">all segments</option>
<option value="disagree">methods disagree on a one-shot (R1) word</option>
<option value="repeat">a method repeats a word it was corrected on</option>
<option value="miss0">a method missed an R0 word</option>
</select></label>
<label>method <select id="method"><option value="">any</option></select></label>
<label>sort <select id="sort">
<option value="index">stream order</option>
<option value="sbleu">largest sentence-BLEU change vs. baseline</option>
<option value="r01">largest R0+1 change vs. baseline</option>
</select></label>
<label>text <input id="search" type="search" placeholder="word in source, post-edit or output" size="26"></label>
<span id="count" class="small"></span>
</div>
<div id="rows"></div>
<div id="sentinel" class="small">…</div>
<script id="data" type="application/json">%DATA%</script>
<script>%SCRIPT%</script>
</body></html>
"""

SCRIPT = r"""
(function(){
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const RUNS = D.runs, SEG = D.segments, PAGE = 40;
const $ = id => document.getElementById(id);
const esc = s => String(s).replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
const fmt = (v, d) => v === null || v === undefined ? "–" : Number(v).toFixed(d);
function r01(h){ return h[4] ? h[3] / h[4] : null; }
function delta(seg, run, key){
  const h = seg[8][run], b = seg[8][0];
  if (key === "sbleu") return (h[2] === null || b[2] === null) ? 0 : h[2] - b[2];
  const a = r01(h), c = r01(b); return (a === null || c === null) ? 0 : 100 * (a - c);
}
// ------------------------------------------------------------ the segment browser
let order = [], shown = 0, highlight = -1;
const methodSel = $("method");
RUNS.forEach((r, i) => { if (i > 0) { const o = document.createElement("option"); o.value = String(i); o.textContent = r.label; methodSel.appendChild(o); } });
function runsOfInterest(){ const m = methodSel.value; return m === "" ? RUNS.map((_, i) => i).slice(1) : [Number(m)]; }
function keep(seg, filter, runs, text){
  if (filter === "disagree" && !seg[9].length) return false;
  if (filter === "repeat" && !runs.some(i => seg[8][i][1].indexOf("r") >= 0)) return false;
  if (filter === "miss0" && !runs.some(i => missed(seg, i).r0.length)) return false;
  if (text) {
    const hay = (seg[3] + " " + seg[4] + " " + seg[8].map(h => h.length > 5 ? h[0] + " " + h[5] : h[0]).join(" ")).toLowerCase();
    if (hay.indexOf(text) < 0) return false;
  }
  return true;
}
function missed(seg, i){
  const toks = new Set(seg[8][i][0].split(" "));
  return {r0: seg[6].filter(t => !toks.has(t)), r1: seg[7].filter(t => !toks.has(t))};
}
function apply(startAt){
  const filter = $("filter").value, sort = $("sort").value, text = $("search").value.trim().toLowerCase();
  const runs = runsOfInterest();
  order = [];
  for (let i = 0; i < SEG.length; i++) if (keep(SEG[i], filter, runs, text)) order.push(i);
  if (sort !== "index") {
    const score = i => Math.max(...runs.map(r => Math.abs(delta(SEG[i], r, sort))));
    const cache = new Map(order.map(i => [i, score(i)]));
    order.sort((a, b) => cache.get(b) - cache.get(a) || a - b);
  }
  $("count").textContent = order.length + " of " + SEG.length + " segments";
  $("rows").textContent = ""; shown = 0;
  let first = 0;
  if (startAt !== undefined) { const at = order.indexOf(startAt); first = at < 0 ? 0 : at; }
  shown = first; more();
  if (startAt !== undefined) { const el = document.getElementById("seg-" + startAt); if (el) el.scrollIntoView({block: "start"}); }
}
function marked(tokens, marks, cls){
  const toks = tokens ? tokens.split(" ") : [];
  return toks.map((t, j) => { const m = marks[j]; const c = cls[m]; return c ? "<span class='" + c + "'>" + esc(t) + "</span>" : esc(t); }).join(" ");
}
const REF_CLASS = {"0": "t0", "1": "t1", "k": "tk"}, HYP_CLASS = {"A": "hA", "B": "hB", "K": "hK", "x": "hx", "r": "hr"};
function row(i){
  const s = SEG[i];
  const div = document.createElement("div");
  div.className = "seg" + (i === highlight ? " hl" : ""); div.id = "seg-" + i; div.dataset.index = i;
  let h = "<div class='head'>segment " + i + " · " + esc(s[1]) + " " + esc(s[2]);
  if (s[9].length) h += " · methods disagree on one-shot word(s): <b>" + s[9].map(esc).join(", ") + "</b>";
  h += "</div><div class='line'><b>source</b>" + esc(s[3]) + "</div>";
  h += "<div class='line'><b>" + (D.people ? "stream post-edit" : "post-edit") + "</b>" + marked(s[4], s[5], REF_CLASS) + "</div><table class='hyps'>";
  s[8].forEach((hy, r) => {
    const miss = missed(s, r);
    const ds = r ? delta(s, r, "sbleu") : null, dr = r ? delta(s, r, "r01") : null;
    const sign = v => v === null ? "" : " <span class='" + (v > 0 ? "pos" : v < 0 ? "neg" : "") + "'>(" + (v > 0 ? "+" : "") + v.toFixed(1) + ")</span>";
    h += "<tr><td class='m' style='color:" + RUNS[r].color + "'>" + esc(RUNS[r].label) + "</td><td>" + marked(hy[0], hy[1], HYP_CLASS);
    if (miss.r0.length || miss.r1.length) h += "<div class='miss'>" + (miss.r0.length ? "missed R0: " + miss.r0.map(esc).join(", ") + " " : "") + (miss.r1.length ? "missed R1: " + miss.r1.map(esc).join(", ") : "") + "</div>";
    // a translator's run: their own post-edit, and the HTER of the translation they were shown against it
    if (hy.length > 5) h += "<div class='own'><b>own post-edit</b> " + esc(hy[5]) + " <span class='delta'>(HTER " + fmt(hy[6], 1) + ")</span>" +
      (hy.length > 7 ? " <span class='delta'>(revised after submitting; the model learned from: " + esc(hy[7]) + ")</span>" : "") + "</div>";
    h += "</td><td class='n'>sBLEU " + fmt(hy[2], 1) + sign(ds) + "<br>R0+1 " + hy[3] + "/" + hy[4] + sign(dr) + "</td></tr>";
  });
  div.innerHTML = h + "</table>";
  return div;
}
function more(){
  const box = $("rows"), end = Math.min(order.length, shown + PAGE);
  const frag = document.createDocumentFragment();
  for (; shown < end; shown++) frag.appendChild(row(order[shown]));
  box.appendChild(frag);
  $("sentinel").textContent = shown < order.length ? "scroll for more (" + (order.length - shown) + " left)" : "end of list";
}
new IntersectionObserver(entries => { if (entries.some(e => e.isIntersecting) && shown < order.length) more(); }, {rootMargin: "600px"}).observe($("sentinel"));
["filter", "method", "sort"].forEach(id => $(id).addEventListener("change", () => apply()));
let timer = null; $("search").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(apply, 200); });
function openSegment(i){
  highlight = i; $("filter").value = "all"; $("sort").value = "index"; $("search").value = ""; apply(i);
}
window.simpeOpenSegment = openSegment;
// ------------------------------------------------------------ the interactive cumulative-delta chart
const C = D.curves, metricSel = $("chart-metric");
C.panels.forEach(p => { const o = document.createElement("option"); o.value = p.key; o.textContent = p.title; metricSel.appendChild(o); });
function chart(){
  const key = metricSel.value, W = 1000, H = 300, L = 60, R = 12, T = 12, B = 34, x = C.x;
  const n = x.length ? x[x.length - 1] : 1;
  let lo = 0, hi = 0;
  Object.values(C.y).forEach(m => m[key].forEach(v => { if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }));
  if (hi === lo) { hi += 1; lo -= 1; }
  const pad = 0.06 * (hi - lo); lo -= pad; hi += pad;
  const px = v => L + (W - L - R) * v / Math.max(1, n), py = v => T + (H - T - B) * (hi - v) / (hi - lo);
  let s = "<svg viewBox='0 0 " + W + " " + H + "' width='100%' role='img' aria-label='cumulative delta chart'>";
  s += "<line x1='" + L + "' x2='" + (W - R) + "' y1='" + py(0) + "' y2='" + py(0) + "' stroke='#000' stroke-dasharray='4 3'/>";
  for (let k = 0; k <= 4; k++) { const v = lo + (hi - lo) * k / 4; s += "<text x='" + (L - 6) + "' y='" + (py(v) + 4) + "' font-size='11' text-anchor='end'>" + v.toFixed(1) + "</text>"; }
  for (let k = 0; k <= 5; k++) { const v = Math.round(n * k / 5); s += "<text x='" + px(v) + "' y='" + (H - 14) + "' font-size='11' text-anchor='middle'>" + v + "</text>"; }
  s += "<text x='" + ((W + L) / 2) + "' y='" + (H - 2) + "' font-size='11' text-anchor='middle'>segment index</text>";
  const panel = C.panels.find(p => p.key === key);
  s += "<text x='14' y='" + (H / 2) + "' font-size='11' text-anchor='middle' transform='rotate(-90 14 " + (H / 2) + ")'>" + esc(panel.ylabel) + "</text>";
  const step = Math.max(1, Math.ceil(x.length / 400));
  RUNS.slice(1).forEach(r => {
    const ys = C.y[r.name][key]; let d = "";
    x.forEach((xi, j) => { if (ys[j] !== null) d += (d ? "L" : "M") + px(xi).toFixed(1) + " " + py(ys[j]).toFixed(1); });
    s += "<path d='" + d + "' fill='none' stroke='" + r.color + "' stroke-width='1.4'/>";
    for (let j = 0; j < x.length; j += step) if (ys[j] !== null)
      s += "<circle class='pt' data-seg='" + x[j] + "' cx='" + px(x[j]).toFixed(1) + "' cy='" + py(ys[j]).toFixed(1) + "' r='3' fill='" + r.color + "' fill-opacity='0.35'><title>" + esc(r.label) + ", segment " + x[j] + ": " + ys[j] + "</title></circle>";
  });
  s += "</svg><div class='small'>" + RUNS.slice(1).map(r => "<span style='color:" + r.color + "'>■ " + esc(r.label) + "</span>").join(" ") + "</div>";
  $("chart-svg").innerHTML = s;
}
$("chart-svg").addEventListener("click", e => { const t = e.target.closest(".pt"); if (t) openSegment(Number(t.dataset.seg)); });
metricSel.addEventListener("change", chart);
chart();
// ------------------------------------------------------------ snapshot notes
const S = D.snapshots, notes = [];
S.references.forEach(r => notes.push("random-order kRG (" + (r.source === "top" ? "k" : "samples") + " = " + r.n + ", " + r.gain + " gain): " + r.value.toFixed(4)));
Object.entries(S.inexact).forEach(([run, list]) => notes.push(run + ": not exact at segment(s) " + list.map(p => p[0] + " (" + (100 * p[1]).toFixed(0) + "% exact)").join(", ")));
$("snapshot-notes").textContent = notes.join(" · ");
// a link can carry the browser's state: report.html#filter=repeat&method=2&sort=sbleu&q=Zelle or #seg=123
const params = new URLSearchParams(location.hash.slice(1));
if (params.has("filter")) $("filter").value = params.get("filter");
if (params.has("method")) $("method").value = params.get("method");
if (params.has("sort")) $("sort").value = params.get("sort");
if (params.has("q")) $("search").value = params.get("q");
if (params.has("seg")) openSegment(Number(params.get("seg"))); else apply();
})();
"""
