// What the dashboard's format tests share: src/controller/dashboard/format.js loaded as the page
// loads it (it sets window.berthFormat), and a TAP-like check that counts failures.
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

export function loadFormat(file) {
  const window = {};
  vm.runInNewContext(readFileSync(file, 'utf8'), { window });
  return window.berthFormat;
}

let failed = 0;
export function check(got, want, what) {
  if (got === want) {
    console.log(`ok - ${what}`);
  } else {
    failed++;
    console.log(`not ok - ${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}
export function done() {
  process.exit(failed === 0 ? 0 : 1);
}
