// Issue 44, item 8: the dashboard shows text from the API without the control characters
// kubectl berth strips (C0 but tab and line feed, DEL, C1). Loads src/controller/dashboard/format.js
// as the page does (it sets window.berthFormat) and checks berthFormat.printable.
import { check, done, loadFormat } from './harness.mjs';

const { printable } = loadFormat(process.argv[2]);

check(printable('\u001b]0;owned\u0007\u001b[2Jcleared \u001b[31mred\u001b[0m \u009b6n\u007fdone'),
      ']0;owned[2Jcleared [31mred[0m 6ndone', 'ESC, BEL, C1 CSI and DEL are removed, the words stay');
check(printable('a\tb\nc'), 'a\tb\nc', 'tab and line feed stay');
check(printable('x\r\u0000\u0008y'), 'xy', 'CR, NUL and BS are removed');
check(printable('café ✓ 🚀 \u00a0.'), 'café ✓ 🚀 \u00a0.', 'printable Unicode stays');
check(printable(undefined), '', 'undefined is empty');
check(printable(null), '', 'null is empty');
check(printable(42), '42', 'numbers are text');
let all = '';
for (let c = 0; c < 0x20; c++) if (c !== 9 && c !== 10) all += String.fromCharCode(c);
for (let c = 0x7f; c <= 0x9f; c++) all += String.fromCharCode(c);
check(printable(`<${all}>`), '<>', 'every C0 control but tab and line feed, DEL and every C1 control');
done();
