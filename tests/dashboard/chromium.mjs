// What the real-browser drivers (drive.mjs, fleet-cell.mjs) share: Debian's headless Chromium
// (/usr/bin/chromium) launched by playwright-core, one page, and how a failure is reported.
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

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
