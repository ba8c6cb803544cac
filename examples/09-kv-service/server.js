// @ts-check
'use strict';
/**
 * A key-value service on the message layer: GET, PUT and DELETE as
 * requests, answered with `serve()`. A request is `"<METHOD> <key>\n"` in
 * UTF-8, and for PUT the value's bytes after it; GET answers with the value,
 * PUT and DELETE with nothing, and GET of a missing key fails (the client
 * gets a RemoteError). Values may be of any size up to 8 MiB (less the
 * request line): those past the eager size (8 KiB) go by rendezvous both
 * ways, the peer READing them from the sender's memory, and a stored value
 * sent again is found in the connection's registration cache (no new
 * registration).
 *
 *   node examples/09-kv-service/server.js                 (no host: server and clients in this process, on soft0)
 *   node examples/09-kv-service/server.js --host 198.18.0.1 --port 7409 [--clients 5]   (exits once 5 clients left)
 *   node examples/09-kv-service/client.js --host 198.18.0.1 --port 7409 [--clients 4]   (4 writers, then a reader)
 */
const { parseArgs } = require('util');
const { listen, acceptMessages } = require('rx-verbs');

/** The largest request the service takes (its line and the value): a client's larger PUT fails with a RangeError, unsent. */
const MAX_REQUEST = 8 << 20;

/** Starts the service on `host:port` (port 0: any free one); set `onLeave` to hear of each client that leaves. */
function startServer(/** @type {{ host: string, port: number }} */ { host, port }) {
  const listener = listen({ host, port });
  /** @type {Map<string, Buffer>} */
  const store = new Map();
  let open = /** @type {Set<import('rx-verbs').MessageConnection> | undefined} */ (new Set()); // undefined once closed
  /** The stats of the connections closed so far, summed (see `report`). */
  const closed = { clients: 0, rendezvousReceived: 0, rendezvousSent: 0, registrations: 0, cacheHits: 0 };
  const server = { address: listener.address, store, closed, open: () => [...(open ?? [])], onLeave: () => {}, close };
  const retire = (/** @type {import('rx-verbs').MessageConnection} */ mc) => {
    mc.close();
    closed.clients++;
    for (const k of /** @type {const} */ (['rendezvousReceived', 'rendezvousSent', 'registrations', 'cacheHits'])) closed[k] += mc.stats[k];
  };
  const requests = listener.requests$.subscribe(async (request) => {
    const mc = await acceptMessages(request, { messages: { maxMessage: MAX_REQUEST } }).catch((err) => void console.error(`kv server: ${err.message}`));
    if (!mc || !open) return mc?.close();
    open.add(mc);
    mc.serve((req) => answer(store, req.data));
    mc.connection.disconnected$.subscribe(() => {
      if (!open?.delete(mc)) return; // the server closed it
      retire(mc);
      server.onLeave();
    });
  });
  /** Stops listening and closes every connection. */
  function close() {
    const closing = open;
    open = undefined;
    if (!closing) return;
    requests.unsubscribe();
    listener.close();
    for (const mc of closing) retire(mc);
  }
  return server;
}

/**
 * One request's answer. `data` is lent (a view into a receive buffer, reused
 * once `serve()` releases the request), so a PUT keeps a copy of the value.
 * @param {Map<string, Buffer>} store
 * @param {Buffer} data
 */
function answer(store, data) {
  const end = data.indexOf(10);
  const [method, key] = splitOnce(data.toString('utf8', 0, end < 0 ? data.length : end), ' ');
  if (method === 'GET') {
    const value = store.get(key);
    if (!value) throw new Error(`no such key: ${key}`);
    return value; // large: the client READs it from here, so it is never changed in place (a PUT replaces it)
  }
  if (method === 'PUT' && end >= 0) return void store.set(key, Buffer.from(data.subarray(end + 1)));
  if (method === 'DELETE') return void store.delete(key);
  throw new Error('a request is "GET <key>", "DELETE <key>" or "PUT <key>" and a newline before the value');
}

function splitOnce(/** @type {string} */ text, /** @type {string} */ sep) {
  const at = text.indexOf(sep);
  return at < 0 ? [text, ''] : [text.slice(0, at), text.slice(at + sep.length)];
}

/** The server's totals: what it stores, and how its connections moved the large values. */
function report(/** @type {ReturnType<typeof startServer>} */ server) {
  const sum = (/** @type {'rendezvousReceived' | 'rendezvousSent' | 'registrations' | 'cacheHits'} */ k) =>
    server.open().reduce((n, mc) => n + mc.stats[k], server.closed[k]);
  const bytes = [...server.store.values()].reduce((n, v) => n + v.length, 0);
  return (
    `kv server: ${server.store.size} keys, ${(bytes / 2 ** 20).toFixed(1)} MiB; ` +
    `by rendezvous ${sum('rendezvousReceived')} values in, ${sum('rendezvousSent')} out; ` +
    `${sum('registrations')} registrations, ${sum('cacheHits')} cache hits`
  );
}

module.exports = { startServer, report, MAX_REQUEST };

if (require.main === module) {
  const { values: v } = parseArgs({ options: { host: { type: 'string' }, port: { type: 'string', default: '7409' }, clients: { type: 'string', default: '0' } } });
  if (v.host === undefined) require('./client').demo().then((/** @type {boolean} */ ok) => (process.exitCode = ok ? 0 : 1)); // soft0's CM lives in one process
  else {
    const server = startServer({ host: v.host, port: Number(v.port) });
    console.log(`kv server: listening on ${v.host}:${server.address?.port}`);
    const stop = () => void (console.log(report(server)), server.close());
    server.onLeave = () => void (server.closed.clients === Number(v.clients) && stop());
    process.once('SIGINT', stop).once('SIGTERM', stop);
  }
}
