// The cases of the rxe pair part: two guests, a (198.18.0.1) and b
// (198.18.0.2), rxe0 on each one's NIC. pair.js (guest b) runs them in this
// order, except that destructive cases run after all the others.
//
// A case:
//   name        its title in the report (suite test/rxe/pair); unique
//   server      { on: 'a'|'b', cmd, expect, exit, mayRun } started first; the
//               client starts once something listens on $RXV_PORT (TCP, or
//               an rdma_cm listener as `rdma resource show cm_id` lists it)
//   client      { on, cmd, expect, exit, mayRun } started next
//     cmd       a bash command line; its environment names the host it runs
//               on: RXV_SELF, RXV_PEER (addresses), RXV_PORT (this case's
//               port), RXV_NIC, RXV_GID (rxe0's GID index of RXV_SELF), RXV_DEV
//     expect    regexps: each must match a line of that side's output
//     exit      wanted exit status: a number, a list, 'nonzero' or 'any'
//               (default 0); killed by signal N counts as 128 + N
//     mayRun    the side may still run when the other one has ended (it is
//               killed then, and judged only if it ended)
//   timeout     seconds for the whole case (default 60); a side still running
//               then fails the case (unless mayRun)
//   faults      steps run in order once the client has started, each when
//               its trigger fires: when { side: 'server'|'client', line: re }
//               (that side printed a matching line) or { after: seconds };
//               then either { on: 'a'|'b', run: cmd } (a command on that host,
//               same environment) or { kill: 'server'|'client', signal }
//   destructive it takes a link or a device away: it runs last, and both
//               hosts get their link and rxe0 back after it
//   quick       part of the --quick set
//   skip        () => reason | undefined: a reason skips the case (reported)
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const range = (n) => Array.from({ length: n }, (_, i) => i);
// rping -v: the client prints "ping data: rdma-ping-N: ...", the server
// "server ping data: rdma-ping-N: ..." for each ping.
const pings = (n, who) => range(n).map((i) => new RegExp(`^${who === 'server' ? 'server ' : ''}ping data: rdma-ping-${i}: `));
// rping of rdma-core 44 can exit non-zero from a race in its own shutdown
// after every ping went through: its exit status proves nothing either way,
// its ping lines do.
const RPING_EXIT = 'any';

const rping = (server, client) => ({
  name: `rping: server on ${server}, client on ${client}, 10 pings`,
  quick: server === 'a',
  server: { on: server, cmd: 'rping -s -a "$RXV_SELF" -p "$RXV_PORT" -C 10 -v', expect: pings(10, 'server'), exit: RPING_EXIT },
  client: { on: client, cmd: 'rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C 10 -v', expect: pings(10, 'client'), exit: RPING_EXIT },
});

// rping -q: QPs made by the program and moved with rdma_init_qp_attr, the
// way rx-verbs connects (its baseline on these guests).
const rpingQ = {
  name: 'rping -q (self-created QPs): server on a, client on b, 10 pings',
  server: { on: 'a', cmd: 'rping -q -s -a "$RXV_SELF" -p "$RXV_PORT" -C 10 -v', expect: pings(10, 'server'), exit: RPING_EXIT },
  client: { on: 'b', cmd: 'rping -q -c -a "$RXV_PEER" -p "$RXV_PORT" -C 10 -v', expect: pings(10, 'client'), exit: RPING_EXIT },
};
const rdmaServer = (server, client) => ({
  name: `rdma_server on ${server}, rdma_client on ${client}`,
  server: { on: server, cmd: 'rdma_server -s "$RXV_SELF" -p "$RXV_PORT"', expect: [/^rdma_server: end 0$/] },
  client: { on: client, cmd: 'rdma_client -s "$RXV_PEER" -p "$RXV_PORT"', expect: [/^rdma_client: end 0$/] },
});

// ibv_rc_pingpong: 100 round trips of 4096 B (its default), RoCE v2 GID of
// the host's address; both report lines with the right figures.
const PINGPONG_LINES = [/^819200 bytes in [\d.]+ seconds = [\d.]+ Mbit\/sec$/, /^100 iters in [\d.]+ seconds = [\d.]+ usec\/iter$/];
const pingpong = {
  name: 'ibv_rc_pingpong: server on a, client on b, 100 x 4096 B',
  quick: true,
  server: { on: 'a', cmd: 'ibv_rc_pingpong -d "$RXV_DEV" -g "$RXV_GID" -p "$RXV_PORT" -n 100', expect: PINGPONG_LINES },
  client: { on: 'b', cmd: 'ibv_rc_pingpong -d "$RXV_DEV" -g "$RXV_GID" -p "$RXV_PORT" -n 100 "$RXV_PEER"', expect: PINGPONG_LINES },
};

// Our raw-binding rdma_cm pair over librdmacm (many connections, data verified).
const CM_PAIR = path.join(root, 'test', 'rxe', 'cm-pair.js');
const cmPair = {
  name: 'cm-pair.js: server on a, client on b, 100 messages each way',
  timeout: 240,
  skip: () => (fs.existsSync(CM_PAIR) ? undefined : 'test/rxe/cm-pair.js (the rdma_cm pair over librdmacm) is not in this checkout yet'),
  server: { on: 'a', cmd: 'node test/rxe/cm-pair.js server "$RXV_SELF" "$RXV_PORT" 100', expect: [/^cm-pair server ok: 100 messages each way verified over rdmacm/] },
  client: { on: 'b', cmd: 'node test/rxe/cm-pair.js client "$RXV_PEER" "$RXV_PORT" 100', expect: [/^cm-pair client ok: 100 messages each way verified over rdmacm/] },
};

// Faults. rping -C 0 pings until stopped.
const forever = {
  server: { on: 'a', cmd: 'rping -s -a "$RXV_SELF" -p "$RXV_PORT" -C 0 -v' },
  client: { on: 'b', cmd: 'rping -c -a "$RXV_PEER" -p "$RXV_PORT" -C 0 -v' },
};
const peerKilled = {
  name: 'fault: the rping client killed mid-transfer; the server ends by itself',
  timeout: 90,
  server: { ...forever.server, exit: 'any', expect: pings(5, 'server') },
  client: { ...forever.client, exit: 128 + 9 },
  faults: [{ when: { side: 'client', line: /^ping data: rdma-ping-5: / }, kill: 'client', signal: 'KILL' }],
};
// rping's server drives the transfer (RDMA reads and writes of the
// client's buffers); its client only waits. With the server host's link
// down, the server's operations run out of retries and it fails; the
// client can learn nothing (the disconnect cannot cross a downed link), so
// it may wait on: that is the kernel's behaviour, not a hang of ours.
const linkDown = {
  name: "fault: the server host's link taken down mid-transfer; the server fails within the case's bound",
  timeout: 90,
  destructive: true,
  server: { ...forever.server, exit: 'nonzero', expect: pings(5, 'server') },
  client: { ...forever.client, exit: 'any', mayRun: true, expect: pings(5, 'client') },
  faults: [{ when: { side: 'client', line: /^ping data: rdma-ping-5: / }, on: 'a', run: 'ip link set "$RXV_NIC" down' }],
};

/** The cases, in order (destructive ones run last whatever their place). */
module.exports = [
  rping('a', 'b'),
  rping('b', 'a'),
  rdmaServer('a', 'b'),
  rdmaServer('b', 'a'),
  pingpong,
  rpingQ,
  cmPair,
  // rx-verbs' own commands and examples/06 against rdma-core's tools.
  ...require('./pair-cases-cli'),
  // Issue 15's fault list through the library's API (cm-faults.js).
  ...require('./pair-cases-faults'),
  peerKilled,
  linkDown,
];
