import { kShadowPanelHtml, kShadowPanelScript, kShadowPanelStyle } from './shadow-panel.js';

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
 * (a list holds each body's start; a call picked whose body was cut is read whole from `GET ./requests/{id}`)
 * and two SVG charts over one time range, latency and tokens, each with labelled axes; every time 24-hour; with a
 * shadow classifier, its agreement with the chat model over time, latency and savings (shadow-panel.ts). The key is
 * kept under the name the models page uses (models-page.ts), which the header links to. `nonce` is the response's
 * CSP nonce (see `pagePolicy`): the page's scripts and stylesheet carry it.
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
  /* The error is the one long free text: it wraps inside the table rather than pushing the table past the card. */
  td.error { white-space:normal; overflow-wrap:anywhere; min-width:14em; }
  header a { color:var(--accent); } #change-key { margin-left:auto; } #change-key[hidden] { display:none; }
  #chart-range { grid-column:1 / -1; margin:0; color:var(--muted); }
  #chart-card { display:grid; grid-template-columns:1fr 1fr; gap:16px; } #chart-card[hidden] { display:none; }
  @media (max-width: 900px) { #chart-card { grid-template-columns:1fr; } }
  #chart-card h2 { margin:0 0 4px; font-size:13px; font-weight:600; }
  svg.chart { width:100%; height:auto; display:block; }
  svg text { font-size:12px; fill:var(--muted); } svg .axis-title { fill:var(--fg); font-weight:600; }
  svg .grid { stroke:#eef0f3; } svg .axis { stroke:#98a2b3; }
${kShadowPanelStyle}</style>
</head>
<body>
<header><h1>Provider proxy requests</h1><code>project __PROJECT_TEXT__</code><a id="models-link" href="../dashboard/models?project=__PROJECT_TEXT__">Models</a><span id="status"></span><button id="change-key" type="button" hidden>Change key</button></header>
<main>
  <section class="card" id="login">
    <form id="key-form">
      <label for="api-key">API key</label>
      <input id="api-key" type="password" placeholder="svc_..." size="40" autocomplete="off" required>
      <button type="submit">Show requests</button>
    </form>
  </section>
  <section class="card" id="chart-card" hidden>
    <p id="chart-range"></p>
    <div><h2>Latency</h2><svg id="chart-latency" class="chart" viewBox="0 0 600 240" role="img" aria-label="total latency in milliseconds over time"></svg></div>
    <div><h2>Tokens</h2><svg id="chart-tokens" class="chart" viewBox="0 0 600 240" role="img" aria-label="tokens in plus out over time"></svg></div>
  </section>
${kShadowPanelHtml}  <section class="card" id="table-card" hidden>
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
<script nonce="__NONCE__">${kShadowPanelScript}</script>
<script nonce="__NONCE__">
"use strict";
const projectId = __PROJECT_JSON__;
// One key for this page and the models page (models-page.ts), so that the link between them does not ask again.
const storageKey = "svc-key";
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
    const cells = [dateTimeText(r.created_at_ms), r.provider, r.model, r.stream ? "yes" : "no", r.status,
      r.ttfb_ms === null ? "" : r.ttfb_ms.toFixed(1), r.total_ms.toFixed(1), text(r.tokens_in), text(r.tokens_out), text(r.error)];
    cells.forEach((value, i) => {
      const td = document.createElement("td");
      td.textContent = text(value);
      if (i >= 5 && i <= 8) td.className = "num";
      if (i === 4) td.className = r.status >= 200 && r.status < 300 ? "ok" : "bad";
      if (i === 9) td.className = "error";
      tr.append(td);
    });
    tr.addEventListener("click", () => show(r, tr));
    tbody.append(tr);
  }
  $("count").textContent = visible.length + " of " + rows.length + " requests";
  chart(visible);
}

async function show(r, tr) {
  for (const other of document.querySelectorAll("tbody tr.selected")) other.classList.remove("selected");
  tr.classList.add("selected");
  $("request-body").textContent = pretty(r.request_body);
  $("response-body").textContent = pretty(r.response_body);
  $("detail").classList.add("open");
  if (!r.request_body_truncated && !r.response_body_truncated) return;
  // A list holds each body's start only: the whole call is one request away.
  const response = await fetch("requests/" + r.id, { headers: { authorization: "Bearer " + (sessionStorage.getItem(storageKey) || "") } });
  if (!response.ok || !tr.classList.contains("selected")) return;
  const whole = await response.json();
  if (!tr.classList.contains("selected")) return;
  $("request-body").textContent = pretty(whole.request_body);
  $("response-body").textContent = pretty(whole.response_body);
}

// Two panels, each against its own value scale (latency and tokens differ by orders of magnitude) and one time range,
// the calls shown: a call without token counts leaves a gap in the tokens panel instead of narrowing its time axis.
function chart(visible) {
  const points = visible.slice().sort((a, b) => a.created_at_ms - b.created_at_ms);
  const range = points.length === 0 ? null : { from: points[0].created_at_ms, to: points[points.length - 1].created_at_ms };
  $("chart-range").textContent = range === null ? "no calls to chart" : "Both charts: " + points.length + " calls from " + dateTimeText(range.from) + " to " + dateTimeText(range.to);
  panel($("chart-latency"), points, (r) => r.total_ms, "#3056d3", "latency (ms)", undefined, range);
  panel($("chart-tokens"), points, (r) => (r.tokens_in === null && r.tokens_out === null ? null : (r.tokens_in || 0) + (r.tokens_out || 0)), "#f79009", "tokens (in + out)", undefined, range);
}

const ns = "http://www.w3.org/2000/svg";
function svgEl(name, attributes, content) {
  const el = document.createElementNS(ns, name);
  for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, v);
  if (content !== undefined) el.textContent = content;
  return el;
}

// 1, 2 or 5 times a power of ten: tick values people read at a glance.
function niceStep(range, count) {
  const raw = range / count, power = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / power;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
}

// One way to write a time everywhere on the page, table and charts: local, 24-hour, whatever the browser's locale.
const two = (n) => String(n).padStart(2, "0");
function dateText(t) {
  const d = new Date(t);
  return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate());
}
function clockText(t, seconds) {
  const d = new Date(t);
  return two(d.getHours()) + ":" + two(d.getMinutes()) + (seconds ? ":" + two(d.getSeconds()) : "");
}
function dateTimeText(t) {
  return dateText(t) + " " + clockText(t, true);
}

// Clock steps from a second to a week; the first one giving at most six ticks wins.
const timeSteps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800].map((s) => s * 1000);
function timeLabel(t, step) {
  if (step >= 86400000) return dateText(t);
  return clockText(t, step < 60000);
}

// fixedTop, when given, is the value axis's top (a percentage's 100) instead of the largest value rounded up; range
// ({ from, to } in ms), the time axis's span instead of the points' own.
function panel(svg, points, value, color, title, fixedTop, range) {
  svg.replaceChildren();
  const W = 600, H = 240, left = 64, right = 16, top = 12, bottom = 48;
  const pts = points.map((r) => [r.created_at_ms, value(r)]).filter((p) => p[1] !== null);
  if (pts.length === 0) {
    svg.append(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no data"));
    return;
  }
  // Time axis: the requests' span, widened to a minute around a single one.
  let t0 = range ? range.from : pts[0][0], t1 = range ? range.to : pts[pts.length - 1][0];
  if (t1 - t0 < 2000) { t0 -= 30000; t1 += 30000; }
  const margin = (t1 - t0) * 0.03; // no point drawn on the value axis
  t0 -= margin; t1 += margin;
  const tStep = timeSteps.find((s) => (t1 - t0) / s <= 6) || 604800000;
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (W - left - right);
  // Value axis: from 0 to a round number above the largest value.
  const max = fixedTop || Math.max(...pts.map((p) => p[1])) || 1;
  const vStep = niceStep(max, 4), vTop = Math.ceil(max / vStep) * vStep;
  const y = (v) => H - bottom - (v / vTop) * (H - top - bottom);
  const digits = vStep < 1 ? Math.ceil(-Math.log10(vStep)) : 0;
  for (let v = 0; v <= vTop + vStep / 2; v += vStep) {
    svg.append(svgEl("line", { class: "grid", x1: left, x2: W - right, y1: y(v), y2: y(v) }));
    svg.append(svgEl("text", { class: "y-tick", x: left - 6, y: y(v) + 4, "text-anchor": "end" }, v.toFixed(digits)));
  }
  for (let t = Math.ceil(t0 / tStep) * tStep; t <= t1; t += tStep) {
    svg.append(svgEl("line", { class: "axis", x1: x(t), x2: x(t), y1: H - bottom, y2: H - bottom + 4 }));
    svg.append(svgEl("text", { class: "x-tick", x: x(t), y: H - bottom + 17, "text-anchor": "middle" }, timeLabel(t, tStep)));
  }
  svg.append(svgEl("line", { class: "axis", x1: left, x2: W - right, y1: H - bottom, y2: H - bottom }));
  svg.append(svgEl("line", { class: "axis", x1: left, x2: left, y1: top, y2: H - bottom }));
  svg.append(svgEl("text", { class: "axis-title x-title", x: (left + W - right) / 2, y: H - 8, "text-anchor": "middle" }, "time"));
  svg.append(svgEl("text", { class: "axis-title y-title", x: -(top + H - bottom) / 2, y: 14, "text-anchor": "middle", transform: "rotate(-90)" }, title));
  svg.append(svgEl("polyline", {
    points: pts.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "), fill: "none", stroke: color, "stroke-width": 2,
  }));
  for (const p of pts) {
    const dot = svgEl("circle", { cx: x(p[0]).toFixed(1), cy: y(p[1]).toFixed(1), r: 3.5, fill: color });
    dot.append(svgEl("title", {}, dateTimeText(p[0]) + ": " + (Math.round(p[1] * 10) / 10)));
    svg.append(dot);
  }
}

async function start(key) {
  try {
    rows = await load(key);
  } catch (error) {
    $("status").textContent = "error: " + error.message;
    showLogin();
    return;
  }
  sessionStorage.setItem(storageKey, key);
  // The models page links back to the last project whose dashboard this tab opened.
  sessionStorage.setItem("svc-project", projectId);
  $("status").textContent = rows.length + " requests loaded";
  $("login").hidden = true;
  $("change-key").hidden = false;
  $("chart-card").hidden = false;
  $("table-card").hidden = false;
  fillSelect($("f-provider"), rows.map((r) => r.provider));
  fillSelect($("f-model"), rows.map((r) => r.model));
  fillSelect($("f-status"), rows.map((r) => String(r.status)));
  render();
  loadShadow(key);
}

// As on the models page: the form goes once a key works, and "Change key" forgets it and brings the form back.
function showLogin() {
  $("login").hidden = false;
  $("change-key").hidden = true;
}
$("change-key").addEventListener("click", () => {
  sessionStorage.removeItem(storageKey);
  for (const id of ["chart-card", "table-card", "shadow-card"]) $(id).hidden = true;
  $("detail").classList.remove("open");
  $("api-key").value = "";
  $("status").textContent = "";
  showLogin();
});
$("key-form").addEventListener("submit", (event) => { event.preventDefault(); start($("api-key").value.trim()); });
$("refresh").addEventListener("click", () => start(sessionStorage.getItem(storageKey) || ""));
for (const id of ["f-provider", "f-model", "f-status"]) $(id).addEventListener("change", render);
const saved = sessionStorage.getItem(storageKey);
if (saved) start(saved);
</script>
</body>
</html>
`;
