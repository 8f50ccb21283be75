/**
 * The models page (`GET /v2/dashboard/models`): one self-contained HTML page, like the proxy dashboard (no CDN, no
 * build step, the response's CSP nonce on its one script and stylesheet). It asks for an API key and keeps it in
 * sessionStorage under the name the proxy dashboard uses (dashboard-page.ts; the two pages link to each other and
 * treat the key form alike); lists the organization's classifiers with every version (task, labels, status, live,
 * training time, metrics) from `GET /v2/models` and `GET /v2/models/{id}/versions`; for a version picked, draws its
 * evaluation report (`GET /v2/models/{id}/evaluation?version=n`): the confusion matrix as a heat map and, for a
 * binary model only, precision and recall by threshold with a movable threshold, saying where the probabilities come
 * from; and classifies a text with that version (`POST /v2/predict`).
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
  svg .cell-text { font-weight:600; } svg .cell-text.on-dark { fill:#fff; } svg .cell-text.on-light { fill:#000; } .legend span { margin-right:14px; } .swatch { display:inline-block; width:10px; height:10px; margin-right:4px; }
  #status { color:var(--muted); } pre { margin:0; white-space:pre-wrap; }
  #key-form[hidden], #change-key[hidden], #threshold-card[hidden], #dashboard-link[hidden], #project-form[hidden] { display:none; }
  header a { color:var(--accent); } #change-key { margin-left:auto; } #project-form input { width:14em; }
  #threshold-source { color:var(--muted); margin:0 0 6px; }
  /* A label name is the caller's text: isolated, so that its right-to-left letters or a U+202E cannot reorder what is around it. */
  .label-name { unicode-bidi:isolate; }
</style>
</head>
<body>
<header><h1>svc-classify · models</h1><a id="dashboard-link" hidden>Proxy dashboard</a>
  <form id="project-form" hidden><label for="project-id">Proxy dashboard of</label><input id="project-id" placeholder="proj_..." autocomplete="off"><button type="submit">Open</button></form>
  <span id="status">enter an API key</span><button id="change-key" type="button" hidden>Change key</button></header>
<main>
  <form id="key-form" class="card"><label for="api-key">API key</label><input id="api-key" type="password" size="40" autocomplete="off"><button type="submit">Show models</button></form>
  <section class="card"><table><thead><tr><th>model</th><th>task</th><th>labels</th><th>version</th><th>status</th><th>live</th><th>training</th><th>accuracy</th><th>macro F1</th></tr></thead><tbody id="rows"></tbody></table></section>
  <section id="detail" hidden>
    <div class="card"><h2 id="report-title">confusion matrix</h2><div id="report-note"></div><svg id="confusion" class="chart" role="img"></svg></div>
    <div class="card" id="threshold-card"><h2>precision and recall by threshold</h2><p id="threshold-source"></p><svg id="thresholds" class="chart" role="img"></svg>
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
        // The task and the label names (a binary model's label_text) tell apart classifiers whose ids all read svc-small-<hex>.
        const cells = [v.model, model.task_type.replace(/-classification$/, ''),
          model.labels ? model.labels.join(', ') : model.label_text || '', String(v.version), v.status,
          v.live ? 'live' : '', v.finished_at === null ? '' : (v.finished_at - v.created_at) + ' s',
          fixed(metrics.validation_accuracy ?? metrics.cv_accuracy), fixed(metrics.validation_macro_f1 ?? metrics.cv_macro_f1)];
        for (const text of cells) { const td = document.createElement('td'); td.textContent = text; tr.appendChild(td); }
        tr.children[2].className = 'label-name';
        tr.children[4].className = v.status === 'failed' ? 'failed' : '';
        tr.children[5].className = v.live ? 'live' : '';
        tr.dataset.name = v.id;
        tr.addEventListener('click', () => pick(tr, v));
        rows.appendChild(tr);
      }
    }
    $('status').textContent = rows.children.length + ' versions';
    // As on the proxy dashboard: the form goes once a key works, and "Change key" brings it back.
    $('key-form').hidden = true;
    $('change-key').hidden = false;
  }

  function failed(error) {
    $('status').textContent = error.message;
    $('key-form').hidden = false;
    $('change-key').hidden = true;
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
        ? report.examples + ' training examples, ' + report.folds + '-fold cross-validation' + (report.encoder === 'base' ? ' on the base encoder' : '')
        : report.examples + ' validation texts';
      $('threshold-source').textContent = thresholdSource(report);
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

  // Where the threshold chart's probabilities come from. A fine-tuned version's cross-validation embedded its
  // examples with the base encoder (its own encoder saw every fold in training), so its chart is not this version's.
  function thresholdSource(r) {
    if (r.source === 'validation') return 'This version scored on its ' + r.examples + ' validation texts.';
    const cv = r.folds + '-fold cross-validation of the ' + r.examples + ' training examples';
    if (r.encoder !== 'base') return 'From a ' + cv + " on this version's encoder.";
    return 'From a ' + cv + ' on the base encoder, not on this fine-tuned version: its own probabilities differ. ' +
      'Train it with a validation set for a chart of this version.';
  }

  // A cell's colour, blended over white, and the class of the text colour (white or black) that reads on it.
  const kCellColor = [48, 86, 211];
  const luminance = (rgb) => {
    const [r, g, b] = rgb.map((v) => { const c = v / 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  function cellColors(share) {
    const rgb = kCellColor.map((v) => Math.round(255 + (v - 255) * (0.08 + 0.92 * share)));
    // White reads at 4.5:1 or better down to luminance 0.183; above it, black does (at least 4.66:1).
    return { fill: 'rgb(' + rgb.join(',') + ')', text: 1.05 / (luminance(rgb) + 0.05) >= 4.5 ? 'on-dark' : 'on-light' };
  }

  // Text widths as drawn, so that long class names get the room they need.
  function textWidths(svg, names) {
    const probe = names.map((name) => svg.appendChild(el('text', {}, name)));
    const widths = probe.map((node) => node.getComputedTextLength());
    for (const node of probe) node.remove();
    return widths;
  }

  function drawConfusion() {
    const svg = $('confusion');
    svg.replaceChildren();
    if (!report) return;
    const single = report.hamming_loss === undefined;
    const rows = report.confusion_matrix;
    const columns = single ? report.labels : ['tn', 'fp', 'fn', 'tp'];
    // Column labels are drawn at 45 degrees (they never overlap, however long) and the rows' labels right-aligned:
    // the margins are as wide and as tall as the longest label needs.
    const longestRow = Math.max(0, ...textWidths(svg, report.labels)), longestColumn = Math.max(0, ...textWidths(svg, columns));
    const cell = 48, left = 36 + Math.ceil(longestRow), top = 30 + Math.ceil(longestColumn * Math.SQRT1_2);
    const width = Math.max(left + columns.length * cell + Math.ceil(longestColumn * Math.SQRT1_2) + 12, 260), height = top + rows.length * cell + 30;
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    svg.style.maxWidth = width * 1.5 + 'px';
    const max = Math.max(1, ...rows.flat());
    rows.forEach((row, r) => {
      svg.appendChild(el('text', { x: left - 6, y: top + r * cell + cell / 2 + 4, 'text-anchor': 'end', class: 'row-label label-name' }, report.labels[r]));
      row.forEach((n, c) => {
        const colors = cellColors(n / max);
        svg.appendChild(el('rect', { x: left + c * cell, y: top + r * cell, width: cell - 2, height: cell - 2, fill: colors.fill, class: 'cell' }));
        svg.appendChild(el('text', { x: left + c * cell + cell / 2 - 1, y: top + r * cell + cell / 2 + 4, 'text-anchor': 'middle', class: 'cell-text ' + colors.text }, String(n)));
      });
    });
    columns.forEach((name, c) => {
      const x = left + c * cell + cell / 2, y = top - 8;
      svg.appendChild(el('text', { x, y, transform: 'rotate(-45 ' + x + ' ' + y + ')', class: 'column-label label-name' }, name));
    });
    svg.appendChild(el('text', { x: left + (columns.length * cell) / 2, y: 14, 'text-anchor': 'middle', class: 'axis-title' }, single ? 'predicted' : 'per label'));
    svg.appendChild(el('text', { x: 12, y: top + (rows.length * cell) / 2, class: 'axis-title', transform: 'rotate(-90 12 ' + (top + (rows.length * cell) / 2) + ')', 'text-anchor': 'middle' }, single ? 'actual' : 'label'));
    svg.appendChild(el('text', { x: left, y: height - 10, class: 'legend-text' }, 'darker: more texts (most: ' + max + ')'));
  }

  function drawThresholds() {
    const svg = $('thresholds');
    svg.replaceChildren();
    const rows = report && report.thresholds;
    // Only a binary model has one threshold to move: other models show no threshold card at all.
    $('threshold-card').hidden = !rows;
    if (!rows) return;
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
    load().catch(failed);
  });
  $('change-key').addEventListener('click', () => {
    key = '';
    sessionStorage.removeItem('svc-key');
    picked = null;
    $('rows').replaceChildren();
    $('detail').hidden = true;
    $('api-key').value = '';
    $('status').textContent = 'enter an API key';
    $('key-form').hidden = false;
    $('change-key').hidden = true;
  });
  // The proxy dashboard is a project's: the one named in ?project= (its link here), else the last one this tab opened.
  const projectShape = /^proj_[A-Za-z0-9]{1,64}$/;
  const dashboardOf = (project) => base + '/' + project + '/dashboard';
  const project = [new URLSearchParams(location.search).get('project'), sessionStorage.getItem('svc-project')].find((p) => p && projectShape.test(p));
  if (project) {
    $('dashboard-link').href = dashboardOf(project);
    $('dashboard-link').textContent = 'Proxy dashboard · ' + project;
    $('dashboard-link').hidden = false;
  } else {
    $('project-form').hidden = false;
  }
  $('project-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const id = $('project-id').value.trim();
    if (projectShape.test(id)) location.assign(dashboardOf(id));
    else $('status').textContent = 'a project id reads proj_ and letters or digits';
  });
  $('classify-form').addEventListener('submit', (event) => {
    event.preventDefault();
    if (!picked) return;
    api('/predict', { method: 'POST', body: JSON.stringify({ model: picked.id, inputs: [$('classify-text').value] }) })
      .then((answer) => { $('classify-result').textContent = readout(answer.predictions[0]); })
      .catch((error) => { $('classify-result').textContent = error.message; });
  });
  if (key) load().catch(failed);
})();
</script>
</body>
</html>
`;
