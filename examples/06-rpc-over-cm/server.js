// @ts-check
'use strict';
/**
 * An RPC server on the message layer: it accepts any number of clients over
 * rdma_cm and answers each request ("<operation> <x>", UTF-8) with the result
 * as text, or with an error the client gets as a RemoteError. The layer does
 * the rest (receives posted before the accept, credits, framing, answers
 * matched to calls); every connection borrows the server's PD and channel.
 *
 *   node examples/06-rpc-over-cm/server.js --host 198.18.0.1 --port 7400 [--clients 8]
 *   node examples/06-rpc-over-cm/server.js                 (no host: server and clients in this process, on soft0)
 */
const { parseArgs } = require('util');
const { openCmContext, releaseCmContext, listen, acceptMessages } = require('rx-verbs');

const OPERATIONS = /** @type {Record<string, (x: number) => number>} */ ({ square: (x) => x * x, negate: (x) => -x, increment: (x) => x + 1 });

/** Starts a server on `host:port` (port 0: any free one); set `onLeave` to hear of each client that leaves. */
function startServer(/** @type {{ host: string, port: number }} */ { host, port }) {
  const listener = listen({ host, port, backlog: 128 });
  // On rdma_cm a connection's QP is made on the CM's device context, so the shared PD and channel come from it.
  const ctx = openCmContext(host);
  const shared = { pd: ctx.allocPd(), channel: ctx.createCompChannel() };
  let open = /** @type {Set<import('rx-verbs').MessageConnection> | undefined} */ (new Set()); // undefined once closed
  const server = { address: listener.address, stats: { clients: 0, left: 0, calls: 0 }, onLeave: () => {}, close };
  const requests = listener.requests$.subscribe(async (request) => {
    const mc = await acceptMessages(request, shared).catch((err) => void console.error(`server: a client failed to connect: ${err.message}`));
    if (!mc || !open) return mc?.close();
    open.add(mc);
    server.stats.clients++;
    mc.serve((req) => {
      const [op, x] = req.text().split(' ');
      server.stats.calls++;
      if (!Object.hasOwn(OPERATIONS, op)) throw new Error(`unknown operation ${op}`); // answers with an error
      return String(OPERATIONS[op](Number(x)));
    });
    mc.connection.disconnected$.subscribe(() => {
      if (!open?.delete(mc)) return; // the server closed it
      mc.close();
      server.stats.left++;
      server.onLeave();
    });
  });
  /** Stops listening, closes every connection, then the channel and the PD. */
  function close() {
    const closing = open;
    open = undefined;
    if (!closing) return;
    requests.unsubscribe();
    listener.close();
    for (const mc of closing) mc.close();
    releaseCmContext(ctx); // the last lease: closes the channel and the PD
  }
  return server;
}

module.exports = { startServer, OPERATIONS };

if (require.main === module) {
  const { values: v } = parseArgs({ options: { host: { type: 'string' }, port: { type: 'string', default: '7400' }, clients: { type: 'string', default: '0' } } });
  if (v.host === undefined) require('./client').demo().then((/** @type {boolean} */ ok) => (process.exitCode = ok ? 0 : 1)); // soft0's CM lives in one process
  else {
    const server = startServer({ host: v.host, port: Number(v.port) });
    console.log(`server: listening on ${v.host}:${server.address?.port}`);
    const stop = () => void (console.log(`server: ${server.stats.clients} clients, ${server.stats.calls} calls answered`), server.close());
    server.onLeave = () => void (server.stats.left === Number(v.clients) && stop());
    process.once('SIGINT', stop).once('SIGTERM', stop);
  }
}
