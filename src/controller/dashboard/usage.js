// berth dashboard: the Usage page (issue 47). GPU-hours per team per day over a window (a stacked
// chart and a table of the same numbers), from GET api/usage?by=team&since=W: berth's queue API's
// usage answer, the one `kubectl berth usage` prints. Then the queue's length and the waits of the
// runs that started, per minute over the last 24 hours, from GET api/usage/queue: the leading
// controller's in-memory series (it starts empty after a restart or a failover).
// The charts are drawn by uPlot 1.6.32 (MIT; vendor/uPlot.iife.min.js, vendor/uPlot.min.css and
// vendor/uPlot.LICENSE.txt, from `npm pack uplot@1.6.32`), served by kubectl berth dashboard like
// the other files. Loaded before app.js, which calls window.berthUsagePage with its helpers.
'use strict';

(function () {
  const WINDOWS = ['1d', '7d', '30d', '90d'];
  const COLOURS = ['#2962c4', '#e39a2d', '#2e9e5b', '#c2416b', '#7d3fa3', '#16a0b5', '#8c6d1f', '#5b6573'];
  const DAY_S = 86400;

  // h: { $, el, table, setText, api, isCurrent, markUpdated, fmtDuration, fmtTime }
  window.berthUsagePage = function (h) {
    const { $, el, table, setText } = h;
    const charts = {};  // id -> the uPlot drawn in that element
    $('usage-since').addEventListener('change', (ev) => { location.hash = `#/usage?since=${encodeURIComponent(ev.target.value)}`; });
    const shown = {};   // id -> the answer's text it was drawn from (redrawn only when it changes)

    function hours(v) { return typeof v === 'number' && isFinite(v) ? v.toFixed(1) : '0.0'; }
    function share(v) { return typeof v === 'number' && isFinite(v) ? `${(100 * v).toFixed(1)}%` : '0.0%'; }
    function colour(i) { return COLOURS[i % COLOURS.length]; }
    function dayStart(day) { return Date.parse(`${day}T00:00:00Z`) / 1000; }

    // (Re)draws the chart of element `id`; `make(width)` gives uPlot's options and data.
    function draw(id, make) {
      if (charts[id]) charts[id].destroy();
      const box = $(id);
      const { opts, data } = make(Math.max(320, (box.clientWidth || 656) - 16));  // inside its padding
      charts[id] = new window.uPlot(opts, data, box);
    }

    function utcAxis() {
      return { tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC') };
    }

    // Stacked bars: each team's series is its GPU-hours plus those of the teams drawn below it, so
    // the biggest (drawn first) is the whole bar and each later one covers the bar's lower part.
    // The legend shows each team's own figure.
    function usageChart(data) {
      const days = Array.isArray(data.days) ? data.days : [];
      const rows = (Array.isArray(data.rows) ? data.rows : []).filter((r) => r && typeof r.name === 'string');
      const own = rows.map((r) => {
        const per = new Map((Array.isArray(r.days) ? r.days : []).map((d) => [d.day, Number(d.gpuHours) || 0]));
        return days.map((d) => per.get(d) || 0);
      });
      const stacked = own.map((_, i) => days.map((_, j) => own.slice(i).reduce((sum, s) => sum + s[j], 0)));
      const bars = window.uPlot.paths.bars({ size: [0.7, 60] });
      return (width) => ({
        opts: Object.assign(utcAxis(), {
          width, height: 300,
          scales: { x: { time: true, range: (u, min, max) => [min - DAY_S / 2, max + DAY_S / 2] } },
          axes: [{}, { label: 'GPU-hours', size: 60 }],
          series: [{ label: 'day (UTC)', value: (u, ts) => (ts === null ? '—' : new Date(ts * 1e3).toISOString().slice(0, 10)) }]
            .concat(rows.map((r, i) => ({
              label: r.name, stroke: colour(i), fill: colour(i), paths: bars, points: { show: false },
              value: (u, v, si, idx) => (idx === null || idx === undefined ? '—' : `${hours(own[i][idx])} GPU-h`),
            }))),
        }),
        data: [days.map(dayStart)].concat(stacked),
      });
    }

    // A duration in whole seconds as kubectl berth writes it (base::FormatDuration): "90s" is "1m30s".
    function cliDuration(seconds) {
      let rest = Math.max(0, Math.floor(seconds));
      if (rest === 0) return '0s';
      let out = '';
      for (const [unit, name] of [[86400, 'd'], [3600, 'h'], [60, 'm'], [1, 's']]) {
        if (rest >= unit) { out += `${Math.floor(rest / unit)}${name}`; rest %= unit; }
      }
      return out;
    }
    // The bucket of the median wait as the CLI's MEDIAN-WAIT writes it: "5m–10m", "<10s", "≥30d"; "-" without runs.
    function medianWait(m) {
      if (!m || typeof m.fromSeconds !== 'number') return '-';
      const under = typeof m.underSeconds === 'number' ? m.underSeconds : -1;
      if (m.fromSeconds <= 0 && under > 0) return `<${cliDuration(under)}`;
      if (under < 0) return `\u2265${cliDuration(m.fromSeconds)}`;
      return `${cliDuration(m.fromSeconds)}\u2013${cliDuration(under)}`;
    }

    // The CLI's columns (kubectl berth usage): WEIGHTED only when a row's differs, RUNS and
    // MEDIAN-WAIT when the answer knows them.
    function usageColumns(data) {
      const rows = Array.isArray(data.rows) ? data.rows : [];
      const num = (v) => (typeof v === 'number' && isFinite(v) ? v : 0);
      const weighted = rows.some((r) => Math.abs(num(r.weightedGpuHours) - num(r.gpuHours)) >= 0.05);
      const runs = rows.some((r) => r && 'runs' in r) || (data.total && 'runs' in data.total);
      const cols = [{ label: 'GPU-hours', cls: 'gpu-hours', cell: (r) => hours(r.gpuHours) }];
      if (weighted) cols.push({ label: 'Weighted', cls: 'weighted', cell: (r) => hours(r.weightedGpuHours) });
      cols.push({ label: 'Share', cls: 'share', cell: (r) => share(r.share) },
        { label: 'CPU-hours', cls: 'cpu-hours', cell: (r) => hours(r.cpuHours) },
        { label: 'Memory GiB-hours', cls: 'memory-hours', cell: (r) => hours(r.memoryGiBHours) });
      if (runs) {
        cols.push({ label: 'Runs', cls: 'runs', cell: (r) => String(Number(r.runs) || 0) },
          { label: 'Median wait', cls: 'median-wait', cell: (r) => medianWait(r.medianWait) });
      }
      return cols;
    }

    function usageRow(cols) {
      return (r, i) => el('tr', { dataset: { team: r.name, gpuHours: String(r.gpuHours) } },
        el('th', { scope: 'row', class: 'team-name' },
          el('span', { class: `swatch swatch-${i % COLOURS.length}`, 'aria-hidden': 'true' }), r.name),
        ...cols.map((c) => el('td', { class: `num ${c.cls}`, text: c.cell(r) })));
    }

    function renderUsage(data, since) {
      const rows = Array.isArray(data.rows) ? data.rows : [];
      const total = data.total || {};
      setText($('usage-summary'), `${data.from || '?'} to ${data.to || '?'} (UTC days, the last ${since}): ` +
        `${hours(total.gpuHours)} GPU-hours in all, ${rows.length} team${rows.length === 1 ? '' : 's'}.`);
      $('usage-empty').hidden = rows.length > 0;
      $('usage-chart').hidden = rows.length === 0;
      const cols = usageColumns(data);
      $('usage-table-box').replaceChildren(table(`Usage per team, the last ${since}`,
        ['Team'].concat(cols.map((c) => ({ label: c.label, cls: 'num' }))), rows.map(usageRow(cols)), 'usage'));
      if (rows.length > 0) draw('usage-chart', usageChart(data));
      $('usage-chart').dataset.series = String(rows.length);
    }

    // The queue's minutes as [times, pending, median wait, longest wait] (null where none).
    function queueSeries(data) {
      const minutes = Array.isArray(data.minutes) ? data.minutes : [];
      const at = minutes.map((m) => Date.parse(m.at) / 1000);
      const num = (v) => (typeof v === 'number' && isFinite(v) ? v : null);
      return {
        at,
        pending: minutes.map((m) => num(m.pending)),
        median: minutes.map((m) => (m.starts > 0 ? num(m.medianWaitSeconds) : null)),
        max: minutes.map((m) => (m.starts > 0 ? num(m.maxWaitSeconds) : null)),
        starts: minutes.map((m) => Number(m.starts) || 0),
      };
    }

    function minuteChart(s, y, series, data) {
      // One minute alone spans the five minutes before it and itself (uPlot would pad a lone value
      // by years: it calls range with that padding already in min and max).
      const lone = s.at.length === 1 ? s.at[0] : null;
      return (width) => ({
        opts: {
          width, height: 200,
          scales: { x: { time: true, range: (u, min, max) => (lone !== null ? [lone - 300, lone + 60] : [min, max]) } },
          axes: [{}, Object.assign({ size: 70 }, y)],
          series: [{ label: 'minute' }].concat(series),
        },
        data: [s.at].concat(data),
      });
    }

    function renderQueue(data) {
      const s = queueSeries(data);
      const since = data.recordingSince ? h.fmtTime(data.recordingSince) : 'nothing recorded yet';
      setText($('queue-history-since'), data.leader === false
        ? 'This controller replica is a standby: only the leader records the queue.'
        : `Recording since ${since}.`);
      const samples = s.pending.filter((v) => v !== null).length;
      const starts = s.starts.reduce((a, b) => a + b, 0);
      $('queue-history-empty').hidden = s.at.length > 0;
      for (const id of ['queue-length-chart', 'queue-wait-chart']) $(id).hidden = s.at.length === 0;
      if (s.at.length === 0) return;
      // A step joins two minutes: one minute alone (the first of a new leader) is a filled dot.
      const dot = samples === 1 ? { size: 9, fill: colour(0) } : { size: 4 };
      draw('queue-length-chart', minuteChart(s, { label: 'runs waiting' }, [{
        label: 'queue length', stroke: colour(0), fill: 'rgba(41, 98, 196, 0.15)', spanGaps: true,
        paths: window.uPlot.paths.stepped({ align: 1 }), points: Object.assign({ show: true }, dot),
      }], [s.pending]));
      const wait = { label: 'wait', values: (u, vals) => vals.map((v) => h.fmtDuration(v)) };
      const pointsOnly = () => null;  // a minute's waits are not joined to the next minute's
      draw('queue-wait-chart', minuteChart(s, wait, [
        { label: 'median wait', stroke: colour(2), paths: pointsOnly, points: { show: true, size: 6 }, value: (u, v) => h.fmtDuration(v) },
        { label: 'longest wait', stroke: colour(1), paths: pointsOnly, points: { show: true, size: 6 }, value: (u, v) => h.fmtDuration(v) },
      ], [s.median, s.max]));
      $('queue-length-chart').dataset.points = String(samples);
      $('queue-wait-chart').dataset.starts = String(starts);
    }

    // Draws `text` (an answer) into the page unless it is what is drawn already.
    function changed(key, data) {
      const text = JSON.stringify(data);
      if (shown[key] === text) return false;
      shown[key] = text;
      return true;
    }

    return async function loadUsage(route) {
      const asked = route.query.get('since');
      const since = WINDOWS.includes(asked) ? asked : '7d';
      $('usage-since').value = since;
      const [usage, queue] = await Promise.all([
        h.api(`api/usage?by=team&since=${encodeURIComponent(since)}`),
        h.api('api/usage/queue'),
      ]);
      if (!h.isCurrent(route)) return;
      // The answer's generatedAt changes at every read; the figures drawn do not.
      if (changed('usage', usage)) renderUsage(usage, since);
      if (changed('queue', Object.assign({}, queue, { generatedAt: null }))) renderQueue(queue);
      h.markUpdated('usage-updated');
    };
  };
})();
