/**
 * The models page (`GET /v2/dashboard/models`): one self-contained HTML page, like the proxy dashboard (no CDN, no
 * build step, the response's CSP nonce on its one script and stylesheet). It asks for an API key and keeps it in
 * sessionStorage; lists the organization's classifiers with every version (status, live, training time, metrics)
 * from `GET /v2/models` and `GET /v2/models/{id}/versions`; for a version picked, draws its evaluation report
 * (`GET /v2/models/{id}/evaluation?version=n`): the confusion matrix as a heat map and, for a binary model, precision
 * and recall by threshold with a movable threshold; and classifies a text with that version (`POST /v2/predict`).
 */
export function modelsPage(nonce: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(nonce)) throw new TypeError('nonce must be base64url');
  return kPage.split('__NONCE__').join(nonce);
}

const kPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc-classify · models</title>
<style nonce="__NONCE__">
  :root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#f8f9fb; --accent:#3056d3; --bad:#c4320a; --ok:#027a48; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:var(--bg); }
  header { padding:14px 24px; background:#fff; border-bottom:1px solid var(--line); display:flex; gap:16px; align-items:center; }
  header h1 { font-size:16px; margin:0; }
  main { padding:16px 24px; display:grid; gap:16px; }
  .card { background:#fff; border:1px solid var(--line); border-radius:8px; padding:12px 16px; }
  form { display:flex; gap:8px; align-items:center; }
  input, textarea, button { font:inherit; padding:6px 8px; border:1px solid var(--line); border-radius:6px; background:#fff; }
  button { background:var(--accent); color:#fff; border-color:var(--accent); cursor:pointer; }
  table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
  th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); white-space:nowrap; }
  th { color:var(--muted); font-weight:600; font-size:12px; text-transform:uppercase; }
  tbody tr { cursor:pointer; } tbody tr:hover { background:#f2f4f7; } tbody tr.selected { background:#e8eefc; }
  .live { color:var(--ok); font-weight:600; } .failed { color:var(--bad); }
  #detail[hidden] { display:none; } #detail { display:grid; grid-template-columns:1fr 1fr; gap:16px; }
  #detail h2 { margin:0 0 6px; font-size:13px; }
  svg.chart { width:100%; height:auto; display:block; }
  svg text { font-size:12px; fill:var(--muted); } svg .axis-title { fill:var(--fg); font-weight:600; } svg .axis { stroke:#98a2b3; }
  svg .cell-text { fill:#fff; font-weight:600; } .legend span { margin-right:14px; } .swatch { display:inline-block; width:10px; height:10px; margin-right:4px; }
  #status { color:var(--muted); } pre { margin:0; white-space:pre-wrap; }
  /* A label name is the caller's text: isolated, so that its right-to-left letters or a U+202E cannot reorder what is around it. */
  .label-name { unicode-bidi:isolate; }
</style>
</head>
<body>
<header><h1>svc-classify · models</h1><span id="status">enter an API key</span></header>
<main>
  <form id="key-form" class="card"><label for="api-key">API key</label><input id="api-key" type="password" size="40" autocomplete="off"><button type="submit">Show models</button></form>
  <section class="card"><table><thead><tr><th>model</th><th>version</th><th>status</th><th>live</th><th>training</th><th>accuracy</th><th>macro F1</th></tr></thead><tbody id="rows"></tbody></table></section>
  <section id="detail" hidden>
    <div class="card"><h2 id="report-title">confusion matrix</h2><div id="report-note"></div><svg id="confusion" class="chart" role="img"></svg></div>
    <div class="card"><h2>precision and recall by threshold</h2><svg id="thresholds" class="chart" role="img"></svg>
      <div class="legend"><span><i class="swatch" id="swatch-p"></i>precision</span><span><i class="swatch" id="swatch-r"></i>recall</span></div>
      <label for="threshold">threshold <output id="threshold-value">0.50</output></label> <input id="threshold" type="range" min="0.05" max="0.95" step="0.05" value="0.5">
      <div id="threshold-readout"></div></div>
    <div class="card"><h2>classify a text</h2><form id="classify-form"><textarea id="classify-text" rows="2" cols="50"></textarea><button type="submit">Classify</button></form><pre id="classify-result" dir="ltr" class="label-name"></pre></div>
  </section>
</main>
<script nonce="__NONCE__">
(() => {
  const base = location.pathname.replace(/\\/dashboard\\/models$/, '');
  const $ = (id) => document.getElementById(id);
  const ns = 'http://www.w3.org/2000/svg';
  let key = sessionStorage.getItem('svc-key') || '';
  let picked = null;
  let report = null;
  const api = async (path, init = {}) => {
    const response = await fetch(base + path, { ...init, headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' } });
    const body = await response.json();
    if (!response.ok) {
      const error = new Error(body.error ? body.error.message : String(response.status));
      error.retryAfter = response.status === 409 ? Number(response.headers.get('retry-after')) || 0 : 0;
      throw error;
    }
    return body;
  };
  const el = (tag, attrs, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const fixed = (n) => (typeof n === 'number' ? n.toFixed(3) : '');
  // JSON with bidi controls (U+061C, U+200E-F, U+202A-E, U+2066-9) written as escapes: the same value, shown as text.
  const bidiControls = /[\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]/g;
  const readout = (value) => JSON.stringify(value, null, 2).replace(bidiControls, (c) => '\\\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

  async function load() {
    $('status').textContent = 'loading…';
    const models = (await api('/models')).data.filter((m) => m.object === 'model' && m.owned_by !== undefined && !m.id.includes(':'));
    const rows = $('rows');
    rows.replaceChildren();
    for (const model of models) {
      const versions = await api('/models/' + model.id + '/versions');
      for (const v of versions.data) {
        const tr = document.createElement('tr');
        const metrics = v.metrics || {};
        const cells = [v.model, String(v.version), v.status, v.live ? 'live' : '', v.finished_at === null ? '' : (v.finished_at - v.created_at) + ' s',
          fixed(metrics.validation_accuracy ?? metrics.cv_accuracy), fixed(metrics.validation_macro_f1 ?? metrics.cv_macro_f1)];
        for (const text of cells) { const td = document.createElement('td'); td.textContent = text; tr.appendChild(td); }
        tr.children[2].className = v.status === 'failed' ? 'failed' : '';
        tr.children[3].className = v.live ? 'live' : '';
        tr.dataset.name = v.id;
        tr.addEventListener('click', () => pick(tr, v));
        rows.appendChild(tr);
      }
    }
    $('status').textContent = rows.children.length + ' versions';
  }

  async function pick(tr, v) {
    for (const row of $('rows').children) row.classList.toggle('selected', row === tr);
    picked = v;
    $('detail').hidden = false;
    $('report-title').textContent = 'confusion matrix · ' + v.id;
    $('classify-result').textContent = '';
    try {
      report = await api('/models/' + v.model + '/evaluation?version=' + v.version);
      // A version trained without a validation set is reported from its examples' cross-validation.
      const from = report.source === 'cross-validation'
        ? report.examples + ' training examples, ' + report.folds + '-fold cross-validation'
        : report.examples + ' validation texts';
      $('report-note').textContent = from + ', accuracy ' + fixed(report.accuracy) +
        (report.compared_with_live ? ' · on the live version ' + report.compared_with_live.version + "'s texts: F1 " +
          fixed(report.compared_with_live.this.macro_f1) + ' vs live ' + fixed(report.compared_with_live.live.macro_f1) : '');
    } catch (error) {
      report = null;
      $('report-note').textContent = error.message;
      // A report being computed in the background (409 with retry-after): asked again while the version stays picked.
      if (error.retryAfter > 0) setTimeout(() => picked === v && pick(tr, v), error.retryAfter * 1000);
    }
    drawConfusion();
    drawThresholds();
  }

  function drawConfusion() {
    const svg = $('confusion');
    svg.replaceChildren();
    if (!report) return;
    const single = report.hamming_loss === undefined;
    const rows = report.confusion_matrix;
    const columns = single ? report.labels : ['tn', 'fp', 'fn', 'tp'];
    const cell = 48, left = 110, top = 40, width = left + columns.length * cell + 20, height = top + rows.length * cell + 50;
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    const max = Math.max(1, ...rows.flat());
    rows.forEach((row, r) => {
      svg.appendChild(el('text', { x: left - 6, y: top + r * cell + cell / 2 + 4, 'text-anchor': 'end', class: 'row-label label-name' }, report.labels[r]));
      row.forEach((n, c) => {
        const shade = 0.15 + 0.85 * (n / max);
        svg.appendChild(el('rect', { x: left + c * cell, y: top + r * cell, width: cell - 2, height: cell - 2, fill: 'rgba(48,86,211,' + shade.toFixed(3) + ')', class: 'cell' }));
        svg.appendChild(el('text', { x: left + c * cell + cell / 2 - 1, y: top + r * cell + cell / 2 + 4, 'text-anchor': 'middle', class: 'cell-text' }, String(n)));
      });
    });
    columns.forEach((name, c) => svg.appendChild(el('text', { x: left + c * cell + cell / 2, y: top - 8, 'text-anchor': 'middle', class: 'column-label label-name' }, name)));
    svg.appendChild(el('text', { x: left + (columns.length * cell) / 2, y: 14, 'text-anchor': 'middle', class: 'axis-title' }, single ? 'predicted' : 'per label'));
    svg.appendChild(el('text', { x: 12, y: top + (rows.length * cell) / 2, class: 'axis-title', transform: 'rotate(-90 12 ' + (top + (rows.length * cell) / 2) + ')', 'text-anchor': 'middle' }, single ? 'true' : 'label'));
    svg.appendChild(el('text', { x: left, y: height - 12, class: 'legend-text' }, 'darker: more texts (most: ' + max + ')'));
  }

  function drawThresholds() {
    const svg = $('thresholds');
    svg.replaceChildren();
    const rows = report && report.thresholds;
    $('threshold').disabled = !rows;
    if (!rows) { $('threshold-readout').textContent = 'binary models only'; return; }
    const w = 420, h = 240, l = 44, r = 12, t = 12, b = 40;
    svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
    const x = (v) => l + v * (w - l - r), y = (v) => t + (1 - v) * (h - t - b);
    svg.appendChild(el('line', { x1: l, y1: y(0), x2: w - r, y2: y(0), class: 'axis' }));
    svg.appendChild(el('line', { x1: l, y1: y(0), x2: l, y2: y(1), class: 'axis' }));
    for (const v of [0, 0.25, 0.5, 0.75, 1]) {
      svg.appendChild(el('text', { x: x(v), y: h - b + 16, 'text-anchor': 'middle', class: 'x-tick' }, v.toFixed(2)));
      svg.appendChild(el('text', { x: l - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'y-tick' }, v.toFixed(2)));
    }
    svg.appendChild(el('text', { x: (l + w - r) / 2, y: h - 4, 'text-anchor': 'middle', class: 'axis-title' }, 'threshold'));
    svg.appendChild(el('text', { x: 12, y: (t + h - b) / 2, 'text-anchor': 'middle', class: 'axis-title', transform: 'rotate(-90 12 ' + (t + h - b) / 2 + ')' }, 'share'));
    const colors = { precision: '#3056d3', recall: '#e07b00' };
    $('swatch-p').style.background = colors.precision;
    $('swatch-r').style.background = colors.recall;
    for (const series of ['precision', 'recall']) {
      const points = rows.map((row) => x(row.threshold).toFixed(1) + ',' + y(row[series]).toFixed(1)).join(' ');
      svg.appendChild(el('polyline', { points, fill: 'none', stroke: colors[series], 'stroke-width': 2, class: 'series-' + series }));
    }
    svg.appendChild(el('line', { id: 'threshold-line', x1: 0, x2: 0, y1: y(0), y2: y(1), stroke: '#1d2330', 'stroke-dasharray': '4 3' }));
    moveThreshold();
  }

  function moveThreshold() {
    const value = Number($('threshold').value);
    $('threshold-value').textContent = value.toFixed(2);
    const rows = report && report.thresholds;
    const line = document.getElementById('threshold-line');
    if (!rows || !line) return;
    const row = rows.reduce((best, r) => (Math.abs(r.threshold - value) < Math.abs(best.threshold - value) ? r : best));
    const x = 44 + row.threshold * (420 - 44 - 12);
    line.setAttribute('x1', x.toFixed(1));
    line.setAttribute('x2', x.toFixed(1));
    $('threshold-readout').textContent = 'at ' + row.threshold.toFixed(2) + ': precision ' + fixed(row.precision) + ', recall ' + fixed(row.recall) + ', F1 ' + fixed(row.f1);
  }

  $('threshold').addEventListener('input', moveThreshold);
  $('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    key = $('api-key').value.trim();
    sessionStorage.setItem('svc-key', key);
    load().catch((error) => { $('status').textContent = error.message; });
  });
  $('classify-form').addEventListener('submit', (event) => {
    event.preventDefault();
    if (!picked) return;
    api('/predict', { method: 'POST', body: JSON.stringify({ model: picked.id, inputs: [$('classify-text').value] }) })
      .then((answer) => { $('classify-result').textContent = readout(answer.predictions[0]); })
      .catch((error) => { $('classify-result').textContent = error.message; });
  });
  if (key) load().catch((error) => { $('status').textContent = error.message; });
})();
</script>
</body>
</html>
`;
