// berth dashboard: the queue, the fleets, the teams (teams.js), the usage (usage.js) and a run's detail, served by
// `kubectl berth dashboard` on the user's own machine; durations and times are formatted by
// format.js. Plain JavaScript, no build step and no external resource; every URL is relative.
//
// Identity: the page holds and sends no credential (issue 44). kubectl berth dashboard makes
// every request with the user's own kubeconfig, so what the page shows and may change is what
// that user may. Writes carry `X-Berth-CSRF: 1` and a JSON body (cross-site protection).
'use strict';

(function () {
  const REFRESH_MS = 2000;
  const QUEUE_LIMIT = 500;  // rows shown; the summary says when the queue is longer
  const STATUS_TEXT = {
    400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed',
    409: 'Conflict', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error',
    502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
  };

  const $ = (id) => document.getElementById(id);

  // ---- small DOM helpers (text is always set with textContent: no HTML from data) ----------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k === 'text') node.textContent = printable(v);
      else if (k === 'dataset') Object.assign(node.dataset, v);
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : printable(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      node.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(printable(c)) : c);
    }
    return node;
  }

  function setText(node, text) {
    const t = printable(text);
    if (node.textContent !== t) node.textContent = t;
  }

  function table(caption, headers, rows, cls) {
    return el('div', { class: 'table-wrap' },
      el('table', { class: 'data ' + (cls || '') },
        el('caption', { class: 'sr-only', text: caption }),
        el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col', class: h.cls, text: h.label || h })))),
        el('tbody', {}, rows)));
  }

  // ---- formatting (format.js) ---------------------------------------------------------------

  const { fmtDuration, parseTime, fmtTime, fmtEta, printable } = window.berthFormat;

  function statusLabel(status) {
    if (!status) return 'no answer';
    return `${status} ${STATUS_TEXT[status] || ''}`.trim();
  }

  function runKey(ns, name) { return `${ns}/${name}`; }
  function runHref(ns, name) { return `#/runs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`; }
  function runApi(ns, name) { return `api/runs/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`; }

  // ---- API -----------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(path, options) {
    const opts = options || {};
    const headers = Object.assign({ Accept: 'application/json' }, opts.headers || {});
    let res;
    try {
      res = await fetch(path, { method: opts.method || 'GET', headers, body: opts.body, cache: 'no-store', credentials: 'same-origin' });
    } catch (e) {
      throw new ApiError(0, `cannot reach kubectl berth dashboard (${e.message})`);
    }
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
    if (!res.ok) {
      let message = '';
      if (data && typeof data.error === 'string') message = data.error;
      else if (data && typeof data.message === 'string') message = data.message;  // a Kubernetes Status
      else message = text.trim().slice(0, 500) || res.statusText || 'no message';
      throw new ApiError(res.status, message);
    }
    if (data === null) throw new ApiError(res.status, 'the answer is not JSON');
    return data;
  }

  // ---- banners -------------------------------------------------------------------------------

  function showNotice(kind, title, detail) {
    const box = $('notice');
    box.className = `banner banner-${kind}`;
    box.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    const p = $('notice-text');
    p.textContent = '';
    p.appendChild(el('strong', { text: title }));
    if (detail) p.appendChild(el('span', { class: 'detail', text: ' ' + detail }));
    box.hidden = false;
  }

  function hideNotice() { $('notice').hidden = true; }

  function showLoadError(what, err) {
    const box = $('load-error');
    setText(box, `Could not load ${what}: ${err.message} (${statusLabel(err.status)}). Showing the last data; retrying.`);
    box.hidden = false;
  }

  function hideLoadError() { $('load-error').hidden = true; }

  function markUpdated(id) { setText($(id), `Updated ${new Date().toLocaleTimeString()}`); }

  // ---- priority control (queue rows and the run page) ----------------------------------------

  function priorityForm(ns, name, value) {
    const key = runKey(ns, name);
    const input = el('input', {
      type: 'number', min: 0, max: 100, step: 1, inputmode: 'numeric', required: true,
      class: 'priority-input', 'aria-label': `Priority of ${key}`, dataset: { server: String(value) },
    });
    input.value = String(value);
    const button = el('button', { type: 'submit', class: 'priority-set', 'aria-label': `Set priority of ${key}`, text: 'Set' });
    const form = el('form', { class: 'priority-form', novalidate: true, dataset: { run: key } }, input, button);
    input.addEventListener('input', () => form.classList.toggle('dirty', input.value !== input.dataset.server));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      submitPriority(ns, name, input, button, form);
    });
    return form;
  }

  // Updates the control to the server's value unless the viewer is editing it.
  function syncPriorityForm(form, value) {
    const input = form.querySelector('input');
    const editing = input.value !== input.dataset.server;
    input.dataset.server = String(value);
    if (!editing) input.value = String(value);
    form.classList.toggle('dirty', input.value !== input.dataset.server);
  }

  async function submitPriority(ns, name, input, button, form) {
    const key = runKey(ns, name);
    const raw = input.value.trim();
    if (!/^\d+$/.test(raw) || Number(raw) > 100) {
      showNotice('error', `Priority of ${key} not changed:`, `the priority must be a whole number from 0 to 100 (got "${raw}").`);
      input.focus();
      return;
    }
    const value = Number(raw);
    button.disabled = true;
    form.setAttribute('aria-busy', 'true');
    try {
      const r = await api(`${runApi(ns, name)}/priority`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Berth-CSRF': '1' },
        body: JSON.stringify({ priority: value }),
      });
      const now = typeof r.priority === 'number' ? r.priority : value;
      input.dataset.server = String(now);
      input.value = String(now);
      form.classList.remove('dirty');
      if (typeof r.cap === 'number' && now > r.cap) {
        // Written, but the namespace caps it (berth.dev/max-priority): the queue uses the cap.
        showNotice('error', `Priority of ${key} set to ${now}, but capped at ${r.cap}:`, `${r.capNote}.`);
      } else {
        showNotice('ok', `Priority of ${key} set to ${now}.`, 'The queue re-orders in a moment.');
      }
      refreshNow();
    } catch (err) {
      // Show the real (unchanged) priority again, and the API server's own words.
      input.value = input.dataset.server;
      form.classList.remove('dirty');
      let hint = '';
      if (err.status === 403 && !/csrf|cross|max-priority/i.test(err.message)) hint = ' Your kubeconfig may not patch this run: ask for RBAC permission to patch runs.berth.dev in this namespace.';
      const said = /[.!?]$/.test(err.message) ? err.message : `${err.message}.`;
      showNotice('error', `Priority of ${key} not changed (${statusLabel(err.status)}):`, said + hint);
    } finally {
      button.disabled = false;
      form.removeAttribute('aria-busy');
    }
  }

  // ---- Queue ---------------------------------------------------------------------------------

  const queueRows = new Map();  // "ns/name" -> { tr, cells, form }

  function queueRow(item) {
    const key = runKey(item.namespace, item.name);
    let row = queueRows.get(key);
    if (row) return row;
    const cells = {
      position: el('td', { class: 'num position' }),
      run: el('th', { scope: 'row', class: 'run' }, el('a', { href: runHref(item.namespace, item.name), text: key })),
      kind: el('td', { class: 'kind' }),
      team: el('td', { class: 'team' }),
      priority: el('td', { class: 'num' }),
      effective: el('td', { class: 'num effective' }),
      wait: el('td', { class: 'num wait' }),
      eta: el('td', { class: 'num eta' }),
      nodes: el('td', { class: 'num nodes' }),
      fleets: el('td', { class: 'fleets' }),
      why: el('td', { class: 'why' }),
    };
    const form = priorityForm(item.namespace, item.name, item.priority);
    cells.priority.appendChild(form);
    const tr = el('tr', { dataset: { run: key } }, Object.values(cells));
    row = { tr, cells, form };
    queueRows.set(key, row);
    return row;
  }

  function renderQueue(data, ns) {
    const body = $('queue-body');
    const items = Array.isArray(data.items) ? data.items : [];
    const seen = new Set();
    const wanted = [];
    for (const item of items) {
      const row = queueRow(item);
      const key = runKey(item.namespace, item.name);
      seen.add(key);
      wanted.push(row.tr);
      row.tr.dataset.position = String(item.position);
      setText(row.cells.position, item.position);
      // Issue 45: a ticket shows the workload it stands for (Job/NAME).
      setText(row.cells.kind, item.workload ? `${item.kind || 'Run'}/${item.workload}` : (item.kind || 'Run'));
      setText(row.cells.team, item.team || '—');
      syncPriorityForm(row.form, item.priority);
      setText(row.cells.effective, item.effectivePriority);
      row.cells.effective.title = item.effectivePriority > item.priority
        ? `aged: +${item.effectivePriority - item.priority} for waiting` : '';
      setText(row.cells.wait, fmtDuration(item.waitSeconds));
      row.cells.wait.title = item.submittedAt ? `submitted ${item.submittedAt}` : '';
      setText(row.cells.eta, fmtEta(item.startsInSeconds, item.startsInRangeSeconds));
      row.cells.eta.title = item.estimatedStartAt ? `expected to start ${item.estimatedStartAt} if nothing new arrives` : 'no estimate: see why it waits';
      setText(row.cells.nodes, item.nodes);
      setText(row.cells.fleets, Array.isArray(item.fleets) && item.fleets.length ? item.fleets.join(', ') : 'any');
      const why = row.cells.why;
      const reason = item.reason || '';
      const message = item.message || '';
      if (why.dataset.reason !== reason || why.dataset.message !== message) {
        why.dataset.reason = reason;
        why.dataset.message = message;
        why.textContent = '';
        if (reason) why.appendChild(el('span', { class: 'reason', text: reason }));
        if (message) why.appendChild(el('span', { class: 'message', text: message }));
      }
    }
    for (const [key, row] of queueRows) {
      if (!seen.has(key)) {
        row.tr.remove();
        queueRows.delete(key);
      }
    }
    // Re-order only when needed, keeping the focus (and an edit in progress) where it was.
    const current = Array.from(body.children);
    if (current.length !== wanted.length || current.some((tr, i) => tr !== wanted[i])) {
      const active = document.activeElement;
      const selection = active && active.tagName === 'INPUT' ? [active.selectionStart, active.selectionEnd] : null;
      for (const tr of wanted) body.appendChild(tr);
      if (active && active !== document.activeElement && document.contains(active)) {
        active.focus({ preventScroll: true });
        if (selection && selection[0] !== null) {
          try { active.setSelectionRange(selection[0], selection[1]); } catch (e) { /* number inputs */ }
        }
      }
    }
    $('queue-empty').hidden = items.length > 0;
    $('queue-table').hidden = items.length === 0;
    // `total` counts the whole queue; positions are global, also when filtered by namespace.
    const total = typeof data.total === 'number' ? data.total : items.length;
    const runs = (n) => `${n} run${n === 1 ? '' : 's'}`;
    const capped = items.length >= QUEUE_LIMIT ? ` Showing the first ${items.length}.` : '';
    setText($('queue-summary'), ns
      ? `${capped ? `${items.length}+` : items.length} of ${runs(total)} in the queue belong to namespace ${ns}.${capped}`
      : `${runs(total)} waiting.${total > items.length ? ` Showing the first ${items.length}.` : ''}`);
    // A standby replica (leader election) does not compute the queue: say so instead of "no run".
    const standby = data.leader === false;
    $('queue-standby').hidden = !standby;
    if (standby) $('queue-empty').hidden = true;
    markUpdated('queue-updated');
  }

  async function loadQueue(route) {
    const ns = route.query.get('namespace') || '';
    const input = $('queue-namespace');
    if (document.activeElement !== input) input.value = ns;
    // From berth's aggregated queue API with the user's own kubeconfig (issue 44): the runs of the
    // namespaces the user may list.
    const data = await api(`api/queue?limit=${QUEUE_LIMIT}${ns ? `&namespace=${encodeURIComponent(ns)}` : ''}`);
    if (!isCurrent(route)) return;
    renderQueue(data, ns);
  }

  // ---- Fleets --------------------------------------------------------------------------------

  const STATE_CLASS = { Retired: 'retired', Expired: 'expired', NotReady: 'notready', Invalid: 'invalid' };

  function blockCells(inst) {
    const total = Math.max(0, inst.totalBlocks | 0);
    const busy = Math.min(total, Math.max(0, inst.busyBlocks | 0));
    const free = STATE_CLASS[inst.state] || 'idle';
    const label = total === 0
      ? `no usable block (${inst.state})`
      : `${busy} of ${total} block${total === 1 ? '' : 's'} busy` + (free !== 'idle' ? `, the others ${inst.state}` : '');
    const grid = el('div', { class: 'blocks', role: 'img', 'aria-label': label, title: label });
    if (total === 0) grid.appendChild(el('span', { class: `block ${free}` }));
    for (let i = 0; i < total; i++) {
      grid.appendChild(el('span', { class: `block ${i < busy ? 'busy' : free}`, dataset: { state: i < busy ? 'busy' : free } }));
    }
    return el('div', { class: 'blocks-cell' }, grid, el('span', { class: 'blocks-count', 'aria-hidden': 'true', text: `${busy}/${total}` }));
  }

  function expiryText(expiresAt) {
    const ms = parseTime(expiresAt);
    if (ms === null) return { text: 'never', title: 'no expiry' };
    const left = (ms - Date.now()) / 1000;
    return {
      text: left > 0 ? `${fmtDuration(left)} left` : `expired ${fmtDuration(-left)} ago`,
      title: `expires at ${expiresAt}`,
    };
  }

  // Issue 48: a fleet's domains (each path outermost first, indented by its level) with their idle
  // instances of all: an idle machine is what a gang of whole machines takes (as kubectl berth fleets).
  function domainTable(f) {
    const counts = new Map();
    for (const inst of f.instances || []) {
      const parts = inst.domain ? String(inst.domain).split('/') : [];
      for (let n = 1; n <= parts.length; n++) {
        const key = parts.slice(0, n).join('/');
        const c = counts.get(key) || { depth: n - 1, name: parts[n - 1], idle: 0, all: 0 };
        c.all++;
        if (inst.state === 'Idle') c.idle++;
        counts.set(key, c);
      }
    }
    const byPath = (a, b) => {
      const x = a.split('/'), y = b.split('/');
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
      return x.length - y.length;
    };
    const rows = [...counts.keys()].sort(byPath).map((key) => {
      const c = counts.get(key);
      return el('tr', { dataset: { domain: key } },
        el('th', { scope: 'row', class: `domain level-${Math.min(c.depth, 7)}`, text: c.name }),
        el('td', { class: 'num', text: `${c.idle} of ${c.all}` }));
    });
    return rows.length ? table(`Domains of fleet ${f.name}`, ['Domain', { label: 'Idle instances', cls: 'num' }], rows, 'domains') : null;
  }

  function renderFleet(f) {
    const id = `fleet-${f.name}`;
    const max = f.maxRunsPerInstance === null || f.maxRunsPerInstance === undefined ? null : f.maxRunsPerInstance;
    const facts = el('dl', { class: 'facts' },
      el('div', {}, el('dt', { text: 'Instances ready' }), el('dd', { text: `${f.readyInstances} of ${f.totalInstances}` })),
      el('div', {}, el('dt', { text: 'Blocks busy' }), el('dd', { text: `${f.busyBlocks} of ${f.totalBlocks}` })),
      el('div', {}, el('dt', { text: 'Blocks per instance' }), el('dd', { text: f.blocks })),
      el('div', {}, el('dt', { text: 'Placement' }), el('dd', { text: f.placement })),
      el('div', {}, el('dt', { text: 'Max runs per instance' }), el('dd', { text: max === null ? 'unlimited' : max })));
    const conds = (f.conditions || []).map((c) =>
      el('li', { class: `condition ${c.status === 'True' ? 'ok' : 'bad'}` },
        el('strong', { text: `${c.type}: ${c.status}` }),
        c.reason ? ` (${c.reason})` : '',
        c.message ? ` — ${c.message}` : ''));
    // A DRA fleet's instances (issue 49): their devices and which runs' claims hold them.
    const devices = (f.instances || []).some((inst) => inst.devices);
    // A fleet with topology levels (issue 48): each instance's domain, and the domains' idle machines.
    const levels = Array.isArray(f.topology) ? f.topology : [];
    if (levels.length) facts.append(el('div', {}, el('dt', { text: 'Topology' }), el('dd', { text: levels.join(' › ') })));
    const rows = (f.instances || []).map((inst) => {
      const exp = expiryText(inst.expiresAt);
      return el('tr', { dataset: { node: inst.node, state: inst.state } },
        el('th', { scope: 'row', class: 'node', text: inst.node }),
        levels.length ? el('td', { class: 'domain', text: inst.domain || '-' }) : null,
        el('td', {}, blockCells(inst)),
        el('td', { class: 'num', text: max === null ? String(inst.runsStarted) : `${inst.runsStarted} of ${max}` }),
        el('td', { class: 'expiry', title: exp.title, text: exp.text }),
        el('td', {}, el('span', { class: `state state-${String(inst.state).toLowerCase()}`, text: inst.state })),
        devices ? el('td', { class: 'devices', text: inst.devices || '' }) : null,
        el('td', { class: 'message', text: inst.message || '' }));
    });
    return el('section', { class: 'fleet', 'aria-labelledby': id, dataset: { fleet: f.name } },
      el('h2', { id, text: f.name }),
      facts,
      conds.length ? el('ul', { class: 'conditions', 'aria-label': `Conditions of ${f.name}` }, conds) : null,
      levels.length ? domainTable(f) : null,
      rows.length
        ? table(`Instances of fleet ${f.name}`, ['Instance', ...(levels.length ? ['Domain'] : []), 'Blocks', { label: 'Runs started', cls: 'num' }, 'Expires', 'State', ...(devices ? ['Devices'] : []), 'Message'], rows, 'instances')
        : el('p', { class: 'empty', text: 'No node matches this fleet.' }));
  }

  function renderFleets(data) {
    const items = Array.isArray(data.items) ? data.items : [];
    const list = $('fleets-list');
    const scroll = window.scrollY;
    list.replaceChildren(...items.map(renderFleet));
    window.scrollTo(0, scroll);
    $('fleets-empty').hidden = items.length > 0;
    markUpdated('fleets-updated');
  }

  async function loadFleets(route) {
    const data = await api('api/fleets');
    if (!isCurrent(route)) return;
    renderFleets(data);
  }

  const loadTeams = window.berthTeamsPage({ $, el, table, setText, api, isCurrent, markUpdated });
  const loadUsage = window.berthUsagePage({ $, el, table, setText, api, isCurrent, markUpdated, fmtDuration, fmtTime });

  // ---- Run detail ----------------------------------------------------------------------------

  let runView = null;  // { key, form, actions, body, logs }

  // ---- stop / suspend / resume ---------------------------------------------------------------

  const ACTIONS = [
    { action: 'stop', label: 'Stop', done: 'Stop', cls: 'danger' },
    { action: 'suspend', label: 'Suspend', done: 'Suspension' },
    { action: 'resume', label: 'Resume', done: 'Resume' },
  ];

  // The actions that apply to the run as it is (as `kubectl berth stop|suspend|resume` decide):
  // none once it has ended, is being deleted or is being stopped; Suspend or Resume by spec.suspend.
  function applicableActions(run) {
    const meta = run.metadata || {};
    const spec = run.spec || {};
    const phase = (run.status || {}).phase || '';
    if (meta.deletionTimestamp || phase === 'Succeeded' || phase === 'Failed' || spec.stop === true) return new Set();
    return new Set(spec.suspend === true ? ['stop', 'resume'] : ['stop', 'suspend']);
  }

  function actionsBar(ns, name) {
    const key = runKey(ns, name);
    const buttons = {};
    for (const a of ACTIONS) {
      buttons[a.action] = el('button', {
        type: 'button', class: `run-action ${a.cls || ''}`, 'aria-label': `${a.label} run ${key}`, text: a.label, hidden: true,
        dataset: { action: a.action },
        onclick: (ev) => submitControl(ns, name, a, ev.currentTarget),
      });
    }
    const note = el('span', { class: 'actions-note' });
    const bar = el('div', { class: 'run-actions', role: 'group', 'aria-label': `Actions on run ${key}` },
      ACTIONS.map((a) => buttons[a.action]), note);
    return { bar, buttons, note };
  }

  function syncActions(actions, run) {
    const can = applicableActions(run);
    for (const a of ACTIONS) actions.buttons[a.action].hidden = !can.has(a.action);
    const spec = run.spec || {};
    const phase = (run.status || {}).phase || '';
    let note = '';
    if (spec.stop === true && phase !== 'Succeeded' && phase !== 'Failed') note = 'Stop requested: berth-controller ends the run.';
    else if (can.size === 0 && (phase === 'Succeeded' || phase === 'Failed')) note = 'The run has ended: kubectl berth apply -f FILE runs it again.';
    setText(actions.note, note);
  }

  async function submitControl(ns, name, a, button) {
    const key = runKey(ns, name);
    if (a.action === 'stop' &&
        !window.confirm(`Stop run ${key}? It ends now (phase Failed, reason Stopped) and is not retried; its Pods are stopped.`)) {
      return;
    }
    button.disabled = true;
    try {
      await api(`${runApi(ns, name)}/${a.action}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Berth-CSRF': '1' },
        body: '{}',
      });
      showNotice('ok', `${a.done} of ${key} requested.`, 'berth-controller carries it out; this page shows the result in a moment.');
      refreshNow();
    } catch (err) {
      let hint = '';
      if (err.status === 403 && !/csrf|cross|max-priority/i.test(err.message)) hint = ' Your kubeconfig may not patch this run: ask for RBAC permission to patch runs.berth.dev in this namespace.';
      const said = /[.!?]$/.test(err.message) ? err.message : `${err.message}.`;
      showNotice('error', `Could not ${a.action} ${key} (${statusLabel(err.status)}):`, said + hint);
      refreshNow();
    } finally {
      button.disabled = false;
    }
  }

  // ---- logs ----------------------------------------------------------------------------------

  // Read on request only (not on every refresh): the tail of each rank's log, with the user's kubeconfig.
  function logsPanel(ns, name, nodes) {
    const key = runKey(ns, name);
    const rank = el('select', { id: 'logs-rank', class: 'logs-rank' },
      el('option', { value: '', text: 'every rank' }),
      Array.from({ length: Math.max(1, nodes | 0) }, (_, i) => el('option', { value: String(i), text: `rank ${i}` })));
    const tail = el('input', { id: 'logs-tail', type: 'number', min: 1, max: 2000, step: 1, class: 'logs-tail', inputmode: 'numeric' });
    tail.value = '200';
    const button = el('button', { type: 'submit', text: 'Show logs', 'aria-label': `Show logs of ${key}` });
    const out = el('div', { class: 'logs-out', 'aria-live': 'polite' });
    const form = el('form', { class: 'logs-form', novalidate: true },
      el('label', { for: 'logs-rank', text: 'Rank' }), rank,
      el('label', { for: 'logs-tail', text: 'Last lines' }), tail, button);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      loadLogs(ns, name, rank.value, tail.value.trim(), out, button);
    });
    return el('section', { class: 'run-logs', 'aria-labelledby': 'run-logs' },
      el('h2', { id: 'run-logs', text: 'Logs' }),
      el('p', { class: 'summary', text: 'The last lines of each rank\'s Pod (current attempt), read with your kubeconfig; needs list on pods and get on pods/log.' }),
      form, out);
  }

  async function loadLogs(ns, name, rank, tail, out, button) {
    if (!/^\d+$/.test(tail) || Number(tail) < 1 || Number(tail) > 2000) {
      out.replaceChildren(el('p', { class: 'error-text', role: 'alert', text: `Last lines must be a whole number from 1 to 2000 (got "${tail}").` }));
      return;
    }
    const q = new URLSearchParams({ tailLines: tail });
    if (rank !== '') q.set('rank', rank);
    button.disabled = true;
    out.setAttribute('aria-busy', 'true');
    try {
      const data = await api(`${runApi(ns, name)}/logs?${q}`);
      const parts = [];
      if (data.note) parts.push(el('p', { class: 'logs-note', text: data.note }));
      for (const r of Array.isArray(data.ranks) ? data.ranks : []) {
        const head = el('h3', { text: `Rank ${r.rank}`, title: `pod ${r.pod}, container ${r.container}` },
          el('span', { class: 'logs-pod', text: ` · pod ${r.pod}` }));
        let body;
        if (r.error) body = el('p', { class: 'error-text', text: `Cannot read rank ${r.rank}'s log${r.status ? ` (${statusLabel(r.status)})` : ''}: ${r.error}` });
        else if (!r.lines || r.lines.length === 0) body = el('p', { class: 'empty', text: 'Nothing written yet.' });
        else body = el('pre', { class: 'log', tabindex: 0, 'aria-label': `Log of rank ${r.rank}`, text: r.lines.join('\n') });
        parts.push(el('section', { class: 'log-rank', dataset: { rank: String(r.rank) } }, head, body,
          r.truncated ? el('p', { class: 'summary', text: 'Cut at 256 KiB: ask for fewer lines, or use kubectl berth logs.' }) : null));
      }
      parts.push(el('p', { class: 'updated logs-updated', text: `Read ${new Date().toLocaleTimeString()}` }));
      out.replaceChildren(...parts);
    } catch (err) {
      out.replaceChildren(el('p', { class: 'error-text', role: 'alert' },
        el('strong', { text: `Cannot show the logs of ${runKey(ns, name)} (${statusLabel(err.status)}):` }), ' ' + err.message));
    } finally {
      button.disabled = false;
      out.removeAttribute('aria-busy');
    }
  }

  function fact(label, value, cls) {
    return el('div', { class: cls }, el('dt', { text: label }), el('dd', {}, value === undefined || value === null || value === '' ? '—' : value));
  }

  function renderRun(route, data) {
    const run = data.run || {};
    const meta = run.metadata || {};
    const spec = run.spec || {};
    const st = run.status || {};
    const key = runKey(route.ns, route.name);
    if (!runView || runView.key !== key) {
      const form = priorityForm(route.ns, route.name, spec.priority === undefined ? 50 : spec.priority);
      const body = el('div', { class: 'run-body' });
      const actions = actionsBar(route.ns, route.name);
      const logs = logsPanel(route.ns, route.name, spec.nodes === undefined ? 1 : spec.nodes);
      runView = { key, form, actions, body, logs };
      $('run-content').replaceChildren(
        el('div', { class: 'run-controls' },
          el('div', { class: 'run-priority' }, el('span', { class: 'label', text: 'Priority' }), form),
          actions.bar),
        body,
        logs);
    }
    syncPriorityForm(runView.form, spec.priority === undefined ? 50 : spec.priority);
    syncActions(runView.actions, run);

    const phase = st.phase || 'Pending';
    const gen = meta.generation;
    const observed = st.observedGeneration;
    const facts = el('dl', { class: 'facts run-facts' },
      fact('Phase', el('span', { class: `phase phase-${phase.toLowerCase()}`, text: phase })),
      fact('Reason', st.reason),
      fact('Message', st.message, 'wide'),
      fact('Effective priority', st.effectivePriority),
      fact('Queue position', st.queuePosition),
      fact('Estimated start', st.estimatedStartAt ? `${fmtTime(st.estimatedStartAt)}, if nothing new arrives` : (phase === 'Pending' && st.reason ? 'unknown (the message says why)' : '')),
      ...(st.preemption ? [fact('Preempting', preemptionText(st.preemption), 'wide')] : []),
      fact('Nodes', spec.nodes === undefined ? 1 : spec.nodes),
      fact('Fleets allowed', Array.isArray(spec.fleets) && spec.fleets.length ? spec.fleets.join(', ') : 'any'),
      fact('Fleet', st.fleet),
      ...(data.domain ? [fact('Domain', data.domain, 'domain')] : []),
      fact('Max duration', spec.maxDuration || 'off'),
      fact('Retry', retryText(spec.retry)),
      fact('Resubmissions', st.resubmissions === undefined ? 0 : st.resubmissions),
      fact('Submitted', st.submittedAt || meta.creationTimestamp ? fmtTime(st.submittedAt || meta.creationTimestamp) : ''),
      fact('Scheduled', st.scheduledAt ? fmtTime(st.scheduledAt) : ''),
      fact('Started', st.startedAt ? fmtTime(st.startedAt) : ''),
      fact('Finished', st.finishedAt ? fmtTime(st.finishedAt) : ''),
      fact('Generation', gen === undefined ? '' : (observed === undefined || observed === gen ? String(gen) : `${gen} (status reflects ${observed})`)));

    const conditions = (st.conditions || []).map((c) => el('tr', {},
      el('th', { scope: 'row', text: c.type }),
      el('td', { text: c.status }),
      el('td', { text: c.reason || '' }),
      el('td', { text: c.message || '' }),
      el('td', { text: c.lastTransitionTime ? fmtTime(c.lastTransitionTime) : '' })));
    const placement = (st.placement || []).map((p) => el('tr', {},
      el('td', { class: 'num', text: p.rank }),
      el('th', { scope: 'row', text: p.node || '' }),
      el('td', { class: 'num', text: p.blocks }),
      el('td', { text: p.pod || '' })));
    const evTime = (e) => e.lastTimestamp || e.eventTime || e.firstTimestamp || (e.metadata || {}).creationTimestamp || '';
    const rv = (e) => Number((e.metadata || {}).resourceVersion) || 0;
    const events = (Array.isArray(data.events) ? data.events.slice() : [])
      .sort((a, b) => ((parseTime(evTime(a)) || 0) - (parseTime(evTime(b)) || 0)) || (rv(a) - rv(b)))
      .map((e) => el('tr', { class: e.type === 'Warning' ? 'warning' : '' },
        el('td', { text: e.type || '' }),
        el('th', { scope: 'row', text: e.reason || '' }),
        el('td', { text: e.message || '' }),
        el('td', { class: 'num', text: e.count || 1 }),
        el('td', { text: evTime(e) ? fmtTime(evTime(e)) : '' }),
        el('td', { text: (e.source && e.source.component) || e.reportingComponent || '' })));

    runView.body.replaceChildren(
      facts,
      el('h2', { id: 'run-conditions', text: 'Conditions' }),
      conditions.length
        ? table('Conditions', ['Type', 'Status', 'Reason', 'Message', 'Last transition'], conditions, 'conditions')
        : el('p', { class: 'empty', text: 'No condition yet.' }),
      el('h2', { id: 'run-placement', text: 'Placement' }),
      placement.length
        ? table('Placement, in rank order', [{ label: 'Rank', cls: 'num' }, 'Node', { label: 'Blocks', cls: 'num' }, 'Pod'], placement, 'placement')
        : el('p', { class: 'empty', text: 'Not placed yet.' }),
      el('h2', { id: 'run-events', text: 'Events' }),
      events.length
        ? table('Events, oldest first', ['Type', 'Reason', 'Message', { label: 'Count', cls: 'num' }, 'Last seen', 'From'], events, 'events')
        : el('p', { class: 'empty', text: 'No event.' }));
    markUpdated('run-updated');
  }

  // A preempting run's record (issue 17), as kubectl berth describe says it: the victims of its
  // namespace by name, the others counted (issue 44: the record names no run of another
  // namespace), the nodes kept for it.
  function preemptionText(p) {
    const who = Array.isArray(p.victims) ? p.victims.slice() : [];
    const others = Number(p.otherVictims) || 0;
    if (others > 0) who.push(others === 1 ? '1 run of another namespace' : `${others} runs of other namespaces`);
    const nodes = Array.isArray(p.nodes) && p.nodes.length ? p.nodes.join(', ') : 'no node';
    return `${p.reclaim ? 'reclaiming its team\'s share from ' : ''}${who.length ? who.join(', ') : 'runs already stopped'}` +
      `; kept for it: ${nodes} (fleet ${p.fleet || '?'})`;
  }

  function retryText(retry) {
    if (!retry) return 'none';
    const on = (retry.onEvents || ['no-capacity', 'interruption', 'error']).join(', ');
    const d = retry.duration || '1h';
    return d === 'off' ? `on ${on}, without a time limit` : `on ${on}, for ${d}`;
  }

  async function loadRun(route) {
    setText($('run-title'), `Run ${runKey(route.ns, route.name)}`);
    try {
      const data = await api(runApi(route.ns, route.name));
      if (!isCurrent(route)) return;
      renderRun(route, data);
    } catch (err) {
      if (!isCurrent(route)) return;
      runView = null;
      $('run-content').replaceChildren(el('p', { class: 'error-text', role: 'alert' },
        el('strong', { text: `Cannot show run ${runKey(route.ns, route.name)} (${statusLabel(err.status)}):` }),
        ' ' + err.message));
      throw err;
    }
  }

  // ---- router and refresh loop ---------------------------------------------------------------

  let route = null;
  let timer = null;
  let routeSeq = 0;

  function parseRoute() {
    const hash = location.hash.replace(/^#\/?/, '');
    const q = hash.indexOf('?');
    const path = q >= 0 ? hash.slice(0, q) : hash;
    const query = new URLSearchParams(q >= 0 ? hash.slice(q + 1) : '');
    let parts;
    try { parts = path.split('/').filter(Boolean).map(decodeURIComponent); } catch (e) { parts = ['?']; }
    if (parts.length === 0 || (parts[0] === 'queue' && parts.length === 1)) return { view: 'queue', query, title: 'Queue', load: loadQueue, what: 'the queue' };
    if (parts[0] === 'fleets' && parts.length === 1) return { view: 'fleets', query, title: 'Fleets', load: loadFleets, what: 'the fleets' };
    if (parts[0] === 'teams' && parts.length === 1) return { view: 'teams', query, title: 'Teams', load: loadTeams, what: 'the teams' };
    if (parts[0] === 'usage' && parts.length === 1) return { view: 'usage', query, title: 'Usage', load: loadUsage, what: 'the usage' };
    if (parts[0] === 'runs' && parts.length === 3) {
      return { view: 'run', query, ns: parts[1], name: parts[2], title: `Run ${parts[1]}/${parts[2]}`, load: loadRun, what: 'the run' };
    }
    return { view: 'missing', query, title: 'Not found' };
  }

  function isCurrent(r) { return route === r; }

  function showRoute() {
    clearTimeout(timer);
    const r = parseRoute();
    r.seq = ++routeSeq;
    route = r;
    for (const v of document.querySelectorAll('.view')) v.hidden = v.id !== `view-${r.view}`;
    for (const a of document.querySelectorAll('[data-nav]')) {
      if (a.dataset.nav === r.view) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
    }
    document.title = `${r.title} · berth`;
    hideLoadError();
    if (r.view !== 'run') runView = null;
    tick(r);
  }

  async function tick(r) {
    if (!r.load || !isCurrent(r)) return;
    try {
      await r.load(r);
      if (isCurrent(r)) hideLoadError();
    } catch (err) {
      if (isCurrent(r)) showLoadError(r.what, err);
    }
    if (isCurrent(r)) {
      clearTimeout(timer);
      timer = setTimeout(() => { if (!document.hidden) tick(r); else waiting = r; }, REFRESH_MS);
    }
  }

  let waiting = null;  // a refresh skipped while the tab was hidden

  function refreshNow() {
    if (!route) return;
    clearTimeout(timer);
    tick(route);
  }

  // ---- wiring --------------------------------------------------------------------------------

  function init() {
    $('notice-close').addEventListener('click', hideNotice);
    $('queue-filter').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const ns = $('queue-namespace').value.trim();
      location.hash = ns ? `#/queue?namespace=${encodeURIComponent(ns)}` : '#/queue';
    });
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && waiting && isCurrent(waiting)) {
        waiting = null;
        refreshNow();
      }
    });
    window.addEventListener('hashchange', () => { hideNotice(); showRoute(); });
    showRoute();
  }

  init();
})();
