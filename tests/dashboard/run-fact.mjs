// One fact of a run's page in the dashboard, in Debian's headless Chromium. Called by
// tests/integration/dashboard_test.cc: issue 48's Domain of a placed run on a fleet with topology
// levels (ARunOnAFleetWithLevelsShowsItsDomainInChromium), as kubectl berth describe says it.
//
//   node tests/dashboard/run-fact.mjs --modules=DIR --url=URL --namespace=NS --run=NAME --label=LABEL
//        --text=TEXT [--shot=NAME] [--artifacts=DIR]
//
// DIR is the folder whose node_modules has playwright-core (tests/dashboard/setup.sh prints it);
// URL a `kubectl berth dashboard`; TEXT what the run's page must show under LABEL (within 15 s).
// Exits 0 when every check passed; prints one line per check. A screenshot NAME.png (default
// run-fact) goes to --artifacts (default $BERTH_TEST_ARTIFACTS, else build/test-artifacts/dashboard).
import path from 'node:path';
import { artifactsDir, checker, driverArgs, inChromium } from './chromium.mjs';

const args = driverArgs('run-fact.mjs', ['modules', 'url', 'namespace', 'run', 'label', 'text']);
const BASE = args.url.endsWith('/') ? args.url : `${args.url}/`;
const ARTIFACTS = artifactsDir(args.artifacts);
const SHOT = args.shot || 'run-fact';
const check = checker();

process.exit(await inChromium(args.modules, null, async (page, problems) => {
  await page.goto(`${BASE}#/runs/${encodeURIComponent(args.namespace)}/${encodeURIComponent(args.run)}`);
  await page.locator('dl.run-facts').waitFor();
  const fact = page.locator('dl.run-facts > div').filter({ has: page.locator('dt', { hasText: new RegExp(`^${args.label}$`) }) });
  let shown = '';
  for (const deadline = Date.now() + 15000; Date.now() < deadline; await page.waitForTimeout(200)) {
    shown = (await fact.count()) === 1 ? ((await fact.locator('dd').textContent()) || '').trim() : '';
    if (shown === args.text) break;
  }
  check(shown === args.text, `run ${args.namespace}/${args.run}'s page shows ${args.label} "${args.text}"`, shown);
  const file = path.join(ARTIFACTS, `${SHOT}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot ${file}`);
  check(problems.length === 0, 'no page error, console error or failed request', problems);
  check.passed();
}, (page) => page.screenshot({ path: path.join(ARTIFACTS, `${SHOT}-failure.png`), fullPage: true })));
