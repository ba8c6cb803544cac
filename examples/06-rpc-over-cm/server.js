// @ts-check
'use strict';
/**
 * An RPC server over rdma_cm: it accepts any number of clients, puts every
 * connection's CQ on ONE completion channel, and answers each request (see
 * protocol.js) from one rx-verbs pipeline on that channel:
 *
 *   channel.events$ -> ackEvents() -> rearm() -> drainCq() -> route by QP number
 *
 * Each accepted connection borrows the server's PD and channel and gets its
 * own CQ on that channel; when a client leaves, its connection is closed
 * and its CQ goes with it, the channel and the pipeline stay.
 *
 *   node examples/06-rpc-over-cm/server.js --host 198.18.0.1 --port 7400 [--clients 8]
 *   node examples/06-rpc-over-cm/server.js                 (no host: server and clients in this process, on soft0)
 */
const { parseArgs } = require('util');
const { openDevice, listen, ackEvents, rearm, drainCq, cmProviderFor, softCmAddresses } = require('rx-verbs');
const { MSG, readRequest, writeAnswer } = require('./protocol');

/** Requests a client may have in flight (the receives the server keeps posted per client). */
const DEPTH = 16;
/** The QP and CQ of each connection: answers go inline, so a send never waits on a buffer. */
const RESOURCES = { cqe: 4 * DEPTH, cap: { maxSendWr: 2 * DEPTH, maxRecvWr: DEPTH, maxInlineData: MSG } };
const OP_RECV = 128;
const WC_FLUSH = 5;

/** The soft device whose CM answers on `host`, if one does: its memory must come from that device. */
function deviceFor(/** @type {string} */ host) {
  if (cmProviderFor(host) !== 'soft') return undefined; // a real device: RX_VERBS_DEVICE or the first one
  return Object.entries(softCmAddresses()).find(([, hosts]) => hosts.includes(host))?.[0];
}

/**
 * Starts a server on `host:port` (port 0: any free one).
 * @param {{ host: string, port: number, device?: string, log?: (line: string) => void }} options
 */
function startServer({ host, port, device, log = () => undefined }) {
  const listener = listen({ host, port, backlog: 128 });
  const ctx = openDevice(device ?? deviceFor(host));
  const channel = ctx.createCompChannel(); // every connection's CQ raises its events here
  const pd = ctx.allocPd();
  /** @type {Map<number, { serve(batch: import('rx-verbs').WcBatch, i: number): void }>} */
  const byQp = new Map();
  /** @type {Set<() => void>} */
  const closers = new Set();
  const stats = { clients: 0, left: 0, calls: 0, unknown: 0 };
  /** @type {((s: typeof stats) => void)[]} */
  const onLeave = [];

  const pipeline = channel.events$.pipe(ackEvents({ every: 16 }), rearm(), drainCq({ max: 64 })).subscribe({
    next: (batch) => {
      for (let i = 0; i < batch.length; i++) byQp.get(batch.qpNum[i])?.serve(batch, i);
    },
    error: (err) => log(`server: completion channel failed: ${err.message}`),
  });

  const requests = listener.requests$.subscribe((request) => {
    const peer = `${request.peerAddress?.host}:${request.peerAddress?.port}`;
    request.accept({ pd, channel, ...RESOURCES }).then(
      (conn) => welcome(conn, peer),
      (err) => log(`server: ${peer} failed to connect: ${err.message}`),
    );
  });

  /** @param {import('rx-verbs').Connection} conn @param {string} peer */
  function welcome(conn, peer) {
    stats.clients++;
    const inbox = pd.allocMemory(DEPTH * MSG, { access: ['LOCAL_WRITE'] });
    const outbox = pd.allocMemory(MSG);
    let calls = 0;
    const postRecv = (/** @type {number} */ slot) =>
      conn.qp.postRecv({ wrId: slot, sg: { mr: inbox, offset: slot * MSG, length: MSG } });
    const close = () => {
      if (!closers.delete(close)) return;
      byQp.delete(conn.qp.qpNum);
      conn.close();
      inbox.close();
      outbox.close();
    };
    byQp.set(conn.qp.qpNum, {
      serve(batch, i) {
        const status = batch.status[i];
        if (status === WC_FLUSH) return; // the client left; its receives come back flushed
        if (status !== 0) {
          log(`server: ${peer}: ${batch.at(i)?.status}`);
          close();
          return;
        }
        if (batch.opcode[i] !== OP_RECV) return; // our answers' send completions
        const slot = batch.wrIdLow(i);
        const request = readRequest(inbox.buffer, slot * MSG);
        writeAnswer(request, outbox.buffer, 0);
        postRecv(slot); // the slot is free again: the request was read
        conn.qp.postSend({ wrId: slot, sg: { mr: outbox }, inline: true });
        calls++;
        stats.calls++;
      },
    });
    closers.add(close);
    // Armed before the receives are posted: no completion can come before the arm.
    conn.sendCq.requestNotify();
    for (let s = 0; s < DEPTH; s++) postRecv(s);
    log(`server: ${peer} connected`);
    conn.disconnected$.subscribe(() => {
      close();
      stats.left++;
      log(`server: ${peer} left after ${calls} calls`);
      for (const fn of onLeave) fn(stats);
    });
  }

  return {
    /** Where it listens. */
    address: listener.address,
    stats,
    /** Calls `fn` with the stats each time a client leaves. */
    onLeave(/** @type {(s: typeof stats) => void} */ fn) {
      onLeave.push(fn);
    },
    /** Stops listening, closes every connection, then the channel and the device. */
    close() {
      requests.unsubscribe();
      listener.close();
      for (const close of [...closers]) close();
      pipeline.unsubscribe();
      ctx.close();
    },
  };
}

module.exports = { startServer, DEPTH, RESOURCES };

if (require.main === module) {
  const { values } = parseArgs({
    options: {
      host: { type: 'string' },
      port: { type: 'string', default: '7400' },
      clients: { type: 'string', default: '0' },
      device: { type: 'string' },
    },
  });
  if (values.host === undefined) {
    // No address: the whole example in this process (soft0's CM lives in one process).
    require('./client').demo().then((ok) => (process.exitCode = ok ? 0 : 1));
  } else {
    const server = startServer({ host: values.host, port: Number(values.port), device: values.device, log: console.log });
    console.log(`server: listening on ${values.host}:${server.address?.port}`);
    const exitAfter = Number(values.clients);
    server.onLeave((s) => {
      if (exitAfter > 0 && s.left >= exitAfter) {
        console.log(`server: ${s.clients} clients, ${s.calls} calls answered`);
        server.close();
      }
    });
    const stop = () => {
      console.log(`server: ${server.stats.clients} clients, ${server.stats.calls} calls answered`);
      server.close();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
}
