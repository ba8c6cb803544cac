import type { Observable } from 'rxjs';
import type { ConnectionResources } from '../core/cm';
import type { AccessFlag } from '../core/constants';
import type { CqLike } from '../core/types';
import type { WcBatch } from '../core/wc-batch';

/**
 * What the message layer needs of a connection's verbs resources, by shape
 * alone: the native ones (`VerbsResources`: `Pd`, `Mr`, `Qp`, `Cq`) have it,
 * and so do the testing kit's virtual ones, so the same layer runs on
 * soft0, rdma_cm and the virtual CM.
 *
 * A transport's regions are its own type: the layer hands a transport back
 * only regions that transport made (hence `any` for the region type in the
 * work requests, which each transport checks itself).
 */
export interface MessageTransport extends ConnectionResources {
  readonly pd: TransportPd;
  readonly qp: TransportQp;
  readonly sendCq: TransportCq;
  readonly recvCq: TransportCq;
}

/** A registered region as the layer uses it. */
export interface TransportMr {
  /** Its bytes. */
  readonly buffer: Buffer;
  /** Where it starts, as the peer addresses it. */
  readonly addr: bigint;
  readonly lkey: number;
  readonly rkey: number;
  /** Its size in bytes. */
  readonly length: number;
  readonly closed: boolean;
  /** Deregisters it; idempotent. */
  close(): void;
}

/** A protection domain as the layer uses it: where its regions come from. */
export interface TransportPd {
  /** Allocates and registers `size` bytes (`pd.allocMemory`). */
  allocMemory(size: number, options: { access: readonly AccessFlag[] }): TransportMr;
  /** Registers the caller's memory (`pd.registerMemory`): a view registers exactly its bytes. */
  registerMemory(buffer: ArrayBuffer | ArrayBufferView, options: { access: readonly AccessFlag[] }): TransportMr;
}

/** One scatter/gather entry, in a region the same transport made. */
export interface TransportSge {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the transport's own region type (see MessageTransport)
  mr: any;
  offset: number;
  length: number;
}

/** The send work requests the layer posts: SENDs and rendezvous READs. */
export interface TransportSendWr {
  wrId: number;
  opcode?: 'SEND' | 'RDMA_READ';
  sg: TransportSge;
  remote?: { addr: bigint; rkey: number };
}

/** The receives the layer posts. */
export interface TransportRecvWr {
  wrId: number;
  sg: TransportSge;
}

/** A queue pair as the layer uses it. */
export interface TransportQp {
  readonly qpNum: number;
  readonly cap: { readonly maxSendWr: number; readonly maxRecvWr: number };
  /** Posts one send work request (SEND or RDMA READ). */
  postSend(wr: TransportSendWr): void;
  /** Posts one receive or several at once. */
  postRecv(wr: TransportRecvWr | TransportRecvWr[]): void;
}

/** A CQ as the layer uses it: its completions as a hot stream. */
export interface TransportCq extends CqLike {
  readonly completions$: Observable<WcBatch>;
}
