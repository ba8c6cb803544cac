import { defer, map, Observable } from 'rxjs';
import { connect, connect$ } from '../cm/connect';
import type { ConnectionRequest } from '../cm/request';
import type { AcceptOptions, ConnectionOptions } from '../cm/options';
import type { VerbsResourceOptions } from '../cm/native-port';
import { describe } from '../core/validate';
import { receivesFor } from './credits';
import type { MessageConnection } from './message-connection';
import { MessageOptions, ResolvedMessageOptions, resolveMessageOptions } from './options';
import { MessageSetup } from './setup';
import type { MessageTransport } from './transport';

/**
 * Options of {@link connectMessages}: those of `connect()` and the layer's
 * sizes. `cm` may be the testing kit's virtual CM (see {@link connectMessages$}).
 */
export interface MessageConnectOptions extends Omit<ConnectionOptions, 'layer' | 'sendCq' | 'recvCq' | 'srq'> {
  /** The layer's sizes; the peer must agree on `maxEager`. */
  messages?: MessageOptions;
}

/** Options of {@link acceptMessages}: those of `accept()` and the layer's sizes. */
export interface MessageAcceptOptions extends Omit<AcceptOptions, 'layer' | 'sendCq' | 'recvCq' | 'srq'> {
  /** The layer's sizes; the peer must agree on `maxEager`. */
  messages?: MessageOptions;
}

/**
 * The QP and CQ sizes the layer needs, unless the caller chose its own
 * (then the layer checks them when the QP is made).
 */
function sized(options: VerbsResourceOptions, m: ResolvedMessageOptions): VerbsResourceOptions {
  for (const key of ['sendCq', 'recvCq', 'srq'] as const) {
    if ((options as Record<string, unknown>)[key] !== undefined) {
      throw new TypeError(`${key} cannot be given with the message layer: it owns the connection's queues (got ${describe((options as Record<string, unknown>)[key])})`);
    }
  }
  const receives = receivesFor(m.depth);
  const sends = receives + m.reads;
  return {
    ...options,
    cap: options.cap ?? { maxSendWr: sends, maxRecvWr: receives, maxSendSge: 1, maxRecvSge: 1 },
    cqe: options.cqe ?? Math.max(sends, receives),
  };
}

/**
 * Connects with the message layer on the connection (docs/ARCHITECTURE.md, The message layer): the
 * same set-up as `connect()`, and the layer's sizes agreed with the peer
 * in the private data (the caller's own `privateData` gets 40 bytes).
 * Resolves once established, its receives posted.
 *
 * ```ts
 * const mc = await connectMessages({ host: '127.0.0.1', port: 7471 });
 * await mc.send('hello');
 * const reply = await mc.request('ping');
 * console.log(reply.text());
 * reply.release();
 * mc.close();
 * ```
 * @returns rejects with what `connect()` rejects with, and
 *   {@link MessagesMismatchError} when the peer has no layer or another
 *   `maxEager` (the connection is then closed); TypeError / RangeError for
 *   bad options.
 */
export async function connectMessages(options: MessageConnectOptions): Promise<MessageConnection> {
  const { setup, connectOptions } = planConnect(options);
  const conn = await connect(connectOptions);
  return setup.layer!.attach(conn);
}

/**
 * {@link connectMessages} as an Observable: each subscription connects,
 * emits the message connection once established and completes, or errors
 * as `connectMessages()` rejects; unsubscribing before then cancels the
 * attempt. With the testing kit's virtual CM as `cm`, everything — set-up,
 * credits, rendezvous READs, timeouts — runs in virtual time inside
 * `TestScheduler.run`, frame by frame:
 *
 * ```
 * connectMessages$({ cm }) at 0:   ----(c|)   established (four CM hops)
 * then c.request$('q') at 6:       --------r  the peer's reply, a hop each way
 * ```
 * @see {@link acceptMessages$}
 */
export function connectMessages$(options: MessageConnectOptions): Observable<MessageConnection> {
  return defer(() => {
    const { setup, connectOptions } = planConnect(options);
    return connect$(connectOptions).pipe(map((conn) => setup.layer!.attach(conn)));
  });
}

/** The layer's set-up and the options of the connect that carries it (TypeError / RangeError for bad ones). */
function planConnect(options: MessageConnectOptions): { setup: MessageSetup; connectOptions: ConnectionOptions } {
  if (typeof options !== 'object' || options === null) throw new TypeError(`options must be an object, got ${describe(options)}`);
  const { messages, ...rest } = options as MessageConnectOptions & Record<string, unknown>;
  const resolved = resolveMessageOptions(messages);
  const setup = new MessageSetup(resolved);
  return { setup, connectOptions: { ...(sized(rest, resolved) as ConnectionOptions), layer: setup } };
}

/**
 * Accepts a request with the message layer on the connection: the same as
 * `request.accept()`, and the layer's sizes checked against the
 * requester's. A requester without the layer, or with another `maxEager`,
 * is rejected (it learns why) and this rejects with
 * {@link MessagesMismatchError}.
 */
export async function acceptMessages<R extends MessageTransport>(request: ConnectionRequest<R>, options?: MessageAcceptOptions): Promise<MessageConnection<R>> {
  const { setup, acceptOptions } = planAccept<R>(options);
  const conn = await request.accept(acceptOptions);
  return setup.layer!.attach(conn);
}

/**
 * {@link acceptMessages} as an Observable (`request.accept$()` with the
 * layer): emits the message connection once established and completes;
 * unsubscribing before then withdraws the accept. On the virtual CM, in the
 * frame the connection is established:
 *
 * ```ts
 * listener.requests$.pipe(mergeMap((request) => acceptMessages$(request)))
 * ```
 */
export function acceptMessages$<R extends MessageTransport>(request: ConnectionRequest<R>, options?: MessageAcceptOptions): Observable<MessageConnection<R>> {
  return defer(() => {
    const { setup, acceptOptions } = planAccept<R>(options);
    return request.accept$(acceptOptions).pipe(map((conn) => setup.layer!.attach(conn)));
  });
}

/** The layer's set-up and the options of the accept that carries it (TypeError / RangeError for bad ones). */
function planAccept<R extends MessageTransport>(options: MessageAcceptOptions | undefined): { setup: MessageSetup; acceptOptions: AcceptOptions<R> & Record<string, unknown> } {
  const { messages, ...rest } = { ...(options ?? {}) } as MessageAcceptOptions & Record<string, unknown>;
  const resolved = resolveMessageOptions(messages);
  const setup = new MessageSetup(resolved);
  return { setup, acceptOptions: { ...(sized(rest, resolved) as AcceptOptions<R>), layer: setup } };
}

