#!/usr/bin/env node
// Host side of the rxe harness: reads what the guests left in the results
// share (jest.json, interop.tsv, pair.tsv, bench status, status), prints the interop table
// and the failed tests, writes one merged report in jest --json format (the
// interop and pair cases as the suites "test/rxe/interop" and
// "test/rxe/pair", so CI's sum counts them), and prints the one summary line
// last. Exit status 1 when anything failed or is missing.
// usage: report.js OUT_DIR "PARTS" GUEST_RC [OUTPUT_FILE] [SECONDS] [VERBOSE]
'use strict';
const fs = require('fs');
const path = require('path');

const [outDir, partsArg = '', rcArg = '1', outputFile = '', secondsArg = '', verboseArg = '0'] = process.argv.slice(2);
const parts = partsArg.split(/[\s,]+/).filter(Boolean);
const guestRc = Number(rcArg);
const problems = [];

function read(name) {
  try {
    return fs.readFileSync(path.join(outDir, name), 'utf8');
  } catch {
    return undefined;
  }
}

// "<part> <rc> <seconds>" lines written by guest.sh
const partStatus = {};
for (const line of (read('status') ?? '').split('\n')) {
  const [part, rc, secs] = line.trim().split(/\s+/);
  if (part) partStatus[part] = { rc: Number(rc), secs: Number(secs) };
}
const ran = read('status') !== undefined;
if (!ran) problems.push('the guest did not run');
else if (partStatus.device && partStatus.device.rc !== 0) problems.push('rxe0 could not be set up in the guest');

const emptyReport = () => ({
  numTotalTestSuites: 0, numPassedTestSuites: 0, numFailedTestSuites: 0, numPendingTestSuites: 0,
  numRuntimeErrorTestSuites: 0, numTotalTests: 0, numPassedTests: 0, numFailedTests: 0,
  numPendingTests: 0, numTodoTests: 0, startTime: Date.now(), success: true, testResults: [],
});
const report = emptyReport();
const addSuite = (name, tests, message = '') => {
  const failed = tests.filter((t) => t.status === 'failed').length;
  const failedToRun = tests.length === 0 && message !== '';
  report.testResults.push({
    name, status: failed || failedToRun ? 'failed' : 'passed', message,
    startTime: Date.now(), endTime: Date.now(), assertionResults: tests,
  });
  report.numTotalTestSuites++;
  if (failed || failedToRun) report.numFailedTestSuites++;
  else report.numPassedTestSuites++;
  for (const t of tests) {
    report.numTotalTests++;
    if (t.status === 'passed') report.numPassedTests++;
    else if (t.status === 'failed') report.numFailedTests++;
    else report.numPendingTests++;
  }
};

// --- jest ---------------------------------------------------------------------
let jestLine = '';
if (ran && parts.includes('jest')) {
  let jest;
  try {
    jest = JSON.parse(read('jest.json'));
  } catch {
    jest = undefined;
  }
  if (!jest) {
    problems.push('jest produced no report in the guest (see test/rxe/.cache/out/jest.log)');
    addSuite('test/rxe/jest-in-guest', [], 'jest produced no report');
    jestLine = 'jest: NO REPORT';
  } else {
    for (const key of Object.keys(report)) if (key in jest && typeof jest[key] === 'number') report[key] += jest[key];
    report.testResults.push(...jest.testResults);
    report.startTime = jest.startTime;
    const brokenSuites = jest.testResults.filter((s) => s.status === 'failed' && s.assertionResults.every((a) => a.status !== 'failed'));
    for (const s of jest.testResults) {
      for (const a of s.assertionResults) {
        if (a.status === 'failed') console.log(`rxe: FAILED ${path.relative(process.cwd(), s.name)} > ${a.fullName}`);
      }
    }
    for (const s of brokenSuites) console.log(`rxe: SUITE FAILED TO RUN ${path.relative(process.cwd(), s.name)}: ${(s.message || '').split('\n').find((l) => l.trim()) ?? ''}`);
    if (verboseArg === '1') {
      for (const s of jest.testResults) for (const a of s.assertionResults) console.log(`  ${a.status.padEnd(7)} ${path.basename(s.name)} > ${a.fullName}`);
    }
    const secs = partStatus.jest ? ` in ${partStatus.jest.secs}s` : '';
    jestLine = `jest ${jest.numPassedTests} passed, ${jest.numFailedTests + brokenSuites.length} failed, ${jest.numPendingTests + (jest.numTodoTests || 0)} skipped${secs}`;
    if (jest.numFailedTests + brokenSuites.length > 0 || partStatus.jest?.rc) problems.push('jest failed in the guest');
  }
}

// --- interop --------------------------------------------------------------------
let interopLine = '';
if (ran && parts.includes('interop')) {
  const tsv = read('interop.tsv');
  const rows = (tsv ?? '').trim().split('\n').slice(1).filter(Boolean).map((l) => l.split('\t'));
  if (rows.length === 0) {
    problems.push('the interop part produced no results');
    addSuite('test/rxe/interop', [], 'no interop results');
    interopLine = 'interop: NO RESULTS';
  } else {
    // srqN-... rows are the --srq mode against ibv_srq_pingpong, ud-... rows
    // `pingpong --ud` against ibv_ud_pingpong.
    const who = (s, name) =>
      s === 'ours' ? 'rx-verbs' : /^srq\d/.test(name) ? 'ibv_srq_pingpong' : name.startsWith('ud-') ? 'ibv_ud_pingpong' : 'ibv_rc_pingpong';
    const head = ['server', 'client', 'size', 'iters', 'mode', 'rc s/c', 'result', 'secs', 'Mbit/s'];
    const table = rows.map(([name, server, client, size, iters, mode, src, crc, result, secs, mbit]) =>
      [who(server, name), who(client, name), size, iters, mode, `${src}/${crc}`, result, secs, mbit]);
    const widths = head.map((h, i) => Math.max(h.length, ...table.map((r) => r[i].length)));
    const fmt = (r) => r.map((c, i) => c.padEnd(widths[i])).join('  ');
    console.log(`rxe: interop (rxe0, GID index ${(read('gid-index') ?? '?').trim()}; figures under TCG are not performance data)`);
    console.log(`  ${fmt(head)}`);
    for (const r of table) console.log(`  ${fmt(r)}`);
    const tests = rows.map(([name, server, client, size, iters, mode, src, crc, result, secs]) => ({
      ancestorTitles: ['interop'], title: name,
      fullName: `interop ${who(server, name)} server, ${who(client, name)} client, ${size} B x ${iters}, ${mode}`,
      status: result === 'PASS' ? 'passed' : 'failed', duration: Math.round(Number(secs) * 1000),
      failureMessages: result === 'PASS' ? [] : [`server rc ${src}, client rc ${crc}; logs: test/rxe/.cache/out/interop/${name}.*.log`],
    }));
    addSuite('test/rxe/interop', tests);
    const passed = tests.filter((t) => t.status === 'passed').length;
    const secs = partStatus.interop ? ` in ${partStatus.interop.secs}s` : '';
    interopLine = `interop ${passed}/${tests.length} passed${secs}`;
    if (passed !== tests.length || partStatus.interop?.rc) problems.push('interop failed');
  }
}

// --- pair: two guests ---------------------------------------------------------
let pairLine = '';
if (ran && parts.includes('pair')) {
  const rows = (read('pair-b/pair.tsv') ?? '').trim().split('\n').slice(1).filter(Boolean).map((l) => l.split('\t'));
  if (rows.length === 0) {
    problems.push('the pair part produced no results (see test/rxe/.cache/out/pair-*/console.log)');
    addSuite('test/rxe/pair', [], 'no pair results');
    pairLine = 'pair: NO RESULTS';
  } else {
    const status = { PASS: 'passed', FAIL: 'failed', SKIP: 'pending' };
    const tests = rows.map(([name, result, secs, src, crc, note]) => ({
      ancestorTitles: ['pair'], title: name, fullName: `pair ${name}`,
      status: status[result] ?? 'failed', duration: Math.round(Number(secs) * 1000),
      failureMessages: result === 'FAIL' ? [`server rc ${src}, client rc ${crc}: ${note}; logs: test/rxe/.cache/out/pair-b/pair/`] : [],
    }));
    for (const [name, result, , , , note] of rows) {
      if (result !== 'PASS') console.log(`rxe: pair ${result === 'SKIP' ? 'SKIPPED' : 'FAILED'} ${name}: ${note}`);
    }
    addSuite('test/rxe/pair', tests);
    const passed = tests.filter((t) => t.status === 'passed').length;
    const skipped = tests.filter((t) => t.status === 'pending').length;
    const secs = partStatus.pair ? ` in ${partStatus.pair.secs}s` : '';
    pairLine = `pair ${passed}/${tests.length - skipped} passed${skipped ? ` (${skipped} skipped)` : ''}${secs}`;
    if (passed + skipped !== tests.length || partStatus.pair?.rc) problems.push('pair failed');
  }
}

// --- bench: the suites on rxe0 (run.js checked their ratios and wrote bench/results/rxe.json)
let benchLine = '';
if (ran && parts.includes('bench')) {
  const st = partStatus.bench;
  benchLine = st ? `bench ${st.rc === 0 ? 'ran' : 'FAILED'} in ${st.secs}s` : 'bench: DID NOT RUN';
  if (!st || st.rc !== 0) problems.push('the bench on rxe0 failed (test/rxe/.cache/out/bench.log)');
}

if (guestRc !== 0 && problems.length === 0) problems.push(`the guest exited with status ${guestRc}`);
if (problems.length > 0 && report.numFailedTests === 0 && report.numFailedTestSuites === 0) {
  // make sure whoever sums the report sees the failure
  addSuite('test/rxe/guest', [], problems.join('; '));
}
report.success = problems.length === 0;
if (outputFile) fs.writeFileSync(outputFile, JSON.stringify(report));

const verdict = problems.length === 0 ? 'PASS' : `FAIL (${problems.join('; ')})`;
const pieces = [jestLine, interopLine, benchLine, pairLine].filter(Boolean).join(' | ');
console.log(`rxe: ${verdict}${pieces ? ` — ${pieces}` : ''}${secondsArg ? ` — ${secondsArg}s total` : ''}`);
process.exit(problems.length === 0 ? 0 : 1);
