#!/usr/bin/env node
// CI's verdict: judges the results folder .ci/run filled against the list of
// suites it expected, and ends with the one line CI reads:
//   "N passed, N failed" (", N skipped" when tests skipped)
// Exits 1 when anything failed.
//
// usage: summary.js RESULTS_DIR SKIP_ALLOWLIST NAME:KIND...
// Every step .ci/run starts records its exit status in RESULTS_DIR/NAME.exit.
// KIND says what else counts:
//   tests  a jest --json report RESULTS_DIR/NAME.json, present, well-formed and
//          successful, and exit 0; its tests count one by one, and its
//          skipped tests must be exactly those the allowlist names for NAME
//          (an unexpected skip and a stale entry each count as one failure)
//   check  exit 0 counts as one passed test, anything else as one failed
//   smoke  a smoke run (it runs, it judges nothing): exit 0 counts nothing,
//          anything else one failure
// A missing or malformed report or exit status is a failure. Any other
// NAME.exit in the folder (a step that is not a suite) must be 0 too.
'use strict';
const fs = require('fs');
const path = require('path');
const { readJestReport } = require('./jest-report');
const { readAllowlist, judgeSkips } = require('./skips');

const [dir, allowlistFile, ...specs] = process.argv.slice(2);
const root = path.resolve(__dirname, '..', '..');
let passed = 0;
let failed = 0;
let skipped = 0;
const say = (line) => console.log(line);

function exitStatus(name) {
  let text;
  try {
    text = fs.readFileSync(path.join(dir, `${name}.exit`), 'utf8').trim();
  } catch {
    return { problem: 'no exit status (it never ran, or its step died)' };
  }
  return /^\d+$/.test(text) ? { code: Number(text) } : { problem: `unreadable exit status "${text}"` };
}

if (!dir || !allowlistFile || specs.length === 0) {
  say('usage: summary.js RESULTS_DIR SKIP_ALLOWLIST NAME:KIND...');
  say('0 passed, 1 failed');
  process.exit(1);
}
const allowlist = readAllowlist(allowlistFile);
for (const p of allowlist.problems) say(`  skips: ${p}`);
failed += allowlist.problems.length;

const expected = new Set();
const testSuites = specs.filter((s) => s.endsWith(':tests')).map((s) => s.split(':')[0]);
// An entry for a configuration that is not a test suite here would never be checked.
for (const config of allowlist.byConfig.keys()) {
  if (testSuites.includes(config)) continue;
  failed++;
  say(`  skips: ${allowlistFile} names "${config}", which is not one of the test suites (${testSuites.join(', ')})`);
}
for (const spec of specs) {
  const [name, kind] = spec.split(':');
  expected.add(name);
  const exit = exitStatus(name);
  const exitProblem = exit.problem ?? (exit.code !== 0 ? `exit status ${exit.code}` : undefined);
  if (kind === 'check' || kind === 'smoke') {
    if (exitProblem) {
      failed++;
      say(`  ${name.padEnd(6)} FAILED: ${exitProblem}`);
    } else if (kind === 'check') {
      passed++;
      say(`  ${name.padEnd(6)} passed`);
    } else {
      say(`  ${name.padEnd(6)} ran (a smoke run: not counted as a test)`);
    }
    continue;
  }
  if (kind !== 'tests') {
    failed++;
    say(`  ${name.padEnd(6)} FAILED: unknown kind "${kind}" (tests, check or smoke)`);
    continue;
  }
  const r = readJestReport(path.join(dir, `${name}.json`), root);
  const skips = judgeSkips(allowlist.byConfig.get(name), r.skipped);
  // Skips are judged only on a report that can be trusted.
  const skipFailures = r.problems.length ? 0 : skips.unexpected.length + skips.stale.length;
  // One failure for a suite that cannot be trusted as a whole: a malformed
  // report, or a bad exit status that no failed test explains.
  const broken = r.problems.length > 0 || (exitProblem !== undefined && r.failed === 0);
  const extra = (broken ? 1 : 0) + skipFailures;
  passed += r.passed;
  failed += r.failed + extra;
  skipped += r.skipped.length;
  const problems = [...r.problems, ...(exitProblem ? [exitProblem] : [])];
  say(`  ${name.padEnd(6)} ${r.passed} passed, ${r.failed} failed, ${r.skipped.length} skipped${problems.length ? ` — FAILED: ${problems.join('; ')}` : ''}`);
  if (!r.problems.length) {
    for (const id of skips.unexpected) say(`    unexpected skip (not in ${allowlistFile}): ${id}`);
    for (const id of skips.stale) say(`    stale allowlist entry (it no longer skips in ${name}): ${id}`);
  }
}

for (const file of fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []) {
  const name = file.replace(/\.exit$/, '');
  if (!file.endsWith('.exit') || expected.has(name)) continue;
  const exit = exitStatus(name);
  if (exit.code === 0) continue;
  failed++;
  say(`  ${name.padEnd(6)} FAILED: ${exit.problem ?? `exit status ${exit.code}`}`);
}

say(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);
