// A fleet instance's cell in the dashboard's Fleets page, in Debian's headless Chromium. Called by
// tests/integration/dashboard_test.cc once the fleet's status says what the page must show:
// issue 49's Devices column (ADraFleetShowsItsDevicesAndTheRunHoldingThemInChromium: a DRA
// fleet's instance, its devices of the class and the run whose ResourceClaim holds some of them)
// and issue 48's Domain column (AFleetWithLevelsShowsItsDomainsInChromium).
//
//   node tests/dashboard/fleet-cell.mjs --modules=DIR --url=URL --fleet=FLEET --node=NODE --column=HEADER
//        --text=TEXT [--shot=NAME] [--artifacts=DIR]
//
// DIR is the folder whose node_modules has playwright-core (tests/dashboard/setup.sh prints it);
// URL a `kubectl berth dashboard`; TEXT the cell expected under HEADER in NODE's row. Exits 0 when
// every check passed; prints one line per check. A screenshot NAME.png (default fleets) goes to
// --artifacts (default $BERTH_TEST_ARTIFACTS, else build/test-artifacts/dashboard).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inChromium } from './chromium.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');

const args = {};
for (const a of process.argv.slice(2)) {
  const m = /^--([a-z]+)=(.*)$/s.exec(a);
  if (!m) {
    console.error(`fleet-cell.mjs: unexpected argument ${a} (--name=value)`);
    process.exit(2);
  }
  args[m[1]] = m[2];
}
for (const k of ['modules', 'url', 'fleet', 'node', 'column', 'text']) {
  if (!args[k]) {
    console.error(`fleet-cell.mjs: --${k} is required`);
    process.exit(2);
  }
}
const BASE = args.url.endsWith('/') ? args.url : `${args.url}/`;
const ARTIFACTS = path.resolve(args.artifacts || process.env.BERTH_TEST_ARTIFACTS || path.join(ROOT, 'build/test-artifacts/dashboard'));
mkdirSync(ARTIFACTS, { recursive: true });

let checks = 0;
function check(cond, what, detail) {
  checks++;
  if (!cond) throw new Error(`FAILED: ${what}\n  got: ${JSON.stringify(detail)}`);
  console.log(`ok ${checks} - ${what}`);
}

process.exit(await inChromium(args.modules, null, async (page, problems) => {
  await page.goto(`${BASE}#/fleets`);
  const fleet = page.locator(`section.fleet[data-fleet="${args.fleet}"]`);
  await fleet.waitFor();
  // The header's text as written (the style shows it in capitals).
  const headers = (await fleet.locator('table.instances thead th').allTextContents()).map((h) => h.trim());
  check(headers.includes(args.column), `the fleet's instance table has a ${args.column} column`, headers);
  // The cell under that header in the node's row, as the page's refreshes show it (within 15 s:
  // the controller was just restarted).
  const cell = fleet.locator(`table.instances tbody tr[data-node="${args.node}"]`).locator('th, td').nth(headers.indexOf(args.column));
  let shown = '';
  for (const deadline = Date.now() + 15000; Date.now() < deadline; await page.waitForTimeout(200)) {
    shown = ((await cell.textContent({ timeout: 1000 }).catch(() => '')) || '').trim();
    if (shown === args.text) break;
  }
  check(shown === args.text, `the instance ${args.node} shows "${args.text}"`, shown);
  await fleet.scrollIntoViewIfNeeded();
  const file = path.join(ARTIFACTS, `${args.shot || 'fleets'}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot ${file}`);
  check(problems.length === 0, 'no page error, console error or failed request', problems);
  console.log(`${checks} passed, 0 failed`);
}, (page) => page.screenshot({ path: path.join(ARTIFACTS, `${args.shot || 'fleets'}-failure.png`), fullPage: true })));
