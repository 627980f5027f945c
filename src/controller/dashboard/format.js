// berth dashboard: how durations and times are written (loaded before app.js and teams.js, which
// take these from window.berthFormat). Times are shown in the viewer's local time zone.
'use strict';

(function () {
  // 45 -> "45s", 605 -> "10m 05s", 7500 -> "2h 05m", 90000 -> "1d 1h"; "—" for no number.
  function fmtDuration(seconds) {
    if (seconds === undefined || seconds === null || !isFinite(seconds)) return '—';
    let s = Math.max(0, Math.floor(seconds));
    const d = Math.floor(s / 86400); s -= d * 86400;
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d > 0) return `${d}d ${h}h`;
    if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
    if (m > 0) return `${m}m ${String(s).padStart(2, '0')}s`;
    return `${s}s`;
  }

  // An RFC 3339 time as milliseconds since the epoch; null when absent or not a time.
  function parseTime(t) {
    if (!t) return null;
    const ms = Date.parse(t);
    return isNaN(ms) ? null : ms;
  }

  function fmtAgo(ms) {
    const diff = (Date.now() - ms) / 1000;
    return diff >= 0 ? `${fmtDuration(diff)} ago` : `in ${fmtDuration(-diff)}`;
  }

  // "2026-11-24 10:00:00 (12m 00s ago)" / "(in 40m 00s)"; "—" when not a time.
  function fmtTime(t) {
    const ms = parseTime(t);
    if (ms === null) return '—';
    const d = new Date(ms);
    const pad = (n) => String(n).padStart(2, '0');
    const date = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
    const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    return `${date} ${time} (${fmtAgo(ms)})`;
  }

  // A queue item's startsInSeconds as the ETA column shows it (issue 33): "~40m 00s", "now", or
  // "unknown" when the controller has no estimate (the item's message says why); with its
  // startsInRangeSeconds (issue 47, [earliest, latest]) "~40m 00s (20m 00s–1h 30m)".
  function fmtEta(startsInSeconds, range) {
    if (typeof startsInSeconds !== 'number' || !isFinite(startsInSeconds)) return 'unknown';
    if (startsInSeconds <= 0) return 'now';
    const eta = `~${fmtDuration(startsInSeconds)}`;
    if (!Array.isArray(range) || range.length !== 2 || !range.every((v) => typeof v === 'number' && isFinite(v))) return eta;
    const end = (v) => (v > 0 ? fmtDuration(v) : 'now');
    return `${eta} (${end(range[0])}\u2013${end(range[1])})`;
  }

  // Text from the API (names, messages, Events: other tenants write them, issue 44) as the page
  // shows it: the control characters kubectl berth strips (C0 but tab and line feed, DEL, C1)
  // are removed, so a message shows only what it says. The page sets text with textContent only.
  const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
  function printable(text) {
    return text === undefined || text === null ? '' : String(text).replace(CONTROL, '');
  }

  window.berthFormat = Object.freeze({ fmtDuration, parseTime, fmtTime, fmtEta, printable });
})();
