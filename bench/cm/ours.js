#!/usr/bin/env node
// The rx-verbs side of the cross-host connection benchmarks
// (bench/cm/README.md), against cm-loop (the native librdmacm loop) on the
// other guest. Uses the built package (dist/), as users do.
//
//   node bench/cm/ours.js connect HOST PORT COUNT [WARMUP]   connect() COUNT times, one after another
//   node bench/cm/ours.js listen HOST PORT COUNT    a Listener accepting COUNT connections
//
// connect times each connection from the call to established (the promise
// settling: address and route resolution, PD, CQ on a completion channel,
// QP, connect), closes it and starts the next; it prints one human line
// and one `BENCH {json}` line. WARMUP connections (default 0) go first and
// are not counted (the first one opens the device), as cm-loop's. listen accepts every request with the same
// resources cm-loop makes, closes each connection once its peer
// disconnected, and exits when COUNT have come and gone.
'use strict';
const { performance } = require('perf_hooks');
const { connect, listen } = require('../../dist');

/** What cm-loop makes for a connection: one CQ of 32 for both queues and 16 WRs each way. */
const RESOURCES = { cqe: 32, sharedCq: true, cap: { maxSendWr: 16, maxRecvWr: 16, maxSendSge: 1, maxRecvSge: 1 } };

const [mode, host, portArg, countArg, warmupArg = '0'] = process.argv.slice(2);
const port = Number(portArg);
const count = Number(countArg);
const warmup = Number(warmupArg);

const at = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

async function runConnect() {
  for (let i = 0; i < warmup; i++) (await connect({ host, port, ...RESOURCES })).close();
  const us = new Float64Array(count);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    const conn = await connect({ host, port, ...RESOURCES });
    us[i] = (performance.now() - t) * 1000;
    conn.close();
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // Where a set-up's time goes: this process's CPU (JS, the addon, syscalls) per connection.
  const cpuUsPerConnection = (cpu.user + cpu.system) / count;
  const s = Float64Array.from(us).sort();
  const p50 = at(s, 0.5);
  const p99 = at(s, 0.99);
  process.stdout.write(`ours connect: ${count} connections (1 in flight) in ${seconds.toFixed(3)} s = ${(count / seconds).toFixed(1)} conn/s; connect->established p50 ${p50.toFixed(1)} us, p99 ${p99.toFixed(1)} us; CPU ${cpuUsPerConnection.toFixed(1)} us a connection\n`);
  process.stdout.write(`BENCH ${JSON.stringify({ impl: 'ours', connections: count, inflight: 1, seconds, perSecond: count / seconds, p50Us: p50, p99Us: p99, cpuUsPerConnection, us: Array.from(us, (x) => Math.round(x * 1000) / 1000) })}\n`);
}

function runListen() {
  return new Promise((resolve, reject) => {
    const listener = listen({ host, port, backlog: 128 });
    let accepted = 0;
    let closed = 0;
    let first = 0;
    const finish = () => {
      const seconds = (performance.now() - first) / 1000;
      sub.unsubscribe();
      listener.close();
      process.stdout.write(`ours listen: ${accepted} accepted, ${closed} closed; first request to last close ${seconds.toFixed(3)} s\n`);
      resolve();
    };
    const sub = listener.requests$.subscribe({
      next: (request) => {
        if (first === 0) first = performance.now();
        request.accept(RESOURCES).then(
          (conn) => {
            accepted++;
            conn.disconnected$.subscribe(() => {
              conn.close();
              if (++closed === count) finish();
            });
          },
          (err) => {
            // A client that gave up: counted as closed, as cm-loop's server does.
            process.stderr.write(`ours listen: accept failed: ${err.message}\n`);
            if (++closed === count) finish();
          },
        );
      },
      error: reject,
    });
    process.stdout.write(`ours listen: listening on ${host}:${port}\n`);
  });
}

if (!['connect', 'listen'].includes(mode) || !host || !(port > 0) || !(count > 0) || !(Number.isInteger(warmup) && warmup >= 0)) {
  process.stderr.write('usage: node bench/cm/ours.js connect HOST PORT COUNT [WARMUP] | listen HOST PORT COUNT\n');
  process.exit(2);
}
(mode === 'connect' ? runConnect() : runListen()).then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`ours ${mode}: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
