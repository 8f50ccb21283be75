/** Project ids as the service makes them (`proj_<12 hex>`); the dashboard answers 404 for any other shape. */
const kProjectIdShape = /^proj_[A-Za-z0-9]{1,64}$/;

/**
 * True for strings shaped like a project id: letters and digits only after `proj_`, so nothing in one can mean
 * anything in HTML, JavaScript or a URL.
 *
 * @example
 * ```ts
 * isProjectIdShape('proj_0123456789ab'); // true
 * isProjectIdShape("$'$`(alert(1))//");  // false
 * ```
 */
export function isProjectIdShape(id: string): boolean {
  return kProjectIdShape.test(id);
}

/**
 * The project dashboard: one self-contained HTML page (no CDN, no build step). It asks for an API key, keeps it in
 * sessionStorage, reads `GET ./requests` page by page, and shows the calls in a filterable table with their bodies
 * and an SVG chart of latency and tokens over time. `nonce` is the response's CSP nonce (see `pagePolicy`): the
 * page's script and stylesheet carry it.
 */
export function dashboardPage(projectId: string, nonce: string): string {
  if (!isProjectIdShape(projectId)) throw new TypeError('projectId must be a project id (proj_...)');
  if (!/^[A-Za-z0-9_-]+$/.test(nonce)) throw new TypeError('nonce must be base64url');
  // Split and join: no replacement patterns ($&, $', $`) anywhere near the values.
  return fillTemplate(kPage, {
    __PROJECT_JSON__: JSON.stringify(projectId).replace(/</g, '\\u003c'),
    __PROJECT_TEXT__: escapeHtml(projectId),
    __NONCE__: nonce,
  });
}

function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  let out = template;
  for (const [placeholder, value] of Object.entries(values)) out = out.split(placeholder).join(value);
  return out;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const kPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc-classify · __PROJECT_TEXT__ · requests</title>
<style nonce="__NONCE__">
  :root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#f8f9fb; --accent:#3056d3; --bad:#c4320a; --ok:#027a48; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
  header { padding:14px 24px; background:#fff; border-bottom:1px solid var(--line); display:flex; gap:16px; align-items:center; }
  header h1 { font-size:16px; margin:0; } header code { color:var(--muted); }
  main { padding:16px 24px; display:grid; gap:16px; }
  .card { background:#fff; border:1px solid var(--line); border-radius:8px; padding:12px 16px; }
  form { display:flex; gap:8px; align-items:center; }
  input, select, button { font:inherit; padding:6px 8px; border:1px solid var(--line); border-radius:6px; background:#fff; }
  button { background:var(--accent); color:#fff; border-color:var(--accent); cursor:pointer; }
  #filters { display:flex; gap:12px; align-items:center; flex-wrap:wrap; }
  table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
  th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); white-space:nowrap; }
  th { color:var(--muted); font-weight:600; font-size:12px; text-transform:uppercase; }
  tbody tr { cursor:pointer; } tbody tr:hover { background:#f2f4f7; } tbody tr.selected { background:#e8eefc; }
  .num { text-align:right; } .bad { color:var(--bad); } .ok { color:var(--ok); }
  #detail { display:none; } #detail.open { display:grid; grid-template-columns:1fr 1fr; gap:12px; }
  #detail h3 { margin:0 0 6px; font-size:13px; color:var(--muted); }
  pre { margin:0; max-height:320px; overflow:auto; background:#0f1729; color:#e6edf3; padding:10px; border-radius:6px; font-size:12px; white-space:pre-wrap; word-break:break-all; }
  #status { color:var(--muted); } .legend span { margin-right:14px; } .swatch { display:inline-block; width:10px; height:10px; border-radius:2px; margin-right:4px; vertical-align:middle; }
  .scroll { overflow-x:auto; } main > * { min-width:0; }
  svg text { font-size:11px; fill:var(--muted); }
  .swatch.latency { background:#3056d3; } .swatch.tokens { background:#f79009; }
</style>
</head>
<body>
<header><h1>Provider proxy requests</h1><code>project __PROJECT_TEXT__</code><span id="status"></span></header>
<main>
  <section class="card" id="login">
    <form id="key-form">
      <label for="api-key">API key</label>
      <input id="api-key" type="password" placeholder="svc_..." size="40" autocomplete="off" required>
      <button type="submit">Show requests</button>
    </form>
  </section>
  <section class="card" id="chart-card" hidden>
    <div class="legend"><span><i class="swatch latency"></i>total latency (ms)</span><span><i class="swatch tokens"></i>tokens in + out</span></div>
    <svg id="chart" width="100%" height="200" viewBox="0 0 1000 200" preserveAspectRatio="none" role="img" aria-label="latency and tokens over time"></svg>
  </section>
  <section class="card" id="table-card" hidden>
    <div id="filters">
      <label>Provider <select id="f-provider"><option value="">all</option></select></label>
      <label>Model <select id="f-model"><option value="">all</option></select></label>
      <label>Status <select id="f-status"><option value="">all</option></select></label>
      <span id="count"></span>
      <button id="refresh" type="button">Refresh</button>
    </div>
    <div class="scroll"><table>
      <thead><tr><th>Time</th><th>Provider</th><th>Model</th><th>Stream</th><th>Status</th><th class="num">TTFB ms</th><th class="num">Total ms</th><th class="num">Tokens in</th><th class="num">Tokens out</th><th>Error</th></tr></thead>
      <tbody id="rows"></tbody>
    </table></div>
  </section>
  <section class="card" id="detail">
    <div><h3>Request body</h3><pre id="request-body"></pre></div>
    <div><h3>Response body</h3><pre id="response-body"></pre></div>
  </section>
</main>
<script nonce="__NONCE__">
"use strict";
const projectId = __PROJECT_JSON__;
const storageKey = "svc-dashboard-key:" + projectId;
const maxRows = 1000;
let rows = [];

const $ = (id) => document.getElementById(id);
const text = (value) => (value === null || value === undefined ? "" : String(value));

function pretty(body) {
  try { return JSON.stringify(JSON.parse(body), null, 2); } catch { return body; }
}

async function load(key) {
  $("status").textContent = "loading...";
  const all = [];
  let before = null;
  while (all.length < maxRows) {
    const url = "requests?limit=500" + (before ? "&before=" + before : "");
    const response = await fetch(url, { headers: { authorization: "Bearer " + key } });
    const body = await response.json();
    if (!response.ok) throw new Error(body && body.error ? body.error.message : "HTTP " + response.status);
    all.push(...body.data);
    if (!body.has_more) break;
    before = body.next_before;
  }
  return all;
}

function fillSelect(select, values) {
  const current = select.value;
  select.length = 1;
  for (const value of [...new Set(values)].sort()) select.add(new Option(value, value));
  select.value = current;
}

function filtered() {
  const provider = $("f-provider").value, model = $("f-model").value, status = $("f-status").value;
  return rows.filter((r) => (!provider || r.provider === provider) && (!model || r.model === model) && (!status || String(r.status) === status));
}

function render() {
  const visible = filtered();
  const tbody = $("rows");
  tbody.replaceChildren();
  for (const r of visible) {
    const tr = document.createElement("tr");
    tr.dataset.id = r.id;
    const cells = [new Date(r.created_at_ms).toLocaleString(), r.provider, r.model, r.stream ? "yes" : "no", r.status,
      r.ttfb_ms === null ? "" : r.ttfb_ms.toFixed(1), r.total_ms.toFixed(1), text(r.tokens_in), text(r.tokens_out), text(r.error)];
    cells.forEach((value, i) => {
      const td = document.createElement("td");
      td.textContent = text(value);
      if (i >= 5 && i <= 8) td.className = "num";
      if (i === 4) td.className = r.status >= 200 && r.status < 300 ? "ok" : "bad";
      tr.append(td);
    });
    tr.addEventListener("click", () => show(r, tr));
    tbody.append(tr);
  }
  $("count").textContent = visible.length + " of " + rows.length + " requests";
  chart(visible);
}

function show(r, tr) {
  for (const other of document.querySelectorAll("tbody tr.selected")) other.classList.remove("selected");
  tr.classList.add("selected");
  $("request-body").textContent = pretty(r.request_body);
  $("response-body").textContent = pretty(r.response_body);
  $("detail").classList.add("open");
}

function chart(visible) {
  const svg = $("chart");
  const ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  const points = visible.slice().sort((a, b) => a.created_at_ms - b.created_at_ms);
  if (points.length === 0) return;
  const W = 1000, H = 200, pad = 24;
  const t0 = points[0].created_at_ms, t1 = points[points.length - 1].created_at_ms;
  const x = (t) => pad + (t1 === t0 ? (W - 2 * pad) / 2 : ((t - t0) / (t1 - t0)) * (W - 2 * pad));
  const series = [
    { color: "#3056d3", value: (r) => r.total_ms },
    { color: "#f79009", value: (r) => (r.tokens_in === null && r.tokens_out === null ? null : (r.tokens_in || 0) + (r.tokens_out || 0)) },
  ];
  const axis = document.createElementNS(ns, "line");
  Object.entries({ x1: pad, y1: H - pad, x2: W - pad, y2: H - pad, stroke: "#d0d5dd" }).forEach(([k, v]) => axis.setAttribute(k, v));
  svg.append(axis);
  for (const [t, anchor] of [[t0, "start"], [t1, "end"]]) {
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", anchor === "start" ? pad : W - pad); label.setAttribute("y", H - 6);
    label.setAttribute("text-anchor", anchor);
    label.textContent = new Date(t).toLocaleTimeString();
    svg.append(label);
  }
  series.forEach((s, i) => {
    const pts = points.map((r) => [r.created_at_ms, s.value(r)]).filter((p) => p[1] !== null);
    if (pts.length === 0) return;
    const max = Math.max(...pts.map((p) => p[1])) || 1;
    const y = (v) => H - pad - (v / max) * (H - 2 * pad);
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", pts.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke", s.color);
    line.setAttribute("stroke-width", "2");
    line.setAttribute("vector-effect", "non-scaling-stroke");
    svg.append(line);
    for (const p of pts) {
      const dot = document.createElementNS(ns, "circle");
      dot.setAttribute("cx", x(p[0]).toFixed(1)); dot.setAttribute("cy", y(p[1]).toFixed(1)); dot.setAttribute("r", "3");
      dot.setAttribute("fill", s.color);
      svg.append(dot);
    }
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", i === 0 ? pad : W - pad); label.setAttribute("y", 14);
    label.setAttribute("text-anchor", i === 0 ? "start" : "end");
    label.textContent = "max " + (Math.round(max * 10) / 10);
    svg.append(label);
  });
}

async function start(key) {
  try {
    rows = await load(key);
  } catch (error) {
    $("status").textContent = "error: " + error.message;
    return;
  }
  sessionStorage.setItem(storageKey, key);
  $("status").textContent = rows.length + " requests loaded";
  $("login").hidden = true;
  $("chart-card").hidden = false;
  $("table-card").hidden = false;
  fillSelect($("f-provider"), rows.map((r) => r.provider));
  fillSelect($("f-model"), rows.map((r) => r.model));
  fillSelect($("f-status"), rows.map((r) => String(r.status)));
  render();
}

$("key-form").addEventListener("submit", (event) => { event.preventDefault(); start($("api-key").value.trim()); });
$("refresh").addEventListener("click", () => start(sessionStorage.getItem(storageKey) || ""));
for (const id of ["f-provider", "f-model", "f-status"]) $(id).addEventListener("change", render);
const saved = sessionStorage.getItem(storageKey);
if (saved) start(saved);
</script>
</body>
</html>
`;
