/**
 * The connection manager's vocabulary (docs/ARCHITECTURE.md, Connections), shared by the native CM
 * adapter (src/cm) and the testing kit's virtual CM: event names, addresses,
 * private-data limits, and the small port interface that `listen()` and
 * `connect()` drive. Kept free of any native import, so a virtual CM can
 * implement the port without the addon or the verbs classes.
 */
import type { Observable } from 'rxjs';
import type { CqLike } from './types';

/** CM event names, indexed by librdmacm's `enum rdma_cm_event_type`. */
export const CM_EVENT_TYPES = [
  'ADDR_RESOLVED', 'ADDR_ERROR', 'ROUTE_RESOLVED', 'ROUTE_ERROR', 'CONNECT_REQUEST',
  'CONNECT_RESPONSE', 'CONNECT_ERROR', 'UNREACHABLE', 'REJECTED', 'ESTABLISHED',
  'DISCONNECTED', 'DEVICE_REMOVAL', 'MULTICAST_JOIN', 'MULTICAST_ERROR', 'ADDR_CHANGE',
  'TIMEWAIT_EXIT',
] as const;

/** A CM event type as librdmacm names it (without the `RDMA_CM_EVENT_` prefix). */
export type CmEventType = (typeof CM_EVENT_TYPES)[number];

/** The name of a numeric CM event type (`'UNKNOWN'` past the table). */
export function cmEventName(type: number): CmEventType | 'UNKNOWN' {
  return CM_EVENT_TYPES[type] ?? 'UNKNOWN';
}

/**
 * Private data limits in bytes of the TCP port space: the IB CM's message
 * sizes less the rdma_cm header. Longer private data is a `RangeError`
 * before anything is sent.
 */
export const CM_PRIVATE_DATA_MAX = { connect: 56, accept: 196, reject: 148 } as const;

/** IB CM reject reasons the library words (the `status` of `REJECTED`). */
export const CM_REJECT_REASONS: Readonly<Record<number, string>> = {
  8: 'INVALID_SERVICE_ID',
  28: 'CONSUMER_REJECT',
};

/** The reject reason of a reject sent by the peer's application (`rdma_reject`). */
export const CM_REJECT_CONSUMER = 28;
/** The reject reason when nobody listens on the port (invalid service ID). */
export const CM_REJECT_NO_LISTENER = 8;

/** A numeric IPv4 or IPv6 address (no name lookup) and a port. */
export interface CmAddress {
  readonly host: string;
  readonly port: number;
}

/** What `connect` / `accept` send: `rdma_conn_param`, QP number included. */
export interface CmConnParam {
  /** The QP this side uses (never attached to the id: see {@link CmIdPort.modifyQp}). */
  qpNum: number;
  privateData?: Uint8Array;
  responderResources?: number;
  initiatorDepth?: number;
  retryCount?: number;
  rnrRetryCount?: number;
  srq?: boolean;
}

/**
 * What a side sets on its own QP over what the CM derives. The CM gives each
 * QP the RNR retry count its *peer's* message carried (the kernel's IB CM
 * does so), so a count chosen on one side reaches that side's QP only here.
 */
export interface CmOwnQpAttrs {
  /** 0-7 (7: for ever). */
  rnrRetryCount?: number;
}

/** One CM event, copied and already acked (nothing a consumer does can leave it unacked). */
export interface CmEvent<Id = CmIdPort> {
  readonly type: CmEventType | 'UNKNOWN';
  /** 0, a negative errno, or (`REJECTED`) the reject reason. */
  readonly status: number;
  /** The id it concerns; for `CONNECT_REQUEST` the new connection's id. */
  readonly id: Id;
  /** For `CONNECT_REQUEST`: the listening id. */
  readonly listener?: Id;
  /** The peer's private data (empty when none). */
  readonly privateData: Uint8Array;
  /** The peer's QP number (`CONNECT_REQUEST`, `CONNECT_RESPONSE`). */
  readonly qpNum: number;
  readonly responderResources: number;
  readonly initiatorDepth: number;
  /** `CONNECT_REQUEST`, `CONNECT_RESPONSE`: the retry count the peer's message carried. */
  readonly retryCount?: number;
  /** `CONNECT_REQUEST`, `CONNECT_RESPONSE`: the RNR retry count the peer's message carried (for this side's QP). */
  readonly rnrRetryCount?: number;
  /**
   * `CONNECT_RESPONSE` only, from a port that answers it itself (see
   * {@link CmPort.connectAndEstablish}): the QP is in RTS and the connection established.
   */
  readonly established?: boolean;
  /** A step the CM took for this event on the caller's behalf failed: why. */
  readonly error?: Error;
}

/** QP states the CM moves a connection's QP through. */
export type CmQpState = 'INIT' | 'RTR' | 'RTS' | 'ERR';

/**
 * An `rdma_cm_id` as `listen()` / `connect()` drive it. Its events arrive on
 * its channel's `events$`. QPs are never attached to an id: the connection's
 * QP is made on the id's device and moved with {@link CmIdPort.modifyQp}.
 * `C` is the kind of channel a CM's ids move between (each CM's own).
 */
export interface CmIdPort<C extends CmChannelPort = CmChannelPort> {
  /** True once closed. */
  readonly closed: boolean;
  /** null until bound or resolved. */
  readonly localAddress: CmAddress | null;
  readonly peerAddress: CmAddress | null;
  /** Binds to a local address (`rdma_bind_addr`). */
  bind(addr: CmAddress): void;
  /** Listens for connect requests (`rdma_listen`). */
  listen(backlog: number): void;
  /**
   * Resolves `dst` to a device (`rdma_resolve_addr`), from the local
   * address `src` when given: `ADDR_RESOLVED` or `ADDR_ERROR` follows.
   * With `routeTimeoutMs` a CM may go on to resolve the route itself as
   * soon as the address is (the native CMs do, with no trip through JS in
   * between): `ROUTE_RESOLVED` or `ROUTE_ERROR` then follows instead of
   * `ADDR_RESOLVED`.
   */
  resolveAddr(dst: CmAddress, timeoutMs: number, src?: CmAddress, routeTimeoutMs?: number): void;
  /** Resolves the route (`rdma_resolve_route`): `ROUTE_RESOLVED` or `ROUTE_ERROR` follows. */
  resolveRoute(timeoutMs: number): void;
  /** Sends the connect request (`rdma_connect`). */
  connect(param: CmConnParam): void;
  /** Accepts a connect request (`rdma_accept`). */
  accept(param: CmConnParam): void;
  /** Rejects a connect request (`rdma_reject`). */
  reject(privateData?: Uint8Array): void;
  /** Answers `CONNECT_RESPONSE` once the QP is in RTS (`rdma_establish`). */
  establish(): void;
  /** Disconnects (`rdma_disconnect`): both sides get `DISCONNECTED`. */
  disconnect(): void;
  /** Later events of this id go to `channel` (`rdma_migrate_id`). */
  migrate(channel: C): void;
  /** Never blocks. Idempotent. */
  close(): void;
}

/** A CM event channel: a hot stream of the events of the ids made on it. */
export interface CmChannelPort {
  /** `'rdmacm'`, `'soft'` or `'virtual'`. */
  readonly provider: string;
  /** True once closed. */
  readonly closed: boolean;
  /** Hot: events are read only while something subscribes. */
  readonly events$: Observable<CmEvent>;
  /** A new id whose events arrive here (`rdma_create_id`). */
  createId(): CmIdPort;
  /** Lets the process exit while the channel is watched. */
  unref(): void;
  /** Keeps the process alive while the channel is watched (the default). */
  ref(): void;
  /** Fails while ids still use it (`EBUSY`). Idempotent. */
  close(): void;
}

/** What every connection's verbs resources offer, native or virtual. */
export interface ConnectionResources {
  /** The QP's number, sent to the peer. */
  readonly qpNum: number;
  /** The connection's queue pair. */
  readonly qp: { readonly qpNum: number };
  /** Send and receive CQs (one object when they are shared). */
  readonly sendCq: CqLike;
  readonly recvCq: CqLike;
  /** The shared receive queue its QP takes receives from, if any. */
  readonly srq?: unknown;
  /** True once released. */
  readonly closed: boolean;
}

/**
 * The seam between the connection logic and a CM: channels and ids, plus
 * the hook that makes a connection's verbs resources on an id's device. The
 * native adapter implements it over the addon (librdmacm or the soft CM);
 * the testing kit's virtual CM implements it in virtual time.
 */
export interface CmPort<R extends ConnectionResources = ConnectionResources, O extends object = object> {
  /** A new event channel for ids that talk to `host` (a port may pick a provider by address). */
  createChannel(host: string): CmChannelPort;
  /**
   * Makes the connection's verbs resources on `id`'s device, its QP in
   * RESET. `options` are the caller's `listen` / `connect` / `accept`
   * options: the port takes the ones it knows (e.g. a PD or CQs to borrow,
   * which it then never closes).
   */
  createResources(id: CmIdPort, options: O): R;
  /**
   * Moves the resources' QP to `state` with what the CM derives for `id`'s
   * connection; at RTS, `own.rnrRetryCount` replaces the RNR retry count
   * the CM took from the peer's message (this side's own choice).
   */
  modifyQp(id: CmIdPort, resources: R, state: CmQpState, own?: CmOwnQpAttrs): void;
  /**
   * Optional: sends the connect request for `resources`' QP and, when the
   * response comes, moves that QP to RTS and establishes before the
   * `CONNECT_RESPONSE` event is handed over (it then says `established`,
   * or carries the `error` of the step that failed). Without it (or when
   * the event says neither) the caller takes those steps itself.
   */
  connectAndEstablish?(id: CmIdPort, resources: R, param: CmConnParam): void;
  /** The device went away under the connection: its verbs streams end with `error`. */
  failResources(resources: R, error: Error): void;
  /**
   * Optional: calls `lost` once if the resources' QP is closed by anything
   * but {@link CmPort.releaseResources} (its PD or context closed under it);
   * the error it returns (if any) ends the streams the connection owns.
   */
  watchResources?(resources: R, lost: () => Error | undefined): void;
  /** Releases what `createResources` made (never what was borrowed), in the safe order. Idempotent. */
  releaseResources(resources: R): void;
}

/**
 * A protocol that rides on a connection and takes part in its set-up (the
 * message layer, `src/messages`): it adds its part to the private data each
 * side sends, reads the peer's, and posts its receives before anything can
 * arrive. `connect({ layer })` and `accept({ layer })` take one; the CM
 * knows nothing of what it is.
 */
export interface ConnectionLayer<R extends ConnectionResources = ConnectionResources> {
  /** The private data to send: the layer's part and the caller's `user` bytes (at most `limit` in all). */
  privateData(user: Uint8Array, limit: number): Uint8Array;
  /**
   * Passive side, before anything is made: the request's private data,
   * checked; returns the caller's part of it. Throws the typed error that
   * the accept rejects with; `rejectData` on it (a Uint8Array) is what the
   * request is rejected with, so the peer learns why.
   */
  request?(privateData: Uint8Array): Uint8Array;
  /** The QP takes receives (INIT on connect, RTS on accept): post them now. */
  prepare(resources: R): void;
  /** The peer's answer (its accept, or, passive, its request): checked; returns the caller's part. Throws to fail the set-up. */
  established(privateData: Uint8Array): Uint8Array;
  /** Active side: the request was rejected; a more telling error than `error`, if the layer has one. */
  rejected?(error: Error & { privateData?: Uint8Array }): Error | undefined;
  /** The set-up failed or was cancelled after `prepare`: release what it made. */
  abandon(): void;
}
