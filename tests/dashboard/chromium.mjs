// What the real-browser drivers (drive.mjs, fleet-cell.mjs, usage.mjs, run-fact.mjs) share: Debian's headless Chromium
// (/usr/bin/chromium) launched by playwright-core, one page, and how a failure is reported.
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Runs `body(page, problems)` in a fresh Chromium (a persistent context on a new empty folder:
// a fresh --user-data-dir, removed at the end) and returns the exit code: 0 when it returned, 1
// when it threw (its message printed with the page's problems, then `onFailure(page)`, e.g. a
// screenshot). `problems` collects the page's errors, console errors (but those matching
// `consoleIgnored`) and failed requests. `modules`: the folder whose node_modules has
// playwright-core (tests/dashboard/setup.sh prints it).
export async function inChromium(modules, consoleIgnored, body, onFailure) {
  const require = createRequire(path.join(path.resolve(modules), 'package.json'));
  const { chromium } = require('playwright-core');
  const profile = mkdtempSync(path.join(tmpdir(), 'berth-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 760 },
    deviceScaleFactor: 1,
  });
  let page;
  const problems = [];
  try {
    page = context.pages()[0] || await context.newPage();
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !(consoleIgnored && consoleIgnored.test(m.text()))) problems.push(`console error: ${m.text()}`);
    });
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure() && r.failure().errorText}`));
    await body(page, problems);
    return 0;
  } catch (err) {
    console.error(err && err.message ? err.message : err);
    if (problems.length) console.error(`page problems:\n  ${problems.join('\n  ')}`);
    if (page) {
      try { await onFailure(page); } catch (e) { /* the page is gone */ }
    }
    return 1;
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

// What the newer drivers (usage.mjs, run-fact.mjs) share besides the browser.

// The driver's `--name=value` arguments as an object; exits 2 with a sentence naming `driver` when
// one is malformed or one of `required` is missing.
export function driverArgs(driver, required) {
  const args = {};
  for (const a of process.argv.slice(2)) {
    const m = /^--([a-z-]+)=(.*)$/s.exec(a);
    if (!m) {
      console.error(`${driver}: unexpected argument ${a} (--name=value)`);
      process.exit(2);
    }
    args[m[1]] = m[2];
  }
  for (const k of required) {
    if (!args[k]) {
      console.error(`${driver}: --${k} is required`);
      process.exit(2);
    }
  }
  return args;
}

// The folder for screenshots (created): `given`, else $BERTH_TEST_ARTIFACTS, else
// build/test-artifacts/dashboard of the repository.
export function artifactsDir(given) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const dir = path.resolve(given || process.env.BERTH_TEST_ARTIFACTS || path.join(root, 'build/test-artifacts/dashboard'));
  mkdirSync(dir, { recursive: true });
  return dir;
}

// check(cond, what, detail): prints "ok N - what", or throws "FAILED: what" with the detail.
// check.passed(): prints the count of checks, all passed.
export function checker() {
  let checks = 0;
  const check = (cond, what, detail) => {
    checks++;
    if (!cond) throw new Error(`FAILED: ${what}\n  got: ${JSON.stringify(detail)}`);
    console.log(`ok ${checks} - ${what}`);
  };
  check.passed = () => console.log(`${checks} passed, 0 failed`);
  return check;
}
