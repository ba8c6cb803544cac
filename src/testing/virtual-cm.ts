import { asyncScheduler, SchedulerLike } from 'rxjs';
import type { RunHelpers } from 'rxjs/testing';
import {
  CM_REJECT_CONSUMER,
  CM_REJECT_NO_LISTENER,
  CmAddress,
  CmConnParam,
  CmEvent,
  CmEventType,
  CmIdPort,
  CmPort,
  CmOwnQpAttrs,
  CmQpState,
} from '../core/cm';
import { DEFAULT_RETRY_COUNT, DEFAULT_RNR_RETRY_COUNT } from '../core/constants';
import { checkInt } from '../core/validate';
import { VirtualCmChannel } from './virtual-cm-channel';
import { VirtualCmId, VirtualFabric } from './virtual-cm-id';
import { VirtualAddressSpace } from './virtual-memory';
import type { VirtualQp } from './virtual-qp';
import { makeVirtualResources, VirtualResourceOptions, VirtualResources } from './virtual-resources';
import { VirtualClient, VirtualClientOptions } from './virtual-client';
import { PeerAnswer, PeerBehaviour, VirtualPeer, VirtualPeerOptions } from './virtual-peer';

/** Options of {@link virtualCm}. */
export interface VirtualCmOptions {
  /** Frames each CM hop takes (resolve, route, request, answer, establish, disconnect); default 1. */
  latency?: number;
  /** The scheduler events run on (default `asyncScheduler`: virtual time inside `TestScheduler.run`). */
  scheduler?: SchedulerLike;
  /** The address this host's ids get when they connect out (default `'192.0.2.1'`). */
  localHost?: string;
  /** A hot marble: at each letter the device goes away (`DEVICE_REMOVAL` on every live id). Needs the helpers. */
  deviceRemoval?: string;
}

const ERRNO_ETIMEDOUT = -110;
const key = (a: CmAddress) => `${a.host}|${a.port}`;

/** The retry counts a connect or accept carries, as its peer's event reports them. */
function retries(param: CmConnParam): Pick<CmEvent, 'retryCount' | 'rnrRetryCount'> {
  return { retryCount: param.retryCount ?? DEFAULT_RETRY_COUNT, rnrRetryCount: param.rnrRetryCount ?? DEFAULT_RNR_RETRY_COUNT };
}

function event(type: CmEventType, id: CmIdPort, extra?: Partial<CmEvent>): CmEvent {
  return { type, status: 0, id, privateData: new Uint8Array(0), qpNum: 0, responderResources: 1, initiatorDepth: 1, ...extra };
}

/**
 * A connection manager in virtual time, for marble tests of connection
 * logic — reconnect, back-off, failover, request handling — without
 * hardware or the addon. It implements the same port as the native CM, so
 * the package's own `listen()`, `connect()` and `connect$()` run on it
 * unchanged when given `cm`:
 *
 * ```ts
 * import { connect$ } from 'rx-verbs';
 * import { virtualCm } from 'rx-verbs/testing';
 *
 * testScheduler.run((helpers) => {
 *   const cm = virtualCm(helpers);
 *   //  the server: refuses at first, accepts from frame 10, goes down at 30
 *   cm.peer({ host: '10.0.0.2', port: 7471 }, { script: 'n---------a-------------------d' }, helpers);
 *   const conn$ = defer(() => connect$({ host: '10.0.0.2', port: 7471, cm })).pipe(retry({ delay: 4 }));
 *   //  attempt 1 at 0 is refused at 4; attempt 2 at 8; 3 at 16 connects at 20
 *   helpers.expectObservable(conn$.pipe(map(() => 'c'))).toBe('--------------------(c|)');
 * });
 * ```
 *
 * Two kinds of counterpart:
 * - listeners and connections made on this CM connect to each other by
 *   address, in process, as on the soft CM;
 * - scripted ones: {@link VirtualCm.peer} (a remote server whose answer —
 *   accept, reject, no listener, unreachable, silent, no such host —
 *   changes at marble frames, and which disconnects its connections at
 *   frames) and {@link VirtualCm.client} / {@link VirtualCm.clients} (remote
 *   clients whose requests reach a listener at marble frames).
 *
 * Each CM hop takes `latency` frames (default 1): a connect is resolved at
 * frame 1, routed at 2, reaches the listener at 3 and is established at 4
 * on the active side (5 on the passive side):
 *
 * ```
 * connect$() at frame 0:    ----(c|)    established
 * listener.requests$:       ---r        the request arrives
 * request.accept() at 3:    -----a      resolves (ESTABLISHED on the passive side)
 * peer answer 'n' / 'u':    ----#       refused / unreachable
 * peer answer 's':          ------...#  ConnectTimeoutError at timeoutMs
 * peer disconnects at 20:   ---------------------d   disconnected$ ({ by: 'peer' }) one hop later
 * deviceRemoval '10ms x':   ----------#  DeviceRemovedError on every stream
 * ```
 *
 * Connections carry virtual verbs resources: a `VirtualChannel`,
 * `VirtualCq`s, a `VirtualPd` and a `VirtualQp` whose state the CM moves and
 * which moves real bytes to the QP at the other end, a hop per `latency`
 * frames (SEND, RDMA READ; see {@link VirtualQp}); or add completions to the
 * CQs to play traffic. So the message layer (`connectMessages$`,
 * `acceptMessages$`) runs on it unchanged, in virtual time.
 * {@link VirtualCm.removeDevice} (or the `deviceRemoval` marble) ends every
 * stream with `DeviceRemovedError`.
 */
export class VirtualCm implements CmPort<VirtualResources, VirtualResourceOptions>, VirtualFabric {
  /** Frames per CM hop. */
  readonly latency: number;
  private readonly scheduler: SchedulerLike;
  private readonly localHost: string;
  private readonly listeners = new Map<string, VirtualCmId>();
  private readonly peers = new Map<string, VirtualPeer>();
  private readonly ids = new Set<VirtualCmId>();
  private readonly hidden = new WeakSet<VirtualCmChannel>();
  private readonly disconnectSent = new WeakSet<VirtualCmId>();
  /** Every connection's resources by its id, and back: how a QP finds the one at the other end. */
  private readonly resourcesOf = new WeakMap<VirtualCmId, VirtualResources>();
  private readonly idOf = new WeakMap<VirtualQp, VirtualCmId>();
  private readonly space = new VirtualAddressSpace();
  private nextPort = 40000;
  private nextQpNum = 0x100;
  private removed = false;

  /**
   * @param options see {@link VirtualCmOptions}.
   * @param helpers `TestScheduler.run` helpers, needed for a `deviceRemoval` marble.
   */
  constructor(options: VirtualCmOptions = {}, helpers?: Pick<RunHelpers, 'hot'>) {
    this.latency = checkInt(options.latency ?? 1, 'latency', 0);
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.localHost = options.localHost ?? '192.0.2.1';
    if (options.deviceRemoval !== undefined) {
      if (!helpers) throw new TypeError('a deviceRemoval marble needs the TestScheduler.run helpers');
      helpers.hot(options.deviceRemoval).subscribe(() => this.removeDevice());
    }
  }

  /** Ids open now (not closed), scripted counterparts' excluded: a leak check. */
  get openIds(): number {
    let n = 0;
    for (const id of this.ids) if (!id.closed && !this.hidden.has(id.channel)) n++;
    return n;
  }

  /** Whether the device was removed. */
  get deviceRemoved(): boolean {
    return this.removed;
  }

  // ---- scripting ---------------------------------------------------------

  /**
   * A scripted remote server at `address`: connect requests to it get its
   * current answer. `script` is a hot marble of answers over time, one
   * letter each — `a` accept, `r` reject, `n` nobody listens, `u`
   * unreachable, `s` silent (never answers: the connect times out), `x` no
   * such host (address resolution fails) — and `disconnects` a marble at
   * whose letters it disconnects every connection it has. `values` may map
   * letters to answers with private data (`{ answer: 'reject', privateData }`).
   */
  peer(address: CmAddress, options: VirtualPeerOptions = {}, helpers?: Pick<RunHelpers, 'hot'>): VirtualPeer {
    const peer = new VirtualPeer(address, options, helpers);
    this.peers.set(key(address), peer);
    return peer;
  }

  /**
   * A remote client that connects to `to` now: its request reaches the
   * listener there after the resolve, route and request hops. The returned
   * handle records what happened (`outcome`, the private data it got) and
   * can disconnect or give up.
   */
  client(to: CmAddress, options: VirtualClientOptions = {}): VirtualClient {
    const channel = this.hiddenChannel();
    return new VirtualClient(channel.createId(), to, options, this.nextQpNum++);
  }

  /**
   * Remote clients connecting to `to` at the frames of a hot marble, one per
   * letter; `values` gives each letter's options (private data, address).
   * @returns the clients, in the order they were started (filled as the frames pass).
   */
  clients(
    helpers: Pick<RunHelpers, 'hot'>,
    to: CmAddress,
    marble: string,
    values?: Record<string, VirtualClientOptions>,
  ): VirtualClient[] {
    const out: VirtualClient[] = [];
    helpers.hot<VirtualClientOptions | string>(marble, values).subscribe((v) => out.push(this.client(to, typeof v === 'string' ? {} : v)));
    return out;
  }

  /** The device goes away now: every live id gets `DEVICE_REMOVAL`; later calls fail with ENODEV. */
  removeDevice(): void {
    if (this.removed) return;
    this.removed = true;
    for (const id of [...this.ids]) if (!id.closed) id.channel.raise(event('DEVICE_REMOVAL', id));
  }

  // ---- CmPort ------------------------------------------------------------

  /** A new virtual CM channel. */
  createChannel(): VirtualCmChannel {
    this.ensureDevice();
    return new VirtualCmChannel((ch) => this.newId(ch));
  }

  /**
   * Virtual resources: a channel, two CQs, a PD and a QP whose data path
   * reaches the QP of the peer's connection (one hop of `latency` frames).
   */
  createResources(id: CmIdPort, options: VirtualResourceOptions): VirtualResources {
    this.ensureDevice();
    const resources = makeVirtualResources(this.nextQpNum++, options ?? {}, {
      scheduler: this.scheduler,
      latency: this.latency,
      space: this.space,
      peerOf: (qp) => {
        const peer = this.idOf.get(qp)?.peer;
        return peer && this.resourcesOf.get(peer)?.qp;
      },
    });
    this.resourcesOf.set(id as VirtualCmId, resources);
    this.idOf.set(resources.qp, id as VirtualCmId);
    return resources;
  }

  /**
   * Moves the virtual QP. At RTS it takes its retry counts as the kernel's
   * CM gives them: the active side's retry count is its own, the passive
   * side's the request's; each side's RNR retry count is the one its peer
   * sent, unless `own` says otherwise.
   */
  modifyQp(id: CmIdPort, resources: VirtualResources, state: CmQpState, own?: CmOwnQpAttrs): void {
    if (resources.qp.closed) throw Object.assign(new Error('modifyQp on a destroyed QP'), { code: 'EBADF' });
    if (state !== 'ERR') this.ensureDevice();
    resources.qp.modify(state);
    if (state !== 'RTS') return;
    const self = id as VirtualCmId;
    const theirs = self.peer?.sent;
    resources.qp.retryCount = (self.active ? self.sent?.retryCount : theirs?.retryCount) ?? DEFAULT_RETRY_COUNT;
    resources.qp.rnrRetryCount = own?.rnrRetryCount ?? theirs?.rnrRetryCount ?? DEFAULT_RNR_RETRY_COUNT;
  }

  /** The CQs (their `completions$`) and their channel fail with `error`, as the native ones do; the QP stops. */
  failResources(resources: VirtualResources, error: Error): void {
    if (!resources.qp.closed) resources.qp.modify('ERR');
    for (const cq of new Set([resources.sendCq, resources.recvCq])) cq.fail(error);
    resources.channel.fail(error);
  }

  /** Acks what is unacked, then destroys the QP, the CQs, the channel and the PD (with its regions). */
  releaseResources(resources: VirtualResources): void {
    resources.qp.close();
    for (const cq of [resources.sendCq, resources.recvCq]) {
      if (cq.closed) continue;
      if (cq.unacked > 0) cq.ack(cq.unacked);
      cq.close();
    }
    resources.channel.close();
    resources.pd.close();
  }

  // ---- the fabric (what ids ask) -------------------------------------------

  /** @internal */
  bind(id: VirtualCmId, addr: CmAddress): CmAddress {
    this.ensureDevice();
    const bound = { host: addr.host, port: addr.port === 0 ? this.nextPort++ : addr.port };
    if (this.listeners.has(key(bound))) throw Object.assign(new Error(`${bound.host}:${bound.port} is in use`), { code: 'EADDRINUSE' });
    void id;
    return bound;
  }

  /** @internal */
  listen(id: VirtualCmId): void {
    this.listeners.set(key(id.localAddress!), id);
  }

  /** @internal */
  resolveAddr(id: VirtualCmId, dst: CmAddress, timeoutMs: number, src?: CmAddress): void {
    this.ensureDevice();
    if (!this.knows(dst)) {
      this.later(id, () => event('ADDR_ERROR', id, { status: ERRNO_ETIMEDOUT }), Math.max(timeoutMs, this.latency));
      return;
    }
    this.later(id, () => {
      id.state = 'resolved';
      id.peerAddress = dst;
      const local = src?.host ?? (this.listeners.has(key(dst)) ? dst.host : this.localHost);
      id.localAddress = { host: local, port: this.nextPort++ };
      return event('ADDR_RESOLVED', id);
    });
  }

  /** @internal */
  resolveRoute(id: VirtualCmId): void {
    this.ensureDevice();
    this.later(id, () => {
      id.state = 'routed';
      return event('ROUTE_RESOLVED', id);
    });
  }

  /** @internal */
  connect(id: VirtualCmId, param: CmConnParam): void {
    this.ensureDevice();
    const dst = id.peerAddress!;
    this.at(() => {
      if (id.closed || id.state !== 'connecting') return;
      const listener = this.listeners.get(key(dst));
      if (listener && !listener.closed) {
        this.request(listener, id, param);
        return;
      }
      const peer = this.peers.get(key(dst));
      const behaviour: PeerBehaviour = peer?.current ?? { answer: 'no-listener' };
      this.answer(peer, behaviour, id, param);
    });
  }

  /** @internal */
  accept(id: VirtualCmId, param: CmConnParam): void {
    this.ensureDevice();
    const active = id.peer;
    this.later(active, () =>
      event('CONNECT_RESPONSE', active!, { privateData: copy(param.privateData), qpNum: param.qpNum, ...retries(param) }),
    );
  }

  /** @internal */
  reject(id: VirtualCmId, privateData: Uint8Array): void {
    const active = id.peer;
    this.later(active, () => {
      active!.state = 'disconnected';
      return event('REJECTED', active!, { status: CM_REJECT_CONSUMER, privateData: copy(privateData) });
    });
  }

  /** @internal */
  establish(id: VirtualCmId): void {
    const passive = id.peer;
    this.later(passive, () => {
      if (passive!.state === 'accepting') passive!.state = 'connected';
      return event('ESTABLISHED', passive!, { privateData: copy(id.sent?.privateData), qpNum: id.sent?.qpNum ?? 0 });
    });
    // Like the kernel's rdma_cm, the active side hears nothing more: its
    // establish() is the end of its set-up.
  }

  /** @internal */
  disconnect(id: VirtualCmId): void {
    if (this.disconnectSent.has(id)) return;
    this.disconnectSent.add(id);
    const peer = id.peer;
    const wasLive = id.state !== 'disconnected';
    id.state = 'disconnected';
    if (peer && !this.disconnectSent.has(peer)) {
      this.later(peer, () => {
        if (peer.state === 'disconnected') return undefined;
        peer.state = 'disconnected';
        return event('DISCONNECTED', peer);
      });
    }
    if (wasLive) this.later(id, () => event('DISCONNECTED', id));
  }

  /** @internal */
  close(id: VirtualCmId): void {
    if (id.state === 'listening' && id.localAddress) this.listeners.delete(key(id.localAddress));
    // A process that goes away without disconnecting: its peer still hears of it.
    const peer = id.peer;
    if (peer && !this.disconnectSent.has(id) && !peer.closed) {
      this.disconnectSent.add(id);
      // An active side that gives up before the connection is established
      // withdraws its request, as the kernel's CM does: a request nobody
      // accepted yet hears nothing (its accept fails with EINVAL), one
      // accepted gets REJECTED (reason 28).
      const unaccepted = id.state === 'connecting' && peer.state === 'requested';
      const withdrawn = id.state === 'connecting' && peer.state === 'accepting';
      this.later(peer, () => {
        if (peer.state === 'disconnected') return undefined;
        peer.state = 'disconnected';
        if (unaccepted) return undefined;
        return withdrawn ? event('REJECTED', peer, { status: CM_REJECT_CONSUMER }) : event('DISCONNECTED', peer);
      });
    }
  }

  // ---- internals ---------------------------------------------------------

  private newId(channel: VirtualCmChannel): VirtualCmId {
    this.ensureDevice();
    const id = new VirtualCmId(this, channel);
    this.ids.add(id);
    return id;
  }

  private hiddenChannel(discard = false): VirtualCmChannel {
    const channel = this.createChannel();
    channel.discard = discard;
    this.hidden.add(channel);
    return channel;
  }

  /** A connect request reaches a listener of this CM: a new id on its channel. */
  private request(listener: VirtualCmId, active: VirtualCmId, param: CmConnParam): void {
    const passive = this.newId(listener.channel);
    passive.state = 'requested';
    passive.localAddress = listener.localAddress;
    passive.peerAddress = active.localAddress;
    passive.peer = active;
    active.peer = passive;
    listener.channel.raise(
      event('CONNECT_REQUEST', passive, { listener, privateData: copy(param.privateData), qpNum: param.qpNum, ...retries(param) }),
    );
  }

  /** A scripted peer answers a connect request. */
  private answer(peer: VirtualPeer | undefined, behaviour: PeerBehaviour, id: VirtualCmId, param: CmConnParam): void {
    switch (behaviour.answer) {
      case 'accept':
      case 'reject': {
        const channel = this.hiddenChannel(true);
        const passive = this.newId(channel);
        passive.state = 'requested';
        passive.localAddress = id.peerAddress;
        passive.peerAddress = id.localAddress;
        passive.peer = id;
        id.peer = passive;
        const data = behaviour.privateData;
        if (behaviour.answer === 'reject') {
          passive.reject(data);
          return;
        }
        peer!.track(passive, param);
        passive.accept({ qpNum: this.nextQpNum++, privateData: data });
        return;
      }
      case 'no-listener':
        this.later(id, () => event('REJECTED', id, { status: CM_REJECT_NO_LISTENER }));
        return;
      case 'unreachable':
        this.later(id, () => event('UNREACHABLE', id, { status: ERRNO_ETIMEDOUT }));
        return;
      case 'silent':
      case 'no-host':
        return;
    }
  }

  private knows(dst: CmAddress): boolean {
    for (const listener of this.listeners.values()) if (listener.localAddress?.host === dst.host) return true;
    for (const peer of this.peers.values()) {
      if (peer.address.host === dst.host && peer.current.answer !== 'no-host') return true;
    }
    return false;
  }

  /** Raises the event `make` returns on `id`'s channel after one hop (unless the id is gone by then). */
  private later(id: VirtualCmId | undefined, make: () => CmEvent | undefined, delay = this.latency): void {
    if (!id) return;
    this.scheduler.schedule(() => {
      if (id.closed || this.removed) return;
      const e = make();
      if (e) id.channel.raise(e);
    }, delay);
  }

  private at(run: () => void): void {
    this.scheduler.schedule(() => {
      if (!this.removed) run();
    }, this.latency);
  }

  private ensureDevice(): void {
    if (this.removed) throw Object.assign(new Error('the virtual RDMA device was removed'), { code: 'ENODEV' });
  }
}

function copy(data: Uint8Array | undefined): Uint8Array {
  return data ? new Uint8Array(data) : new Uint8Array(0);
}

/**
 * A new {@link VirtualCm}; inside `TestScheduler.run`, pass the helpers to
 * script it with marbles.
 */
export function virtualCm(helpers?: Pick<RunHelpers, 'hot'>, options: VirtualCmOptions = {}): VirtualCm {
  return new VirtualCm(options, helpers);
}

export type { PeerAnswer };
