// @ts-check
'use strict';
/**
 * Clients of the RPC server (server.js): each connects over rdma_cm with the
 * message layer, keeps up to 16 calls in flight and checks every answer. The
 * layer's credits keep the server's receives stocked, hence `rnrRetryCount: 0`
 * (a SEND that found no receive would fail at once, not be retried).
 *
 *   node examples/06-rpc-over-cm/client.js --host 198.18.0.1 --port 7400 --clients 8 [--calls 1000]
 *   node examples/06-rpc-over-cm/client.js [--clients 8]   (no host: server and clients in this process, on soft0)
 */
const { parseArgs } = require('util');
const { lastValueFrom, range, of, throwError } = require('rxjs');
const { catchError, count, filter, finalize, map, mergeMap } = require('rxjs/operators');
const { connectMessages, RemoteError } = require('rx-verbs');
const { startServer, OPERATIONS } = require('./server');
const NAMES = Object.keys(OPERATIONS);

/** One client's `calls` calls over one connection; resolves with how many answers were wrong. */
async function runClient(/** @type {{ host: string, port: number, calls: number, seed: number }} */ { host, port, calls, seed }) {
  const mc = await connectMessages({ host, port, timeoutMs: 10_000, rnrRetryCount: 0 });
  const call = (/** @type {number} */ i) => {
    const [op, x] = [NAMES[i % NAMES.length], (i * 7919 + seed) % 100_003];
    return mc.request$(`${op} ${x}`).pipe(
      map((reply) => {
        const ok = Number(reply.text()) === OPERATIONS[op](x);
        reply.release(); // its buffer is reposted, and the server gets its credit back
        return ok;
      }),
      catchError((err) => (err instanceof RemoteError ? of(false) : throwError(() => err))), // a failed call is wrong; a lost connection fails
    );
  };
  return lastValueFrom(range(0, calls).pipe(mergeMap(call, 16), filter((ok) => !ok), count(), finalize(() => mc.close())));
}

/** `clients` clients at once; prints one line and resolves true when every answer was right. */
async function runClients(/** @type {{ host: string, port: number, clients: number, calls: number }} */ { host, port, clients, calls }) {
  const wrong = (await Promise.all(Array.from({ length: clients }, (_, seed) => runClient({ host, port, calls, seed })))).reduce((a, b) => a + b, 0);
  console.log(`${clients} clients, ${clients * calls} calls, ${wrong} wrong`);
  return wrong === 0;
}

/** Server and clients in this process, on 127.0.0.1 (soft0's CM). */
async function demo({ clients = 8, calls = 1000 } = {}) {
  const server = startServer({ host: '127.0.0.1', port: 0 });
  const ok = await runClients({ host: '127.0.0.1', port: server.address?.port ?? 0, clients, calls }).finally(() => server.close());
  console.log(`server: ${server.stats.clients} clients, ${server.stats.calls} calls answered on one completion channel`);
  return ok;
}

module.exports = { runClient, runClients, demo };

if (require.main === module) {
  const string = (/** @type {string} */ fallback) => ({ type: /** @type {const} */ ('string'), default: fallback });
  const { values: v } = parseArgs({ options: { host: { type: 'string' }, port: string('7400'), clients: string('8'), calls: string('1000') } });
  const [clients, calls] = [Number(v.clients), Number(v.calls)];
  (v.host === undefined ? demo({ clients, calls }) : runClients({ host: v.host, port: Number(v.port), clients, calls })).then(
    (ok) => (process.exitCode = ok ? 0 : 1),
    (err) => ((process.exitCode = 1), console.error(`client: ${err.message}`)),
  );
}
