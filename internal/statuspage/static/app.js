// gpuheal status page. Plain JavaScript, no dependencies: the cluster may
// have no internet access. Text from the cluster (node names, reasons,
// messages) only ever goes through textContent and setAttribute, never
// through HTML parsing.
'use strict';

(function () {
  const SVG = 'http://www.w3.org/2000/svg';
  const TIERS = new Set(['gold', 'silver', 'bronze']);
  // The five states of the fleet view (internal/fleetview), worst last here.
  const STATES = new Set(['healthy', 'warning', 'cordoned', 'remediating', 'unhealthy']);
  // The server pings after 15s of silence; two missed pings mean the
  // stream is stalled (a buffering proxy) and the page polls instead.
  const STALE_MS = 40000;
  const POLL_MS = 5000;

  const byId = (id) => document.getElementById(id);
  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const k of Object.keys(attrs)) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function fmtTime(iso) {
    if (!iso) return '';
    const d = new Date(iso);
    return d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  }
  function fmtDuration(s) {
    if (s === undefined || s === null) return '';
    s = Math.round(s);
    if (s < 90) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 90) return m + 'm ' + (s % 60) + 's';
    return Math.floor(m / 60) + 'h ' + (m % 60) + 'm';
  }

  // ---- fleet map ----
  const tiles = new Map(); // node name → tile element

  function makeTile(name) {
    const t = el('div', 'tile');
    t.setAttribute('data-node', name);
    t.append(el('span', 'name', name), el('span', 'gpus'), el('span', 'phase'), el('span', 'badge'));
    return t;
  }

  function badCondition(n) {
    return (n.conditions || []).find((c) => c.status === 'False' || (c.type === 'Ready' && c.status === 'Unknown'));
  }

  function updateTile(t, n) {
    const state = STATES.has(n.state) ? n.state : 'healthy';
    const tier = TIERS.has(n.tier) ? n.tier : '';
    t.className = 'tile state-' + state + (tier ? ' tier-' + tier : '');
    t.setAttribute('data-state', state);
    t.setAttribute('data-tier', n.tier || '');
    t.setAttribute('data-phase', n.phase || '');
    const healthy = n.healthyGPUs === undefined ? '–' : n.healthyGPUs;
    t.querySelector('.gpus').textContent = healthy + '/' + n.gpus + ' GPUs';
    const bad = badCondition(n);
    let note = '';
    if (n.phase) note = n.phase;
    else if (bad) note = bad.reason || bad.type + '=' + bad.status;
    else if (n.unschedulable) note = 'cordoned';
    else if (n.activeWarnings) note = n.activeWarnings + ' warning' + (n.activeWarnings > 1 ? 's' : '');
    t.querySelector('.phase').textContent = note;
    t.querySelector('.badge').textContent = tier ? tier[0].toUpperCase() : '';

    const lines = [n.name, 'state: ' + state];
    if (n.tier) lines.push('tier: ' + n.tier + (n.score !== undefined ? ' (score ' + n.score + ')' : ''));
    lines.push('GPUs healthy: ' + healthy + ' of ' + n.gpus);
    for (const c of n.conditions || []) {
      lines.push(c.type + '=' + c.status + (c.reason ? ' (' + c.reason + ')' : '') + (c.message ? ': ' + c.message : ''));
    }
    if (n.activeWarnings) lines.push('active warnings: ' + n.activeWarnings);
    if (n.unschedulable) lines.push('cordoned');
    if (n.incident) lines.push('incident ' + n.incident + ': ' + n.phase + (n.action ? ' (' + n.action + ')' : ''));
    t.title = lines.join('\n');
  }

  function renderFleet(f) {
    const grid = byId('fleet');
    const names = new Set(f.nodes.map((n) => n.name));
    for (const [name, t] of tiles) {
      if (!names.has(name)) { t.remove(); tiles.delete(name); }
    }
    f.nodes.forEach((n, i) => {
      let t = tiles.get(n.name);
      if (!t) { t = makeTile(n.name); tiles.set(n.name, t); }
      updateTile(t, n);
      if (grid.children[i] !== t) grid.insertBefore(t, grid.children[i] || null);
    });
    byId('fleet-empty').hidden = f.nodes.length > 0;
    renderSummary(f.summary);
    renderBreakers(f.policies);
  }

  function renderSummary(s) {
    const box = byId('summary');
    const count = (cls, n, label) => {
      const c = el('span', 'count ' + cls);
      c.append(el('b', '', n), document.createTextNode(' ' + label));
      return c;
    };
    box.replaceChildren(
      count('', s.nodes, 'nodes'),
      count('state-healthy', s.healthy, 'healthy'),
      count('state-warning', s.warning, 'warning'),
      count('state-cordoned', s.cordoned, 'cordoned'),
      count('state-remediating', s.remediating, 'remediating'),
      count('state-unhealthy', s.unhealthy, 'unhealthy'),
      count('', s.healthyGPUs + '/' + s.gpus, 'GPUs healthy'));
  }

  function renderBreakers(policies) {
    const box = byId('breakers');
    if (!policies.length) {
      box.replaceChildren(el('p', 'empty', 'No RemediationPolicy: no node is remediated.'));
      return;
    }
    box.replaceChildren(...policies.map((p) => {
      const card = el('div', 'breaker');
      card.setAttribute('data-policy', p.name);
      card.setAttribute('data-breaker', p.breakerOpen ? 'open' : 'closed');
      const flags = [p.paused ? 'paused' : '', p.dryRun ? 'dry run' : ''].filter(Boolean).join(' · ');
      card.append(
        el('div', 'title', p.name),
        el('div', 'state', p.breakerOpen ? 'BREAKER OPEN: no new remediation' : 'breaker closed'),
        el('div', 'numbers', p.unhealthyNodes + ' of ' + p.matchedNodes + ' nodes unhealthy · ' + p.inFlight + ' in flight'));
      if (flags) card.append(el('div', 'flags', flags));
      if (p.breakerOpen && p.message) card.append(el('div', 'message', p.message));
      return card;
    }));
  }

  // ---- incidents ----
  function renderIncidents(inc) {
    const body = byId('incidents').tBodies[0];
    body.replaceChildren(...inc.items.map((i) => {
      const tr = el('tr');
      tr.setAttribute('data-incident', i.name);
      const phase = el('span', 'phase-badge', i.phase + (i.dryRun ? ' (dry run)' : ''));
      phase.setAttribute('data-phase', i.phase);
      const phaseCell = el('td');
      phaseCell.append(phase);
      if (i.finished) phaseCell.append(el('div', 'muted', fmtTime(i.finished)));
      tr.append(
        el('td', '', fmtTime(i.opened)),
        el('td', 'node', i.node),
        el('td', '', i.reason || i.condition),
        el('td', '', i.action || '—'),
        phaseCell,
        el('td', '', fmtDuration(i.timeToRecoverSeconds)));
      tr.title = i.name + (i.replacement ? '\nreplaced by ' + i.replacement : '');
      return tr;
    }));
    byId('incidents-empty').hidden = inc.items.length > 0;
    byId('incident-count').textContent = inc.total > inc.items.length
      ? '(latest ' + inc.items.length + ' of ' + inc.total + ')' : '(' + inc.total + ')';
    renderChart(inc.items);
  }

  // Time to recover of succeeded incidents, by when they recovered.
  function renderChart(items) {
    const chart = byId('ttr');
    const W = 480, H = 220, L = 52, R = 12, T = 12, B = 36;
    const pts = items.filter((i) => i.timeToRecoverSeconds !== undefined && i.finished)
      .map((i) => ({ t: Date.parse(i.finished), v: i.timeToRecoverSeconds, action: i.action, node: i.node }))
      .sort((a, b) => a.t - b.t);
    const parts = [svg('line', { class: 'axis', x1: L, y1: H - B, x2: W - R, y2: H - B }),
      svg('line', { class: 'axis', x1: L, y1: T, x2: L, y2: H - B })];
    if (!pts.length) {
      parts.push(svg('text', { class: 'label', x: (W + L) / 2, y: H / 2, 'text-anchor': 'middle' }, 'no recovered incident yet'));
      chart.replaceChildren(...parts);
      return;
    }
    const maxV = Math.max(...pts.map((p) => p.v));
    const unit = maxV < 120 ? [1, 's'] : maxV < 7200 ? [60, 'min'] : [3600, 'h'];
    const top = niceCeil(maxV / unit[0]) * unit[0];
    const t0 = pts[0].t, t1 = pts[pts.length - 1].t;
    const x = (t) => (t1 === t0 ? (L + W - R) / 2 : L + (t - t0) / (t1 - t0) * (W - R - L));
    const y = (v) => H - B - v / top * (H - B - T);
    for (const f of [0, 0.5, 1]) {
      const v = top * f;
      if (f > 0) parts.push(svg('line', { class: 'grid', x1: L, y1: y(v), x2: W - R, y2: y(v) }));
      parts.push(svg('text', { class: 'label', x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, +(v / unit[0]).toFixed(1) + ' ' + unit[1]));
    }
    const short = (t) => new Date(t).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
    parts.push(svg('text', { class: 'label', x: L, y: H - B + 16, 'text-anchor': 'start' }, short(t0)));
    if (t1 !== t0) parts.push(svg('text', { class: 'label', x: W - R, y: H - B + 16, 'text-anchor': 'end' }, short(t1)));
    parts.push(svg('text', { class: 'label', x: (W + L) / 2, y: H - 4, 'text-anchor': 'middle' }, 'recovered at'));
    if (pts.length > 1) {
      parts.push(svg('polyline', { class: 'line', points: pts.map((p) => x(p.t).toFixed(1) + ',' + y(p.v).toFixed(1)).join(' ') }));
    }
    for (const p of pts) {
      const c = svg('circle', { class: 'point' + (p.action === 'Replace' ? ' replace' : ''), cx: x(p.t), cy: y(p.v), r: 4 });
      c.append(svg('title', {}, p.node + ': ' + fmtDuration(p.v) + (p.action ? ' (' + p.action + ')' : '')));
      parts.push(c);
    }
    chart.replaceChildren(...parts);
  }

  function niceCeil(v) {
    if (v <= 0) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  // ---- live updates ----
  let lastStream = 0; // when the event stream last said anything

  function setLive(state) {
    const l = byId('live');
    l.setAttribute('data-live', state);
    l.textContent = state === 'down' ? 'reconnecting…' : state + ' · updated ' + new Date().toLocaleTimeString();
  }
  function showError(msg) {
    const e = byId('error');
    e.hidden = !msg;
    e.textContent = msg ? 'The controller cannot read the cluster: ' + msg : '';
  }
  function streamed() {
    lastStream = Date.now();
    setLive('live');
  }

  async function fetchJSON(path) {
    const r = await fetch(path, { cache: 'no-store' });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || r.status + ' ' + r.statusText);
    return body;
  }
  async function poll() {
    const before = lastStream;
    try {
      const [f, i] = await Promise.all([fetchJSON('api/fleet'), fetchJSON('api/incidents')]);
      // The stream delivered meanwhile: its data may be newer.
      if (lastStream !== before) return;
      renderFleet(f);
      renderIncidents(i);
      showError('');
      setLive('polling');
    } catch (err) {
      showError(err.message);
    }
  }

  function connect() {
    const es = new EventSource('api/events');
    es.addEventListener('open', streamed);
    es.addEventListener('fleet', (e) => { streamed(); showError(''); renderFleet(JSON.parse(e.data)); });
    es.addEventListener('incidents', (e) => { streamed(); renderIncidents(JSON.parse(e.data)); });
    es.addEventListener('ping', streamed);
    es.addEventListener('unavailable', (e) => { streamed(); showError(JSON.parse(e.data).error); });
    // A connection error (it has no data): the browser reconnects by itself.
    es.addEventListener('error', () => setLive('down'));
  }

  // A proxy that buffers the stream would leave the page frozen: while the
  // stream is silent for long, fetch the snapshots instead. Without
  // EventSource this polls all along.
  setInterval(() => { if (Date.now() - lastStream > STALE_MS) poll(); }, POLL_MS);

  // The first paint need not wait for the stream.
  poll();
  if ('EventSource' in window) connect();
})();
