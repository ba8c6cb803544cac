import { Observable } from 'rxjs';
import { CM_PRIVATE_DATA_MAX } from '../core/cm';
import { ThreadBound } from '../core/thread-bound';
import type { CmAddress, CmEvent, CmIdPort, CmPort, ConnectionLayer, ConnectionResources } from '../core/cm';
import { DisconnectedError, RequestAnsweredError } from '../core/cm-errors';
import { attempt, Connection } from './connection';
import { setupFailure } from './failures';
import type { VerbsResources } from './native-port';
import type { AcceptOptions } from './options';
import { SharedCmChannel } from './router';
import { checkLayer, checkPrivateData } from './validate';
import { checkFunction, describe, optBool, optInt } from '../core/validate';

/** @internal What a request needs of its listener. */
export interface RequestParts<R extends ConnectionResources> {
  port: CmPort<R, object>;
  id: CmIdPort;
  event: CmEvent;
  listenerChannel: SharedCmChannel;
  host: string;
  /** Called once the request is answered or dropped (the listener stops tracking it). */
  settled(request: ConnectionRequest<R>): void;
}

type State = 'pending' | 'accepted' | 'rejected' | 'dropped';

/**
 * A connection request (`CONNECT_REQUEST`) on a listener's `requests$`.
 * Answer it once: {@link ConnectionRequest.accept} (or its Observable
 * form, {@link ConnectionRequest.accept$}) or
 * {@link ConnectionRequest.reject}; a second answer throws
 * {@link RequestAnsweredError}. Accepting a request its peer gave up on
 * (its connect timed out: the CM gives this side no event for that)
 * rejects with {@link DisconnectedError}; one still unanswered when the
 * listener closes is dropped, and accepting it rejects with
 * `ListenerClosedError`.
 */
export class ConnectionRequest<R extends ConnectionResources = VerbsResources> extends ThreadBound {
  /** The peer's address. */
  readonly peerAddress: CmAddress | null;
  /** The address the request came in on. */
  readonly localAddress: CmAddress | null;
  /** What the peer sent with its request (at most 56 bytes). */
  readonly privateData: Uint8Array;
  /** The peer's QP number. */
  readonly peerQpNum: number;
  private readonly parts: RequestParts<R>;
  private state: State = 'pending';
  private dropReason: Error | undefined;
  private target: ((e: CmEvent) => void) | undefined;

  /** @internal */
  constructor(parts: RequestParts<R>) {
    super();
    this.parts = parts;
    this.peerAddress = parts.id.peerAddress;
    this.localAddress = parts.id.localAddress;
    this.privateData = parts.event.privateData;
    this.peerQpNum = parts.event.qpNum;
    parts.listenerChannel.acquire().on(parts.id, (e) => this.dispatch(e));
    // A request waiting on an unref'd listener holds the process no more than it does.
    if (parts.event.listener && parts.listenerChannel.unrefs(parts.event.listener)) parts.listenerChannel.unref(parts.id);
  }

  /** `'pending'`, `'accepted'`, `'rejected'` or `'dropped'`. */
  get answer(): State {
    return this.state;
  }

  /**
   * Accepts: makes the connection's PD, CQs and QP on the request's device
   * (or uses those in `options`), moves the QP to RTS, sends the accept with
   * `privateData` and resolves once the connection is established. By
   * default the connection's id moves to its own CM channel
   * (`rdma_migrate_id`), so closing the listener never touches it.
   * @returns the connection; rejects with a TypeError / RangeError for bad
   *   options (private data over 196 bytes, say: the request stays
   *   pending), or with a typed error, everything
   *   released: {@link RequestAnsweredError} when already answered,
   *   {@link DisconnectedError} when the peer gave up,
   *   {@link ListenerClosedError} when the listener closed first.
   */
  accept(options?: AcceptOptions<R> & Record<string, unknown>): Promise<Connection<R>> {
    return new Promise<Connection<R>>((resolve, reject) => {
      this.answerWith(options, resolve, reject);
    });
  }

  /**
   * {@link ConnectionRequest.accept} as an Observable: emits the connection
   * once it is established and completes, or errors with what `accept()`
   * rejects with. Unsubscribing before then withdraws the accept: everything
   * is released and the peer's connect fails. On the testing kit's virtual
   * CM inside `TestScheduler.run`, the connection arrives in the frame it is
   * established (a Promise settles only after the run's flush).
   *
   * ```
   * accept$() at 3:   -----(c|)   ESTABLISHED two hops later
   *                   -----#      DisconnectedError (the peer gave up), ...
   * ```
   */
  accept$(options?: AcceptOptions<R> & Record<string, unknown>): Observable<Connection<R>> {
    return new Observable<Connection<R>>((subscriber) =>
      this.answerWith(
        options,
        (connection) => {
          subscriber.next(connection);
          subscriber.complete();
        },
        (error) => subscriber.error(error),
      ),
    );
  }

  /**
   * The accept: settles through `resolve` or `reject` exactly once, and
   * returns what withdraws it while it is not established yet.
   */
  private answerWith(
    options: (AcceptOptions<R> & Record<string, unknown>) | undefined,
    resolve: (connection: Connection<R>) => void,
    reject: (error: unknown) => void,
  ): () => void {
    let opts: AcceptOptions<R>;
    let prepare: ((r: R) => void) | undefined;
    let privateData: Uint8Array;
    let ownChannel: boolean;
    let rnrRetryCount: number | undefined;
    let layer: ConnectionLayer<R> | undefined;
    let peerData = this.privateData;
    try {
      opts = options === undefined ? {} : { ...checkOptions(options) };
      prepare = checkFunction(opts.prepare, 'prepare') as ((r: R) => void) | undefined;
      layer = checkLayer<R>(opts.layer);
      privateData = checkPrivateData(opts.privateData, 'accept', layer);
      ownChannel = optBool(opts.ownChannel, 'ownChannel', true);
      rnrRetryCount = opts.rnrRetryCount === undefined ? undefined : optInt(opts.rnrRetryCount, 'rnrRetryCount', 0, 7, 7);
    } catch (err) {
      // Bad options fail the answer, the request still pending (neither form throws: docs/ARCHITECTURE.md, Errors and bad input).
      reject(err);
      return noop;
    }
    if (this.state !== 'pending') {
      reject(this.answeredError());
      return noop;
    }
    if (layer?.request) {
      try {
        peerData = layer.request(this.privateData);
      } catch (err) {
        // The layer cannot work with this peer: it hears why, in the reject.
        const rejectData = (err as { rejectData?: unknown }).rejectData;
        this.reject({ privateData: rejectData instanceof Uint8Array ? rejectData : undefined });
        reject(err);
        return noop;
      }
    }
    // Unless told, this side's QP retries as the peer asked, and says so back.
    const ownQp = { rnrRetryCount: rnrRetryCount ?? this.parts.event.rnrRetryCount };
    this.state = 'accepted';
    const { port, id, listenerChannel } = this.parts;
    const peer = this.peerAddress ?? undefined;
    let resources: R | undefined;
    let own: SharedCmChannel | undefined;
    const channels = [listenerChannel];
    let layerPrepared = false;
    let settled = false;
    const fail = (error: unknown) => {
      settled = true;
      this.target = undefined;
      if (layerPrepared) attempt(() => layer!.abandon());
      if (resources) attempt(() => port.releaseResources(resources!));
      attempt(() => id.close());
      this.release(channels);
      reject(error);
    };
    this.target = (e) => {
      if (e.type === 'ESTABLISHED') {
        this.target = undefined;
        // A connection holds the process until it is unref'd, whatever its listener does.
        listenerChannel.ref(id);
        const connection = new Connection<R>({
          port,
          id,
          resources: resources!,
          channels,
          privateData: peerData,
          peerAddress: this.peerAddress,
          localAddress: this.localAddress,
        });
        // The listener's channel needed it only until the migration was
        // sure to be done: events read there before it are behind us now.
        if (own) {
          listenerChannel.off(id);
          channels.splice(channels.indexOf(listenerChannel), 1);
          listenerChannel.release();
        }
        settled = true;
        resolve(connection);
        return;
      }
      const error = passiveFailure(e, peer);
      if (error) fail(error);
    };
    try {
      // A native CM's listener is on the channel every connection of the
      // process shares, which closing the listener leaves open: nothing to move.
      if (ownChannel && !listenerChannel.kept) {
        own = new SharedCmChannel(port.createChannel(this.parts.host)).acquire();
        id.migrate(own.channel);
        own.on(id, (e) => this.dispatch(e));
        channels.push(own);
      }
      resources = port.createResources(id, opts as object);
      const r = resources;
      this.answering(() => {
        port.modifyQp(id, r, 'INIT');
        port.modifyQp(id, r, 'RTR');
        port.modifyQp(id, r, 'RTS', ownQp);
      });
      if (layer) {
        layerPrepared = true;
        layer.prepare(resources);
      }
      prepare?.(resources);
      const sent = layer ? layer.privateData(privateData, CM_PRIVATE_DATA_MAX.accept) : privateData;
      this.answering(() => id.accept({ qpNum: r.qpNum, privateData: sent, rnrRetryCount: ownQp.rnrRetryCount, srq: r.srq !== undefined }));
    } catch (err) {
      fail(err);
    } finally {
      this.parts.settled(this);
    }
    return () => {
      if (!settled) fail(new DisconnectedError('The accept was withdrawn before the connection was established', peer));
    };
  }

  /**
   * Rejects with `privateData` (at most 148 bytes): the peer's connect fails
   * with `ConnectionRejectedError` carrying it. Releases the request's id.
   * @throws RequestAnsweredError when already answered; RangeError for
   *   private data over 148 bytes.
   */
  reject(options?: { privateData?: Uint8Array | string }): void {
    const opts = options === undefined ? {} : { ...checkOptions(options) };
    const privateData = checkPrivateData(opts.privateData, 'reject');
    if (this.state !== 'pending') throw this.answeredError();
    this.state = 'rejected';
    const { id } = this.parts;
    try {
      id.reject(privateData);
    } finally {
      attempt(() => id.close());
      this.release([this.parts.listenerChannel]);
      this.parts.settled(this);
    }
  }

  /** @internal The listener closed with this request unanswered: reject it, drop it. */
  drop(reason: Error): void {
    if (this.state !== 'pending') return;
    this.state = 'dropped';
    this.dropReason = reason;
    attempt(() => this.parts.id.reject());
    attempt(() => this.parts.id.close());
    this.release([this.parts.listenerChannel]);
  }

  private dispatch(e: CmEvent): void {
    if (this.target) {
      this.target(e);
      return;
    }
    // Unanswered and the connection or the device went (the kernel's rdma_cm
    // says nothing of a peer that withdraws an unaccepted request: accept()
    // finds out, see answering()).
    if (this.state === 'pending') {
      const error = passiveFailure(e, this.peerAddress ?? undefined);
      if (!error) return;
      this.drop(error);
      this.parts.settled(this);
    }
  }

  /**
   * Runs a CM step of the accept. The kernel's rdma_cm tells the passive
   * side nothing when the peer withdraws a request nobody accepted yet (its
   * ucma drops events of a new id until accept); the id's CM state is just
   * gone, so the step fails with EINVAL: that is the peer having given up.
   */
  private answering(step: () => void): void {
    try {
      step();
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'EINVAL') throw err;
      const peer = this.peerAddress ?? undefined;
      const from = peer ? ` from ${peer.host}:${peer.port}` : '';
      throw new DisconnectedError(`The connection request${from} is gone: the peer gave up before it was accepted`, peer, err);
    }
  }

  /** Why a request that is no longer pending cannot be answered. */
  private answeredError(): Error {
    if (this.state === 'dropped' && this.dropReason) return this.dropReason;
    return new RequestAnsweredError(this.state === 'pending' ? 'dropped' : this.state, this.peerAddress ?? undefined);
  }

  private release(channels: SharedCmChannel[]): void {
    for (const shared of channels) {
      shared.off(this.parts.id);
      attempt(() => shared.release());
    }
  }
}

/**
 * The typed error a failure event means for a request being answered: as
 * on the active side, except that a REJECTED here means the peer gave up
 * (its connect timed out or its id went away after the accept was sent).
 */
function passiveFailure(e: CmEvent, peer: CmAddress | undefined): Error | undefined {
  if (e.type !== 'REJECTED') return setupFailure(e, peer);
  const from = peer ? ` from ${peer.host}:${peer.port}` : '';
  return new DisconnectedError(`The connection request${from} was withdrawn by the peer before it was established (reject reason ${e.status})`, peer);
}

function checkOptions<T>(value: T): T {
  if (typeof value !== 'object' || value === null) throw new TypeError(`options must be an object, got ${describe(value)}`);
  return value;
}

function noop(): void {
  // Nothing is under way to withdraw.
}
