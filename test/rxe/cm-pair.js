#!/usr/bin/env node
// One connection over rdma_cm through the raw binding, for the two-guest
// suite: the server listens and accepts, the client resolves and connects;
// each makes its PD, CQ and QP on the id's own device (openContext), moves
// the QP with modifyQp, sends n messages and checks every byte of the n it
// receives; then the client disconnects and both close everything.
//
//   node test/rxe/cm-pair.js server <bindHost> <port> [n]
//   node test/rxe/cm-pair.js client <host> <port> [n]
//   node test/rxe/cm-pair.js both <host> <port> [n]   (both roles in one process)
//
// RXV_CM_PROVIDER picks the CM ('rdmacm' by default; 'soft' for the
// in-process CM, which only `both` can use). Prints one summary line and
// exits 0 only when everything arrived intact and closed cleanly.
'use strict';
const { binding } = require('../../dist/native/binding');
const { Context } = require('../../dist');

const EV = {
  ADDR_RESOLVED: 0, ROUTE_RESOLVED: 2, CONNECT_REQUEST: 4, CONNECT_RESPONSE: 5,
  ESTABLISHED: 9, DISCONNECTED: 10,
};
const NAMES = ['ADDR_RESOLVED', 'ADDR_ERROR', 'ROUTE_RESOLVED', 'ROUTE_ERROR', 'CONNECT_REQUEST',
  'CONNECT_RESPONSE', 'CONNECT_ERROR', 'UNREACHABLE', 'REJECTED', 'ESTABLISHED', 'DISCONNECTED',
  'DEVICE_REMOVAL'];
const INIT = 1, RTR = 2, RTS = 3;
const SLOT = 512;
const TIMEOUT_MS = Number(process.env.CM_PAIR_TIMEOUT_MS || 60000);

const [role, host, portArg, nArg] = process.argv.slice(2);
const port = Number(portArg);
const n = Number(nArg || 16);
const provider = process.env.RXV_CM_PROVIDER || 'rdmacm';
if (!['server', 'client', 'both'].includes(role) || !host || !Number.isInteger(port) || !(n >= 1 && n <= 1024)) {
  process.stderr.write('usage: cm-pair.js server|client|both <host> <port> [n (1..1024)]\n');
  process.exit(2);
}

/** A CM channel whose events are awaited in order. */
function eventLog(channel) {
  const queue = [];
  let wake;
  channel.setOwner({ handleCmEvents(evs) { queue.push(...evs); if (wake) wake(); } });
  channel.watch(true);
  return {
    channel,
    async next(type) {
      while (queue.length === 0) await new Promise((r) => (wake = r));
      wake = undefined;
      const ev = queue.shift();
      if (ev.type !== type) {
        throw new Error(`expected ${NAMES[type]}, got ${NAMES[ev.type] || ev.type} (status ${ev.status})`);
      }
      return ev;
    },
  };
}

/** Message i from `tag`: its length and bytes depend on both. */
function message(tag, i) {
  const len = 1 + ((i * 61 + tag.length * 7) % (SLOT - 1));
  const b = Buffer.alloc(len);
  for (let k = 0; k < len; k++) b[k] = (i * 31 + k * 7 + tag.charCodeAt(0)) & 0xff;
  return b;
}

/** PD, CQ, QP and buffers on the id's own device; receives posted. */
function makeEnd(id) {
  const ctx = new Context(id.openContext());
  const cq = ctx.createCq({ cqe: 4 * n + 8 });
  const pd = ctx.allocPd();
  const qp = pd.createQp({ sendCq: cq, recvCq: cq, cap: { maxSendWr: n, maxRecvWr: n, maxSendSge: 1, maxRecvSge: 1 } });
  const buf = Buffer.alloc(2 * n * SLOT);
  const mr = pd.registerMemory(buf, { access: ['LOCAL_WRITE'] });
  return { id, ctx, cq, pd, qp, buf, mr };
}

function postRecvs(e) {
  for (let i = 0; i < n; i++) e.qp.postRecv({ wrId: i, sg: { mr: e.mr, offset: i * SLOT, length: SLOT } });
}

/** Sends n messages and checks the n received from `peerTag`. */
async function exchange(e, tag, peerTag) {
  for (let i = 0; i < n; i++) {
    const m = message(tag, i);
    const off = (n + i) * SLOT;
    m.copy(e.buf, off);
    e.qp.postSend({ wrId: 100000 + i, sg: { mr: e.mr, offset: off, length: m.length }, signaled: true });
  }
  let sends = 0, recvs = 0;
  while (sends < n || recvs < n) {
    const batch = e.cq.poll(64);
    if (batch.length === 0) {
      await new Promise((r) => setImmediate(r));
      continue;
    }
    for (const wc of batch.toArray()) {
      if (wc.status !== 'SUCCESS') throw new Error(`work completion failed: ${wc.status} (wr_id ${wc.wrId})`);
      if (wc.opcode !== 'RECV') {
        sends++;
        continue;
      }
      const i = Number(wc.wrId);
      const want = message(peerTag, i);
      const got = e.buf.subarray(i * SLOT, i * SLOT + wc.byteLen);
      if (wc.byteLen !== want.length || !got.equals(want)) throw new Error(`message ${i} from the ${peerTag} arrived corrupted`);
      recvs++;
    }
  }
  return recvs;
}

function closeEnd(e) {
  e.ctx.close();
}

async function server(b, log, listener) {
  const req = await log.next(EV.CONNECT_REQUEST);
  const e = makeEnd(req.id);
  for (const s of [INIT, RTR, RTS]) req.id.modifyQp(e.qp.native, s);
  postRecvs(e);
  req.id.accept({ qpNum: e.qp.qpNum, privateData: Buffer.from('rx-verbs cm-pair server') });
  await log.next(EV.ESTABLISHED);
  const verified = await exchange(e, 'server', 'client');
  await log.next(EV.DISCONNECTED);
  e.qp.close();
  const peer = req.id.peerAddress;
  req.id.close();
  closeEnd(e);
  return { verified, device: e.ctx.deviceName, peer, greeting: req.privateData.toString().replace(/\0+$/, '') };
}

async function client(b, log, target) {
  const id = log.channel.createId();
  id.resolveAddr({ host, port: target }, 5000);
  await log.next(EV.ADDR_RESOLVED);
  id.resolveRoute(5000);
  await log.next(EV.ROUTE_RESOLVED);
  const e = makeEnd(id);
  id.modifyQp(e.qp.native, INIT);
  postRecvs(e);
  id.connect({ qpNum: e.qp.qpNum, privateData: Buffer.from('rx-verbs cm-pair client') });
  const resp = await log.next(EV.CONNECT_RESPONSE);
  // INIT again now that the CM knows the responder resources (remote access).
  id.modifyQp(e.qp.native, INIT);
  id.modifyQp(e.qp.native, RTR);
  id.modifyQp(e.qp.native, RTS);
  // The active side of a connection whose QP is not attached to the id gets
  // no ESTABLISHED: rdma_establish sends the RTU and that is the end of it.
  id.establish();
  const verified = await exchange(e, 'client', 'server');
  id.disconnect();
  await log.next(EV.DISCONNECTED);
  e.qp.close();
  const peer = id.peerAddress;
  id.close();
  closeEnd(e);
  return { verified, device: e.ctx.deviceName, peer, greeting: resp.privateData.toString().replace(/\0+$/, '') };
}

function hostPort(a) {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

async function main() {
  const b = binding();
  const done = [];
  const logs = [];
  let listener;
  if (role !== 'client') {
    const log = eventLog(b.createCmChannel(provider));
    logs.push(log);
    listener = log.channel.createId();
    listener.bind({ host, port });
    listener.listen(8);
    done.push(server(b, log, listener).then((r) => ['server', r]));
  }
  if (role !== 'server') {
    const log = eventLog(b.createCmChannel(provider));
    logs.push(log);
    // `both` reaches its own listener (port 0: the one it was given).
    const target = role === 'both' ? listener.localAddress.port : port;
    done.push(client(b, log, target).then((r) => ['client', r]));
  }
  const results = await Promise.all(done);
  if (listener) listener.close();
  for (const log of logs) {
    log.channel.watch(false);
    log.channel.close();
  }
  const left = b.liveObjects();
  for (const [who, r] of results) {
    if (r.verified !== n) throw new Error(`${who}: ${r.verified} of ${n} messages verified`);
  }
  if (left !== 0) throw new Error(`${left} native objects left open`);
  const parts = results.map(([who, r]) => `${who} on ${r.device} (peer ${r.peer ? hostPort(r.peer) : '?'}, greeted "${r.greeting}")`);
  process.stdout.write(`cm-pair ${role} ok: ${n} messages each way verified over ${provider}; ${parts.join('; ')}\n`);
}

const timer = setTimeout(() => {
  process.stderr.write(`cm-pair ${role} FAILED: nothing finished within ${TIMEOUT_MS} ms\n`);
  process.exit(1);
}, TIMEOUT_MS);
timer.unref();
main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`cm-pair ${role} FAILED: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  },
);
