// @ts-check
'use strict';
/**
 * One server, many connections, one pool of receive buffers.
 *
 * The server has ONE shared receive queue (SRQ), ONE completion queue on ONE
 * completion channel, and a thousand RC queue pairs created on the SRQ. It
 * posts its receive buffers once, to the SRQ, instead of per connection:
 * whichever QP a message arrives on takes the next buffer of the pool. Each
 * completion says which QP (`qpNum`) the message came in on; the server
 * checks every message against it, then hands the buffer back to the pool.
 *
 * The clients (here in the same process, each its own QP) send as fast as
 * credits allow: a send is posted only when a credit can be taken, so their
 * completion queue can never overrun.
 *
 *   node examples/07-srq-server.js [connections] [messages-per-connection]
 */
const { openDevice, credits } = require('rx-verbs');

const QPS = Number(process.argv[2] ?? 1000);
const PER_QP = Number(process.argv[3] ?? 4);
const MSG = 64;
const POOL = 256; // receive buffers shared by every connection

const ctx = openDevice();
const channel = ctx.createCompChannel();
const pd = ctx.allocPd();

// ---- the server: one SRQ, one CQ, QPS queue pairs ------------------------
const srq = pd.createSrq({ maxWr: POOL });
const serverCq = ctx.createCq({ cqe: POOL, channel, context: 'server' });
const pool = pd.registerMemory(Buffer.alloc(POOL * MSG));
const servers = [];
const byQpNum = new Map(); // server QP number -> index of the connection
for (let i = 0; i < QPS; i++) {
  const qp = pd.createQp({ sendCq: serverCq, recvCq: serverCq, srq, cap: { maxSendWr: 1 } });
  servers.push(qp);
  byQpNum.set(qp.qpNum, i);
}
const recycle = (/** @type {number} */ slot) => srq.postRecv({ wrId: slot, sg: { mr: pool, offset: slot * MSG, length: MSG } });
for (let slot = 0; slot < POOL; slot++) recycle(slot);

// ---- the clients: one QP per connection, one CQ ---------------------------
const clientCq = ctx.createCq({ cqe: 128, channel, context: 'clients' });
const clients = servers.map((server) => {
  const qp = pd.createQp({ sendCq: clientCq, recvCq: clientCq, cap: { maxSendWr: PER_QP, maxRecvWr: 1 } });
  qp.connect(server.endpoint());
  server.connect(qp.endpoint());
  return qp;
});
const out = pd.registerMemory(Buffer.alloc(QPS * PER_QP * MSG));

/** Message `k` of connection `i`: who sent it, its number, and a checksum over the rest. */
function fill(/** @type {number} */ i, /** @type {number} */ k) {
  const b = out.buffer.subarray((i * PER_QP + k) * MSG, (i * PER_QP + k + 1) * MSG);
  b.writeUInt32LE(i, 0);
  b.writeUInt32LE(k, 4);
  for (let j = 12; j < MSG; j++) b[j] = (i * 31 + k * 7 + j) & 0xff;
  b.writeUInt32LE(checksum(b), 8);
  return { mr: out, offset: (i * PER_QP + k) * MSG, length: MSG };
}
function checksum(/** @type {Buffer} */ b) {
  let s = 0;
  for (let j = 12; j < MSG; j++) s = (s * 33 + b[j]) >>> 0;
  return s;
}

// ---- the server's completion loop ------------------------------------------
const total = QPS * PER_QP;
const next = new Uint32Array(QPS); // the message number expected next on each connection
let received = 0;
let wrong = 0;
const serverSub = serverCq.completions$.subscribe((batch) => {
  for (let n = 0; n < batch.length; n++) {
    const slot = Number(batch.wrId[n]);
    const msg = pool.buffer.subarray(slot * MSG, (slot + 1) * MSG);
    const conn = byQpNum.get(batch.qpNum[n]);
    const ok =
      batch.status[n] === 0 &&
      batch.byteLen[n] === MSG &&
      conn !== undefined &&
      msg.readUInt32LE(0) === conn && // it came in on its own connection's QP
      msg.readUInt32LE(4) === next[conn] && // in order on that connection
      msg.readUInt32LE(8) === checksum(msg); // and intact
    if (!ok) wrong++;
    if (conn !== undefined) next[conn]++;
    received++;
    recycle(slot); // the buffer goes back to the pool for any connection
  }
  if (received === total) finish();
});

// ---- the clients' sends, gated by credits ----------------------------------
const sendDone$ = clientCq.completions$;
const credit = credits({ capacity: clientCq.cqe, release$: sendDone$ });
let posted = 0;
let sendErrors = 0;
function pump() {
  // Round robin over the connections: message k of every connection, then k + 1.
  while (posted < total && credit.tryWaitForCompletion()) {
    const i = posted % QPS;
    const k = Math.floor(posted / QPS);
    clients[i].postSend({ wrId: posted++, sg: fill(i, k) });
  }
}
const clientSub = sendDone$.subscribe((batch) => {
  for (let n = 0; n < batch.length; n++) if (batch.status[n] !== 0) sendErrors++;
  pump();
});
pump();

function finish() {
  serverSub.unsubscribe();
  clientSub.unsubscribe();
  credit.close();
  console.log(`${QPS} connections on one SRQ of ${srq.query().maxWr} receives, one CQ, one completion channel`);
  console.log(`${received} messages, ${wrong} wrong, ${sendErrors} send errors`);
  ctx.close();
  if (wrong || sendErrors) process.exitCode = 1;
}
