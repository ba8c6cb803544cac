#!/usr/bin/env node
// The results of `npm run bench:rxe` on the host: prints the tables of the
// suites the rxe guest ran (bench/build's formatResults, as `npm run bench`
// prints them) and checks that the ratios the targets need are there (CI
// checks their presence, never their values). With --pair, first folds the
// cross-host figures (bench/cm/pair-report.js) into the file as `pair`.
//
//   node bench/rxe-report.js <rxe.json> [--pair <rxe-pair.json>]
'use strict';
const fs = require('fs');
const path = require('path');

/** Where each ratio the targets need sits in the results. */
const RATIOS = {
  'throughput fast path / native drain': (r) => r.throughput?.ratioToNative,
  'event rate fast path / native loop': (r) => r.eventRate?.ratioToNative,
  'latency event p50 / native event p50': (r) => r.latency?.p50RatioToNative,
};

/** The names of the ratios `r` lacks (only for the suites it ran). */
function missingRatios(r) {
  const ran = (name) => (name.startsWith('throughput') ? 'throughput' in r : name.startsWith('event') ? 'eventRate' in r : 'latency' in r);
  return Object.entries(RATIOS).filter(([name, get]) => ran(name) && !Number.isFinite(get(r))).map(([name]) => name);
}

/** The targets of the real-kernel run (issue 12), judged on the ratios of the same run. */
function rxeTargets(r) {
  const t = [];
  // floor: the same ratio for the native baseline woken by Node's event loop
  // (no JS); jsFloor: that baseline handing each completion to JS;
  // postsFloor: that JS also making the two Node-API calls a round trip's
  // handler makes to post; where the run measured them (bench/suites/report.ts).
  const { judge } = require(path.join(__dirname, 'build', 'report.js'));
  const add = (...args) => {
    const judged = judge(...args);
    if (judged) t.push(judged);
  };
  add(
    'rxe0: event-mode round trip p50, ours (cq.completions$) / native',
    '<= 1.2',
    r.latency?.p50RatioToNative,
    (v) => v <= 1.2,
    r.latency?.loopP50RatioToNative,
    r.latency?.loopJsP50RatioToNative,
    r.latency?.loopJsCallsP50RatioToNative,
  );
  add('rxe0: drain throughput, ours (cq.completions$) / native, worst unpaced depth', '>= 0.8', r.throughput?.ratioToNative, (v) => v >= 0.8);
  return t;
}

function main(argv) {
  const [file, flag, pairFile] = argv;
  if (!file || (flag !== undefined && (flag !== '--pair' || !pairFile))) {
    process.stderr.write('usage: rxe-report.js <rxe.json> [--pair <rxe-pair.json>]\n');
    return 2;
  }
  const r = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (pairFile) {
    r.pair = JSON.parse(fs.readFileSync(pairFile, 'utf8'));
    fs.writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  }
  r.rxeTargets = rxeTargets(r);
  fs.writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  const { formatResults } = require(path.join(__dirname, 'build', 'report.js'));
  process.stdout.write(`${formatResults(r)}\n`);
  process.stdout.write(`\nTargets on rxe0 (scale ${r.meta?.scale ?? 1}; QEMU/TCG: the ratios move between boots)\n`);
  for (const t of r.rxeTargets) {
    const floors = [
      ...(t.floor === undefined ? [] : [`Node-loop floor, no JS: ${t.floor.toFixed(3)}`]),
      ...(t.jsFloor === undefined ? [] : [`JS floor: ${t.jsFloor.toFixed(3)}`]),
      ...(t.postsFloor === undefined ? [] : [`JS floor with the handler's 2 posts: ${t.postsFloor.toFixed(3)}`]),
    ];
    const floor = floors.length ? ` (${floors.join('; ')})` : '';
    process.stdout.write(`  ${t.name}: ${t.target}, measured ${t.value.toFixed(3)} ${t.met ? 'met' : 'NOT met'}${floor}\n`);
  }
  if (r.pair) process.stdout.write(`\n${require('./cm/pair-report').format(r.pair)}\n`);
  const missing = [...missingRatios(r), ...(r.pair ? require('./cm/pair-report').missingRatios(r.pair) : [])];
  if (missing.length) {
    process.stderr.write(`bench rxe: ${file} lacks ${missing.join(', ')}\n`);
    return 1;
  }
  process.stderr.write(`bench rxe: results in ${file}\n`);
  return 0;
}

process.exitCode = main(process.argv.slice(2));
