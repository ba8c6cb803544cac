import type { ConnectionLayer } from '../core/cm';
import { MessagesMismatchError } from '../core/message-errors';
import type { MessageTransport } from './transport';
import { MessageConnection } from './message-connection';
import type { ResolvedMessageOptions } from './options';
import { decodeSetup, encodeSetup, Setup, WIRE_VERSION } from './wire';

/**
 * The message layer's part in a connection's set-up (a `ConnectionLayer`):
 * announces this side's sizes in the private data, checks the peer's
 * (version and `maxEager` must agree, else {@link MessagesMismatchError}),
 * and makes the {@link MessageConnection} (its receives posted) when the
 * QP takes receives, before the peer can send.
 */
export class MessageSetup implements ConnectionLayer<MessageTransport> {
  /** The layer, once `prepare` made it. */
  layer: MessageConnection<MessageTransport> | undefined;
  private peer: Setup | undefined;

  constructor(private readonly options: ResolvedMessageOptions) {}

  private own(): Omit<Setup, 'refusal'> {
    return { version: WIRE_VERSION, maxEager: this.options.maxEager, depth: this.options.depth, maxMessage: this.options.maxMessage };
  }

  privateData(user: Uint8Array): Uint8Array {
    return encodeSetup(this.own(), user);
  }

  /** The peer's set-up, checked: the caller's part of the private data. */
  private check(data: Uint8Array): Uint8Array {
    const got = decodeSetup(data);
    let mismatch: MessagesMismatchError | undefined;
    if (!got) mismatch = new MessagesMismatchError('layer', WIRE_VERSION, undefined);
    else if (got.setup.version !== WIRE_VERSION) mismatch = new MessagesMismatchError('version', WIRE_VERSION, got.setup.version);
    else if (got.setup.maxEager !== this.options.maxEager) mismatch = new MessagesMismatchError('maxEager', this.options.maxEager, got.setup.maxEager);
    if (mismatch) {
      mismatch.rejectData = encodeSetup(this.own(), new Uint8Array(0), true);
      throw mismatch;
    }
    this.peer = got!.setup;
    this.layer?.peerKnown(this.peer);
    return got!.user;
  }

  request(privateData: Uint8Array): Uint8Array {
    return this.check(privateData);
  }

  prepare(resources: MessageTransport): void {
    this.layer = new MessageConnection(resources, this.options);
    if (this.peer) this.layer.peerKnown(this.peer);
  }

  established(privateData: Uint8Array): Uint8Array {
    return this.check(privateData);
  }

  rejected(error: Error & { privateData?: Uint8Array }): Error | undefined {
    const got = error.privateData && decodeSetup(error.privateData);
    if (!got?.setup.refusal) return undefined;
    if (got.setup.version !== WIRE_VERSION) return new MessagesMismatchError('version', WIRE_VERSION, got.setup.version);
    return new MessagesMismatchError('maxEager', this.options.maxEager, got.setup.maxEager);
  }

  abandon(): void {
    this.layer?.destroy();
    this.layer = undefined;
  }
}
