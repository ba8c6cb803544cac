import { connect } from '../cm/connect';
import type { ConnectionRequest } from '../cm/request';
import type { AcceptOptions, ConnectionOptions } from '../cm/options';
import type { VerbsResourceOptions, VerbsResources } from '../cm/native-port';
import { describe } from '../verbs/validate';
import { receivesFor } from './credits';
import type { MessageConnection } from './message-connection';
import { MessageOptions, ResolvedMessageOptions, resolveMessageOptions } from './options';
import { MessageSetup } from './setup';

/** Options of {@link connectMessages}: those of `connect()` and the layer's sizes. */
export interface MessageConnectOptions extends Omit<ConnectionOptions, 'layer' | 'sendCq' | 'recvCq' | 'srq' | 'cm'> {
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
 * Connects with the message layer on the connection (DESIGN §10): the
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
  if (typeof options !== 'object' || options === null) throw new TypeError(`options must be an object, got ${describe(options)}`);
  const { messages, ...rest } = options as MessageConnectOptions & Record<string, unknown>;
  const resolved = resolveMessageOptions(messages);
  const setup = new MessageSetup(resolved);
  const conn = await connect({ ...(sized(rest, resolved) as ConnectionOptions), layer: setup });
  return setup.layer!.attach(conn);
}

/**
 * Accepts a request with the message layer on the connection: the same as
 * `request.accept()`, and the layer's sizes checked against the
 * requester's. A requester without the layer, or with another `maxEager`,
 * is rejected (it learns why) and this rejects with
 * {@link MessagesMismatchError}.
 */
export async function acceptMessages(request: ConnectionRequest, options?: MessageAcceptOptions): Promise<MessageConnection> {
  const { messages, ...rest } = { ...(options ?? {}) } as MessageAcceptOptions & Record<string, unknown>;
  const resolved = resolveMessageOptions(messages);
  const setup = new MessageSetup(resolved);
  const conn = await request.accept({ ...(sized(rest, resolved) as AcceptOptions), layer: setup });
  return setup.layer!.attach(conn);
}

