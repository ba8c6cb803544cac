/**
 * What the connection commands share around `listen()` / `connect()`: the
 * `--cm` option, host names (rdma-core's tools take names; the package's
 * CM takes numeric addresses only, so the commands look names up first),
 * and a printable address.
 */
import { lookup } from 'dns/promises';
import { isIP } from 'net';
import { cmProviderFor, softCmAddresses, type CmProvider } from '../../index';
import { UsageError } from './usage-error';

/** The `--cm` option, the same in every connection command. */
export const CM_OPTION = {
  type: 'string',
  help: "connection manager: 'soft' (soft devices, in-process) or 'rdmacm' (default: by address)",
} as const;

/** Checks `--cm`. */
export function cmProvider(value: string | undefined): CmProvider | undefined {
  if (value === undefined || value === 'soft' || value === 'rdmacm') return value;
  throw new UsageError(`--cm must be 'soft' or 'rdmacm', got '${value}'`);
}

/** A numeric address for `host`: itself when numeric, else its first address (as getaddrinfo gives rping). */
export async function numericHost(host: string): Promise<string> {
  if (isIP(host) !== 0) return host;
  try {
    return (await lookup(host)).address;
  } catch (err) {
    throw new Error(`cannot resolve '${host}': ${(err as Error).message}`);
  }
}

/** `host:port`, IPv6 in brackets. */
export function formatAddress(addr: { host: string; port: number } | null | undefined): string {
  if (!addr) return '(unknown)';
  return isIP(addr.host) === 6 ? `[${addr.host}]:${addr.port}` : `${addr.host}:${addr.port}`;
}

/**
 * Refuses an address the soft CM would serve when this process is only one
 * end: the soft CM (like the soft devices) exists inside one process, so a
 * server there would wait forever and a client would find nobody.
 */
export function refuseSoftAcrossProcesses(host: string, provider: CmProvider | undefined): void {
  if (cmProviderFor(host, provider) !== 'soft') return;
  const device = Object.entries(softCmAddresses()).find(([, hosts]) => hosts.includes(host))?.[0] ?? 'a soft device';
  throw new Error(
    `${host} is served by the connection manager of ${device}, which exists inside one process only: ` +
      'use --loopback (both ends in this process), or --cm rdmacm for a real RDMA device on this address',
  );
}
