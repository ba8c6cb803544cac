/**
 * Typed failures of connection set-up and of live connections (docs/ARCHITECTURE.md, Connections).
 * Each has a stable `name` and `code`, as the verbs errors do, so callers
 * switch on `err.code` without `instanceof`. Addon-free: the virtual CM
 * raises the same ones.
 */
import { CM_REJECT_CONSUMER, CM_REJECT_REASONS, CmAddress } from './cm';

/** The `code` values of the connection errors. */
export const CM_ERROR_CODES = {
  REJECTED: 'ERR_CM_REJECTED',
  UNREACHABLE: 'ERR_CM_UNREACHABLE',
  ADDRESS: 'ERR_CM_ADDRESS',
  ROUTE: 'ERR_CM_ROUTE',
  CONNECT: 'ERR_CM_CONNECT',
  TIMEOUT: 'ERR_CM_TIMEOUT',
  DEVICE_REMOVED: 'ERR_CM_DEVICE_REMOVED',
  RESOURCES_CLOSED: 'ERR_CM_RESOURCES_CLOSED',
  DISCONNECTED: 'ERR_CM_DISCONNECTED',
  ANSWERED: 'ERR_CM_ANSWERED',
  LISTENER_CLOSED: 'ERR_CM_LISTENER_CLOSED',
  /** The errno librdmacm's failure has always carried, so `err.code === 'ENODEV'` checks keep working. */
  UNAVAILABLE: 'ENODEV',
} as const;

function where(peer: CmAddress | undefined): string {
  if (!peer) return '';
  return peer.host.includes(':') ? ` [${peer.host}]:${peer.port}` : ` ${peer.host}:${peer.port}`;
}

/** Fields every connection error carries. */
abstract class CmError extends Error {
  /** The peer address the attempt or connection concerned, when known. */
  readonly peer: CmAddress | undefined;
  /** The CM status that came with the event (a negative errno or a reject reason), when any. */
  readonly status: number | undefined;

  constructor(message: string, options?: { peer?: CmAddress; status?: number; cause?: unknown }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.peer = options?.peer;
    this.status = options?.status;
  }
}

/**
 * The connection was rejected: by the peer's application (`reason` 28,
 * `CONSUMER_REJECT`, with what it said in `privateData`), or because nobody
 * listens on that port (`reason` 8, `noListener`).
 */
export class ConnectionRejectedError extends CmError {
  override readonly name = 'ConnectionRejectedError';
  readonly code = CM_ERROR_CODES.REJECTED;
  /** The IB CM reject reason (28: the peer's application rejected; 8: no listener). */
  readonly reason: number;
  /** The reason's name, when the library knows it (`'CONSUMER_REJECT'`, `'INVALID_SERVICE_ID'`). */
  readonly reasonName: string | undefined;
  /** The private data the peer rejected with (empty when none). */
  readonly privateData: Uint8Array;
  /** True when nobody listens on the port (rather than an application's reject). */
  readonly noListener: boolean;

  constructor(reason: number, privateData: Uint8Array, peer?: CmAddress) {
    const name = CM_REJECT_REASONS[reason];
    const noListener = reason !== CM_REJECT_CONSUMER && name === 'INVALID_SERVICE_ID';
    super(
      noListener
        ? `Connection rejected: nobody listens on${where(peer)} (reason ${reason}, ${name})`
        : `Connection rejected by the peer${where(peer)} (reason ${reason}${name ? `, ${name}` : ''}` +
            `${privateData.length ? `, ${privateData.length} bytes of private data` : ''})`,
      { peer, status: reason },
    );
    this.reason = reason;
    this.reasonName = name;
    this.privateData = privateData;
    this.noListener = noListener;
  }
}

/** The peer could not be reached (`UNREACHABLE`: no answer to the connect request). */
export class UnreachableError extends CmError {
  override readonly name = 'UnreachableError';
  readonly code = CM_ERROR_CODES.UNREACHABLE;
  constructor(peer?: CmAddress, status?: number) {
    super(`Peer${where(peer)} unreachable${status ? ` (status ${status})` : ''}`, { peer, status });
  }
}

/** The address could not be resolved to an RDMA device (`ADDR_ERROR`). */
export class AddressResolutionError extends CmError {
  override readonly name = 'AddressResolutionError';
  readonly code = CM_ERROR_CODES.ADDRESS;
  constructor(peer?: CmAddress, status?: number) {
    super(`Could not resolve${where(peer)} to an RDMA device${status ? ` (status ${status})` : ''}`, { peer, status });
  }
}

/** No route to the resolved address (`ROUTE_ERROR`). */
export class RouteResolutionError extends CmError {
  override readonly name = 'RouteResolutionError';
  readonly code = CM_ERROR_CODES.ROUTE;
  constructor(peer?: CmAddress, status?: number) {
    super(`Could not resolve a route to${where(peer)}${status ? ` (status ${status})` : ''}`, { peer, status });
  }
}

/** The connection could not be completed (`CONNECT_ERROR`). */
export class ConnectError extends CmError {
  override readonly name = 'ConnectError';
  readonly code = CM_ERROR_CODES.CONNECT;
  constructor(peer?: CmAddress, status?: number) {
    super(`Connection to${where(peer)} failed${status ? ` (status ${status})` : ''}`, { peer, status });
  }
}

/**
 * Connection set-up took longer than `timeoutMs`. Ours: the kernel keeps
 * retrying for about a minute. Everything the attempt made was released.
 */
export class ConnectTimeoutError extends CmError {
  override readonly name = 'ConnectTimeoutError';
  readonly code = CM_ERROR_CODES.TIMEOUT;
  /** The limit that was exceeded. */
  readonly timeoutMs: number;
  constructor(timeoutMs: number, peer?: CmAddress) {
    super(`Connecting to${where(peer)} timed out after ${timeoutMs} ms`, { peer });
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The connection's queue pair was closed under it by something other than
 * `connection.close()` (its PD or the context of a PD it borrowed was
 * closed): the connection is disconnected and its streams end with this.
 */
export class ResourcesClosedError extends CmError {
  override readonly name = 'ResourcesClosedError';
  readonly code = CM_ERROR_CODES.RESOURCES_CLOSED;
  constructor(peer?: CmAddress) {
    super(`The queue pair of the connection to${where(peer)} was closed under it (its PD or context was closed)`, { peer });
  }
}

/** The RDMA device under the connection or listener went away (`DEVICE_REMOVAL`). */
export class DeviceRemovedError extends CmError {
  override readonly name = 'DeviceRemovedError';
  readonly code = CM_ERROR_CODES.DEVICE_REMOVED;
  constructor(peer?: CmAddress) {
    super(`The RDMA device was removed${peer ? ` under the connection to${where(peer)}` : ''}`, { peer });
  }
}

/**
 * The connection ended before it was established, or an operation needs a
 * live connection and it is gone (`DISCONNECTED`; e.g. accepting a request
 * whose peer gave up).
 */
export class DisconnectedError extends CmError {
  override readonly name = 'DisconnectedError';
  readonly code = CM_ERROR_CODES.DISCONNECTED;
  constructor(message: string, peer?: CmAddress, cause?: unknown) {
    super(message, { peer, cause });
  }
}

/** A connection request was already accepted or rejected. */
export class RequestAnsweredError extends CmError {
  override readonly name = 'RequestAnsweredError';
  readonly code = CM_ERROR_CODES.ANSWERED;
  /** How it was answered. */
  readonly answer: 'accepted' | 'rejected' | 'dropped';
  constructor(answer: 'accepted' | 'rejected' | 'dropped', peer?: CmAddress) {
    super(`This connection request from${where(peer)} was already ${answer}`, { peer });
    this.answer = answer;
  }
}

/** The listener closed: its unanswered requests were rejected and its stream completed. */
export class ListenerClosedError extends CmError {
  override readonly name = 'ListenerClosedError';
  readonly code = CM_ERROR_CODES.LISTENER_CLOSED;
  constructor(peer?: CmAddress) {
    super(`The listener closed before this request from${where(peer)} was answered`, { peer });
  }
}

/**
 * rdma_cm cannot be used on this machine, so no connection can be made or
 * taken through it: librdmacm is missing (or the addon was built without
 * its headers), or the kernel has no RDMA CM (`/dev/infiniband/rdma_cm`: no
 * `rdma_ucm` module, no RDMA device). `listen()` throws it, `connect()`
 * rejects with it (`connect$()` errors); `rdmacmStatus()` says the same
 * `reason` beforehand. Addresses of soft devices use the soft CM and never
 * see it.
 */
export class CmUnavailableError extends CmError {
  override readonly name = 'CmUnavailableError';
  readonly code = CM_ERROR_CODES.UNAVAILABLE;
  /** What is missing, as `rdmacmStatus().reason` says it. */
  readonly reason: string;
  constructor(reason: string, cause?: unknown) {
    super(`rdma_cm is not available here: ${reason}`, { cause });
    this.reason = reason;
  }
}
