#!/usr/bin/env node
// Runs INSIDE the rxe VM (from guest.sh): the interop matrix of rx-verbs
// pingpong against rdma-core's ibv_rc_pingpong in ONE node process (every
// process start costs seconds under TCG). Our side is the CLI's own code
// (dist/cli/pingpong: runServer / runClient, what `rx-verbs pingpong` runs);
// ibv_rc_pingpong runs as a child process. Each case checks both exit
// statuses (ours: the run resolved) and both report lines, and appends a row
// to $RXE_OUT/interop.tsv; both sides' output goes to $RXE_OUT/interop/.
// usage: interop.js <gid-index> <first-tcp-port>   (cases on stdin:
//        "server client size iters events [mode]" lines, server/client =
//        ours|theirs; a sixth field, comma-separated words: srqN the --srq
//        mode with N QPs against ibv_srq_pingpong -q N, "ud" `pingpong --ud`
//        against ibv_ud_pingpong, "rc" the default; "chk" both sides with -c
//        (the server must find every page marked), "srvchk" the server only
//        with -c (it must report every page: the client marked none))
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const { runServer, runClient } = require(path.join(root, 'dist/cli/pingpong/run.js'));
const { CHECK_PAGE } = require(path.join(root, 'dist/cli/pingpong/check.js'));
const OUT = process.env.RXE_OUT;
const [gidIndex, firstPort] = process.argv.slice(2).map(Number);
const T0 = Date.now();
const log = (s) => process.stdout.write(`GUEST[${((Date.now() - T0) / 1000).toFixed(1).padStart(6)}s] ${s}\n`);

function options(c, port, server) {
  return {
    device: 'rxe0', ibPort: 1, gidIndex, size: c.size, iters: c.iters, rxDepth: 500, mtu: 1024, sl: 0,
    events: c.events, tcpPort: port, server, loopback: false, pipeline: 'operators', bind: '127.0.0.1', timeout: 60,
    srq: c.numQp > 0, numQp: c.numQp || 1,
    ud: c.ud, chk: withChk(c, server),
  };
}

/** Whether the side (`server`: the host a client connects to; undefined for the server) runs with -c. */
function withChk(c, server) {
  return c.chk === 'both' || (c.chk === 'server' && server === undefined);
}

function theirs(c, port, server) {
  const args = ['-d', 'rxe0', '-g', String(gidIndex), '-s', String(c.size), '-n', String(c.iters), '-p', String(port)];
  if (c.events) args.push('-e');
  if (c.numQp) args.push('-q', String(c.numQp));
  if (withChk(c, server)) args.push('-c');
  if (server) args.push(server);
  const child = spawn(c.numQp ? 'ibv_srq_pingpong' : c.ud ? 'ibv_ud_pingpong' : 'ibv_rc_pingpong', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
  const done = new Promise((resolve) => {
    child.on('error', (err) => { out += `spawn failed: ${err.message}\n`; resolve(127); });
    child.on('close', (code, signal) => { clearTimeout(timer); resolve(code ?? (signal ? 128 : 1)); });
  });
  return { done: done.then((rc) => ({ rc, out })) };
}

async function ours(c, port, server, onListening) {
  const lines = [];
  const print = (l) => {
    lines.push(l);
    if (lines.length === 1 && onListening) onListening(); // the server prints after it listens
  };
  try {
    if (server) await runClient(options(c, port, server), print);
    else await runServer(options(c, port, undefined), print);
    return { rc: 0, out: lines.join('\n') + '\n' };
  } catch (err) {
    return { rc: 1, out: `${lines.join('\n')}\nrx-verbs: ${err && err.message}\n` };
  }
}

/** Waits until something listens on TCP `port` (without connecting: the server accepts one client only). */
async function listening(port, ms) {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')} `;
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
      let text = '';
      try { text = fs.readFileSync(f, 'utf8'); } catch { continue; }
      if (text.split('\n').some((l) => { const c = l.trim().split(/\s+/); return c[1] && c[1].endsWith(hex.trim()) && c[3] === '0A'; })) return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

function reportOk(out, c) {
  const bytes = c.size * c.iters * 2;
  return new RegExp(`^${bytes} bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec$`, 'm').test(out)
    && new RegExp(`^${c.iters} iters in [0-9.]+ seconds = [0-9.]+ usec/iter$`, 'm').test(out);
}

/** -c's verdict in the server's output: no page reported when both marked, every page when the client did not. */
function chkOk(serverOut, c) {
  const reported = serverOut.split('\n').filter((l) => /^invalid data in page \d+$/.test(l));
  const expected = c.chk === 'server' ? Array.from({ length: Math.ceil(c.size / CHECK_PAGE) }, (_, i) => `invalid data in page ${i}`) : [];
  return JSON.stringify(reported) === JSON.stringify(expected);
}

async function runCase(c, port) {
  const t = Date.now();
  let srv;
  let cli;
  if (c.server === 'ours') {
    let startClient;
    const clientStarted = new Promise((r) => (startClient = r));
    const serverRun = ours(c, port, undefined, () => startClient());
    const first = await Promise.race([clientStarted.then(() => 'listening'), serverRun.then(() => 'ended')]);
    if (first === 'listening') {
      const client = theirs(c, port, '127.0.0.1');
      [srv, cli] = await Promise.all([serverRun, client.done]);
    } else {
      srv = await serverRun;
      cli = { rc: 125, out: 'not started: our server ended before listening\n' };
    }
  } else {
    const server = theirs(c, port);
    if (await listening(port, 30_000)) {
      cli = await ours(c, port, '127.0.0.1');
    } else {
      cli = { rc: 125, out: `not started: ${c.numQp ? 'ibv_srq_pingpong' : c.ud ? 'ibv_ud_pingpong' : 'ibv_rc_pingpong'} did not listen within 30 s\n` };
    }
    srv = await server.done;
  }
  const name = `${c.numQp ? `srq${c.numQp}-` : ''}${c.ud ? 'ud-' : ''}${c.chk ? `${c.chk === 'both' ? 'chk' : 'srvchk'}-` : ''}${c.server}-${c.client}-${c.size}-${c.events ? 'ev' : 'poll'}`;
  fs.writeFileSync(path.join(OUT, 'interop', `${name}.server.log`), srv.out);
  fs.writeFileSync(path.join(OUT, 'interop', `${name}.client.log`), cli.out);
  const ok = srv.rc === 0 && cli.rc === 0 && reportOk(srv.out, c) && reportOk(cli.out, c) && chkOk(srv.out, c);
  const secs = ((Date.now() - t) / 1000).toFixed(1);
  const mbit = (/= ([0-9.]+) Mbit\/sec$/m.exec(cli.out) || [])[1] || '-';
  fs.appendFileSync(path.join(OUT, 'interop.tsv'),
    [name, c.server, c.client, c.size, c.iters, c.events ? 'events' : 'poll', srv.rc, cli.rc, ok ? 'PASS' : 'FAIL', secs, mbit].join('\t') + '\n');
  log(`interop ${name.padEnd(28)} server=${c.server} rc=${srv.rc} client=${c.client} rc=${cli.rc}  ${ok ? 'PASS' : 'FAIL'} (${secs}s)`);
  if (!ok) {
    for (const [who, r] of [['server', srv], ['client', cli]]) {
      for (const l of r.out.trimEnd().split('\n').slice(-8)) process.stdout.write(`    ${who}| ${l}\n`);
    }
  }
  return ok;
}

async function main() {
  const cases = fs.readFileSync(0, 'utf8').split('\n').map((l) => l.trim().split(/\s+/)).filter((f) => f.length === 5 || f.length === 6)
    .map(([server, client, size, iters, events, mode]) => {
      const words = (mode || '').split(',');
      const srq = words.find((w) => /^srq\d+$/.test(w));
      return {
        server, client, size: Number(size), iters: Number(iters), events: events === '1',
        numQp: srq ? Number(srq.replace(/^srq/, '')) : 0,
        ud: words.includes('ud'),
        chk: words.includes('chk') ? 'both' : words.includes('srvchk') ? 'server' : undefined,
      };
    });
  let port = firstPort;
  let failed = 0;
  for (const c of cases) {
    if (c.server === 'ours' && c.client === 'ours') continue; // two node processes: guest.sh runs those with the CLI
    if (!(await runCase(c, port++))) failed++;
  }
  return failed === 0 ? 0 : 1;
}

main().then((rc) => process.exit(rc), (err) => { console.error(err); process.exit(1); });
