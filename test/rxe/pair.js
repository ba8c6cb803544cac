#!/usr/bin/env node
// Runs INSIDE each guest of the pair part (from pair-guest.sh). Sets up the
// guest's NIC (its address from RXE_SELF) and rxe0 on it, then:
//   pair.js a   the agent: serves guest b's requests (start a command, read
//               its output, kill it, run a fault command, reset the device)
//               on a TCP control port on its own address, until told "bye"
//   pair.js b   the driver: runs the cases of pair-cases.js, each one's
//               server first (waiting until it listens), then its client,
//               then its fault steps; judges exit statuses and output lines;
//               writes $RXE_OUT/pair.tsv and both sides' logs to $RXE_OUT/pair/
// The guests share two links and nothing else: the test link (RXE_SELF,
// RXE_PEER; rxe0 is on it, and fault cases take it down) and a control link
// (RXE_CTRL_SELF, RXE_CTRL_PEER) that carries the agent's requests, so that
// a fault on the test link never cuts the driver off from the agent.
// Plain node, no dependencies: it starts quickly even under TCG.
'use strict';
const fs = require('fs');
const path = require('path');
const { Host, sleep } = require('./pair-host');
const { serve, connectAgent } = require('./pair-control');

const FIRST_CASE_PORT = 18800;
const role = process.argv[2];
const OUT = process.env.RXE_OUT;
const T0 = Date.now();
const log = (s) => process.stdout.write(`PAIR[${role} ${((Date.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${s}\n`);

// --- guest b: the driver -------------------------------------------------------
const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
const exitOk = (want = 0, rc) => {
  if (want === 'any') return true;
  if (want === 'nonzero') return rc !== 0 && rc !== null;
  return (Array.isArray(want) ? want : [want]).includes(rc);
};

/** One case: server, wait until it listens, client, fault steps; returns { result, notes, rcs }. */
async function runCase(c, port, hosts) {
  const deadline = Date.now() + (c.timeout ?? 60) * 1000;
  const sides = { server: { ...c.server, host: hosts[c.server.on] }, client: { ...c.client, host: hosts[c.client.on] } };
  const notes = [];
  await sides.server.host.start('server', c.server.cmd, port);
  let listening = false;
  while (!listening && Date.now() < deadline) {
    if ((await sides.server.host.status('server')).done) break;
    listening = await sides.server.host.listening(port);
    if (!listening) await sleep(300);
  }
  if (listening) {
    await sides.client.host.start('client', c.client.cmd, port);
    for (const step of c.faults ?? []) {
      const fired = await waitTrigger(step.when, sides, deadline);
      if (!fired) {
        notes.push(`fault step never triggered: ${describe(step.when)}`);
        break;
      }
      if (step.kill) {
        log(`  fault: kill -${step.signal ?? 'KILL'} the ${step.kill} (on ${sides[step.kill].on})`);
        await sides[step.kill].host.kill(step.kill, `SIG${step.signal ?? 'KILL'}`);
      } else {
        log(`  fault: on ${step.on}: ${step.run}`);
        const r = await hosts[step.on].run(step.run, port, step.timeout ?? 30);
        if (r.rc !== 0) notes.push(`fault step "${step.run}" on ${step.on} exited ${r.rc}: ${r.out.trim()}`);
      }
    }
  } else {
    notes.push(`the server did not listen on port ${port} in time`);
  }
  // Both sides must end by the deadline, unless a side may be left running (mayRun).
  const ended = {};
  for (const name of ['server', 'client']) {
    if (!listening && name === 'client') continue;
    for (;;) {
      const s = await sides[name].host.status(name);
      if (s.done || Date.now() >= deadline) {
        ended[name] = s.done;
        break;
      }
      const other = name === 'server' ? 'client' : 'server';
      if (sides[name].mayRun && (await sides[other].host.status(other)).done) {
        ended[name] = false;
        break;
      }
      await sleep(300);
    }
  }
  const st = {};
  for (const name of ['server', 'client']) st[name] = await sides[name].host.status(name);
  await hosts.a.killAll();
  await hosts.b.killAll();
  for (const name of ['server', 'client']) {
    const s = st[name];
    const side = sides[name];
    fs.writeFileSync(path.join(OUT, 'pair', `${slug(c.name)}.${name}.log`), `$ ${side.cmd}   (on ${side.on}, port ${port})\n${s.out}(exit ${s.rc})\n`);
    if (!listening && name === 'client') continue;
    if (!ended[name]) {
      if (!side.mayRun) notes.push(`the ${name} did not end within ${c.timeout ?? 60} s`);
      continue;
    }
    if (!exitOk(side.exit, s.rc)) notes.push(`the ${name} exited ${s.rc} (wanted ${JSON.stringify(side.exit ?? 0)})`);
    const lines = s.out.split('\n');
    for (const re of side.expect ?? []) {
      if (!lines.some((l) => re.test(l))) notes.push(`the ${name}'s output lacks ${re}`);
    }
  }
  if (c.bench && notes.length === 0) {
    const missing = recordBench(c, st.client.out);
    if (missing) notes.push(missing);
  }
  return { result: notes.length ? 'FAIL' : 'PASS', notes, rcs: [st.server.rc, st.client.rc] };
}

const describe = (when) => (when.after !== undefined ? `${when.after} s after the client started` : `the ${when.side} printing ${when.line}`);

/** Waits for a fault step's trigger: seconds after the client started, or a line in a side's output. */
async function waitTrigger(when, sides, deadline) {
  if (when.after !== undefined) {
    await sleep(when.after * 1000);
    return true;
  }
  while (Date.now() < deadline) {
    const s = await sides[when.side].host.status(when.side);
    if (s.out.split('\n').some((l) => when.line.test(l))) return true;
    if (s.done) return false;
    await sleep(300);
  }
  return false;
}

/**
 * The cases to run: the test cases, the benchmarks of bench/cm (RXE_PAIR_BENCH:
 * 'only' instead of the test cases, 'after' after them), or both.
 */
function caseList(quick) {
  const bench = process.env.RXE_PAIR_BENCH ?? '';
  const tests = bench === 'only' ? [] : require('./pair-cases');
  return bench ? [...tests, ...require('../../bench/cm/pair-cases').benchCases(quick)] : tests;
}

/** A bench case's figures from its client's output, appended to $RXE_OUT/bench.jsonl; a note when they are missing. */
function recordBench(c, out) {
  let figures;
  try {
    figures = c.bench.parse(out);
  } catch (e) {
    return `its figures could not be read: ${e.message}`;
  }
  if (!figures) return "the client's output has no figures";
  fs.appendFileSync(path.join(OUT, 'bench.jsonl'), `${JSON.stringify({ ...figures, name: c.name, group: c.bench.group, impl: c.bench.impl })}\n`);
  return undefined;
}

async function driver(local) {
  const quick = process.env.RXE_QUICK === '1';
  const cases = caseList(quick || process.env.RXE_BENCH_QUICK === '1');
  const only = process.env.RXE_PAIR_CASES ? new RegExp(process.env.RXE_PAIR_CASES) : undefined;
  // Destructive cases (they take a link or a device away) run last, each
  // followed by a reset of both hosts.
  const chosen = cases
    .filter((c) => (!only || only.test(c.name)) && (!quick || c.quick))
    .sort((x, y) => Number(!!x.destructive) - Number(!!y.destructive));
  fs.mkdirSync(path.join(OUT, 'pair'), { recursive: true });
  const tsv = path.join(OUT, 'pair.tsv');
  fs.writeFileSync(tsv, 'name\tresult\tseconds\tserver_rc\tclient_rc\tnote\n');
  await local.setupControl();
  const mine = await local.setupDevice();
  const peer = await connectAgent();
  const theirs = await peer.setupDevice();
  log(`rxe0 on ${mine.nic} (${process.env.RXE_SELF}, GID index ${mine.gid}); peer rxe0 on ${theirs.nic} (${process.env.RXE_PEER}, GID index ${theirs.gid})`);
  const hosts = { a: peer, b: local };
  let failed = 0;
  for (const [i, c] of chosen.entries()) {
    const t = Date.now();
    const skip = c.skip?.();
    let r;
    if (skip) {
      r = { result: 'SKIP', notes: [skip], rcs: ['-', '-'] };
    } else {
      try {
        r = await runCase(c, FIRST_CASE_PORT + i, hosts);
      } catch (e) {
        r = { result: 'FAIL', notes: [e.message], rcs: ['-', '-'] };
      }
      if (c.destructive || r.result === 'FAIL') {
        try {
          await Promise.all([local.killAll(), peer.killAll()]);
          await Promise.all([local.setupDevice(c.destructive), peer.setupDevice(c.destructive)]);
          // One after the other: each probes the other's CM on a port no case uses.
          await local.reachPeer(FIRST_CASE_PORT - 1);
          await peer.reachPeer(FIRST_CASE_PORT - 1);
        } catch (e) {
          r.notes.push(`reset after the case failed: ${e.message}`);
          r.result = 'FAIL';
        }
      }
    }
    const secs = ((Date.now() - t) / 1000).toFixed(1);
    if (r.result === 'FAIL') failed++;
    log(`${r.result} ${c.name} (server rc ${r.rcs[0]}, client rc ${r.rcs[1]}, ${secs}s)${r.notes.length ? `: ${r.notes.join('; ')}` : ''}`);
    fs.appendFileSync(tsv, `${[c.name, r.result, secs, r.rcs[0], r.rcs[1], r.notes.join('; ').replace(/[\t\n]/g, ' ')].join('\t')}\n`);
  }
  await peer.bye();
  return failed === 0 ? 0 : 1;
}

async function main() {
  const host = new Host();
  if (role === 'a') {
    await serve(host, log);
    return;
  }
  if (role !== 'b') throw new Error(`usage: pair.js a|b (got ${role})`);
  process.exit(await driver(host));
}

main().catch((e) => {
  log(`FAILED: ${e.message}`);
  process.exit(1);
});
