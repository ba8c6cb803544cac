#!/usr/bin/env node
// The long fuzz: at least --calls generated calls (default 100,000), in child
// processes of --chunk calls each (default 5,000), --parallel at a time
// (default 4), seeds --seed, --seed+1, ... A crash (signal / sanitizer exit
// code) or hang does not stop it: it is reported with the run to replay
// (node --expose-gc test/fixtures/fuzz-child.js --seed S --run R --verbose)
// and the next chunk starts. Needs dist/ (`npm run fuzz:long` builds it).
//   node test/soak/fuzz-long.js --calls 100000
// Exit 1 if any chunk crashed, hung or broke an invariant.
'use strict';
const { spawn } = require('child_process');
const path = require('path');

const argv = process.argv.slice(2);
const arg = (n, d) => (argv.includes(`--${n}`) ? Number(argv[argv.indexOf(`--${n}`) + 1]) : d);
const CALLS = arg('calls', Number(process.env.RX_VERBS_FUZZ_CALLS || 100000));
const CHUNK = arg('chunk', 5000);
const PARALLEL = arg('parallel', 4);
const SEED0 = arg('seed', 1000);
const CHILD = path.join(__dirname, '..', 'fixtures', 'fuzz-child.js');

function runChunk(seed) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', CHILD, '--seed', String(seed), '--calls', String(CHUNK)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => {
      err += d;
      if (err.length > 100000) err = err.slice(-50000);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, Math.max(120000, CHUNK * 20));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let report;
      try {
        report = JSON.parse(out.trim().split('\n').pop());
      } catch {
        report = undefined;
      }
      const runs = err.match(/^run \d+$/gm) || [];
      resolve({ seed, code, signal, timedOut, report, lastRun: runs[runs.length - 1], tail: err.slice(-2000) });
    });
  });
}

(async () => {
  const started = Date.now();
  const results = [];
  let next = 0;
  const chunks = Math.ceil(CALLS / CHUNK);
  async function worker() {
    while (next < chunks) {
      const seed = SEED0 + next++;
      const r = await runChunk(seed);
      results.push(r);
      const calls = r.report ? r.report.calls : '?';
      const bad = r.code !== 0 ? ` FAILED code=${r.code} signal=${r.signal} timedOut=${r.timedOut} last=${r.lastRun}` : '';
      process.stderr.write(`seed ${seed}: ${calls} calls${bad}\n`);
    }
  }
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  const calls = results.reduce((n, r) => n + (r.report ? r.report.calls : 0), 0);
  const crashes = results.filter((r) => r.signal || (r.code !== 0 && r.code !== 3) || r.timedOut);
  const violations = results.filter((r) => r.code === 3);
  const known = {};
  const byName = {};
  for (const r of results) {
    for (const [k, v] of Object.entries((r.report && r.report.knownBugs) || {})) known[k] = (known[k] || 0) + v;
    for (const [k, v] of Object.entries((r.report && r.report.byName) || {})) byName[k] = (byName[k] || 0) + v;
  }
  const summary = {
    calls,
    chunks: results.length,
    seconds: Math.round((Date.now() - started) / 1000),
    crashes: crashes.map((r) => ({ seed: r.seed, code: r.code, signal: r.signal, timedOut: r.timedOut, lastRun: r.lastRun, tail: r.tail })),
    violations: violations.map((r) => ({ seed: r.seed, violation: r.report && r.report.violation })),
    knownBugs: known,
    errorsByName: byName,
  };
  console.log(JSON.stringify(summary, null, 2));
  console.log(`fuzz-long: ${calls} calls, ${crashes.length} crash(es)/hang(s), ${violations.length} invariant violation(s)`);
  process.exit(crashes.length || violations.length ? 1 : 0);
})();
