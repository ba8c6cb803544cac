/** Options of `rx-verbs pingpong`: those of `ibv_rc_pingpong`, plus ours. */
import { UsageError, type OptionSpec, type Parsed } from '../args';
import type { Pipeline } from './loops';
import type { SideOptions } from './side';

export const SPECS: OptionSpec[] = [
  { name: 'port', short: 'p', type: 'number', help: 'listen on/connect to TCP port', default: 18515 },
  { name: 'ib-dev', short: 'd', type: 'string', help: 'use RDMA device (default: first real device, else soft0)' },
  { name: 'ib-port', short: 'i', type: 'number', help: 'use port of the device', default: 1 },
  { name: 'size', short: 's', type: 'number', help: 'size of message to exchange', default: 4096 },
  { name: 'mtu', short: 'm', type: 'number', help: 'path MTU', default: 1024 },
  { name: 'rx-depth', short: 'r', type: 'number', help: 'number of receives to post at a time', default: 500 },
  { name: 'iters', short: 'n', type: 'number', help: 'number of exchanges', default: 1000 },
  { name: 'sl', short: 'l', type: 'number', help: 'service level value', default: 0 },
  { name: 'events', short: 'e', type: 'flag', help: 'sleep on CQ events through the rx-verbs pipeline (default: poll)' },
  { name: 'gid-idx', short: 'g', type: 'number', help: 'local port GID index (needed on RoCE, e.g. rxe)' },
  { name: 'pipeline', type: 'string', help: "with -e: 'operators' (events$ + ackEvents/rearm/drainCq) or 'native' (cq.completions$)", default: 'operators' },
  { name: 'loopback', type: 'flag', help: 'run server and client in this one process (127.0.0.1); the way to use soft devices' },
  { name: 'timeout', type: 'number', help: 'give up after this many seconds without a completion (0: never, as ibv_rc_pingpong)', default: 0 },
  { name: 'bind', type: 'string', help: 'server: listen on this address only (default: all, as ibv_rc_pingpong)' },
  { name: 'help', short: 'h', type: 'flag', help: 'show this help' },
];

export const USAGE = 'rx-verbs pingpong [options] [server-host]';

export const SUMMARY = `RC SEND ping-pong between a server and a client, like rdma-core's ibv_rc_pingpong,
and compatible with it on the wire (either side can be ibv_rc_pingpong):
  rx-verbs pingpong [options]              start a server and wait for a connection
  rx-verbs pingpong [options] <host>       connect to the server at <host>
  rx-verbs pingpong --loopback [options]   both in this process, over 127.0.0.1
Soft devices (soft0) exist inside one process only, so two processes cannot
connect through them: use --loopback there. On RoCE (rxe) give a GID index (-g).`;

/** The parsed command line. */
export interface PingPongOptions extends SideOptions {
  tcpPort: number;
  server: string | undefined;
  loopback: boolean;
  pipeline: Pipeline;
  bind: string | undefined;
  /** Seconds without progress before giving up; 0: never. */
  timeout: number;
}

const MTUS = [256, 512, 1024, 2048, 4096];

/** Checks the options and fills in defaults. */
export function resolveOptions({ options: o, positionals }: Parsed, defaultDevice: () => string): PingPongOptions {
  const int = (name: string, min: number, max: number): number => {
    const v = o[name] as number;
    if (!Number.isInteger(v) || v < min || v > max) throw new UsageError(`--${name} must be an integer in ${min}..${max}, got ${v}`);
    return v;
  };
  if (positionals.length > 1) throw new UsageError(`one server host at most, got ${positionals.join(' ')}`);
  const loopback = o.loopback === true;
  if (loopback && positionals.length > 0) throw new UsageError('--loopback runs both sides: give no server host');
  const mtu = int('mtu', 256, 4096);
  if (!MTUS.includes(mtu)) throw new UsageError(`--mtu must be one of ${MTUS.join(', ')}, got ${mtu}`);
  const pipeline = o.pipeline as string;
  if (pipeline !== 'operators' && pipeline !== 'native') throw new UsageError(`--pipeline must be 'operators' or 'native', got '${pipeline}'`);
  return {
    device: (o['ib-dev'] as string | undefined) ?? defaultDevice(),
    ibPort: int('ib-port', 1, 255),
    gidIndex: o['gid-idx'] === undefined ? undefined : int('gid-idx', 0, 255),
    size: int('size', 1, 1 << 30),
    iters: int('iters', 1, 2 ** 31 - 1),
    rxDepth: int('rx-depth', 1, 1 << 20),
    mtu,
    sl: int('sl', 0, 15),
    events: o.events === true,
    tcpPort: int('port', 0, 65535),
    server: positionals[0],
    loopback,
    pipeline,
    bind: o.bind as string | undefined,
    timeout: int('timeout', 0, 86_400),
  };
}
