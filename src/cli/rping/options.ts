/** Options of `rx-verbs rping`: rdma-core rping's letters and defaults, plus ours. */
import type { ParsedOptions } from '../shared/options';
import { CM_OPTION, cmProvider } from '../shared/cm';
import { UsageError } from '../shared/usage-error';
import type { CmProvider } from '../../index';
import { MAX_SIZE, MIN_SIZE } from './wire';

/**
 * How many pings --loopback makes unless -C says: a check that ends and
 * says how it went, where rping's own default (ping until the peer goes)
 * would run silently forever with both peers in one process.
 */
export const LOOPBACK_COUNT = 10;

/** The options, in the order `--help` lists them: rping's first, then ours. */
export const OPTIONS = {
  server: { short: 's', type: 'boolean', help: 'server side' },
  client: { short: 'c', type: 'boolean', help: 'client side' },
  addr: { short: 'a', type: 'string', help: 'server: address to listen on (default 0.0.0.0); client: the server\'s address' },
  'source-addr': { short: 'I', type: 'string', help: 'client: local address to connect from', with: ['client', 'loopback'] },
  port: { short: 'p', type: 'number', help: 'port', default: 7174 },
  count: {
    short: 'C',
    type: 'number',
    help: `number of pings, 0: until the peer disconnects (default 0, as rping; with --loopback ${LOOPBACK_COUNT}, a check that ends)`,
  },
  size: { short: 'S', type: 'number', help: `ping data size, ${MIN_SIZE}..${MAX_SIZE}`, default: 64 },
  verbose: { short: 'v', type: 'boolean', help: 'print the ping data (lines as rping prints them)' },
  validate: { short: 'V', type: 'boolean', help: 'client: check that the data came back unchanged' },
  debug: { short: 'd', type: 'boolean', help: 'print what happens, step by step' },
  persistent: { short: 'P', type: 'boolean', help: 'server: keep serving clients, one after another or at once', with: ['server', 'loopback'] },
  'self-qp': { short: 'q', type: 'boolean', help: 'accepted for rping compatibility: our QPs are always self-created' },
  loopback: { type: 'boolean', help: 'server and client(s) in this one process; the way to use soft devices' },
  clients: { type: 'number', help: 'with --loopback: clients connecting at once (more than 1 needs -P)', default: 1, with: ['loopback'] },
  timeout: { type: 'number', help: 'client: give up connecting after this many milliseconds', default: 10_000 },
  cm: CM_OPTION,
  help: { short: 'h', type: 'boolean', help: 'show this help' },
} as const;

/** The usage line of `--help`. */
export const USAGE = 'rx-verbs rping -s|-c|--loopback [options]';

/** What `--help` says the command does. */
export const SUMMARY = `RDMA ping over rdma_cm, compatible on the wire with rdma-core's rping (either side
can be rping): the client advertises a buffer, the server RDMA-READs it, the
client advertises a second buffer, the server RDMA-WRITEs the data there.
  rx-verbs rping -s [-P] [-a addr] [-p port]          serve
  rx-verbs rping -c -a addr [-p port] [-C n] [-vV]    ping the server at addr
  rx-verbs rping --loopback [-C n] [-vV]              both in this process (127.0.0.1):
      ${LOOPBACK_COUNT} pings unless -C says, then a line with how many went through
Soft devices (soft0) and their connection manager exist inside one process only,
so two processes cannot connect through them: use --loopback there.`;

/** The parsed command line. */
export interface RpingOptions {
  role: 'server' | 'client' | 'loopback';
  /** Where the server listens, or the server the client connects to. */
  addr: string | undefined;
  sourceAddr: string | undefined;
  port: number;
  /** 0: forever. */
  count: number;
  size: number;
  verbose: boolean;
  validate: boolean;
  debug: boolean;
  persistent: boolean;
  clients: number;
  timeoutMs: number;
  /** Which CM; undefined: by address. */
  cm: CmProvider | undefined;
}

/** Checks the parsed command line. */
export function resolveOptions({ values: o }: ParsedOptions<typeof OPTIONS>): RpingOptions {
  if (o.loopback && o.addr !== undefined) throw new UsageError('--loopback serves on 127.0.0.1: give no -a');
  const roles = [o.server && '-s', o.client && '-c', o.loopback && '--loopback'].filter(Boolean);
  if (roles.length !== 1) {
    throw new UsageError(roles.length === 0 ? 'give a role: -s (server), -c (client) or --loopback' : `one role at a time, got ${roles.join(' ')}`);
  }
  const role = o.server ? 'server' : o.client ? 'client' : 'loopback';
  if (role === 'client' && o.addr === undefined) throw new UsageError('the client needs the server\'s address (-a)');
  const clients = intIn(o.clients, 'clients', 1, 1024);
  if (clients > 1 && !o.persistent) throw new UsageError('more than one client needs a persistent server (-P)');
  return {
    role,
    addr: o.addr,
    sourceAddr: o['source-addr'],
    port: intIn(o.port, 'port', role === 'loopback' ? 0 : 1, 65535),
    count: intIn(o.count ?? (role === 'loopback' ? LOOPBACK_COUNT : 0), 'count', 0, 2 ** 31 - 1),
    size: intIn(o.size, 'size', MIN_SIZE, MAX_SIZE),
    verbose: o.verbose,
    validate: o.validate,
    debug: o.debug,
    persistent: o.persistent,
    clients,
    timeoutMs: intIn(o.timeout, 'timeout', 1, 3_600_000),
    cm: cmProvider(o.cm),
  };
}

function intIn(v: number, name: string, min: number, max: number): number {
  if (!Number.isInteger(v) || v < min || v > max) throw new UsageError(`--${name} must be an integer in ${min}..${max}, got ${v}`);
  return v;
}
