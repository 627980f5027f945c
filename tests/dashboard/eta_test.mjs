// Issues 33 and 47: the dashboard's ETA column (berthFormat.fmtEta), loaded from
// src/controller/dashboard/format.js as the page loads it.
import { check, done, loadFormat } from './harness.mjs';

const { fmtEta } = loadFormat(process.argv[2]);

check(fmtEta(undefined), 'unknown', 'no estimate');
check(fmtEta(0), 'now', 'due now');
check(fmtEta(2400), '~40m 00s', 'an estimate without a range');
check(fmtEta(2400, [1200, 5400]), '~40m 00s (20m 00s\u20131h 30m)', 'with its range');
check(fmtEta(2400, [0, 5400]), '~40m 00s (now\u20131h 30m)', 'a range that may start now');
check(fmtEta(2400, [1200]), '~40m 00s', 'half a range is none');
check(fmtEta(2400, ['x', 5400]), '~40m 00s', 'a range that is not numbers is none');
done();
