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
 * own CQs on that channel; its receives are posted in `prepare`, before the
 * accept goes out. When a client leaves, its connection is closed and its
 * CQs go with it; the channel and the pipeline stay.
 *
 *   node examples/06-rpc-over-cm/server.js --host 198.18.0.1 --port 7400 [--clients 8]
 *   node examples/06-rpc-over-cm/server.js                 (no host: server and clients in this process, on soft0)
 */
const { parseArgs } = require('util');
const { openCmContext, releaseCmContext, listen, ackEvents, rearm, drainCq } = require('rx-verbs');
const { MSG, readRequest, writeAnswer } = require('./protocol');

/** Requests a client may have in flight (the receives the server keeps posted per client). */
const DEPTH = 16;
/** The QP and CQ of each connection: answers go inline, so a send never waits on a buffer. */
const RESOURCES = { cqe: 4 * DEPTH, cap: { maxSendWr: 2 * DEPTH, maxRecvWr: DEPTH, maxInlineData: MSG } };
const OP_RECV = 128;
const WC_FLUSH = 5;

/**
 * Starts a server on `host:port` (port 0: any free one).
 * @param {{ host: string, port: number, log?: (line: string) => void }} options
 */
function startServer({ host, port, log = () => undefined }) {
  const listener = listen({ host, port, backlog: 128 });
  // The CM's own device context: on rdma_cm a connection's QP must be made
  // on it, so the shared PD and channel come from it too.
  const ctx = openCmContext(host);
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
    /** @type {ReturnType<typeof prepareClient> | undefined} */
    let client;
    request.accept({ pd, channel, ...RESOURCES, prepare: (r) => (client = prepareClient(r, peer)) }).then(
      (conn) => client?.connected(conn),
      (err) => {
        client?.close();
        log(`server: ${peer} failed to connect: ${err.message}`);
      },
    );
  });

  /**
   * A client's state, made when its QP is ready and before the accept goes
   * out: the receives must be posted by the time the client sends.
   * @param {import('rx-verbs').VerbsResources} r
   * @param {string} peer
   */
  function prepareClient(r, peer) {
    const inbox = pd.allocMemory(DEPTH * MSG, { access: ['LOCAL_WRITE'] });
    const outbox = pd.allocMemory(MSG);
    /** @type {import('rx-verbs').Connection | undefined} */
    let conn;
    let calls = 0;
    const postRecv = (/** @type {number} */ slot) =>
      r.qp.postRecv({ wrId: slot, sg: { mr: inbox, offset: slot * MSG, length: MSG } });
    const close = () => {
      closers.delete(close);
      byQp.delete(r.qp.qpNum);
      conn?.close();
      inbox.close();
      outbox.close();
    };
    closers.add(close);
    byQp.set(r.qp.qpNum, {
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
        r.qp.postSend({ wrId: slot, sg: { mr: outbox }, inline: true });
        calls++;
        stats.calls++;
      },
    });
    // Armed before the receives are posted, so no completion comes before
    // an arm (the pipeline's rearm() does the rest).
    r.sendCq.requestNotify();
    if (r.recvCq !== r.sendCq) r.recvCq.requestNotify();
    for (let s = 0; s < DEPTH; s++) postRecv(s);
    return {
      close,
      /** The accept went through: count the client, and close it when it leaves. */
      connected(/** @type {import('rx-verbs').Connection} */ c) {
        conn = c;
        stats.clients++;
        log(`server: ${peer} connected`);
        c.disconnected$.subscribe(() => {
          close();
          stats.left++;
          log(`server: ${peer} left after ${calls} calls`);
          for (const fn of onLeave) fn(stats);
        });
      },
    };
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
      releaseCmContext(ctx); // the last lease (the connections are closed): closes the channel, the PD and all on it
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
    },
  });
  if (values.host === undefined) {
    // No address: the whole example in this process (soft0's CM lives in one process).
    require('./client').demo().then((ok) => (process.exitCode = ok ? 0 : 1));
  } else {
    const server = startServer({ host: values.host, port: Number(values.port), log: console.log });
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
