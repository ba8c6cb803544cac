#!/usr/bin/env node
// The message layer (src/messages) across two hosts, for the rxe pair part
// (and in one process on soft0 for jest, test/integration/messages-pair.test.ts):
//
//   node test/rxe/messages-pair.js server <host> <port>
//       serves requests: the reply is the request's bytes, checked first
//       (every byte is derived from a seed in its first 8 bytes)
//   node test/rxe/messages-pair.js clients <host> <port>
//       MSG_CLIENTS connections (default 8) share MSG_REQUESTS requests
//       (default 10000) of random sizes from 0 B to MSG_MAX bytes (default
//       16 MiB; eager and rendezvous both ways, see size()); every byte of
//       every reply is checked; then one "done" request ends the server
//   MSG_SERVER_UNTIL=ended node test/rxe/messages-pair.js server <host> <port>
//       the same, until its first connection ends (the killed case)
//   node test/rxe/messages-pair.js killed <host> <port>
//       one connection sends a MSG_MAX request and prints "transferring";
//       the harness kills it mid-rendezvous (the server must survive)
//   node test/rxe/messages-pair.js both <case>      (server and clients in one process, soft0)
//
// rnrRetryCount 0 on every connection: a credit slip is a failed completion.
// The server prints one "ok:" line with its figures once the clients said
// "done" and it closed everything: every pooled buffer back (lent 0), fds
// as before the first connection (after the killed client's, too).
'use strict';
const fs = require('fs');
const { firstValueFrom } = require('rxjs');
const rx = require('../../dist');

const [role, a1, a2] = process.argv.slice(2);
const CLIENTS = Number(process.env.MSG_CLIENTS ?? 8);
const REQUESTS = Number(process.env.MSG_REQUESTS ?? 10_000);
const MAX = Number(process.env.MSG_MAX ?? 16 << 20);
const MESSAGES = { maxEager: 8192, depth: 32, maxMessage: MAX + 64 };
/** The server stops when its first connection ends (the killed case) instead of at "done". */
const UNTIL_ENDED = process.env.MSG_SERVER_UNTIL === 'ended';
const t0 = Date.now();
const say = (who, line) => process.stdout.write(`messages-pair ${who}: ${line}\n`);
const fds = () => fs.readdirSync('/proc/self/fd').length;
class Fail extends Error {}
const check = (ok, why) => {
  if (!ok) throw new Fail(why);
};

// ---- payloads: every byte follows from the seed in the first 8 --------------------
function fill(buf, seed) {
  // xorshift32 over the words after the seed; the tail bytes too.
  let x = seed >>> 0 || 1;
  const words = new Uint32Array(buf.buffer, buf.byteOffset, buf.length >>> 2);
  for (let i = 2; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  for (let i = words.length * 4; i < buf.length; i++) buf[i] = (seed + i) & 0xff;
}
/** A payload of `size` bytes for request `n` (sizes under 8 carry no seed: all bytes are n's). */
function payload(size, n) {
  const buf = Buffer.alloc(size);
  if (size < 8) {
    buf.fill(n & 0xff);
    return buf;
  }
  buf.writeUInt32LE(n >>> 0, 0);
  buf.writeUInt32LE(size >>> 0, 4);
  fill(buf, n * 2654435761);
  return buf;
}
/** Whether `data` is exactly what payload() makes for its seed. */
function intact(data) {
  if (data.length < 8) return data.every((b) => b === data[0]);
  const n = data.readUInt32LE(0);
  return data.readUInt32LE(4) === data.length && payload(data.length, n).equals(data);
}
/**
 * Sizes in [0, MAX]: 5% empty; LARGE of the rest log-uniform over
 * (maxEager, MAX] (rendezvous), the others log-uniform over [1, maxEager]
 * (eager). Every client's first two requests are 0 B and MAX. LARGE is 1
 * for the old all-log-uniform mix; 0.03 (the default) keeps 10,000
 * requests near the volume of 1,000 all-log-uniform ones (~1 GiB each
 * way), which TCG guests move in a few minutes.
 */
const LARGE = Number(process.env.MSG_LARGE ?? 0.03);
function size(rand, nth) {
  if (nth === 0) return 0;
  if (nth === 1) return MAX;
  if (rand() < 0.05) return 0;
  const eager = MESSAGES.maxEager;
  if (rand() >= LARGE) return Math.floor(Math.exp(rand() * Math.log(eager + 1)));
  return Math.min(MAX, eager + 1 + Math.floor(Math.exp(rand() * Math.log(MAX - eager))));
}
function prng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

// ---- the server ----------------------------------------------------------------------
async function server(host, port, listener = rx.listen({ host, port })) {
  say('server', `listening on ${host}:${listener.address.port}`);
  const base = fds();
  const conns = new Set();
  let served = 0;
  let bytes = 0;
  let ended = 0;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  listener.requests$.subscribe((request) => {
    rx.acceptMessages(request, { messages: MESSAGES, rnrRetryCount: 0 }).then(
      (mc) => {
        conns.add(mc);
        const end = () => {
          ended++;
          // The server of the killed case stops once its one client is gone.
          if (UNTIL_ENDED) done();
        };
        mc.connection.disconnected$.subscribe({ complete: end, error: end });
        mc.serve((req) => {
          if (req.length === 4 && req.text() === 'done') {
            done();
            return 'bye';
          }
          check(intact(req.data), `request of ${req.length} bytes arrived damaged`);
          served++;
          bytes += req.length;
          return req.data; // echoed: sent (READ by the peer) before the request is released
        });
      },
      (err) => say('server', `an accept failed: ${err.message}`),
    );
  });
  await finished;
  await new Promise((r) => setTimeout(r, 200));
  let lent = 0;
  let rendezvous = 0;
  let registrations = 0;
  for (const mc of conns) {
    const s = mc.stats;
    lent += s.lent;
    rendezvous += s.rendezvousReceived;
    registrations += s.registrations;
    mc.close();
  }
  listener.close();
  for (let i = 0; i < 50 && fds() !== base; i++) await new Promise((r) => setTimeout(r, 100));
  check(lent === 0, `${lent} buffers still lent after every reply went`);
  check(fds() === base, `fds ${base} before the first connection, ${fds()} after closing all`);
  return `${served} requests served (${(bytes / 2 ** 20).toFixed(1)} MiB, ${rendezvous} by rendezvous) over ${conns.size} connections (${ended} ended by their peers); every byte checked; lent 0; ${registrations} registrations; fds ${base} -> ${fds()}`;
}

// ---- the clients ---------------------------------------------------------------------
async function clients(host, port) {
  const conns = [];
  for (let i = 0; i < CLIENTS; i++) conns.push(await rx.connectMessages({ host, port, rnrRetryCount: 0, messages: MESSAGES, timeoutMs: 20_000 }));
  let next = 0;
  let bytes = 0;
  let largest = 0;
  const t = Date.now();
  await Promise.all(
    conns.map(async (mc, c) => {
      const rand = prng(0x9e3779b9 ^ (c + 1));
      for (let nth = 0; ; nth++) {
        const n = next++;
        if (n >= REQUESTS) return;
        const req = payload(size(rand, nth), n);
        const reply = await mc.request(req);
        check(reply.data.equals(req), `the reply to request ${n} (${req.length} bytes) differs`);
        reply.release();
        bytes += req.length;
        largest = Math.max(largest, req.length);
        if ((n + 1) % 1000 === 0) say('clients', `${n + 1} requests`);
      }
    }),
  );
  const took = (Date.now() - t) / 1000;
  const lent = conns.reduce((sum, mc) => sum + mc.stats.lent, 0);
  const steady = conns.reduce((sum, mc) => sum + mc.stats.registrations, 0);
  const reply = await conns[0].request('done');
  reply.release();
  for (const mc of conns) mc.close();
  check(lent === 0, `${lent} replies still lent`);
  return `${REQUESTS} requests over ${CLIENTS} connections, sizes 0..${largest} B (${(bytes / 2 ** 20).toFixed(1)} MiB each way) in ${took.toFixed(1)} s; every reply byte checked; ${steady} registrations`;
}

/** One connection sends a MAX request and announces it; the harness kills this process. */
async function killed(host, port) {
  const mc = await rx.connectMessages({ host, port, rnrRetryCount: 0, messages: MESSAGES, timeoutMs: 20_000 });
  const big = payload(MAX, 7);
  const pending = mc.request(big);
  say('killed', 'transferring');
  await pending; // the kill comes first on the pair; in one process (both), the reply
  return 'not killed (one process)';
}

async function main() {
  const watchdog = setTimeout(() => {
    say(role, `FAIL: hung after ${Date.now() - t0} ms`);
    process.exit(2);
  }, Number(process.env.MSG_TIMEOUT_MS ?? 600_000));
  watchdog.unref();
  if (role === 'server') say('server', `ok: ${await server(a1, Number(a2))}`);
  else if (role === 'clients') say('clients', `ok: ${await clients(a1, Number(a2))}`);
  else if (role === 'killed') say('killed', `ok: ${await killed(a1, Number(a2))}`);
  else if (role === 'both') {
    const listener = rx.listen({ host: '127.0.0.1', port: 0 });
    const served = server('127.0.0.1', 0, listener);
    const port = listener.address.port;
    if (a1 === 'killed') {
      // In one process the "kill" is a close() in the middle of the rendezvous.
      const mc = await rx.connectMessages({ host: '127.0.0.1', port, rnrRetryCount: 0, messages: MESSAGES });
      const pending = mc.request(payload(MAX, 7)).then(
        () => 'replied',
        (err) => err.name,
      );
      await new Promise((r) => setTimeout(r, 1));
      mc.close();
      say('killed', `ok: the request ended ${await pending}`);
      const last = await rx.connectMessages({ host: '127.0.0.1', port, rnrRetryCount: 0, messages: MESSAGES });
      (await last.request('done')).release();
      last.close();
    } else {
      say('clients', `ok: ${await clients('127.0.0.1', port)}`);
    }
    say('server', `ok: ${await served}`);
  } else throw new Fail('usage: messages-pair.js server|clients|killed <host> <port> | both [killed]');
}

main().then(
  () => process.exit(0),
  (err) => {
    say(role, `FAIL: ${err instanceof Fail ? err.message : err.stack}`);
    process.exit(1);
  },
);
