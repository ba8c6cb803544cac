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
const { spawn } = require('child_process');
const fs = require('fs');
const net = require('net');
const path = require('path');

const CONTROL_PORT = 18700;
const FIRST_CASE_PORT = 18800;
const role = process.argv[2];
const OUT = process.env.RXE_OUT;
const SELF = process.env.RXE_SELF;
const PEER = process.env.RXE_PEER;
const CTRL_SELF = process.env.RXE_CTRL_SELF;
const CTRL_PEER = process.env.RXE_CTRL_PEER;
const CALL_TIMEOUT_MS = 120_000;
const T0 = Date.now();
const log = (s) => process.stdout.write(`PAIR[${role} ${((Date.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${s}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs a shell command; resolves { rc, out } (rc 124 when it ran past timeoutS). */
function shell(cmd, env, timeoutS = 30) {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', cmd], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    const timer = setTimeout(() => {
      out += `(killed: ran past ${timeoutS} s)\n`;
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    }, timeoutS * 1000);
    child.on('error', (e) => { out += `${e.message}\n`; });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ rc: signal ? 124 : code, out });
    });
  });
}

// --- one host: its device and the commands it runs ---------------------------
/** The guest's RoCE v2 GID of an IPv4 address: ::ffff:a.b.c.d. */
const gidOf = (ip) => {
  const [a, b, c, d] = ip.split('.').map(Number);
  const hex = (x, y) => ((x << 8) | y).toString(16).padStart(4, '0');
  return `0000:0000:0000:0000:0000:ffff:${hex(a, b)}:${hex(c, d)}`;
};

/** The network device with this MAC address (run.js gives each link's NIC its own). */
function nicWithMac(mac) {
  return fs.readdirSync('/sys/class/net').find((n) => {
    try { return fs.readFileSync(`/sys/class/net/${n}/address`, 'utf8').trim() === mac; } catch { return false; }
  });
}

class Host {
  constructor() {
    this.procs = new Map();
    this.nic = nicWithMac(process.env.RXE_MAC);
    this.ctrlNic = nicWithMac(process.env.RXE_CTRL_MAC);
    this.gid = '';
  }

  /** The control link: up once, never touched by the cases. */
  async setupControl() {
    if (!this.ctrlNic) throw new Error(`no network device with MAC ${process.env.RXE_CTRL_MAC} (the control link)`);
    const r = await shell(`ip link set lo up && ip addr replace ${CTRL_SELF}/24 dev ${this.ctrlNic} && ip link set ${this.ctrlNic} up`);
    if (r.rc !== 0) throw new Error(`control link set-up failed: ${r.out.trim()}`);
  }

  /** Address, link up, rxe0 on the NIC, its GID of our address: also the reset after a fault case. */
  async setupDevice() {
    if (!this.nic) throw new Error(`no network device with MAC ${process.env.RXE_MAC} (the test link)`);
    const r = await shell(`ip addr replace ${SELF}/24 dev ${this.nic} && ip link set ${this.nic} up &&
      { [ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev ${this.nic}; }`);
    if (r.rc !== 0) throw new Error(`device set-up failed: ${r.out.trim()}`);
    const dir = '/sys/class/infiniband/rxe0/ports/1/gids';
    const want = gidOf(SELF);
    for (let i = 0; i < 100; i++) {
      const found = fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => {
        try { return fs.readFileSync(path.join(dir, f), 'utf8').trim() === want; } catch { return false; }
      }) : undefined;
      if (found !== undefined) {
        this.gid = found;
        return { nic: this.nic, gid: found };
      }
      await sleep(200);
    }
    throw new Error(`rxe0 has no GID ${want} after 20 s`);
  }

  env(port) {
    return { RXV_SELF: SELF, RXV_PEER: PEER, RXV_PORT: String(port), RXV_NIC: this.nic, RXV_GID: this.gid, RXV_DEV: 'rxe0' };
  }

  /** Starts a case's command in its own process group (so a kill takes all of it). */
  start(key, cmd, port) {
    const p = { out: '', done: false, rc: null };
    const child = spawn('bash', ['-c', cmd], { env: { ...process.env, ...this.env(port) }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    p.child = child;
    child.stdout.on('data', (b) => (p.out += b));
    child.stderr.on('data', (b) => (p.out += b));
    child.on('error', (e) => { p.out += `${e.message}\n`; });
    child.on('close', (code, signal) => {
      p.done = true;
      p.rc = signal ? 128 + (require('os').constants.signals[signal] ?? 0) : code;
    });
    this.procs.set(key, p);
    return true;
  }

  status(key) {
    const p = this.procs.get(key);
    return p ? { done: p.done, rc: p.rc, out: p.out } : { done: true, rc: 127, out: 'never started\n' };
  }

  kill(key, signal = 'SIGKILL') {
    const p = this.procs.get(key);
    if (p && !p.done) try { process.kill(-p.child.pid, signal); } catch { /* gone */ }
    return true;
  }

  /** Kills whatever a case left running. */
  async killAll() {
    for (const key of this.procs.keys()) this.kill(key);
    for (let i = 0; i < 50 && [...this.procs.values()].some((p) => !p.done); i++) await sleep(100);
    this.procs.clear();
    return true;
  }

  run(cmd, port, timeoutS) {
    return shell(cmd, this.env(port), timeoutS);
  }

  /** Whether something listens on the port: TCP (/proc/net/tcp*) or rdma_cm (rdma res show cm_id). */
  async listening(port) {
    const hex = port.toString(16).toUpperCase().padStart(4, '0');
    const tcp = new RegExp(`^ *\\d+: [0-9A-F]+:${hex} [0-9A-F]+:[0-9A-F]+ 0A `, 'm');
    for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
      try { if (tcp.test(fs.readFileSync(f, 'utf8'))) return true; } catch { /* no IPv6 */ }
    }
    const cm = await shell('rdma resource show cm_id');
    return new RegExp(`state LISTEN .*src-addr \\S+:${port}\\b`).test(cm.out);
  }
}

// --- guest a: the agent ------------------------------------------------------
async function agent(host) {
  await host.setupControl();
  await host.setupDevice();
  let leaving = false;
  // Nobody came: end rather than keep the VM up until the host stops it.
  const idle = setTimeout(() => { log('no driver within 300 s'); process.exit(1); }, 300_000);
  const server = net.createServer((sock) => {
    clearTimeout(idle);
    let buf = '';
    sock.on('data', async (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const { id, op, args } = JSON.parse(line);
        if (op === 'bye') {
          leaving = true;
          sock.end(`${JSON.stringify({ id, result: true })}\n`);
          await host.killAll();
          log('the driver is done');
          process.exit(0);
        }
        Promise.resolve()
          .then(() => host[op](...args))
          .then((result) => sock.write(`${JSON.stringify({ id, result })}\n`),
            (e) => sock.write(`${JSON.stringify({ id, error: e.message })}\n`));
      }
    });
    sock.on('close', () => {
      if (leaving) return;
      log('the driver went away');
      process.exit(1);
    });
  });
  server.listen(CONTROL_PORT, CTRL_SELF, () => log(`agent listening on ${CTRL_SELF}:${CONTROL_PORT}`));
}

/** The agent on the peer, with the Host methods as promises. */
async function connectAgent() {
  const deadline = Date.now() + 240_000;
  let sock;
  for (;;) {
    try {
      sock = await new Promise((resolve, reject) => {
        const s = net.connect(CONTROL_PORT, CTRL_PEER, () => resolve(s));
        s.once('error', reject);
      });
      break;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`the agent on ${CTRL_PEER}:${CONTROL_PORT} did not answer within 240 s (${e.message})`);
      await sleep(1000);
    }
  }
  const waiting = new Map();
  let next = 0;
  let buf = '';
  sock.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const { id, result, error } = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      const w = waiting.get(id);
      if (!w) continue; // it timed out
      waiting.delete(id);
      clearTimeout(w.timer);
      if (error !== undefined) w.reject(new Error(`peer: ${error}`));
      else w.resolve(result);
    }
  });
  sock.on('close', () => { for (const w of waiting.values()) w.reject(new Error('the agent connection closed')); });
  const call = (op, ...args) => new Promise((resolve, reject) => {
    const id = next++;
    const timer = setTimeout(() => {
      waiting.delete(id);
      reject(new Error(`the agent did not answer ${op} within ${CALL_TIMEOUT_MS / 1000} s`));
    }, CALL_TIMEOUT_MS);
    waiting.set(id, { resolve, reject, timer });
    sock.write(`${JSON.stringify({ id, op, args })}\n`);
  });
  // (not thenable: an async function returns it)
  return new Proxy({}, { get: (_, op) => (op === 'then' ? undefined : (...args) => call(op, ...args)) });
}

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

async function driver(local) {
  const cases = require('./pair-cases');
  const only = process.env.RXE_PAIR_CASES ? new RegExp(process.env.RXE_PAIR_CASES) : undefined;
  const quick = process.env.RXE_QUICK === '1';
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
  log(`rxe0 on ${mine.nic} (${SELF}, GID index ${mine.gid}); peer rxe0 on ${theirs.nic} (${PEER}, GID index ${theirs.gid})`);
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
          await Promise.all([local.setupDevice(), peer.setupDevice()]);
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
    await agent(host);
    return;
  }
  if (role !== 'b') throw new Error(`usage: pair.js a|b (got ${role})`);
  process.exit(await driver(host));
}

main().catch((e) => {
  log(`FAILED: ${e.message}`);
  process.exit(1);
});
