#!/usr/bin/env node
// `npm run bench` / `node bench/run.js [--quick] [--json] [--only suites]`:
// runs the `rx-verbs bench` command from the compiled package (dist/, built
// by `npm install` through `prepare`, or `npm run build:ts`). The command
// re-executes Node with --expose-gc and a large young generation itself.
'use strict';
const path = require('path');
const fs = require('fs');

const main = path.join(__dirname, '..', 'dist', 'cli', 'commands', 'bench.js');
if (!fs.existsSync(main)) {
  process.stderr.write('bench: dist/ is not built; run `npm run build:ts` (or `npm install`) first\n');
  process.exit(2);
}
const { bench } = require(main);
bench.run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`bench: ${err && err.stack ? err.stack : err}\n`);
    process.exitCode = 1;
  },
);
