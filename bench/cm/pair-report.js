#!/usr/bin/env node
// The figures of the cross-host benchmarks (bench/cm/pair-cases.js), from
// the bench.jsonl the pair driver wrote in guest b: one JSON file and a
// printed table. Every figure is one that was measured: the connection
// set-up percentiles over all rounds' samples merged; for the accept rate
// and the ping-pong, each variant's best round (the emulator is noisy, as
// the soft-device benchmarks keep the best round); ratios from one boot.
//
//   node bench/cm/pair-report.js <bench.jsonl> <out.json>
//   node bench/cm/pair-report.js --check <out.json>   exit 1 unless every ratio is there
'use strict';
const fs = require('fs');
const path = require('path');

/** The ratios a complete run has (`--check` and CI look for each). */
const RATIOS = ['connectP50RatioToNative', 'connectP99RatioToNative', 'acceptRateRatioToNative', 'pingpongRatioToNative'];

const at = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

/** One variant's merged connection set-up samples. */
function connectStats(rows) {
  const us = Float64Array.from(rows.flatMap((r) => r.us)).sort();
  // The client's CPU per connection (best round): how much of a set-up is the client's own work.
  const cpu = rows.map((r) => r.cpuUsPerConnection).filter((x) => typeof x === 'number');
  return { rounds: rows.length, samples: us.length, p50Us: at(us, 0.5), p99Us: at(us, 0.99), roundP50Us: rows.map((r) => r.p50Us), cpuUsPerConnection: cpu.length ? Math.min(...cpu) : undefined };
}

/** Builds the results object from the records of one boot. */
function summarize(records, meta) {
  const pick = (group, impl) => records.filter((r) => r.group === group && r.impl === impl);
  const results = { meta, targets: [] };
  const c = { native: pick('connect', 'native'), ours: pick('connect', 'ours') };
  if (c.native.length && c.ours.length) {
    const native = connectStats(c.native);
    const ours = connectStats(c.ours);
    results.connect = { native, ours };
    results.connectP50RatioToNative = ours.p50Us / native.p50Us;
    results.connectP99RatioToNative = ours.p99Us / native.p99Us;
  }
  const a = { native: pick('accept', 'native'), ours: pick('accept', 'ours') };
  if (a.native.length && a.ours.length) {
    const best = (rows) => rows.reduce((x, y) => (y.perSecond > x.perSecond ? y : x));
    const shape = (rows) => ({ rounds: rows.length, connections: best(rows).connections, inflight: best(rows).inflight, perSecond: best(rows).perSecond, roundPerSecond: rows.map((r) => r.perSecond) });
    results.accept = { native: shape(a.native), ours: shape(a.ours) };
    results.acceptRateRatioToNative = results.accept.ours.perSecond / results.accept.native.perSecond;
  }
  const p = { native: pick('pingpong', 'native'), ours: pick('pingpong', 'ours') };
  if (p.native.length && p.ours.length) {
    const best = (rows) => rows.reduce((x, y) => (y.usecPerIter < x.usecPerIter ? y : x));
    const shape = (rows) => ({ rounds: rows.length, iters: best(rows).iters, usecPerIter: best(rows).usecPerIter, roundUsecPerIter: rows.map((r) => r.usecPerIter) });
    results.pingpong = { native: shape(p.native), ours: shape(p.ours) };
    results.pingpongRatioToNative = results.pingpong.ours.usecPerIter / results.pingpong.native.usecPerIter;
  }
  const target = (name, goal, value, met) => {
    if (value !== undefined) results.targets.push({ name, target: goal, value, met: met(value) });
  };
  target('connect->established p50, ours / native', '<= 1.2', results.connectP50RatioToNative, (v) => v <= 1.2);
  target('RC ping-pong -e round trip (mean usec/iter), ours / ibv_rc_pingpong', '<= 1.2', results.pingpongRatioToNative, (v) => v <= 1.2);
  return results;
}

const f = (x, d = 1) => (x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d));

/** The printed tables. */
function format(r) {
  const rows = [];
  const m = r.meta;
  rows.push(`rx-verbs bench across two rxe guests (${m.quick ? 'quick' : 'full'}), ${m.date}: ${m.note}`);
  if (r.connect) {
    const { native, ours } = r.connect;
    rows.push('', 'Connection set-up, connect -> established (us), one at a time against cm-loop\'s server');
    rows.push('variant                      samples  p50       p99       client CPU/conn  per-round p50');
    for (const [name, s] of [['cm-loop (librdmacm, C)', native], ['rx-verbs connect()', ours]]) {
      rows.push(`${name.padEnd(28)} ${String(s.samples).padEnd(8)} ${f(s.p50Us).padEnd(9)} ${f(s.p99Us).padEnd(9)} ${f(s.cpuUsPerConnection).padEnd(16)} ${s.roundP50Us.map((x) => f(x)).join(' ')}`);
    }
    rows.push(`ratio ours / native          p50 ${f(r.connectP50RatioToNative, 2)}   p99 ${f(r.connectP99RatioToNative, 2)}`);
  }
  if (r.accept) {
    const { native, ours } = r.accept;
    rows.push('', `Accept rate of one listener, connections/s (cm-loop client, ${native.connections} connections, ${native.inflight} in flight; best round)`);
    rows.push(`cm-loop server (C)           ${f(native.perSecond)}   rounds ${native.roundPerSecond.map((x) => f(x)).join(' ')}`);
    rows.push(`rx-verbs Listener            ${f(ours.perSecond)}   rounds ${ours.roundPerSecond.map((x) => f(x)).join(' ')}`);
    rows.push(`ratio ours / native          ${f(r.acceptRateRatioToNative, 2)}`);
  }
  if (r.pingpong) {
    const { native, ours } = r.pingpong;
    rows.push('', `RC ping-pong, event mode, against ibv_rc_pingpong -e's server (mean usec/iter as both report it, ${native.iters} iters; best round)`);
    rows.push(`ibv_rc_pingpong -e           ${f(native.usecPerIter, 2)}   rounds ${native.roundUsecPerIter.map((x) => f(x, 2)).join(' ')}`);
    rows.push(`rx-verbs pingpong -e (completions$) ${f(ours.usecPerIter, 2)}   rounds ${ours.roundUsecPerIter.map((x) => f(x, 2)).join(' ')}`);
    rows.push(`ratio ours / native          ${f(r.pingpongRatioToNative, 2)}`);
  }
  if (r.targets.length) {
    rows.push('', 'Targets');
    for (const t of r.targets) rows.push(`  ${t.name}: ${t.target}, measured ${f(t.value, 3)} ${t.met ? 'met' : 'NOT met'}`);
  }
  return rows.join('\n');
}

/** The ratios `--check` wants that `r` lacks. */
const missingRatios = (r) => RATIOS.filter((k) => typeof r[k] !== 'number' || !Number.isFinite(r[k]));

function main(argv) {
  if (argv[0] === '--check' && argv[1]) {
    const missing = missingRatios(JSON.parse(fs.readFileSync(argv[1], 'utf8')));
    if (missing.length) {
      process.stderr.write(`bench pair: ${argv[1]} lacks ${missing.join(', ')}\n`);
      return 1;
    }
    process.stderr.write(`bench pair: ${argv[1]} has every ratio (${RATIOS.join(', ')})\n`);
    return 0;
  }
  const [input, output, quick] = argv;
  if (!input || !output) {
    process.stderr.write('usage: pair-report.js <bench.jsonl> <out.json> [quick] | pair-report.js --check <out.json>\n');
    return 2;
  }
  const records = fs.existsSync(input) ? fs.readFileSync(input, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  const r = summarize(records, { quick: quick === 'quick', date: new Date().toISOString(), note: 'QEMU/TCG guests, 1 vCPU each, rxe0 on virtio-net; figures are relative (ratios), not hardware performance' });
  fs.mkdirSync(path.dirname(path.resolve(output)), { recursive: true });
  fs.writeFileSync(output, `${JSON.stringify(r, null, 2)}\n`);
  process.stdout.write(`${format(r)}\n`);
  process.stderr.write(`bench pair: results written to ${output}\n`);
  const missing = missingRatios(r);
  if (missing.length) process.stderr.write(`bench pair: no figures for ${missing.join(', ')} (see the pair cases' logs)\n`);
  return missing.length ? 1 : 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));

module.exports = { summarize, format, missingRatios, RATIOS };
