// The project dashboard's shadow classifier view (dashboard-page.ts splices these in): agreement with the chat model
// over time, the classifier's median latency, and what it would have saved, from `GET ./shadow/stats`. The script
// runs under the page's nonce like the rest; it draws with the page's own `panel` (same axes, same ticks) and keeps
// its names inside one function so that nothing clashes with the page script's globals.

export const kShadowPanelStyle = `
  #shadow-card[hidden] { display:none; }
  #shadow-card h2 { margin:0 0 4px; font-size:13px; font-weight:600; display:flex; gap:12px; align-items:center; }
  #shadow-figures { display:flex; gap:24px; flex-wrap:wrap; margin:4px 0 8px; }
  #shadow-figures div { display:grid; } #shadow-figures b { font-size:18px; } #shadow-figures span { color:var(--muted); font-size:12px; }
  #shadow-card svg.chart { max-width:900px; }
`;

export const kShadowPanelHtml = `
  <section class="card" id="shadow-card" hidden>
    <h2>Shadow classifier <select id="shadow-window" aria-label="window"><option value="1h">last hour</option><option value="24h" selected>last 24 hours</option><option value="7d">last 7 days</option><option value="30d">last 30 days</option></select></h2>
    <div id="shadow-figures">
      <div><b id="shadow-agreement"></b><span id="shadow-agreement-note"></span></div>
      <div><b id="shadow-latency"></b><span>classifier p50 latency</span></div>
      <div><b id="shadow-saved"></b><span id="shadow-saved-note"></span></div>
    </div>
    <svg id="chart-agreement" class="chart" viewBox="0 0 600 240" role="img" aria-label="agreement with the chat model over time"></svg>
  </section>
`;

/** Defines `loadShadow(key)`, which the page script calls once the key is known (and on refresh). */
export const kShadowPanelScript = `
"use strict";
function loadShadow(key) {
  const el = (id) => document.getElementById(id);
  const card = el("shadow-card");
  const show = async () => {
    const response = await fetch("shadow/stats?window=" + el("shadow-window").value, { headers: { authorization: "Bearer " + key } });
    if (!response.ok) { card.hidden = true; return; }
    const s = await response.json();
    const shadows = await fetch("shadow", { headers: { authorization: "Bearer " + key } }).then((r) => (r.ok ? r.json() : { data: [] }));
    // A project without a shadow classifier shows nothing of it.
    if (shadows.data.length === 0 && s.calls === 0) { card.hidden = true; return; }
    card.hidden = false;
    el("shadow-agreement").textContent = s.agreement === null ? "no call compared" : (s.agreement * 100).toFixed(1) + "% agreement";
    el("shadow-agreement-note").textContent = s.agreed + " of " + s.compared + " calls compared agreed (" + s.calls + " shadowed, " + s.errors + " unanswered)";
    el("shadow-latency").textContent = s.classifier_p50_ms === null ? "-" : s.classifier_p50_ms.toFixed(1) + " ms";
    el("shadow-saved").textContent = (s.saved.tokens_in + s.saved.tokens_out) + " tokens";
    el("shadow-saved-note").textContent = "and " + (s.saved.chat_ms / 1000).toFixed(2) + " s of chat model time the classifier would have saved over " +
      s.saved.calls + " calls (its own time: " + (s.saved.classifier_ms / 1000).toFixed(2) + " s)";
    const points = s.buckets.map((b) => ({ created_at_ms: b.start * 1000, agreement: b.agreement }));
    panel(el("chart-agreement"), points, (p) => (p.agreement === null ? null : p.agreement * 100), "#027a48", "agreement (%) per " + s.bucket, 100);
  };
  el("shadow-window").onchange = () => { show().catch(() => { card.hidden = true; }); };
  return show().catch(() => { card.hidden = true; });
}
`;
