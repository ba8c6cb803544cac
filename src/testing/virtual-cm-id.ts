import type { CmAddress, CmConnParam, CmIdPort } from '../core/cm';
import { VirtualCmChannel } from './virtual-cm-channel';

/** What an id asks of its virtual CM (the fabric). */
export interface VirtualFabric {
  bind(id: VirtualCmId, addr: CmAddress): CmAddress;
  listen(id: VirtualCmId): void;
  resolveAddr(id: VirtualCmId, dst: CmAddress, timeoutMs: number, src?: CmAddress): void;
  resolveRoute(id: VirtualCmId): void;
  connect(id: VirtualCmId, param: CmConnParam): void;
  accept(id: VirtualCmId, param: CmConnParam): void;
  reject(id: VirtualCmId, privateData: Uint8Array): void;
  establish(id: VirtualCmId): void;
  disconnect(id: VirtualCmId): void;
  close(id: VirtualCmId): void;
}

/** Where a virtual id is in its life. */
export type VirtualIdState =
  | 'idle' | 'bound' | 'listening' | 'resolving' | 'resolved' | 'routed' | 'connecting'
  | 'requested' | 'accepting' | 'connected' | 'disconnected' | 'closed';

/** An `rdma_cm_id` of the virtual CM. */
export class VirtualCmId implements CmIdPort<VirtualCmChannel> {
  /** Where it is in its life. */
  state: VirtualIdState = 'idle';
  /** Its address once bound or resolved. */
  localAddress: CmAddress | null = null;
  /** The peer's, once resolved or requested. */
  peerAddress: CmAddress | null = null;
  /** The other end, once a connect request pairs two ids. */
  peer: VirtualCmId | undefined;
  /** What the connect / accept sent (private data, QP number). */
  sent: CmConnParam | undefined;
  /** Whether it connected out (the active side). */
  active = false;
  private current: VirtualCmChannel;

  /** @internal */
  constructor(
    private readonly fabric: VirtualFabric,
    channel: VirtualCmChannel,
  ) {
    this.current = channel;
    channel.ids.add(this);
  }

  /** The channel its events go to. */
  get channel(): VirtualCmChannel {
    return this.current;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.state === 'closed';
  }

  /** Binds to `addr` (EADDRINUSE when a listener has it; port 0 picks one). */
  bind(addr: CmAddress): void {
    this.check('bind', 'idle');
    this.localAddress = this.fabric.bind(this, addr);
    this.state = 'bound';
  }

  /** Listens: connect requests to its address reach its channel. */
  listen(_backlog: number): void {
    this.check('listen', 'bound');
    this.fabric.listen(this);
    this.state = 'listening';
  }

  /** `ADDR_RESOLVED` after one hop, or `ADDR_ERROR` after `timeoutMs` for a host nobody has. */
  resolveAddr(dst: CmAddress, timeoutMs: number, src?: CmAddress): void {
    this.check('resolveAddr', 'idle', 'bound');
    this.state = 'resolving';
    this.fabric.resolveAddr(this, dst, timeoutMs, src);
  }

  /** `ROUTE_RESOLVED` after one hop. */
  resolveRoute(_timeoutMs: number): void {
    this.check('resolveRoute', 'resolved');
    this.fabric.resolveRoute(this);
  }

  /** Sends the request: it reaches a listener (or a scripted peer) after one hop. */
  connect(param: CmConnParam): void {
    this.check('connect', 'routed');
    this.sent = param;
    this.active = true;
    this.state = 'connecting';
    this.fabric.connect(this, param);
  }

  /** Accepts: the active side gets `CONNECT_RESPONSE` after one hop. */
  accept(param: CmConnParam): void {
    this.check('accept', 'requested');
    this.sent = param;
    this.state = 'accepting';
    this.fabric.accept(this, param);
  }

  /** Rejects: the active side gets `REJECTED` (reason 28) after one hop. */
  reject(privateData?: Uint8Array): void {
    this.check('reject', 'requested');
    this.state = 'disconnected';
    this.fabric.reject(this, privateData ?? new Uint8Array(0));
  }

  /** Answers `CONNECT_RESPONSE`: the passive side gets `ESTABLISHED` after one hop. */
  establish(): void {
    this.check('establish', 'connecting');
    this.state = 'connected';
    this.fabric.establish(this);
  }

  /** Disconnects: both sides get `DISCONNECTED` after one hop. */
  disconnect(): void {
    this.check('disconnect', 'connecting', 'requested', 'accepting', 'connected', 'disconnected');
    this.fabric.disconnect(this);
  }

  /** Later events go to `channel` (a channel of the same virtual CM). */
  migrate(channel: VirtualCmChannel): void {
    this.check('migrate');
    if (!(channel instanceof VirtualCmChannel)) throw new TypeError('a virtual id can only migrate to a channel of the virtual CM');
    this.current.ids.delete(this);
    this.current = channel;
    channel.ids.add(this);
  }

  /** Destroys the id; a connected peer hears `DISCONNECTED`. Idempotent. */
  close(): void {
    if (this.state === 'closed') return;
    this.fabric.close(this);
    this.state = 'closed';
    this.current.ids.delete(this);
  }

  private check(verb: string, ...states: VirtualIdState[]): void {
    if (this.state === 'closed') throw Object.assign(new Error(`${verb} on a closed CM id`), { code: 'EBADF' });
    if (states.length > 0 && !states.includes(this.state)) {
      throw Object.assign(new Error(`${verb} on a CM id that is ${this.state}`), { code: 'EINVAL' });
    }
  }
}
