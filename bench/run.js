#!/usr/bin/env node
// `npm run bench` / `node bench/run.js [--quick] [--json] [--report [file]] [--only suites] ...`:
// 1. checks that dist/ is built (the suites use the package's public entry
//    points, as users do: `npm run build:ts`);
// 2. builds the native baselines (rx_verbs_bench.node, bench/native/addon.js);
// 3. compiles the suites (bench/tsconfig.json, into bench/build/);
// 4. runs them in a child Node with --expose-gc (the memory suite needs gc()).
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const addon = require('./native/addon');

const root = path.join(__dirname, '..');
const fail = (msg) => {
  process.stderr.write(`bench: ${msg}\n`);
  process.exit(2);
};

if (!fs.existsSync(path.join(root, 'dist', 'index.js'))) fail('dist/ is not built; run `npm run build:ts` (or `npm install`) first');
// The sanitizer run points at its own build (RX_VERBS_BENCH_ADDON): leave that alone.
// Drawing a page from saved results (--report-from) runs no baseline, nor does --help (it answers at once).
const rendersOnly = process.argv.slice(2).some((a) => a === '--report-from' || a.startsWith('--report-from=') || a === '--help' || a === '-h');
if (!process.env.RX_VERBS_BENCH_ADDON && !rendersOnly && addon.build() !== 0) fail(`building the native baselines failed; try ${addon.BUILD_HINT}`);
const tsc = path.join(root, 'node_modules', '.bin', 'tsc');
if (spawnSync(tsc, ['-p', path.join(__dirname, 'tsconfig.json')], { stdio: 'inherit' }).status !== 0) fail('compiling the suites failed');

const r = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, path.join(__dirname, 'build', 'main.js'), ...process.argv.slice(2)], { stdio: 'inherit' });
if (r.error) fail(r.error.message);
process.exitCode = r.status ?? 1;
