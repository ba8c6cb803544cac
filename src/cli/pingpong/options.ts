/** Options of `rx-verbs pingpong`: those of rdma-core's `ibv_rc_pingpong`, `ibv_srq_pingpong` and `ibv_ud_pingpong`, plus ours. */
import type { ParsedOptions } from '../shared/options';
import { UsageError } from '../shared/usage-error';
import type { EndOptions } from './end';
import { checkFeatures } from './features';
import type { Pipeline } from './loops';

/** The options, in the order `--help` lists them: ibv_rc_pingpong's letters and defaults, then ours. */
export const OPTIONS = {
  port: { short: 'p', type: 'number', help: 'listen on/connect to TCP port', default: 18515 },
  'ib-dev': { short: 'd', type: 'string', help: 'use RDMA device (default: first real device, else soft0)' },
  'ib-port': { short: 'i', type: 'number', help: 'use port of the device', default: 1 },
  size: {
    short: 's',
    type: 'number',
    help: "size of message to exchange (default 4096; with --ud 1024, what ibv_ud_pingpong sends: its --help says 2048, but its code has said 1024 since rdma-core 26)",
  },
  mtu: { short: 'm', type: 'number', help: 'path MTU', default: 1024 },
  'rx-depth': { short: 'r', type: 'number', help: 'number of receives to post at a time', default: 500 },
  iters: { short: 'n', type: 'number', help: 'number of exchanges', default: 1000 },
  sl: { short: 'l', type: 'number', help: 'service level value', default: 0 },
  events: { short: 'e', type: 'boolean', help: 'sleep on CQ events through the rx-verbs pipeline (default: poll)' },
  'gid-idx': { short: 'g', type: 'number', help: 'local port GID index (needed on RoCE, e.g. rxe)' },
  chk: { short: 'c', type: 'boolean', help: 'validate received buffer: the client marks each page, the server prints "invalid data in page N" for each page that came back unmarked' },
  odp: { short: 'o', type: 'boolean', help: 'use on demand paging (not supported: rx-verbs registers pinned memory only; fails before running)' },
  iodp: { short: 'O', type: 'boolean', help: 'use implicit on demand paging (not supported, as -o)' },
  prefetch: { short: 'P', type: 'boolean', help: 'prefetch an ODP MR (not supported, as -o)' },
  ts: { short: 't', type: 'boolean', help: 'get CQE with timestamp (not supported: rx-verbs polls plain work completions, which carry none)' },
  dm: { short: 'j', type: 'boolean', help: 'use device memory (not supported: rx-verbs allocates no device memory)' },
  new_send: { short: 'N', type: 'boolean', help: 'use new post send WR API (accepted: the same SEND on the wire, through the one post path)' },
  pipeline: { type: 'string', help: "with -e: 'operators' (events$ + ackEvents/rearm/drainCq) or 'native' (cq.completions$)", default: 'operators', with: ['events'] },
  ud: { type: 'boolean', help: 'UD datagrams, as ibv_ud_pingpong (--mtu does not apply: messages are limited to the port MTU)' },
  loopback: { type: 'boolean', help: 'run server and client in this one process (127.0.0.1); the way to use soft devices' },
  timeout: { type: 'number', help: 'give up after this many seconds without a completion (0: never, as ibv_rc_pingpong)', default: 0 },
  bind: { type: 'string', help: 'server: listen on this address only (default: all, as ibv_rc_pingpong)' },
  srq: { type: 'boolean', help: "ibv_srq_pingpong's mode: -q QPs receiving from one shared receive queue" },
  'num-qp': { short: 'q', type: 'number', help: 'with --srq: number of QPs to use', default: 16, with: ['srq'] },
  help: { short: 'h', type: 'boolean', help: 'show this help' },
} as const;

/** What the command takes besides its options: the server to connect to (none: serve). */
export const OPERANDS = { operands: ['server-host'] } as const;

/** The usage line of `--help`. */
export const USAGE = 'rx-verbs pingpong [options] [server-host]';

/** What `--help` says the command does, and how to pick a role. */
export const SUMMARY = `RC SEND ping-pong between a server and a client, like rdma-core's ibv_rc_pingpong,
and compatible with it on the wire (either side can be ibv_rc_pingpong):
  rx-verbs pingpong [options]              start a server and wait for a connection
  rx-verbs pingpong [options] <host>       connect to the server at <host>
  rx-verbs pingpong --loopback [options]   both in this process, over 127.0.0.1
With --srq it is rdma-core's ibv_srq_pingpong instead (and compatible with it):
-q QPs on each side receive from one shared receive queue of -r receives, and
-n counts the exchanges of all QPs together.
With --ud it is ibv_ud_pingpong (UD datagrams of at most the port MTU).
-c validates the received buffer in every mode, as rdma-core's -c does, so it
works against theirs in either role. Of ibv_rc_pingpong's device-feature
options, -N is accepted and -o -O -P -t -j fail before anything runs, saying
why (ibv_srq_pingpong has -o, ibv_ud_pingpong none of them).
Soft devices (soft0) exist inside one process only, so two processes cannot
connect through them: use --loopback there. On RoCE (rxe) give a GID index (-g).`;

/** The parsed command line. */
export interface PingPongOptions extends EndOptions {
  tcpPort: number;
  server: string | undefined;
  loopback: boolean;
  pipeline: Pipeline;
  bind: string | undefined;
  /** Seconds without progress before giving up; 0: never. */
  timeout: number;
  /** ibv_srq_pingpong's mode. */
  srq: boolean;
  /** ibv_ud_pingpong's mode. */
  ud: boolean;
}

const MTUS = [256, 512, 1024, 2048, 4096];

/** Checks the parsed command line and fills in the device. */
export function resolveOptions({ values: o, positionals }: ParsedOptions<typeof OPTIONS>, defaultDevice: () => string): PingPongOptions {
  if (o.loopback && positionals.length > 0) throw new UsageError('--loopback runs both sides: give no server host');
  const mtu = intIn(o.mtu, 'mtu', 256, 4096);
  if (!MTUS.includes(mtu)) throw new UsageError(`--mtu must be one of ${MTUS.join(', ')}, got ${mtu}`);
  const pipeline = o.pipeline;
  if (pipeline !== 'operators' && pipeline !== 'native') throw new UsageError(`--pipeline must be 'operators' or 'native', got '${pipeline}'`);
  // srq_pingpong's own limits: fewer than its 256-entry table, a receive per QP.
  const numQp = intIn(o['num-qp'], 'num-qp', 1, 255);
  const rxDepth = intIn(o['rx-depth'], 'rx-depth', 1, 1 << 20);
  if (o.srq && o.ud) throw new UsageError('--srq and --ud are two different ping-pongs: give one');
  if (o.srq && numQp > rxDepth) throw new UsageError(`rx_depth ${rxDepth} is too small for ${numQp} QPs -- must have at least one receive per QP`);
  checkFeatures(o, o);
  return {
    device: o['ib-dev'] ?? defaultDevice(),
    ibPort: intIn(o['ib-port'], 'ib-port', 1, 255),
    gidIndex: o['gid-idx'] === undefined ? undefined : intIn(o['gid-idx'], 'gid-idx', 0, 255),
    size: intIn(o.size ?? (o.ud ? 1024 : 4096), 'size', 1, 1 << 30),
    iters: intIn(o.iters, 'iters', 1, 2 ** 31 - 1),
    rxDepth,
    mtu,
    sl: intIn(o.sl, 'sl', 0, 15),
    events: o.events,
    tcpPort: intIn(o.port, 'port', 0, 65535),
    server: positionals[0],
    loopback: o.loopback,
    pipeline,
    bind: o.bind,
    timeout: intIn(o.timeout, 'timeout', 0, 86_400),
    srq: o.srq,
    numQp: o.srq ? numQp : 1,
    chk: o.chk,
    ud: o.ud,
  };
}

function intIn(v: number, name: string, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) throw new UsageError(`--${name} must be an integer in ${min}..${max}, got ${v}`);
  return v;
}
