// The rx-verbs CLI and examples/06 across the two guests of the rxe pair
// part, in the case format of pair-cases.js (read its header): our `rping`,
// `rdma-server` / `rdma-client` against rdma-core's `rping`, `rdma_server`
// and `rdma_client`, each of ours in both roles, ours against ours, and the
// RPC example with many clients. Commands run in the project root of the
// guest, where dist/ is built. To run them, append this module's cases to
// the list pair-cases.js exports.
'use strict';

const range = (n) => Array.from({ length: n }, (_, i) => i);
// rping -v, ours and theirs alike: "ping data: rdma-ping-N: ..." on the
// client, "server ping data: rdma-ping-N: ..." on the server.
const pings = (n, who) => range(n).map((i) => new RegExp(`^${who === 'server' ? 'server ' : ''}ping data: rdma-ping-${i}: `));
// rdma-core's rping can exit non-zero from a race in its own shutdown after
// every ping went through: its ping lines are what proves the exchange.
const THEIRS = 'any';
const OURS = 'node dist/cli/main.js';
const PINGS = 10;

const rpingServer = {
  ours: { cmd: `${OURS} rping -s -a "$RXV_SELF" -p "$RXV_PORT" -v`, expect: pings(PINGS, 'server') },
  theirs: { cmd: 'rping -s -a "$RXV_SELF" -p "$RXV_PORT" -v', expect: pings(PINGS, 'server'), exit: THEIRS },
};
const rpingClient = {
  ours: { cmd: `${OURS} rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C ${PINGS} -v -V`, expect: pings(PINGS, 'client') },
  theirs: { cmd: `rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C ${PINGS} -v -V`, expect: pings(PINGS, 'client'), exit: THEIRS },
};
const rping = (server, client, quick = false) => ({
  name: `rping: ${server} server on a, ${client} client on b, ${PINGS} pings validated`,
  quick,
  timeout: 120,
  server: { on: 'a', ...rpingServer[server] },
  client: { on: 'b', ...rpingClient[client] },
});

const pairServer = {
  ours: { cmd: `${OURS} rdma-server -s "$RXV_SELF" -p "$RXV_PORT"`, expect: [/^rdma_server: start$/, /^rdma_server: end 0$/] },
  theirs: { cmd: 'rdma_server -s "$RXV_SELF" -p "$RXV_PORT"', expect: [/^rdma_server: end 0$/] },
};
const pairClient = {
  ours: { cmd: `${OURS} rdma-client -s "$RXV_PEER" -p "$RXV_PORT"`, expect: [/^rdma_client: start$/, /^rdma_client: end 0$/] },
  theirs: { cmd: 'rdma_client -s "$RXV_PEER" -p "$RXV_PORT"', expect: [/^rdma_client: end 0$/] },
};
const rdmaPair = (server, client, quick = false) => ({
  name: `rdma_server/rdma_client: ${server} server on a, ${client} client on b`,
  quick,
  timeout: 90,
  server: { on: 'a', ...pairServer[server] },
  client: { on: 'b', ...pairClient[client] },
});

// A persistent server of ours (-P) for one client after another: rdma-core's
// rping client twice in a row, then ours; the server runs on and is killed
// at the end (mayRun).
const persistent = {
  name: 'rping: our persistent server (-P) on a, rping then ours on b, one after another',
  timeout: 180,
  server: { on: 'a', cmd: `${OURS} rping -s -P -a "$RXV_SELF" -p "$RXV_PORT" -v`, exit: 'any', mayRun: true, expect: pings(PINGS, 'server') },
  client: {
    on: 'b',
    cmd:
      `rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C ${PINGS} -v -V; ` +
      `rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C ${PINGS} -v -V; ` +
      `${OURS} rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C ${PINGS} -v -V`,
    expect: pings(PINGS, 'client'),
  },
};

// examples/06: 8 clients on one server, every answer checked; the server
// exits once the 8 have left.
const rpcExample = {
  name: 'examples/06-rpc-over-cm: server on a, 8 clients on b, every answer checked',
  timeout: 240,
  server: {
    on: 'a',
    cmd: 'node examples/06-rpc-over-cm/server.js --host "$RXV_SELF" --port "$RXV_PORT" --clients 8',
    expect: [/^server: 8 clients, 1600 calls answered$/],
  },
  client: {
    on: 'b',
    cmd: 'node examples/06-rpc-over-cm/client.js --host "$RXV_PEER" --port "$RXV_PORT" --clients 8 --calls 200',
    expect: [/^8 clients, 1600 calls, 0 wrong$/],
  },
};

// examples/09: 4 writers, then a reader, from b; values to 3 MiB by
// rendezvous both ways, every value checked. The server exits once the 5
// have left, with its totals.
const kvExample = {
  name: 'examples/09-kv-service: server on a, 4 writers and a reader on b, every value checked',
  timeout: 240,
  server: {
    on: 'a',
    cmd: 'node examples/09-kv-service/server.js --host "$RXV_SELF" --port "$RXV_PORT" --clients 5',
    expect: [/^kv server: 12 keys, 12\.3 MiB; by rendezvous 32 values in, 48 out; \d+ registrations, \d+ cache hits$/],
  },
  client: {
    on: 'b',
    cmd: 'node examples/09-kv-service/client.js --host "$RXV_PEER" --port "$RXV_PORT" --clients 4',
    expect: [
      /^4 clients, 144 requests \(56 PUT, 72 GET, 16 DELETE\), 0 wrong$/,
      /^1 more client read all 28 keys twice: 12 values, 16 deleted, 0 wrong$/,
      /^a value past the server's limit: refused before sending \(RangeError\)$/,
    ],
  },
};

// Faults with ours on both sides. -C 0 pings until stopped.
const oursForever = {
  server: { on: 'a', cmd: `${OURS} rping -s -a "$RXV_SELF" -p "$RXV_PORT" -v` },
  client: { on: 'b', cmd: `${OURS} rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C 0 -v -V` },
};
// The client's process dies mid-transfer: our server must end by itself
// (the peer's disconnect, or its operations failing), not hang.
const oursPeerKilled = {
  name: 'fault: our rping client killed mid-transfer; our server ends by itself',
  timeout: 120,
  server: { ...oursForever.server, exit: 'any', expect: pings(5, 'server') },
  client: { ...oursForever.client, exit: 128 + 9 },
  faults: [{ when: { side: 'client', line: /^ping data: rdma-ping-5: / }, kill: 'client', signal: 'KILL' }],
};
// rxe0 deleted under our server's live connection: the server fails with
// the device-removal error (exit 1); the client may learn nothing.
const oursDeviceRemoved = {
  name: "fault: rxe0 deleted under our rping server's connection; it fails, not hangs",
  timeout: 120,
  destructive: true,
  server: { ...oursForever.server, exit: 'nonzero', expect: pings(5, 'server') },
  client: { ...oursForever.client, exit: 'any', mayRun: true },
  faults: [{ when: { side: 'client', line: /^ping data: rdma-ping-5: / }, on: 'a', run: 'rdma link delete "$RXV_DEV"' }],
};

/** The cases, in order (destructive ones run last whatever their place). */
module.exports = [
  rping('ours', 'theirs', true),
  rping('theirs', 'ours', true),
  rping('ours', 'ours'),
  rdmaPair('ours', 'theirs', true),
  rdmaPair('theirs', 'ours', true),
  rdmaPair('ours', 'ours'),
  persistent,
  rpcExample,
  kvExample,
  oursPeerKilled,
  oursDeviceRemoved,
];
