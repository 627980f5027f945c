// Drives the berth dashboard in Debian's headless Chromium with playwright-core.
// Called by tests/integration/dashboard_test.cc after it set up a namespace with a fleet of one
// slot held by a `blocker` run (maxDuration 2h) and three queued runs a, b, c of priority 50 (in that order),
// and RBAC: user `editor` may get/list/patch runs (and read events, pods and logs) there and list
// fleets and teams; the `reader` (a ServiceAccount) may read the same runs but patch nothing;
// `viewer` may do nothing. Each of them runs `kubectl berth dashboard` with a kubeconfig of their
// own (issue 44: what users run; the page sends no credential, the dashboard's requests carry the
// user's), at the URL given for them.
//
//   node tests/dashboard/drive.mjs --modules DIR --editor-url URL --viewer-url URL --reader-url URL
//        --namespace NS --fleet FLEET --node NODE [--artifacts DIR] [--docs-images DIR]
//
// DIR is the folder whose node_modules has playwright-core (tests/dashboard/setup.sh prints it).
// Exits 0 when every check passed; prints one line per check. Screenshots go to --artifacts
// (default $BERTH_TEST_ARTIFACTS, else build/test-artifacts/dashboard) and, with --docs-images,
// are also copied there for docs/dashboard.md.
import { mkdirSync, copyFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inChromium } from './chromium.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const eq = a.indexOf('=');
    if (eq > 0) out[a.slice(2, eq)] = a.slice(eq + 1);
    else out[a.slice(2)] = argv[++i];
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
for (const k of ['modules', 'editor-url', 'viewer-url', 'reader-url', 'namespace', 'fleet', 'node']) {
  if (!args[k]) {
    console.error(`drive.mjs: --${k} is required`);
    process.exit(2);
  }
}

const NS = args.namespace;
const FLEET = args.fleet;
const NODE = args.node;
const slash = (u) => (u.endsWith('/') ? u : `${u}/`);
// Each user's dashboard; BASE is the editor's, where most of the checks are made.
const EDITOR = slash(args['editor-url']);
const VIEWER = slash(args['viewer-url']);
const READER = slash(args['reader-url']);
const BASE = EDITOR;
const ARTIFACTS = path.resolve(args.artifacts || process.env.BERTH_TEST_ARTIFACTS || path.join(ROOT, 'build/test-artifacts/dashboard'));
const DOCS_IMAGES = args['docs-images'] ? path.resolve(args['docs-images']) : '';
mkdirSync(ARTIFACTS, { recursive: true });
if (DOCS_IMAGES) mkdirSync(DOCS_IMAGES, { recursive: true });

const run = (name) => `${NS}/${name}`;
let checks = 0;
function check(cond, what, detail) {
  checks++;
  if (!cond) throw new Error(`FAILED: ${what}${detail === undefined ? '' : `\n  got: ${typeof detail === 'string' ? detail : JSON.stringify(detail)}`}`);
  console.log(`ok ${checks} - ${what}`);
}

async function until(what, fn, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last && last.ok) return last;
    if (Date.now() > deadline) throw new Error(`FAILED: timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const shots = [];
async function screenshot(page, name) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  shots.push(file);
  console.log(`screenshot ${file}`);
}

// The queue as the page shows it: [{run, position, priority, effective, kind, team, eta, why}].
async function queueRows(page) {
  return page.$$eval('#queue-body tr', (trs) => trs.map((tr) => ({
    run: tr.dataset.run,
    position: Number(tr.querySelector('.position').textContent),
    priority: tr.querySelector('.priority-input').value,
    effective: tr.querySelector('.effective').textContent,
    kind: tr.querySelector('.kind').textContent,
    team: tr.querySelector('.team').textContent,
    eta: tr.querySelector('.eta').textContent,
    why: tr.querySelector('.why').textContent,
  })));
}

// The run page's facts as text, and which action buttons it shows.
async function runFacts(page) { return page.locator('.run-facts').innerText(); }
async function visibleActions(page) {
  return page.locator('.run-actions button.run-action').evaluateAll((bs) => bs.filter((b) => !b.hidden).map((b) => b.textContent));
}
async function openRun(page, name) {
  await page.goto(`${BASE}#/runs/${NS}/${name}`);
  await page.getByRole('heading', { name: `Run ${run(name)}` }).waitFor();
  await page.locator('.run-facts').waitFor();
}
// Waits until the run page shows `phase` and `reason` (the page refreshes itself every 2 s).
async function untilRunShows(page, phase, reason) {
  return until(`the run page to show ${phase} ${reason}`, async () => {
    const facts = await runFacts(page).catch(() => '');
    return { ok: facts.includes(phase) && (reason === '' || facts.includes(reason)), facts };
  });
}

// The same view in `user`'s dashboard (EDITOR, VIEWER or READER): what that user sees.
async function as(page, user) {
  const hash = new URL(page.url()).hash;
  await page.goto(`${user}${hash}`);
}
// No credential on a request the page makes: the dashboard adds its user's.
const noCredential = (h) => !h.authorization && !h['x-berth-token'];

process.exit(await inChromium(args.modules, /status of 40[13]/, async (page, problems) => {
  const external = [];
  page.on('request', (r) => {
    if (![EDITOR, VIEWER, READER].some((b) => r.url().startsWith(b)) && !r.url().startsWith('data:')) external.push(r.url());
  });

  // 1. The queue in the right order, read through berth's queue API with the editor's kubeconfig.
  await page.goto(`${BASE}#/queue?namespace=${encodeURIComponent(NS)}`);
  check(await page.title() === 'Queue · berth', 'the queue page opens', await page.title());
  const loadError = page.locator('#load-error');
  // The page sends no credential with any call (the dashboard holds the user's kubeconfig).
  const queueReads = [], fleetReads = [], teamReads = [];
  page.on('request', (r) => {
    if (/api\/queue/.test(r.url())) queueReads.push(r.headers());
    if (/api\/fleets/.test(r.url())) fleetReads.push(r.headers());
    if (/api\/teams/.test(r.url())) teamReads.push(r.headers());
  });
  const first = await until('three queued runs', async () => {
    const rows = await queueRows(page);
    return { ok: rows.length === 3, rows };
  });
  check(JSON.stringify(first.rows.map((r) => r.run)) === JSON.stringify([run('a'), run('b'), run('c')]),
    'the queue shows a, b, c in submission order', first.rows);
  check(first.rows.every((r, i) => r.position === i + 1 && r.priority === '50' && r.effective === '50'),
    'positions are 1, 2, 3 and every priority is 50', first.rows);
  check(first.rows.every((r) => r.why.includes('NoCapacity')), 'each row says why it waits', first.rows.map((r) => r.why));
  check(first.rows.every((r) => r.team === '—'), 'no Team holds the namespace: each row\'s team is —', first.rows.map((r) => r.team));
  check(first.rows.every((r) => r.kind === 'Run'), 'each row\'s kind is Run (issue 45: a Job\'s ticket shows Job/NAME)', first.rows.map((r) => r.kind));
  check(first.rows.every((r) => /^(~\d.*|now|unknown)$/.test(r.eta)), 'each row shows an ETA ("~40m 00s", "now" or "unknown")', first.rows.map((r) => r.eta));
  const eta = await until('a\'s ETA: the blocker\'s maxDuration end', async () => {
    const rows = await queueRows(page);
    return { ok: rows.length > 0 && /^~(1h 5\dm|2h 00m)$/.test(rows[0].eta), rows: rows.map((r) => r.eta) };
  }, 60000);
  check(eta.ok, 'a (first behind the blocker) is expected to start in about 2h', eta.rows);
  for (const h of ['Position', 'Run', 'Kind', 'Team', 'Priority', 'Effective', 'Waiting', 'ETA', 'Nodes', 'Fleets', 'Why it waits']) {
    check(await page.getByRole('columnheader', { name: h, exact: true }).count() === 1, `the queue table has a "${h}" column header`);
  }

  // 2. The editor raises c to 90: the queue re-orders without a reload.
  await page.evaluate(() => { window.__berthSameDocument = true; });
  check(await page.evaluate(() => sessionStorage.length + localStorage.length) === 0, 'nothing is written to the browser\'s storage');
  const seen = [];
  page.on('request', (r) => { if (r.url().includes('/priority')) seen.push({ method: r.method(), headers: r.headers(), body: r.postData() }); });
  await page.getByLabel(`Priority of ${run('c')}`, { exact: true }).fill('90');
  const clicked = Date.now();
  await page.getByRole('button', { name: `Set priority of ${run('c')}` }).click();
  await page.locator('#notice', { hasText: `Priority of ${run('c')} set to 90` }).waitFor({ timeout: 10000 });
  check(seen.length === 1 && seen[0].method === 'POST' && noCredential(seen[0].headers) &&
        seen[0].headers['x-berth-csrf'] === '1' && seen[0].headers['content-type'] === 'application/json' &&
        JSON.parse(seen[0].body).priority === 90,
    'the change is a POST with X-Berth-CSRF and a JSON body, and no credential', seen);
  const reordered = await until('the queue to re-order to c, a, b', async () => {
    const rows = await queueRows(page);
    return { ok: rows.map((r) => r.run).join() === [run('c'), run('a'), run('b')].join(), rows };
  });
  console.log(`re-ordered in the page ${Date.now() - clicked} ms after the click`);
  check(reordered.rows.every((r, i) => r.position === i + 1), 'positions are 1, 2, 3 after the change', reordered.rows);
  check(reordered.rows[0].priority === '90', 'c shows priority 90', reordered.rows[0]);
  await until('c\'s effective priority 90', async () => {
    const rows = await queueRows(page);
    return { ok: rows[0] && rows[0].effective === '90', rows };
  });
  check(await page.evaluate(() => window.__berthSameDocument === true), 'the page was not reloaded');
  await screenshot(page, 'queue');

  // 3. The reader may list the runs but not patch them: a clear error with the API server's
  // message; a stays at 50.
  await as(page, READER);
  await until('the reader\'s queue', async () => {
    const rows = await queueRows(page);
    return { ok: rows.length === 3, rows };
  });
  await page.getByLabel(`Priority of ${run('a')}`, { exact: true }).fill('70');
  await page.getByRole('button', { name: `Set priority of ${run('a')}` }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor({ timeout: 10000 });
  const text = await alert.innerText();
  check(/forbidden/i.test(text) && text.includes('cannot patch resource "runs"') && text.includes(`"system:serviceaccount:${NS}:reader"`),
    'the reader gets an alert with the API server\'s message (forbidden, cannot patch resource "runs")', text);
  check(text.includes(`Priority of ${run('a')} not changed`) && text.includes('403'), 'the alert names the run and the status', text);
  check(await page.getByLabel(`Priority of ${run('a')}`, { exact: true }).inputValue() === '50', 'a\'s priority control shows 50 again');
  await screenshot(page, 'queue-forbidden');
  await as(page, EDITOR);
  await page.waitForTimeout(2500);  // at least one more refresh
  const after = await queueRows(page);
  check(after.map((r) => `${r.run}=${r.priority}`).join() === [`${run('c')}=90`, `${run('a')}=50`, `${run('b')}=50`].join(),
    'after a refresh the queue is still c(90), a(50), b(50)', after);

  // 4. Cross-site protection: the same request without X-Berth-CSRF, or from another origin, is refused.
  const noCsrf = await page.evaluate(async (ns) => {
    const r = await fetch(`api/runs/${ns}/a/priority`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"priority":1}' });
    return { status: r.status, body: await r.text() };
  }, NS);
  check(noCsrf.status === 403 && /error/.test(noCsrf.body), 'a write without X-Berth-CSRF is refused with 403', noCsrf);
  const crossOrigin = await fetch(`${BASE}api/runs/${NS}/a/priority`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Berth-CSRF': '1', Origin: 'http://evil.example' },
    body: '{"priority":1}',
  });
  check(crossOrigin.status === 403, 'a write with a foreign Origin is refused with 403', crossOrigin.status);
  const formPost = await fetch(`${BASE}api/runs/${NS}/a/priority`, {
    method: 'POST', headers: { 'Content-Type': 'text/plain', 'X-Berth-CSRF': '1' }, body: '{"priority":1}',
  });
  check(formPost.status === 403, 'a write whose body is not application/json is refused with 403', formPost.status);

  // 5. Fleets: the grid shows the blocker's busy block.
  await page.getByRole('link', { name: 'Fleets' }).click();
  const fleet = page.locator(`section.fleet[data-fleet="${FLEET}"]`);
  await fleet.waitFor();
  check(await page.getByRole('heading', { name: FLEET }).count() === 1, 'the fleets page has a heading for the test\'s fleet');
  const grid = await until('the busy block', async () => {
    const cells = await fleet.locator('.block').evaluateAll((els) => els.map((e) => e.dataset.state));
    const state = await fleet.locator('tbody tr').first().getAttribute('data-state');
    return { ok: cells.length === 1 && cells[0] === 'busy', cells, state };
  });
  check(grid.state === 'Full', 'the one instance is Full', grid);
  check(await fleet.getByRole('img', { name: '1 of 1 block busy' }).count() === 1, 'the block grid has an accessible label', await fleet.locator('.blocks').getAttribute('aria-label'));
  check((await fleet.locator('tbody tr td').nth(1).innerText()).trim() === '1', 'runs started is 1', await fleet.locator('tbody tr td').nth(1).innerText());
  check(await page.locator('[data-nav="fleets"][aria-current="page"]').count() === 1, 'the nav marks the current page');
  await fleet.scrollIntoViewIfNeeded();
  await screenshot(page, 'fleets');

  // 5b. Teams (issue 31): the page loads and shows the Teams there are, or says none
  // exists; this namespace is in none, so its runs show "—" as their team in the queue.
  await page.getByRole('link', { name: 'Teams' }).click();
  await page.getByRole('heading', { name: 'Teams', exact: true, level: 1 }).waitFor();
  const teamsPage = await until('the teams page', async () => {
    const empty = await page.locator('#teams-empty').isVisible();
    const panels = await page.locator('section.team').count();
    return { ok: teamReads.length > 0 && (empty ? panels === 0 : panels > 0), empty, panels };
  });
  check(!(await page.locator('#load-error').isVisible()), 'the teams page loads', teamsPage);
  check(await page.locator('[data-nav="teams"][aria-current="page"]').count() === 1, 'the nav marks the teams page');
  check(teamReads.every(noCredential), 'teams requests carry no credential', teamReads.length);
  await screenshot(page, 'teams');

  // 6. Run detail, read with the editor's kubeconfig.
  await page.getByRole('link', { name: 'Queue' }).click();
  await page.getByRole('link', { name: run('c'), exact: true }).click();
  await page.getByRole('heading', { name: `Run ${run('c')}` }).waitFor();
  await page.locator('.run-facts').waitFor();
  const pendingFacts = await page.locator('.run-facts').innerText();
  check(/Pending/.test(pendingFacts) && /NoCapacity/.test(pendingFacts), 'c\'s detail shows Pending and NoCapacity', pendingFacts);
  check(/estimated start/i.test(pendingFacts), 'c\'s detail has its estimated start', pendingFacts);
  check(await page.locator('#view-run').getByLabel(`Priority of ${run('c')}`, { exact: true }).inputValue() === '90', 'c\'s detail shows priority 90');
  await page.goto(`${BASE}#/runs/${NS}/blocker`);
  await page.locator('table.placement').waitFor();
  const facts = await page.locator('.run-facts').innerText();
  check(/Running/.test(facts) && facts.includes(FLEET), 'the blocker\'s detail shows Running on the fleet', facts);
  const placement = await page.locator('table.placement tbody tr').allInnerTexts();
  check(placement.length === 1 && placement[0].includes(NODE), 'the placement table has one row with the node', placement);
  const conditions = await page.locator('table.conditions tbody tr th').allInnerTexts();
  check(conditions.includes('Scheduled'), 'the conditions table lists Scheduled', conditions);
  check(await page.getByRole('heading', { name: 'Events' }).count() === 1, 'the detail has an Events section');
  await screenshot(page, 'run');

  check(fleetReads.length > 0 && fleetReads.every(noCredential), 'fleets requests carry no credential', fleetReads.length);
  check(queueReads.length > 0 && queueReads.every(noCredential), 'queue requests carry no credential (issue 44)', queueReads.length);

  // 7. The viewer cannot read the run: the detail says so.
  await as(page, VIEWER);
  const denied = page.locator('#run-content .error-text');
  await denied.waitFor({ timeout: 10000 });
  const deniedText = await denied.innerText();
  check(/forbidden/i.test(deniedText) && deniedText.includes('403'), 'the viewer\'s dashboard shows the API\'s refusal', deniedText);

  // 8. Logs: a pending run has none yet, and the page says why; the blocker's rank 0 on a simulated
  // node (no kubelet serves it) shows the API server's error for that rank, not a broken page.
  await as(page, EDITOR);
  await openRun(page, 'c');
  await page.getByRole('button', { name: `Show logs of ${run('c')}` }).click();
  const noPods = await page.locator('.logs-out .logs-note').innerText();
  check(noPods.includes('run "c" has no Pods yet (Pending, NoCapacity)'), 'a pending run\'s logs say it has no Pods yet', noPods);
  await openRun(page, 'blocker');
  await page.getByLabel('Last lines').fill('20');
  await page.getByRole('button', { name: `Show logs of ${run('blocker')}` }).click();
  const rank0 = page.locator('.logs-out .log-rank[data-rank="0"]');
  await rank0.waitFor();
  check((await rank0.locator('h3').innerText()).includes('Rank 0') && (await rank0.innerText()).includes('blocker-0'),
    'the blocker\'s logs have a section for rank 0 naming its Pod', await rank0.innerText());
  const logsSeen = [];
  page.on('request', (r) => { if (r.url().includes('/logs?')) logsSeen.push({ url: r.url(), auth: r.headers().authorization }); });
  // Its answer awaited: the next step opens another user's dashboard, which would abort it.
  const logsAnswered = page.waitForResponse((r) => r.url().includes('/logs?'));
  await page.getByRole('button', { name: `Show logs of ${run('blocker')}` }).click();
  await logsAnswered;
  await until('a logs request', async () => ({ ok: logsSeen.length > 0, logsSeen: logsSeen.length }));
  check(!logsSeen[0].auth && logsSeen[0].url.includes('tailLines=20'),
    'logs are asked for with the tail asked for and no credential (the dashboard reads them as its user)', logsSeen[0].url);

  // 9. The reader may read the run but not patch it: Stop is offered, refused with the API's 403,
  // and the run keeps running.
  await as(page, READER);
  await page.locator('.run-facts').waitFor();
  await untilRunShows(page, 'Running', '');
  check(JSON.stringify(await visibleActions(page)) === JSON.stringify(['Stop', 'Suspend']),
    'a running run offers Stop and Suspend, not Resume', await visibleActions(page));
  const dialogs = [];
  page.once('dialog', (d) => { dialogs.push(d.message()); d.accept(); });
  await page.getByRole('button', { name: `Stop run ${run('blocker')}` }).click();
  const refused = page.locator('#notice[role="alert"]');
  await refused.waitFor({ timeout: 10000 });
  const refusedText = await refused.innerText();
  check(dialogs.length === 1 && dialogs[0].includes(`Stop run ${run('blocker')}?`), 'Stop asks for confirmation first', dialogs);
  check(refusedText.includes(`Could not stop ${run('blocker')} (403 Forbidden)`) && refusedText.includes('cannot patch resource "runs"') &&
        refusedText.includes('ask for RBAC permission'),
    'the reader gets the API server\'s 403 (cannot patch resource "runs") as an error', refusedText);
  await screenshot(page, 'run-stop-forbidden');
  await page.waitForTimeout(2500);  // at least one more refresh
  check((await runFacts(page)).includes('Running') && JSON.stringify(await visibleActions(page)) === JSON.stringify(['Stop', 'Suspend']),
    'after the refusal the blocker is still Running and still offers Stop', await runFacts(page));

  // 10. The editor suspends b (pending): it leaves the queue, Suspended; resumed, it takes its place again.
  await as(page, EDITOR);
  await openRun(page, 'b');
  await page.getByRole('button', { name: `Suspend run ${run('b')}` }).click();
  await page.locator('#notice', { hasText: `Suspension of ${run('b')} requested` }).waitFor({ timeout: 10000 });
  const suspended = await untilRunShows(page, 'Pending', 'Suspended');
  check(suspended.facts.includes('suspended (spec.suspend)'), 'the run page shows the Suspended message', suspended.facts);
  await until('Resume instead of Suspend', async () => {
    const shown = await visibleActions(page);
    return { ok: JSON.stringify(shown) === JSON.stringify(['Stop', 'Resume']), shown };
  });
  await screenshot(page, 'run-suspended');
  await page.goto(`${BASE}#/queue?namespace=${encodeURIComponent(NS)}`);
  const without = await until('b out of the queue', async () => {
    const rows = await queueRows(page);
    return { ok: rows.map((r) => r.run).join() === [run('c'), run('a')].join(), rows };
  });
  check(without.rows.every((r, i) => r.position === i + 1), 'the suspended run left the queue: c, a at 1, 2', without.rows);
  await openRun(page, 'b');
  await page.getByRole('button', { name: `Resume run ${run('b')}` }).click();
  await page.locator('#notice', { hasText: `Resume of ${run('b')} requested` }).waitFor({ timeout: 10000 });
  await until('b queued again', async () => {
    const facts = await runFacts(page);
    return { ok: facts.includes('Pending') && !facts.includes('Suspended') && facts.includes('NoCapacity'), facts };
  });
  await page.goto(`${BASE}#/queue?namespace=${encodeURIComponent(NS)}`);
  const resumed = await until('the queue c, a, b again', async () => {
    const rows = await queueRows(page);
    return { ok: rows.map((r) => r.run).join() === [run('c'), run('a'), run('b')].join(), rows };
  });
  check(resumed.rows.every((r, i) => r.position === i + 1), 'resumed, b is back behind a (its first submission time kept)', resumed.rows);

  // 11. The editor stops the running blocker: Failed, Stopped, no action left; c gets the slot.
  await openRun(page, 'blocker');
  check(JSON.stringify(await visibleActions(page)) === JSON.stringify(['Stop', 'Suspend']), 'the editor is offered Stop and Suspend');
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: `Stop run ${run('blocker')}` }).click();
  await page.locator('#notice', { hasText: `Stop of ${run('blocker')} requested` }).waitFor({ timeout: 10000 });
  const stopped = await untilRunShows(page, 'Failed', 'Stopped');
  check(stopped.facts.includes('stopped (spec.stop) while running'), 'the run page shows Failed, Stopped and the message', stopped.facts);
  await until('no action on an ended run', async () => {
    const shown = await visibleActions(page);
    return { ok: shown.length === 0, shown };
  });
  check((await page.locator('.actions-note').innerText()).includes('has ended'), 'the page says the run has ended');
  await screenshot(page, 'run-stopped');
  await page.goto(`${BASE}#/queue?namespace=${encodeURIComponent(NS)}`);
  const freed = await until('c scheduled on the freed slot (queue a, b)', async () => {
    const rows = await queueRows(page);
    return { ok: rows.map((r) => r.run).join() === [run('a'), run('b')].join(), rows };
  }, 30000);
  check(freed.rows.every((r, i) => r.position === i + 1), 'c left the queue for the freed slot: a, b at 1, 2', freed.rows);

  check(external.length === 0, 'the page loads nothing from outside its dashboard', external);
  check(problems.length === 0, 'no page error, console error or failed request', problems);
  if (DOCS_IMAGES) {
    for (const f of shots) copyFileSync(f, path.join(DOCS_IMAGES, `dashboard-${path.basename(f)}`));
    console.log(`copied ${shots.length} screenshots to ${DOCS_IMAGES}`);
  }
  console.log(`${checks} passed, 0 failed`);
}, (page) => screenshot(page, 'failure')));
