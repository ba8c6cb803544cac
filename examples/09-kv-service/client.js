// @ts-check
'use strict';
/**
 * Clients of the key-value service (server.js). Several clients at once
 * each write, read back, overwrite and delete keys of their own, with values
 * from empty to 3 MiB, and check every value they read; then one more
 * client reads every key of all of them, twice (the second time the server
 * finds the large values' memory already registered), and sees that a value
 * past the server's limit is refused before it is sent.
 *
 *   node examples/09-kv-service/client.js --host 198.18.0.1 --port 7409 [--clients 4]
 *   node examples/09-kv-service/client.js [--clients 4]    (no host: server and clients in this process, on soft0)
 */
const { parseArgs } = require('util');
const { randomBytes } = require('crypto');
const { connectMessages, RemoteError } = require('rx-verbs');
const { startServer, report, MAX_REQUEST } = require('./server');

/** Value sizes: empty, eager (the request line and the value within 8 KiB), by rendezvous. */
const SIZES = [0, 100, 8000, 8200, 64 << 10, 1 << 20, 3 << 20];

/**
 * The service's calls on one connection (rnrRetryCount 0: the layer's
 * credits never let a SEND find no receive). `counts` counts the requests.
 * @param {{ host: string, port: number }} address
 * @param {Record<string, number>} counts
 */
async function kvClient({ host, port }, counts = { PUT: 0, GET: 0, DELETE: 0 }) {
  const mc = await connectMessages({ host, port, rnrRetryCount: 0 });
  const call = (/** @type {string} */ method, /** @type {string} */ key, /** @type {Uint8Array} */ value = Buffer.alloc(0)) => {
    counts[method]++;
    return mc.request(Buffer.concat([Buffer.from(`${method} ${key}\n`), value]));
  };
  return {
    counts,
    close: () => mc.close(),
    put: async (/** @type {string} */ key, /** @type {Buffer} */ value) => (await call('PUT', key, value)).release(),
    delete: async (/** @type {string} */ key) => (await call('DELETE', key)).release(),
    /** Whether `key` holds `expected` (undefined: no such key); the reply is checked where it landed, then released. */
    async holds(/** @type {string} */ key, /** @type {Buffer | undefined} */ expected) {
      const missing = (/** @type {unknown} */ err) => (err instanceof RemoteError && err.message.startsWith('no such key') ? undefined : Promise.reject(err));
      const reply = await call('GET', key).catch(missing);
      const ok = reply ? expected !== undefined && reply.data.equals(expected) : expected === undefined;
      reply?.release(); // the reply's buffer goes back to the pool (and the server gets its credit)
      return ok;
    },
  };
}

/**
 * One client's keys, all at once: each written, read, overwritten, read;
 * every other one then deleted and found gone. Resolves with the wrong reads.
 * @param {Awaited<ReturnType<typeof kvClient>>} kv
 * @param {string} name
 * @param {Map<string, Buffer | undefined>} expected what each key should hold now
 */
async function writer(kv, name, expected) {
  const wrong = await Promise.all(
    SIZES.map(async (size, i) => {
      const key = `${name}/key${i}`;
      let bad = 0;
      for (const n of [size, SIZES[(i + 3) % SIZES.length]]) {
        const value = randomBytes(n);
        await kv.put(key, value);
        expected.set(key, value);
        if (!(await kv.holds(key, value))) bad++;
      }
      if (i % 2 === 0) {
        await kv.delete(key);
        expected.set(key, undefined);
        if (!(await kv.holds(key, undefined))) bad++;
      }
      return bad;
    }),
  );
  return wrong.reduce((a, b) => a + b, 0);
}

/** `clients` writers at once, then the reader; prints what each saw and resolves true when all was right. */
async function runClients(/** @type {{ host: string, port: number, clients: number }} */ { host, port, clients }) {
  /** @type {Map<string, Buffer | undefined>} */
  const expected = new Map();
  const counts = { PUT: 0, GET: 0, DELETE: 0 };
  const writers = await Promise.all(Array.from({ length: clients }, () => kvClient({ host, port }, counts)));
  const wrong = (await Promise.all(writers.map((kv, c) => writer(kv, `client${c}`, expected).finally(kv.close)))).reduce((a, b) => a + b, 0);
  const requests = counts.PUT + counts.GET + counts.DELETE;
  console.log(`${clients} clients, ${requests} requests (${counts.PUT} PUT, ${counts.GET} GET, ${counts.DELETE} DELETE), ${wrong} wrong`);

  const kv = await kvClient({ host, port });
  let misread = 0;
  for (let round = 0; round < 2; round++) {
    const reads = await Promise.all([...expected].map(([key, value]) => kv.holds(key, value)));
    misread += reads.filter((ok) => !ok).length;
  }
  const refused = await kv.put('too-big', Buffer.alloc(MAX_REQUEST)).then(() => false, (err) => err instanceof RangeError);
  kv.close();
  const gone = [...expected.values()].filter((v) => v === undefined).length;
  console.log(`1 more client read all ${expected.size} keys twice: ${expected.size - gone} values, ${gone} deleted, ${misread} wrong`);
  console.log(`a value past the server's limit: ${refused ? 'refused before sending (RangeError)' : 'NOT refused'}`);
  return wrong === 0 && misread === 0 && refused;
}

/** Server and clients in this process, on 127.0.0.1 (soft0's CM). */
async function demo({ clients = 4 } = {}) {
  const server = startServer({ host: '127.0.0.1', port: 0 });
  const ok = await runClients({ host: '127.0.0.1', port: server.address?.port ?? 0, clients }).finally(() => server.close());
  console.log(report(server));
  return ok;
}

module.exports = { kvClient, runClients, demo };

if (require.main === module) {
  const { values: v } = parseArgs({ options: { host: { type: 'string' }, port: { type: 'string', default: '7409' }, clients: { type: 'string', default: '4' } } });
  const clients = Number(v.clients);
  (v.host === undefined ? demo({ clients }) : runClients({ host: v.host, port: Number(v.port), clients })).then(
    (ok) => (process.exitCode = ok ? 0 : 1),
    (err) => ((process.exitCode = 1), console.error(`kv client: ${err.message}`)),
  );
}
