// The dashboard's Usage page (issue 47) in Debian's headless Chromium. Called by
// tests/integration/dashboard_test.cc (UsagePageDrawsWhatTheCliSaysAndTheQueuesDayInChromium)
// once the teams' runs have finished and their usage is folded, with what `kubectl berth usage -o
// json` printed.
//
//   node tests/dashboard/usage.mjs --modules=DIR --url=URL --usage=FILE --table=FILE2 --teams=A,B --starts=N
//        [--shot=NAME] [--artifacts=DIR] [--docs-images=DIR]
//
// DIR: the folder whose node_modules has playwright-core (tests/dashboard/setup.sh prints it); URL
// a `kubectl berth dashboard`; FILE the CLI's JSON answer, FILE2 its table (`kubectl berth usage`);
// TEAMS the teams whose rows must be on the page with the CLI's figures: every column of the CLI's
// table (GPU-hours, share, CPU- and memory-hours, runs, median wait) as it writes them, and the
// exact GPU-hours in the row's data-gpu-hours. The stacked chart must be drawn (each of those
// teams' colour on uPlot's canvas) with one series per table row, the queue-length chart must
// have points (one of them a waiting run) and be drawn, and the waits chart at least N starts.
// Served a series of one minute, the queue-length chart draws that minute as a dot. Any page
// error, console error (a CSP violation is one) or failed request fails. Exits 0 when every check
// passed; prints one line per check. Screenshots NAME.png (default usage) and NAME-one-minute.png
// (that chart) in --artifacts (default $BERTH_TEST_ARTIFACTS, else build/test-artifacts/dashboard),
// the first also copied to --docs-images when given.
import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { artifactsDir, checker, driverArgs, inChromium } from './chromium.mjs';

const args = driverArgs('usage.mjs', ['modules', 'url', 'usage', 'table', 'teams', 'starts']);
const BASE = args.url.endsWith('/') ? args.url : `${args.url}/`;
const ARTIFACTS = artifactsDir(args.artifacts);
const SHOT = args.shot || 'usage';
const cli = JSON.parse(readFileSync(args.usage, 'utf8'));
const teams = args.teams.split(',');
// The CLI's table: its header's columns, and each row's cells by column (no cell holds a space).
const COLUMN_CLASS = { 'GPU-HOURS': 'gpu-hours', WEIGHTED: 'weighted', SHARE: 'share', 'CPU-HOURS': 'cpu-hours',
  'MEMORY-GIB-HOURS': 'memory-hours', RUNS: 'runs', 'MEDIAN-WAIT': 'median-wait' };
const tableLines = readFileSync(args.table, 'utf8').split('\n').filter((l) => l.trim() && !l.startsWith('('));
const cliColumns = tableLines[0].trim().split(/\s+/);
const cliRows = new Map(tableLines.slice(1).map((l) => {
  const cells = l.trim().split(/\s+/);
  return [cells[0], Object.fromEntries(cells.map((c, i) => [cliColumns[i], c]))];
}));
const check = checker();

// How many pixels of the canvas in `selector` are of the colour `css` ("rgb(41, 98, 196)", as
// getComputedStyle writes it), exactly (pixels), and their mean x as a fraction of the width (x).
async function pixelsOf(page, selector, css) {
  return page.evaluate(([sel, colour]) => {
    const canvas = document.querySelector(`${sel} canvas`);
    const m = /^rgb\((\d+), (\d+), (\d+)\)$/.exec(colour);
    if (!canvas || !canvas.width || !canvas.height || !m) return { pixels: -1, x: -1 };
    const [r, g, b] = m.slice(1).map(Number);
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    let sumX = 0;
    for (let i = 0; i < px.length; i += 4) {
      if (px[i] === r && px[i + 1] === g && px[i + 2] === b && px[i + 3] === 255) {
        count++;
        sumX += (i / 4) % canvas.width;
      }
    }
    return { pixels: count, x: count > 0 ? sumX / count / canvas.width : -1 };
  }, [selector, css]);
}

// The colour of `locator`'s swatch (the team's colour in the chart).
async function swatchColour(locator) {
  return locator.locator('.swatch').evaluate((e) => getComputedStyle(e).backgroundColor);
}

process.exit(await inChromium(args.modules, null, async (page, problems) => {
  await page.goto(`${BASE}#/usage`);
  const rows = page.locator('#usage-table-box table.usage tbody tr');
  await rows.first().waitFor();
  // Every team of the test: the CLI's GPU-hours (as its table writes them, and exactly) and share.
  for (const team of teams) {
    const want = (cli.rows || []).find((r) => r.name === team);
    check(want !== undefined, `the CLI shows team ${team}`, cli.rows);
    const row = page.locator(`#usage-table-box tr[data-team="${team}"]`);
    check(await row.count() === 1, `the page's table has a row for team ${team}`,
      await page.locator('#usage-table-box').textContent());
    const shown = {
      gpuHours: (await row.locator('td.gpu-hours').textContent()).trim(),
      exact: Number(await row.getAttribute('data-gpu-hours')),
      share: (await row.locator('td.share').textContent()).trim(),
    };
    const expected = { gpuHours: want.gpuHours.toFixed(1), exact: want.gpuHours, share: `${(100 * want.share).toFixed(1)}%` };
    check(JSON.stringify(shown) === JSON.stringify(expected) && want.gpuHours > 0,
      `team ${team}: ${expected.gpuHours} GPU-hours (${want.gpuHours}), ${expected.share}, as kubectl berth usage says`,
      { shown, expected });
    // Every column of the CLI's table, cell for cell (runs and the median wait among them).
    const cliRow = cliRows.get(team) || {};
    const onPage = {};
    const inTable = {};
    for (const column of cliColumns.slice(1)) {
      const cell = row.locator(`td.${COLUMN_CLASS[column] || 'none'}`);
      onPage[column] = await cell.count() === 1 ? (await cell.textContent()).trim() : null;
      inTable[column] = cliRow[column];
    }
    check(cliColumns.includes('RUNS') && cliColumns.includes('MEDIAN-WAIT') && Number(cliRow.RUNS) >= 1 &&
      cliRow['MEDIAN-WAIT'] !== '-' && JSON.stringify(onPage) === JSON.stringify(inTable),
      `team ${team}: every column of kubectl berth usage's row, on the page`, { onPage, inTable, cliColumns });
  }
  // The stacked chart: drawn, one series per table row (uPlot's series 0 is the x axis).
  const chart = page.locator('#usage-chart');
  await chart.locator('canvas').waitFor();
  const series = Number(await chart.getAttribute('data-series'));
  check(series === await rows.count() && series >= teams.length, 'the chart has one series per team row', series);
  check(await chart.locator('.u-legend .u-series').count() === series + 1, "uPlot's legend names every team",
    await chart.locator('.u-legend').textContent());
  for (const team of teams) {
    const colour = await swatchColour(page.locator(`#usage-table-box tr[data-team="${team}"]`));
    const drawn = (await pixelsOf(page, '#usage-chart', colour)).pixels;
    check(drawn > 100, `team ${team}'s bars are drawn in its colour (${colour})`, drawn);
  }
  // The queue's last 24 hours: points, one with a waiting run; the starts of the test's runs.
  const lengthChart = page.locator('#queue-length-chart');
  await lengthChart.locator('canvas').waitFor();
  const points = Number(await lengthChart.getAttribute('data-points'));
  check(points >= 1, 'the queue-length chart has points', points);
  const history = await page.evaluate(async () => (await fetch('api/usage/queue')).json());
  const waited = (history.minutes || []).some((m) => m.pending >= 1);
  check(waited, 'a minute of the series has a waiting run', history);
  const line = (await pixelsOf(page, '#queue-length-chart', 'rgb(41, 98, 196)')).pixels;
  check(line > 10, "the queue-length chart is drawn (its line, or a lone minute's dot)", line);
  const starts = Number(await page.locator('#queue-wait-chart').getAttribute('data-starts'));
  check(starts >= Number(args.starts), `the waits chart counts at least ${args.starts} starts`, starts);
  check(/Recording since/.test(await page.locator('#queue-history-since').textContent()), 'the page says since when it records',
    await page.locator('#queue-history-since').textContent());

  const file = path.join(ARTIFACTS, `${SHOT}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot ${file}`);
  if (args['docs-images']) copyFileSync(file, path.join(args['docs-images'], 'dashboard-usage.png'));
  // A series of one minute (what a new leader has at first; the runs above may all fall in one
  // minute too) has no step to draw: it is drawn as a dot. The controller's answer, cut to its
  // first minute with a waiting run, is served to the page in place of the live one.
  const lone = { ...history, minutes: (history.minutes || []).filter((m) => m.pending >= 1).slice(0, 1) };
  await page.route(/\/api\/usage\/queue$/, (route) => route.fulfill({ json: lone }));
  await page.reload();
  await lengthChart.locator('canvas').waitFor();
  check(await lengthChart.getAttribute('data-points') === '1', 'a series of one minute has one point',
    await lengthChart.getAttribute('data-points'));
  const dot = await pixelsOf(page, '#queue-length-chart', 'rgb(41, 98, 196)');
  check(dot.pixels > 10, "a lone minute is drawn as a dot in the queue's colour", dot);
  // Its time axis spans the five minutes before it and that minute: the dot is five sixths across
  // the plot (right of the y axis), not at the left edge of an axis of years.
  check(dot.x > 0.7 && dot.x < 0.95, 'the lone minute is drawn at the right of its few minutes', dot);
  await lengthChart.screenshot({ path: path.join(ARTIFACTS, `${SHOT}-one-minute.png`) });
  check(problems.length === 0, 'no page error, console error (CSP included) or failed request', problems);
  check.passed();
}, (page) => page.screenshot({ path: path.join(ARTIFACTS, `${SHOT}-failure.png`), fullPage: true })));
