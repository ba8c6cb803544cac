// @ts-check
'use strict';
/**
 * Clients of the RPC server (server.js): each connects over rdma_cm, keeps
 * up to DEPTH calls in flight (credits), matches every answer to its call
 * by id and checks the result. Each connection's completions arrive on its
 * own CQs' `completions$` (the native fast path).
 *
 *   node examples/06-rpc-over-cm/client.js --host 198.18.0.1 --port 7400 --clients 8 [--calls 1000]
 *   node examples/06-rpc-over-cm/client.js [--clients 8]   (no host: server and clients in this process, on soft0)
 */
const { parseArgs } = require('util');
const { connect, credits } = require('rx-verbs');
const { MSG, OPERATIONS, writeRequest, readAnswer, expected } = require('./protocol');
const { startServer, DEPTH, RESOURCES } = require('./server');

const OP_RECV = 128;

/**
 * One client: `calls` calls over one connection. Resolves with how many
 * answers were wrong (a wrong id, a failed status or a wrong result).
 * @param {{ host: string, port: number, calls: number, seed: number }} options
 */
async function runClient({ host, port, calls, seed }) {
  /** @type {import('rx-verbs').Mr | undefined} */
  let inbox;
  /** @type {import('rx-verbs').Mr | undefined} */
  let outbox;
  // The receives go in before the connect request does: the answers find them.
  const conn = await connect({
    host,
    port,
    timeoutMs: 10_000,
    ...RESOURCES,
    prepare: (r) => {
      inbox = r.pd.allocMemory(DEPTH * MSG, { access: ['LOCAL_WRITE'] });
      outbox = r.pd.allocMemory(MSG);
      for (let s = 0; s < DEPTH; s++) r.qp.postRecv({ wrId: s, sg: { mr: inbox, offset: s * MSG, length: MSG } });
    },
  });
  const credit = credits({ capacity: DEPTH });
  /** @type {Map<number, { op: number, x: number }>} */
  const pending = new Map();
  let sent = 0;
  let answered = 0;
  let wrong = 0;
  const inMr = /** @type {import('rx-verbs').Mr} */ (inbox);
  const outMr = /** @type {import('rx-verbs').Mr} */ (outbox);
  const postRecv = (/** @type {number} */ slot) => conn.qp.postRecv({ wrId: slot, sg: { mr: inMr, offset: slot * MSG, length: MSG } });
  try {
    /** @type {import('rxjs').Subscription[]} */
    const subs = [];
    await new Promise((resolve, reject) => {
      const pump = () => {
        while (sent < calls && credit.tryWaitForCompletion()) {
          const id = sent++;
          const call = { op: id % OPERATIONS.length, x: (id * 7919 + seed) % 100_003 };
          pending.set(id, call);
          writeRequest(outMr.buffer, 0, { id, ...call });
          conn.qp.postSend({ wrId: id, sg: { mr: outMr }, inline: true }); // copied now: the buffer is free again
        }
      };
      subs.push(conn.recvCq.completions$.subscribe({
        next: (batch) => {
          for (let i = 0; i < batch.length; i++) {
            if (batch.status[i] !== 0) {
              reject(new Error(`RPC transport failed: ${batch.at(i)?.status}`));
              return;
            }
            if (batch.opcode[i] !== OP_RECV) continue;
            const slot = batch.wrIdLow(i);
            const answer = readAnswer(inMr.buffer, slot * MSG);
            postRecv(slot);
            const call = pending.get(answer.id);
            pending.delete(answer.id);
            if (!call || answer.status !== 0 || answer.result !== expected(call.op, call.x)) wrong++;
            answered++;
            credit.complete();
          }
          if (answered === calls) resolve(undefined);
          else pump();
        },
        error: reject,
      }));
      // The requests' send completions: only their status matters.
      subs.push(conn.sendCq.completions$.subscribe({
        next: (batch) => {
          const failed = batch.status.findIndex((st) => st !== 0);
          if (failed >= 0) reject(new Error(`RPC transport failed: ${batch.at(failed)?.status}`));
        },
        error: reject,
      }));
      subs.push(conn.disconnected$.subscribe(() => reject(new Error(`the server left after ${answered} of ${calls} answers`))));
      pump();
      if (calls === 0) resolve(undefined);
    }).finally(() => subs.forEach((sub) => sub.unsubscribe()));
    return wrong;
  } finally {
    conn.close();
    inMr.close();
    outMr.close();
  }
}

/**
 * `clients` clients at once against `host:port`; prints one line and
 * resolves true when every answer was right.
 * @param {{ host: string, port: number, clients: number, calls: number, log?: (line: string) => void }} options
 */
async function runClients({ host, port, clients, calls, log = console.log }) {
  const results = await Promise.all(Array.from({ length: clients }, (_, seed) => runClient({ host, port, calls, seed })));
  const wrong = results.reduce((a, b) => a + b, 0);
  log(`${clients} clients, ${clients * calls} calls, ${wrong} wrong`);
  return wrong === 0;
}

/** Server and clients in this process, on 127.0.0.1 (soft0's CM). */
async function demo({ clients = 8, calls = 1000 } = {}) {
  const server = startServer({ host: '127.0.0.1', port: 0 });
  try {
    const ok = await runClients({ host: '127.0.0.1', port: server.address?.port ?? 0, clients, calls });
    console.log(`server: ${server.stats.clients} clients, ${server.stats.calls} calls answered on one completion channel`);
    return ok;
  } finally {
    server.close();
  }
}

module.exports = { runClient, runClients, demo };

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      host: { type: 'string' },
      port: { type: 'string', default: '7400' },
      clients: { type: 'string', default: '8' },
      calls: { type: 'string', default: '1000' },
    },
  });
  const clients = Number(values.clients);
  const calls = Number(values.calls);
  const run = values.host === undefined ? demo({ clients, calls }) : runClients({ host: values.host, port: Number(values.port), clients, calls });
  run.then(
    (ok) => (process.exitCode = ok ? 0 : 1),
    (err) => {
      console.error(`client: ${err.message}`);
      process.exitCode = 1;
    },
  );
}
