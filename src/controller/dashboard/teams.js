// berth dashboard: the Teams page (issue 31), from GET api/teams (berth's queue API: it names no
// run and no namespace). Loaded before app.js, which calls window.berthTeamsPage with its DOM and API helpers
// and gets back the page's loader. Per team and fleet: the nominal share, what the team uses,
// borrows (beyond nominal) and lends (of its idle nominal share), with its limits; per team its
// parent, weight and decayed past usage (the fair-share order among borrowers).
'use strict';

(function () {
  // h: { $, el, table, setText, api, isCurrent, markUpdated }
  window.berthTeamsPage = function (h) {
    const { $, el, table } = h;

    // {"gpu": 8, "cpu": "64", "memory": "256Gi"} as "8 GPUs, 64 CPUs, 256Gi"; "—" when empty.
    function amounts(a) {
      if (!a || typeof a !== 'object') return '—';
      const parts = [];
      if (a.gpu !== undefined) parts.push(`${a.gpu} GPU${Number(a.gpu) === 1 ? '' : 's'}`);
      if (a.cpu !== undefined) parts.push(`${a.cpu} CPU${String(a.cpu) === '1' ? '' : 's'}`);
      if (a.memory !== undefined) parts.push(String(a.memory));
      return parts.length ? parts.join(', ') : '—';
    }

    function hours(v) { return typeof v === 'number' && isFinite(v) ? v.toFixed(1) : '0.0'; }

    function usageText(u) {
      const usage = u || {};
      return `${hours(usage.gpuHours)} GPU-h, ${hours(usage.cpuHours)} CPU-h`;
    }

    function fleetRow(t, f) {
      const limits = [];
      if (f.borrowingLimit) limits.push(`may borrow ${amounts(f.borrowingLimit)}`);
      if (f.lendingLimit) limits.push(`lends at most ${amounts(f.lendingLimit)}`);
      return el('tr', { dataset: { team: t.name, fleet: f.fleet } },
        el('th', { scope: 'row', class: 'fleet-name', text: f.fleet }),
        el('td', { class: 'nominal', text: amounts(f.nominal) }),
        el('td', { class: 'used', text: amounts(f.used) }),
        el('td', { class: 'borrowed', text: amounts(f.borrowed) }),
        el('td', { class: 'lent', text: amounts(f.lent) }),
        el('td', { class: 'limits', text: limits.length ? limits.join('; ') : 'no limit' }));
    }

    function renderTeam(t) {
      const id = `team-${t.name}`;
      const facts = el('dl', { class: 'facts' },
        el('div', {}, el('dt', { text: 'Parent' }), el('dd', { class: 'parent', text: t.parent || '—' })),
        el('div', {}, el('dt', { text: 'Weight' }), el('dd', { class: 'weight', text: t.weight })),
        el('div', {}, el('dt', { text: 'Past usage (decayed)' }), el('dd', { class: 'usage', text: usageText(t.usage) })));
      const conds = (t.conditions || []).filter((c) => c.status !== 'True').map((c) =>
        el('li', { class: 'condition bad' }, el('strong', { text: `${c.type}: ${c.status}` }),
          c.reason ? ` (${c.reason})` : '', c.message ? ` — ${c.message}` : ''));
      const rows = (t.fleets || []).map((f) => fleetRow(t, f));
      return el('section', { class: 'team', 'aria-labelledby': id, dataset: { team: t.name } },
        el('h2', { id, text: t.name }),
        facts,
        conds.length ? el('ul', { class: 'conditions', 'aria-label': `Conditions of ${t.name}` }, conds) : null,
        rows.length
          ? table(`Shares of team ${t.name} per fleet`, ['Fleet', 'Nominal', 'Used', 'Borrowed', 'Lent', 'Limits'], rows, 'shares')
          : el('p', { class: 'empty', text: 'No share and no use on any fleet yet.' }));
    }

    function render(data) {
      const items = Array.isArray(data.items) ? data.items : [];
      const scroll = window.scrollY;
      $('teams-list').replaceChildren(...items.map(renderTeam));
      window.scrollTo(0, scroll);
      $('teams-empty').hidden = items.length > 0;
      h.markUpdated('teams-updated');
    }

    return async function loadTeams(route) {
      const data = await h.api('api/teams');
      if (!h.isCurrent(route)) return;
      render(data);
    };
  };
})();
