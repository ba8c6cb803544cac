// @ts-check
'use strict';
/**
 * Request/response RPC over SEND/RECV, routed by wr_id, flow-controlled with
 * credits.
 *
 * The client sends numbered requests ("square N"); the server answers each
 * with N*N. Every request's wr_id is its call id: the client's receive
 * completions carry the response, which is routed back to the caller's
 * Promise by that id. Credits keep the number of calls in flight within the
 * receive queue and CQ depth, so nothing overruns however many calls are made.
 *
 *   node examples/02-rpc.js [calls]
 */
const { filter, share } = require('rxjs');
const { openDevice, credits } = require('rx-verbs');

const CALLS = Number(process.argv[2] ?? 2000);
const DEPTH = 32; // calls in flight
const MSG = 16; // bytes per message: u32 call id, f64 value

const ctx = openDevice();
const channel = ctx.createCompChannel();
const clientCq = ctx.createCq({ cqe: DEPTH * 2, channel, context: 'client' });
const serverCq = ctx.createCq({ cqe: DEPTH * 2, channel, context: 'server' });
const pd = ctx.allocPd();
const cap = { maxSendWr: DEPTH, maxRecvWr: DEPTH, maxInlineData: MSG };
const client = pd.createQp({ sendCq: clientCq, recvCq: clientCq, cap });
const server = pd.createQp({ sendCq: serverCq, recvCq: serverCq, cap });
client.connect(server.endpoint());
server.connect(client.endpoint());

// One slot per call in flight on each side, for requests and responses.
const slots = (/** @type {number} */ n) => pd.registerMemory(Buffer.alloc(n * MSG), { access: ['LOCAL_WRITE'] });
const clientOut = slots(DEPTH);
const clientIn = slots(DEPTH);
const serverIn = slots(DEPTH);
const serverOut = slots(DEPTH);
const slotOf = (/** @type {number} */ id) => (id % DEPTH) * MSG;

// --- server: answer each request from the slot it arrived in -------------
for (let s = 0; s < DEPTH; s++) server.postRecv({ wrId: s, sg: { mr: serverIn, offset: s * MSG, length: MSG } });
serverCq.completions$.subscribe((batch) => {
  for (let i = 0; i < batch.length; i++) {
    if (batch.opcode[i] !== 128) continue; // our own send completions
    const slot = batch.wrIdLow(i);
    const id = serverIn.buffer.readUInt32LE(slot * MSG);
    const x = serverIn.buffer.readDoubleLE(slot * MSG + 8);
    serverOut.buffer.writeUInt32LE(id, slot * MSG);
    serverOut.buffer.writeDoubleLE(x * x, slot * MSG + 8);
    server.postRecv({ wrId: slot, sg: { mr: serverIn, offset: slot * MSG, length: MSG } });
    server.postSend({ wrId: id, sg: { mr: serverOut, offset: slot * MSG, length: MSG }, signaled: false, inline: true });
  }
});

// --- client: calls are Promises resolved by wr_id ------------------------
const responses$ = clientCq.completions$.pipe(share());
const credit = credits({ capacity: DEPTH });
/** @type {Map<number, (square: number) => void>} */
const pending = new Map(); // call id -> resolve
/** @type {{ id: number, x: number }[]} */
const queue = []; // calls waiting for a credit
let nextId = 0;

responses$.pipe(filter((b) => b.length > 0)).subscribe((batch) => {
  for (let i = 0; i < batch.length; i++) {
    if (batch.status[i] !== 0) throw new Error(`RPC transport failed: ${batch.at(i)?.status}`);
    if (batch.opcode[i] !== 128) continue;
    const id = batch.wrIdLow(i);
    pending.get(id)?.(clientIn.buffer.readDoubleLE(slotOf(id) + 8));
    pending.delete(id);
    credit.complete(); // the call's slot is free again
  }
  pump();
});

function pump() {
  while (queue.length > 0 && credit.tryWaitForCompletion()) {
    const { id, x } = /** @type {{ id: number, x: number }} */ (queue.shift());
    clientOut.buffer.writeUInt32LE(id, slotOf(id));
    clientOut.buffer.writeDoubleLE(x, slotOf(id) + 8);
    client.postRecv({ wrId: id, sg: { mr: clientIn, offset: slotOf(id), length: MSG } });
    client.postSend({ wrId: id, sg: { mr: clientOut, offset: slotOf(id), length: MSG }, signaled: false, inline: true });
  }
}

/**
 * Calls the server: resolves with x * x.
 * @param {number} x
 * @returns {Promise<number>}
 */
function square(x) {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    queue.push({ id, x });
    pump();
  });
}

(async () => {
  const t0 = process.hrtime.bigint();
  const results = await Promise.all(Array.from({ length: CALLS }, (_, i) => square(i)));
  const us = Number(process.hrtime.bigint() - t0) / 1e3;
  const wrong = results.filter((r, i) => r !== i * i).length;
  console.log(`${CALLS} calls, ${wrong} wrong, ${(us / CALLS).toFixed(1)} us/call with ${DEPTH} in flight`);
  ctx.close();
  process.exitCode = wrong === 0 ? 0 : 1;
})();
