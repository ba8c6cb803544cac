/** Options of `rx-verbs rdma-server` and `rx-verbs rdma-client`: rdma-core's two letters, plus ours. */
import type { ParsedOptions } from '../shared/options';
import { CM_OPTION, cmProvider } from '../shared/cm';
import { UsageError } from '../shared/usage-error';
import type { CmProvider } from '../../index';

/** The port rdma_server and rdma_client use unless told. */
export const DEFAULT_PORT = 7471;

function optionsFor(role: 'server' | 'client') {
  return {
    'server-addr': {
      short: 's',
      type: 'string',
      help: role === 'server' ? 'address to listen on' : 'the server\'s address',
      default: role === 'server' ? '0.0.0.0' : '127.0.0.1',
    },
    port: { short: 'p', type: 'number', help: 'port', default: DEFAULT_PORT },
    verbose: { short: 'v', type: 'boolean', help: 'also print the 16 bytes received, in hex' },
    loopback: { type: 'boolean', help: 'server and client in this one process (127.0.0.1); the way to use soft devices' },
    timeout: { type: 'number', help: 'give up after this many milliseconds without progress', default: 10_000 },
    cm: CM_OPTION,
    help: { short: 'h', type: 'boolean', help: 'show this help' },
  } as const;
}

/** `rx-verbs rdma-server`'s options. */
export const SERVER_OPTIONS = optionsFor('server');
/** `rx-verbs rdma-client`'s options (the same letters, other defaults). */
export const CLIENT_OPTIONS = optionsFor('client');

/** What `--help` says, per role. */
export const SUMMARY = {
  server: `Waits for one client over rdma_cm, receives its 16-byte message, answers with 16
bytes (ours echoes what came), then disconnects; compatible on the wire with
rdma-core's rdma_server (its client can be rdma_client) and with its report lines.
Soft devices (soft0) exist inside one process only: use --loopback there.`,
  client: `Connects to the server over rdma_cm, sends a 16-byte message, waits for the 16-byte
answer, then disconnects; compatible on the wire with rdma-core's rdma_client (its
server can be rdma_server) and with its report lines.
Soft devices (soft0) exist inside one process only: use --loopback there.`,
} as const;

/** The parsed command line. */
export interface RdmaPairOptions {
  role: 'server' | 'client' | 'loopback';
  host: string;
  port: number;
  verbose: boolean;
  timeoutMs: number;
  /** Which CM; undefined: by address. */
  cm: CmProvider | undefined;
}

/** Checks a parsed command line of either command. */
export function resolveOptions(
  role: 'server' | 'client',
  { values: o }: ParsedOptions<typeof SERVER_OPTIONS>,
): RdmaPairOptions {
  const loopback = o.loopback;
  return {
    role: loopback ? 'loopback' : role,
    host: loopback ? '127.0.0.1' : o['server-addr'],
    port: intIn(o.port, 'port', loopback ? 0 : 1, 65535),
    verbose: o.verbose,
    timeoutMs: intIn(o.timeout, 'timeout', 1, 3_600_000),
    cm: cmProvider(o.cm),
  };
}

function intIn(v: number, name: string, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) throw new UsageError(`--${name} must be an integer in ${min}..${max}, got ${v}`);
  return v;
}
