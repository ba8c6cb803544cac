import type { Subscription } from 'rxjs';
import { CM_REJECT_NO_LISTENER, CmAddress, CmEvent, CmEventType } from '../core/cm';
import type { VirtualCmId } from './virtual-cm-id';

/** Options of `cm.client()`. */
export interface VirtualClientOptions {
  /** Sent with the connect request (a string as UTF-8). */
  privateData?: Uint8Array | string;
  /** How long address resolution may take when nobody has the address (default 2000 frames). */
  resolveTimeout?: number;
}

/** What became of a virtual client's connection. */
export type VirtualClientOutcome =
  | 'pending' | 'connected' | 'rejected' | 'no-listener' | 'unreachable' | 'address-error'
  | 'disconnected' | 'closed' | 'device-removed';

/**
 * A scripted remote client of the virtual CM (see `VirtualCm.client`): it
 * resolves, connects and establishes on its own, and records the outcome.
 */
export class VirtualClient {
  /** Where it stands. */
  outcome: VirtualClientOutcome = 'pending';
  /** The private data the listener answered with (accept or reject). */
  answer: Uint8Array | undefined;
  /** Every CM event it saw, in order. */
  readonly events: CmEventType[] = [];
  private readonly subscription: Subscription;

  /** @internal */
  constructor(
    private readonly id: VirtualCmId,
    to: CmAddress,
    options: VirtualClientOptions,
    private readonly qpNum: number,
  ) {
    const data = typeof options.privateData === 'string' ? new TextEncoder().encode(options.privateData) : options.privateData;
    this.subscription = id.channel.events$.subscribe((e) => this.handle(e, data));
    id.resolveAddr(to, options.resolveTimeout ?? 2000);
  }

  /** Disconnects (the client's side): the server's `disconnected$` fires. */
  disconnect(): void {
    if (this.outcome === 'connected' || this.outcome === 'pending') this.id.disconnect();
    if (this.outcome === 'connected') this.outcome = 'disconnected';
  }

  /** Gives up or dies: destroys its id without a word (the server still hears of it). */
  close(): void {
    if (this.outcome === 'pending' || this.outcome === 'connected') this.outcome = 'closed';
    this.finish();
  }

  private handle(e: CmEvent, data: Uint8Array | undefined): void {
    if (e.type !== 'UNKNOWN') this.events.push(e.type);
    switch (e.type) {
      case 'ADDR_RESOLVED':
        this.id.resolveRoute(0);
        return;
      case 'ROUTE_RESOLVED':
        this.id.connect({ qpNum: this.qpNum, privateData: data });
        return;
      case 'CONNECT_RESPONSE':
        this.answer = e.privateData;
        this.id.establish();
        this.outcome = 'connected';
        return;
      case 'REJECTED':
        this.answer = e.privateData;
        this.end(e.status === CM_REJECT_NO_LISTENER ? 'no-listener' : 'rejected');
        return;
      case 'UNREACHABLE':
        this.end('unreachable');
        return;
      case 'ADDR_ERROR':
        this.end('address-error');
        return;
      case 'DISCONNECTED':
        if (this.outcome === 'pending' || this.outcome === 'connected') this.outcome = 'disconnected';
        return;
      case 'DEVICE_REMOVAL':
        this.end('device-removed');
        return;
      default:
        return;
    }
  }

  private end(outcome: VirtualClientOutcome): void {
    this.outcome = outcome;
    this.finish();
  }

  private finish(): void {
    this.subscription.unsubscribe();
    this.id.close();
    try {
      this.id.channel.close();
    } catch {
      // Closed already.
    }
  }
}
