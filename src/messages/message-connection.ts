import { asapScheduler, asyncScheduler, defer, EMPTY, from, isObservable, Observable, of, Subscription, firstValueFrom } from 'rxjs';
import { ThreadBound } from '../core/thread-bound';
import { catchError, finalize, mergeMap, take } from 'rxjs/operators';
import { MessageProtocolError, MessagesClosedError, RemoteError, RequestTimeoutError } from '../core/message-errors';
import { BufferOverflowError, WorkCompletionError } from '../core/errors';
import { checkInt } from '../core/validate';
import type { WcBatch, WorkCompletion } from '../core/wc-batch';
import type { HotSource } from '../observables/hot-source';
import type { Connection } from '../cm/connection';
import type { VerbsResources } from '../cm/native-port';
import type { MessageTransport, TransportMr as Mr } from './transport';
import { RingQueue } from '../observables/ring-queue';
import { CreditWindow, receivesFor, rendezvousWindow, requestWindow } from './credits';
import { headerProblem } from './header-check';
import { LentSource } from './lent-source';
import { Message } from './message';
import type { ResolvedMessageOptions } from './options';
import { ReceivePool } from './receive-pool';
import { RegistrationCache } from './registration-cache';
import { FLAG, HEADER_BYTES, readHeader, RENDEZVOUS_BYTES, Setup, TYPE, writeHeader } from './wire';

/** A request that arrived on `requests$`: answer it once with `reply()` or `fail()`, and release it. */
export class IncomingRequest extends Message {
  /** @internal */
  constructor(
    data: Buffer,
    id: number,
    rendezvous: boolean,
    giveBack: () => void,
    private readonly answer: (data: Uint8Array, flags: number) => Promise<void>,
  ) {
    super(data, id, rendezvous, giveBack);
  }

  /** Sends the reply (any size). Settles as `send()` does. */
  reply(data: Uint8Array | string): Promise<void> {
    return this.answer(typeof data === 'string' ? Buffer.from(data, 'utf8') : data, FLAG.RESPONSE);
  }

  /** Answers with an error: the requester's `request()` fails with a {@link RemoteError} carrying `error`'s message. */
  fail(error: unknown): Promise<void> {
    const text = error instanceof Error ? error.message : String(error);
    return this.answer(Buffer.from(text, 'utf8'), FLAG.RESPONSE | FLAG.ERROR);
  }
}

/** Options of {@link MessageConnection.request$}. */
export interface RequestOptions {
  /** Fail with {@link RequestTimeoutError} when no reply came within this many ms (default: wait as long as the connection lives). */
  timeoutMs?: number;
}

/** What a handler of {@link MessageConnection.serve} may return: the reply's bytes, now or later. */
export type ServeResult = Uint8Array | string | void | Promise<Uint8Array | string | void> | Observable<Uint8Array | string>;

/** The counters of a message connection (all since it was made). */
export interface MessageStats {
  /** Messages sent (eager and rendezvous, requests and replies included). */
  sent: number;
  /** Of those, sent by rendezvous. */
  rendezvousSent: number;
  /** Messages received. */
  received: number;
  /** Of those, received by rendezvous (READ). */
  rendezvousReceived: number;
  /** Bytes of payload sent and received. */
  bytesSent: number;
  bytesReceived: number;
  /** CREDIT messages sent (credits returned with no data to carry them). */
  creditMessages: number;
  /** Times a message waited because the peer had no receive free for it. */
  creditStalls: number;
  /** Registrations of senders' memory (`ibv_reg_mr`) and registration cache hits. */
  registrations: number;
  cacheHits: number;
  /** Rendezvous receive buffers allocated (and registered). */
  receiveBuffers: number;
  /** Messages lent to consumers and not yet released (at most `depth`: more wait, unread by anyone, until some are released). */
  lent: number;
  /** Receives posted now (the pool's buffers not lent and not in flight). */
  posted: number;
  /** Late replies dropped (their request was cancelled or timed out). */
  lateReplies: number;
  /**
   * Messages released by the layer instead of a consumer: dropped by a
   * `'dropOldest'` / `'dropNewest'` buffer, or arriving for a source that
   * had failed (its `'error'` buffer overflowed).
   */
  dropped: number;
  /** Sends, requests and replies that failed because the layer ended before they were done. */
  failed: number;
}

interface Outgoing {
  type: number;
  flags: number;
  id: number;
  bytes: Uint8Array;
  /** `bytes.length` when it was queued: a buffer detached since reads shorter. */
  length: number;
  resolve(): void;
  reject(error: unknown): void;
}

/** A message that arrived: `lend` is set once it can be handed on. */
interface Arrival {
  lend: (() => void) | undefined;
}

interface Read {
  id: number;
  flags: number;
  reqId: number;
  addr: bigint;
  rkey: number;
  length: number;
  /** The receive the descriptor came in: it stays with the message until released. */
  slot: number;
  dest?: Mr;
  /** Its place among the arrivals. */
  arrival?: Arrival;
}

/**
 * wr_ids in 32 bits (read without a BigInt: `wrIdLow`): a receive's is its
 * slot, a send's SEND_KIND + its slot, a READ's READ_KIND + its number. An
 * error completion's opcode is not defined (ibverbs), so the wr_id alone
 * tells which queue a completion belongs to.
 */
const SEND_KIND = 0x40000000;
const READ_KIND = 0x80000000;
const READ_NUMBERS = 0x40000000;

/** How long a flush or a retry failure waits for the disconnect that explains it (see `peerMayBeGone`). */
const FLUSH_GRACE_MS = 1000;

/**
 * The message layer on one connection (docs/ARCHITECTURE.md, The message layer): messages of any size
 * both ways, with credits so that no SEND ever finds the peer's receive
 * queue empty, pooled and replenished receive buffers, rendezvous above
 * `maxEager`, and request/response. Made by `connectMessages()` and
 * `acceptMessages()`.
 *
 * ```
 * peer sends:     a---b-----c---|
 * messages$:      a---b-----c---|     (each a Message: read, then release())
 * ```
 */
export class MessageConnection<R extends MessageTransport = VerbsResources> extends ThreadBound {
  /** The connection underneath (its QP and CQs belong to the layer: post nothing on them). */
  connection!: Connection<R>;
  private readonly opts: ResolvedMessageOptions;
  private readonly res: MessageTransport;
  private readonly slotBytes: number;
  private readonly recvMr: Mr;
  private readonly sendMr: Mr;
  private readonly recvView: DataView;
  private readonly sendView: DataView;
  private readonly freeSlots: number[] = [];
  private readonly receives: number;
  /** Rendezvous sends awaiting DONE at most (the peer reserves receives for their DONEs). */
  private readonly window: number;
  private credits: CreditWindow | undefined;
  private peer: Setup | undefined;
  /** Receives completed before the peer's set-up was known: slot and length. */
  private readonly early: Array<[number, number]> = [];
  /** Slots released this turn, reposted together (one postRecv). */
  private readonly toRepost: number[] = [];
  private repostQueued = false;
  /** Messages and requests, in order. */
  private readonly outgoing = new RingQueue<Outgoing>();
  /** Replies: they go ahead of our requests (credits.ts says why). */
  private readonly replies = new RingQueue<Outgoing>();
  /** DONEs: they go first, into the reserve. */
  private readonly urgent = new RingQueue<Outgoing>();
  /** Ids of our requests that went and whose reply has not arrived (cancelled ones too). */
  private readonly requestsOut = new Set<number>();
  /**
   * Messages in the order they arrived, until lent: a rendezvous is ready
   * once READ, and the ones after it wait for it (see `handOn`).
   */
  private readonly inbox: Arrival[] = [];
  /** Requests awaiting replies at most (set with the peer's depth). */
  private requestLimit = 1;
  private readonly awaitingDone = new Map<number, { resolve(): void; reject(e: unknown): void; release(): void }>();
  private readonly reads = new Map<number, Read>();
  private readonly readQueue: Read[] = [];
  private readonly pendingRequests = new Map<number, { next(m: Message): void; error(e: unknown): void }>();
  private readonly messagesSource: LentSource<Message>;
  private readonly requestsSource: LentSource<IncomingRequest>;
  private readonly cache: RegistrationCache;
  private readonly pool: ReceivePool;
  private readonly subscriptions: Subscription[] = [];
  private nextRendezvous = 1;
  private nextRead = 1;
  private nextRequest = 1;
  private pumping = false;
  private pumpQueued = false;
  private failure: unknown;
  private ended = false;
  /** Set at the first flushed work request, until the disconnect or the grace ends the layer. */
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  /** Callers of `flush()` waiting for the wire to go quiet. */
  private readonly flushWaiters: Array<{ resolve(): void; reject(err: unknown): void }> = [];
  private readonly counters: Omit<MessageStats, 'registrations' | 'cacheHits' | 'receiveBuffers' | 'posted'> = {
    sent: 0,
    rendezvousSent: 0,
    received: 0,
    rendezvousReceived: 0,
    bytesSent: 0,
    bytesReceived: 0,
    creditMessages: 0,
    creditStalls: 0,
    lent: 0,
    lateReplies: 0,
    dropped: 0,
    failed: 0,
  };
  private posted = 0;

  /** @internal Made at `prepare` (the QP takes receives): posts every receive. */
  constructor(resources: MessageTransport, options: ResolvedMessageOptions) {
    super();
    this.opts = options;
    this.res = resources;
    const { pd, qp } = resources;
    this.receives = receivesFor(options.depth);
    this.window = rendezvousWindow(options.depth);
    const cap = qp.cap;
    const sendWrs = this.receives + options.reads;
    if (cap.maxRecvWr < this.receives || cap.maxSendWr < sendWrs) {
      throw new RangeError(
        `the message layer with depth ${options.depth} needs a QP with maxRecvWr >= ${this.receives} and maxSendWr >= ${sendWrs}, got ${cap.maxRecvWr} and ${cap.maxSendWr}: leave cap unset or make it larger`,
      );
    }
    this.slotBytes = HEADER_BYTES + Math.max(options.maxEager, RENDEZVOUS_BYTES);
    this.recvMr = pd.allocMemory(this.receives * this.slotBytes, { access: ['LOCAL_WRITE'] });
    this.sendMr = pd.allocMemory(this.receives * this.slotBytes, { access: ['LOCAL_WRITE'] });
    this.recvView = new DataView(this.recvMr.buffer.buffer, this.recvMr.buffer.byteOffset, this.recvMr.buffer.byteLength);
    this.sendView = new DataView(this.sendMr.buffer.buffer, this.sendMr.buffer.byteOffset, this.sendMr.buffer.byteLength);
    for (let i = this.receives - 1; i >= 0; i--) this.freeSlots.push(i);
    this.cache = new RegistrationCache(pd);
    this.pool = new ReceivePool(pd, options.reads);
    this.messagesSource = new LentSource<Message>(this.bufferOptions(), () => this.overflowed('messages$'));
    this.requestsSource = new LentSource<IncomingRequest>(this.bufferOptions(), () => this.overflowed('requests$'));
    const wrs = [];
    for (let i = 0; i < this.receives; i++) wrs.push({ wrId: i, sg: { mr: this.recvMr, offset: i * this.slotBytes, length: this.slotBytes } });
    qp.postRecv(wrs);
    this.posted = this.receives;
    const cqs = new Set([resources.sendCq, resources.recvCq]);
    for (const cq of cqs) {
      this.subscriptions.push(
        cq.completions$.subscribe({
          next: (batch) => this.completions(batch),
          error: (err: unknown) => this.fail(new MessagesClosedError('The connection failed', err)),
        }),
      );
    }
  }

  /** The buffer options of the two sources, with a drop handler that releases (and counts) what it drops. */
  private bufferOptions() {
    const given = this.opts.buffer;
    if (!given?.onDropped) return given as undefined;
    const user = given.onDropped;
    return {
      ...given,
      onDropped: (m: Message) => {
        this.counters.dropped++;
        m.release();
        user(m);
      },
    };
  }

  /** A source's `'error'` buffer overflowed: it takes nothing more, so the layer cannot go on. */
  private overflowed(which: string): void {
    const highWaterMark = this.opts.buffer?.highWaterMark ?? 1024;
    this.fail(new MessagesClosedError(`${which} overflowed (more than ${highWaterMark} messages waiting, overflow 'error')`, new BufferOverflowError(highWaterMark)));
  }
  /**
   * Hot source of the peer's messages (not requests nor replies), exactly
   * once, with `tryTake()` and `take()`. Release each message when done
   * with its bytes. With the default `'pause'`, messages nobody takes keep
   * their buffers, so the peer runs out of credits and waits.
   */
  get messages$(): HotSource<Message> {
    return this.messagesSource.source;
  }

  /** Hot source of the peer's requests (see {@link MessageConnection.serve}). */
  get requests$(): HotSource<IncomingRequest> {
    return this.requestsSource.source;
  }

  /** Counters: messages, bytes, credit stalls, registrations and cache hits, buffers lent. */
  get stats(): MessageStats {
    return {
      ...this.counters,
      registrations: this.cache.registrations,
      cacheHits: this.cache.hits,
      receiveBuffers: this.pool.allocations,
      posted: this.posted,
    };
  }

  /** True once the layer ended (the connection closed or failed). */
  get closed(): boolean {
    return this.ended;
  }

  /** What the peer announced at set-up: its eager size, depth and largest message. */
  get peerLimits(): { maxEager: number; depth: number; maxMessage: number } | undefined {
    return this.peer && { maxEager: this.peer.maxEager, depth: this.peer.depth, maxMessage: this.peer.maxMessage };
  }

  /**
   * Sends one message of any size (up to the peer's `maxMessage`): a
   * `Uint8Array`/`Buffer` or a string (UTF-8). Waits, never fails, while the
   * peer has no receive free for it.
   * @returns settles when `data`'s memory may be reused: at once for an
   *   eager message (it was copied), when the peer has READ it for a
   *   rendezvous. Rejects with {@link MessagesClosedError} when the
   *   connection ends first, TypeError / RangeError for bad input.
   */
  send(data: Uint8Array | string): Promise<void> {
    return this.enqueue(data, 0, 0);
  }

  /**
   * One request and its reply, as a cold Observable: each subscription
   * sends the request; the reply (a {@link Message}, to release) comes as
   * its one value. Unsubscribing cancels: a request still waiting for
   * credits is not sent at all; a reply that comes later is dropped and
   * its buffer returned; a large reply is then never READ.
   *
   * ```
   * request$(q):   ----r|        the peer's serve() answered
   *                ----#         RemoteError (its handler failed), RequestTimeoutError,
   *                              MessagesClosedError (the connection ended)
   * ```
   */
  request$(data: Uint8Array | string, options?: RequestOptions): Observable<Message> {
    const timeoutMs = options?.timeoutMs;
    return new Observable<Message>((subscriber) => {
      try {
        if (timeoutMs !== undefined) checkInt(timeoutMs, 'timeoutMs', 1);
      } catch (err) {
        subscriber.error(err);
        return undefined;
      }
      const id = this.nextRequest;
      this.nextRequest = this.nextRequest >= 0xffffffff ? 1 : this.nextRequest + 1;
      this.pendingRequests.set(id, {
        next: (m) => {
          this.pendingRequests.delete(id);
          subscriber.next(m);
          subscriber.complete();
        },
        error: (e) => {
          this.pendingRequests.delete(id);
          subscriber.error(e);
        },
      });
      const timer = timeoutMs === undefined ? undefined : asyncScheduler.schedule(() => this.pendingRequests.get(id)?.error(new RequestTimeoutError(timeoutMs)), timeoutMs);
      let queued: Outgoing | undefined;
      this.enqueue(data, FLAG.REQUEST, id, (item) => (queued = item)).catch((err: unknown) => this.pendingRequests.get(id)?.error(err));
      return () => {
        timer?.unsubscribe();
        this.pendingRequests.delete(id);
        if (queued) this.unqueue(queued);
      };
    });
  }


  /** {@link MessageConnection.request$} as a Promise of the reply. */
  request(data: Uint8Array | string, options?: RequestOptions): Promise<Message> {
    return firstValueFrom(this.request$(data, options));
  }

  /**
   * Answers the peer's requests with `handler`, at most `concurrency` at a
   * time (default 16): its result (bytes or a string, now, as a Promise or
   * as an Observable's first value) is the reply; a throw or a rejection
   * answers with an error the requester sees as {@link RemoteError}. Each
   * request is released once its reply has gone. Unsubscribe to stop.
   */
  serve(handler: (request: IncomingRequest) => ServeResult, options?: { concurrency?: number }): Subscription {
    if (typeof handler !== 'function') throw new TypeError('handler must be a function');
    const concurrency = options?.concurrency ?? 16;
    checkInt(concurrency, 'concurrency', 1);
    return this.requests$
      .pipe(
        mergeMap(
          (request) =>
            defer(() => {
              const result = handler(request);
              return isObservable(result) || result instanceof Promise ? from(result as Observable<Uint8Array | string>).pipe(take(1)) : of(result);
            }).pipe(
              mergeMap((reply) => from(request.reply(reply ?? new Uint8Array(0)))),
              catchError((err: unknown) => from(request.fail(err)).pipe(catchError(() => EMPTY))),
              finalize(() => request.release()),
            ),
          concurrency,
        ),
      )
      .subscribe({ error: () => undefined });
  }

  /**
   * Ends the layer (every pending send and request fails with
   * {@link MessagesClosedError}), closes the connection and releases the
   * layer's buffers and registrations. Lent messages stay readable; their
   * `release()` does nothing any more. Idempotent.
   */
  close(): void {
    this.end(new MessagesClosedError('The message connection was closed'));
    this.connection?.close();
    this.destroy();
  }

  /**
   * Settles once everything given to `send()`, `request()` and `reply()` so
   * far has gone and the peer's device took it: each SEND completed (on a
   * reliable connection, the peer acknowledged it) and each rendezvous was
   * READ (its DONE came back). A `close()` after it loses nothing this side
   * sent; a `close()` before may (disconnecting flushes what is still on
   * the wire). Rejects with {@link MessagesClosedError} when the layer ends
   * first.
   *
   * ```ts
   * await mc.send(lastRecord);
   * await mc.flush();
   * mc.close();
   * ```
   */
  flush(): Promise<void> {
    if (this.ended) return Promise.reject(this.closedError());
    if (this.quiet) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.flushWaiters.push({ resolve, reject }));
  }

  /** Nothing of ours is queued, awaiting a DONE, or posted and not completed. */
  private get quiet(): boolean {
    return (
      this.outgoing.length === 0 && this.replies.length === 0 && this.urgent.length === 0 && this.awaitingDone.size === 0 && this.freeSlots.length === this.receives
    );
  }

  private settleFlushes(): void {
    if (this.flushWaiters.length === 0 || !this.quiet) return;
    for (const w of this.flushWaiters.splice(0)) w.resolve();
  }


  // ---- set-up ---------------------------------------------------------------------

  /** @internal The peer's set-up is known: sends may start, early receives are handled. */
  peerKnown(setup: Setup): void {
    this.peer = setup;
    this.credits = new CreditWindow(this.opts.depth, setup.depth);
    this.requestLimit = requestWindow(setup.depth);
    for (const [slot, byteLen] of this.early.splice(0)) this.completionOk(slot, byteLen);
    this.pump();
  }

  /**
   * @internal The connection is established: its end ends the layer. When
   * the peer already broke the protocol during the set-up, the connection
   * is closed and this throws why.
   */
  attach<C extends MessageTransport>(connection: Connection<C>): MessageConnection<C> {
    this.connection = connection as unknown as Connection<R>;
    if (this.ended) {
      connection.close();
      this.destroy();
      throw this.failure instanceof Error ? this.failure : this.closedError();
    }
    connection.disconnected$.subscribe({
      next: (d) => {
        this.drainCompletions();
        this.end(new MessagesClosedError(d.by === 'peer' ? 'The peer disconnected' : 'The connection was closed'));
      },
      error: (err: unknown) => this.end(new MessagesClosedError('The connection failed', err)),
    });
    return this as unknown as MessageConnection<C>;
  }

  /**
   * The peer's disconnect and the completions of what it sent before it
   * wake this thread through different descriptors, in either order: what
   * the CQs hold is handled before the layer ends, so nothing the peer sent
   * (and saw acknowledged) is lost to the race.
   */
  private drainCompletions(): void {
    if (this.ended) return;
    for (const cq of new Set([this.res.recvCq, this.res.sendCq])) {
      try {
        for (let batch = cq.poll(64); batch.length > 0 && !this.ended; batch = cq.poll(64)) this.completions(batch);
      } catch {
        // A CQ closed under the connection: its end says why.
      }
    }
  }

  /** @internal Set-up failed: release what was made (the connection's resources go with the attempt). */
  destroy(): void {
    this.ended = true;
    for (const s of this.subscriptions.splice(0)) s.unsubscribe();
    this.cache.close();
    this.pool.close();
    this.recvMr.close();
    this.sendMr.close();
  }

  // ---- sending --------------------------------------------------------------------

  /** Queues one message; `queued` sees its entry (a request may take it back). */
  private enqueue(data: Uint8Array | string, flags: number, id: number, queued?: (item: Outgoing) => void): Promise<void> {
    let bytes: Uint8Array;
    if (typeof data === 'string') bytes = Buffer.from(data, 'utf8');
    else if (data instanceof Uint8Array) bytes = data;
    else return Promise.reject(new TypeError('data must be a Uint8Array, a Buffer or a string'));
    if (this.ended) return Promise.reject(this.closedError());
    const peerMax = this.peer?.maxMessage ?? Infinity;
    if (bytes.length > peerMax) return Promise.reject(new RangeError(`the message is ${bytes.length} bytes; the peer takes at most ${peerMax}`));
    const type = bytes.length > this.opts.maxEager ? TYPE.RENDEZVOUS : TYPE.EAGER;
    if (type === TYPE.RENDEZVOUS) {
      // The device reads it where it is: its memory must stay put.
      const backing = bytes.buffer as ArrayBufferLike & { resizable?: boolean; growable?: boolean };
      if (backing.resizable === true || backing.growable === true) {
        return Promise.reject(new TypeError(`a message over maxEager (${this.opts.maxEager} bytes) is read from its own memory, which must not be resizable or growable`));
      }
    }
    const credits = this.credits;
    // Nothing queued and room now: post at once; an eager message is copied, so it is done.
    if (
      type === TYPE.EAGER && credits && !this.pumping && this.outgoing.length === 0 && this.replies.length === 0 && this.urgent.length === 0 &&
      this.freeSlots.length > 0 && credits.canSendData && !(flags & FLAG.REQUEST && this.requestsOut.size >= this.requestLimit)
    ) {
      try {
        this.post({ type, flags, id, bytes, length: bytes.length, resolve: noop, reject: noop });
      } catch (err) {
        this.fail(err);
        return Promise.reject(this.closedError());
      }
      return Promise.resolve();
    }
    if (credits && !credits.canSendData) this.counters.creditStalls++;
    return new Promise<void>((resolve, reject) => {
      const item: Outgoing = { type, flags, id, bytes, length: bytes.length, resolve, reject };
      queued?.(item);
      (flags & FLAG.RESPONSE ? this.replies : this.outgoing).push(item);
      this.pump();
    });
  }

  /** A cancelled request that has not gone yet: it need not go. */
  private unqueue(item: Outgoing): void {
    if (!this.outgoing.remove(item)) return;
    item.resolve();
  }

  /**
   * Posts what can go now: DONEs first (they may use the reserve), then
   * replies, then messages and requests in order, while credits last, a
   * rendezvous while fewer than the window await DONE, a request while
   * fewer than the request window await replies; then a CREDIT if one is
   * due.
   */
  private pump(): void {
    if (this.pumping || this.ended || !this.credits) return;
    this.pumping = true;
    try {
      const credits = this.credits;
      while (this.urgent.length > 0 && this.freeSlots.length > 0 && credits.canSendControl) this.post(this.urgent.shift()!);
      for (const queue of [this.replies, this.outgoing]) {
        while (this.urgent.length === 0 && queue.length > 0 && this.freeSlots.length > 0) {
          if (!credits.canSendData) {
            this.counters.creditStalls++;
            break;
          }
          const head = queue.peek()!;
          if (head.type === TYPE.RENDEZVOUS && this.awaitingDone.size >= this.window) break;
          if (head.flags & FLAG.REQUEST && this.requestsOut.size >= this.requestLimit) break;
          this.post(queue.shift()!);
        }
      }
      if (credits.creditDue && credits.canSendControl && this.freeSlots.length > 0) {
        this.post({ type: TYPE.CREDIT, flags: 0, id: 0, bytes: new Uint8Array(0), length: 0, resolve: noop, reject: noop });
        this.counters.creditMessages++;
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.pumping = false;
    }
  }

  /** Schedules one pump for the end of this turn (many releases, one CREDIT check). */
  private pumpSoon(): void {
    if (this.pumpQueued) return;
    this.pumpQueued = true;
    // asap: a microtask, or later in the same frame in virtual time.
    asapScheduler.schedule(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  /** Posts one SEND; a message whose memory cannot be used now fails alone, before it takes a slot. */
  private post(item: Outgoing): void {
    if (item.bytes.length !== item.length) {
      item.reject(new TypeError(`the message's buffer was detached before it was sent (${item.length} bytes were queued)`));
      return;
    }
    let exposed: ReturnType<RegistrationCache['acquire']> | undefined;
    if (item.type === TYPE.RENDEZVOUS) {
      try {
        exposed = this.cache.acquire(item.bytes);
      } catch (err) {
        item.reject(err);
        return;
      }
    }
    const slot = this.freeSlots.pop()!;
    const at = slot * this.slotBytes;
    let length = 0;
    let id = item.id;
    if (item.type === TYPE.EAGER) {
      length = item.bytes.length;
      this.sendMr.buffer.set(item.bytes, at + HEADER_BYTES);
    } else if (exposed) {
      const { mr, addr, entry } = exposed;
      const rendezvous = this.nextRendezvous;
      this.nextRendezvous = this.nextRendezvous >= 0xffffffff ? 1 : this.nextRendezvous + 1;
      this.sendView.setBigUint64(at + HEADER_BYTES, addr, true);
      this.sendView.setUint32(at + HEADER_BYTES + 8, mr.rkey, true);
      this.sendView.setUint32(at + HEADER_BYTES + 12, item.bytes.length, true);
      // The header's id is the rendezvous's (DONE names it); the request's rides in the descriptor.
      this.sendView.setUint32(at + HEADER_BYTES + 16, item.id, true);
      length = RENDEZVOUS_BYTES;
      this.awaitingDone.set(rendezvous, { resolve: item.resolve, reject: item.reject, release: () => this.cache.done(entry) });
      id = rendezvous;
    }
    if (item.flags & FLAG.REQUEST) this.requestsOut.add(item.id);
    const grant = this.credits!.spend(item.type === TYPE.CREDIT);
    writeHeader(this.sendView, at, item.type, item.flags, grant, id, length);
    this.res.qp.postSend({ wrId: SEND_KIND + slot, sg: { mr: this.sendMr, offset: at, length: HEADER_BYTES + length } });
    if (item.type === TYPE.EAGER || item.type === TYPE.RENDEZVOUS) {
      this.counters.sent++;
      this.counters.bytesSent += item.bytes.length;
      if (item.type === TYPE.RENDEZVOUS) this.counters.rendezvousSent++;
    }
    // Eager bytes were copied: the caller may reuse them now. A rendezvous settles on DONE.
    if (item.type !== TYPE.RENDEZVOUS) item.resolve();
  }

  // ---- completions ----------------------------------------------------------------

  /** A wake-up's completions, successful ones read in place (no object per completion). */
  private completions(batch: WcBatch): void {
    const n = batch.length;
    for (let i = 0; i < n; i++) {
      const wrId = batch.wrIdLow(i);
      if (batch.statusAt(i) !== 0) {
        this.completionFailed(batch.at(i)!);
      } else if (wrId < SEND_KIND && !this.credits) {
        this.early.push([wrId, batch.byteLenAt(i)]);
      } else {
        this.completionOk(wrId, batch.byteLenAt(i));
      }
    }
    this.pump();
    this.settleFlushes();
  }

  /** One successful completion; whatever goes wrong in it ends the layer, never the process. */
  private completionOk(wrId: number, byteLen: number): void {
    try {
      if (wrId < SEND_KIND) this.received(wrId, byteLen);
      else if (wrId >= READ_KIND) this.readDone(wrId - READ_KIND);
      else this.freeSlots.push(wrId - SEND_KIND);
    } catch (err) {
      this.fail(err);
    }
  }

  /** One failed completion (its opcode is undefined: the wr_id says whose it is). */
  private completionFailed(wc: WorkCompletion): void {
    const wrId = Number(wc.wrId);
    const cause = new WorkCompletionError(wc);
    let what: string;
    if (wrId < SEND_KIND) {
      this.posted--;
      // A SEND longer than a receive: the peer sent what was never agreed.
      if (wc.status === 'LOC_LEN_ERR') return this.protocol(`a SEND longer than ${this.slotBytes} bytes (maxEager ${this.opts.maxEager})`, cause);
      what = 'A receive';
    } else if (wrId >= READ_KIND) {
      const read = this.reads.get(wrId - READ_KIND);
      if (!read) return;
      this.reads.delete(wrId - READ_KIND);
      // The device is done with it: it may go back.
      this.pool.give(read.dest!);
      what = 'A rendezvous READ';
    } else {
      this.freeSlots.push(wrId - SEND_KIND);
      what = 'A send';
    }
    const failure = new MessagesClosedError(`${what} completed ${wc.status}`, cause);
    if (wc.status === 'WR_FLUSH_ERR' || wc.status === 'RETRY_EXC_ERR') this.peerMayBeGone(failure);
    else this.fail(failure);
  }

  /**
   * A flushed work request says only that the QP is in the error state,
   * and a transport retry that ran out, that the peer stopped answering. A
   * peer that closes does both (its QP is gone, ours is moved to the error
   * state), and the CM event of its disconnect may reach this thread after
   * the completions it caused: the layer waits for it, so a peer that
   * closes ends the layer as a close, not as a failure. Any other way into
   * the error state fails another work request first (and the layer with
   * it); without a disconnect, the completion ends the layer a moment later.
   */
  private peerMayBeGone(failure: MessagesClosedError): void {
    if (this.ended || this.flushTimer) return;
    this.flushTimer = setTimeout(() => this.fail(failure), FLUSH_GRACE_MS);
    this.flushTimer.unref?.();
  }

  private received(slot: number, byteLen: number): void {
    this.posted--;
    if (this.ended) return;
    const at = slot * this.slotBytes;
    if (byteLen < HEADER_BYTES) return this.protocol(`a message of ${byteLen} bytes, shorter than a header`);
    const h = readHeader(this.recvView, at);
    const problem = headerProblem(h, byteLen, this.opts.maxEager);
    if (problem) return this.protocol(problem);
    const credits = this.credits!;
    if (!credits.possible(h.grant)) return this.protocol(`a grant of ${h.grant} receives, which it cannot have posted`);
    if (credits.arrived(h.grant, h.type === TYPE.CREDIT)) this.pumpSoon();
    switch (h.type) {
      case TYPE.EAGER: {
        if (h.flags & FLAG.RESPONSE && !this.requestsOut.delete(h.id)) return this.protocol(`a reply to request ${h.id}, which is not out`);
        const data = this.recvMr.buffer.subarray(at + HEADER_BYTES, at + HEADER_BYTES + h.length);
        this.arrive().lend = () => this.lend(data, h.flags, h.id, false, () => this.repost(slot));
        this.handOn();
        return;
      }
      case TYPE.RENDEZVOUS: {
        const read: Read = {
          id: h.id,
          flags: h.flags,
          addr: this.recvView.getBigUint64(at + HEADER_BYTES, true),
          rkey: this.recvView.getUint32(at + HEADER_BYTES + 8, true),
          length: this.recvView.getUint32(at + HEADER_BYTES + 12, true),
          reqId: this.recvView.getUint32(at + HEADER_BYTES + 16, true),
          slot,
        };
        if (read.length > this.opts.maxMessage) return this.protocol(`a message of ${read.length} bytes; this side takes at most ${this.opts.maxMessage}`);
        if (read.length <= this.opts.maxEager) return this.protocol(`a rendezvous of ${read.length} bytes, within maxEager`);
        if ((read.flags === 0) !== (read.reqId === 0)) return this.protocol(`a rendezvous with flags ${read.flags} and request id ${read.reqId}`);
        if (read.flags & FLAG.RESPONSE && !this.requestsOut.delete(read.reqId)) return this.protocol(`a reply to request ${read.reqId}, which is not out`);
        this.startRendezvous(read);
        return;
      }
      case TYPE.DONE: {
        this.repost(slot);
        const waiting = this.awaitingDone.get(h.id);
        if (!waiting) return this.protocol(`DONE for rendezvous ${h.id}, which is not in flight`);
        this.awaitingDone.delete(h.id);
        waiting.release();
        waiting.resolve();
        return;
      }
      default: // CREDIT: the grant was all
        this.repost(slot);
        return;
    }
  }

  /**
   * A RENDEZVOUS arrived: READ it, unless it answers a request nobody waits
   * for. Its receive stays taken until the message is released, as an
   * eager one's does, so a consumer that holds messages holds the peer's
   * credits, whatever their size.
   */
  private startRendezvous(read: Read): void {
    if (read.flags & FLAG.RESPONSE && !this.pendingRequests.has(read.reqId)) {
      this.counters.lateReplies++;
      this.repost(read.slot);
      this.queueDone(read.id, FLAG.CANCELLED);
      // Its place in the order, if it had one, holds nothing up.
      if (read.arrival) {
        read.arrival.lend = noop;
        this.handOn();
      }
      return;
    }
    read.arrival ??= this.arrive();
    if (this.reads.size >= this.opts.reads) {
      this.readQueue.push(read);
      return;
    }
    const n = this.nextRead;
    this.nextRead = this.nextRead >= READ_NUMBERS - 1 ? 1 : this.nextRead + 1;
    read.dest = this.pool.take(read.length);
    this.reads.set(n, read);
    this.res.qp.postSend({
      wrId: READ_KIND + n,
      opcode: 'RDMA_READ',
      sg: { mr: read.dest, offset: 0, length: read.length },
      remote: { addr: read.addr, rkey: read.rkey },
    });
  }

  private readDone(n: number): void {
    const read = this.reads.get(n);
    if (!read) return;
    this.reads.delete(n);
    const dest = read.dest!;
    if (this.ended) {
      // The device is done with it: it may go back.
      this.pool.give(dest);
      return;
    }
    this.queueDone(read.id, 0);
    const next = this.readQueue.shift();
    if (next) this.startRendezvous(next);
    const data = dest.buffer.subarray(0, read.length);
    read.arrival!.lend = () =>
      this.lend(data, read.flags, read.reqId, true, () => {
        this.pool.give(dest);
        this.repost(read.slot);
      });
    this.handOn();
  }

  private queueDone(id: number, flags: number): void {
    this.urgent.push({ type: TYPE.DONE, flags, id, bytes: new Uint8Array(0), length: 0, resolve: noop, reject: noop });
  }

  /** A message arrived: its place in the order of arrival. */
  private arrive(): Arrival {
    const arrival: Arrival = { lend: undefined };
    this.inbox.push(arrival);
    return arrival;
  }

  /**
   * Lends the messages that arrived, in order: each once it is ready (a
   * rendezvous once READ) and every one before it was lent, while fewer
   * than `depth` are lent (the receive a CREDIT lends to data can bring
   * the peer's one more; it waits here until one is released).
   */
  private handOn(): void {
    while (this.inbox.length > 0 && this.inbox[0].lend && this.counters.lent < this.opts.depth) this.inbox.shift()!.lend!();
  }

  /** Hands a received message to whoever takes it: a waiting request, `requests$` or `messages$`. */
  private lend(data: Buffer, flags: number, id: number, rendezvous: boolean, giveBack: () => void): void {
    this.counters.received++;
    this.counters.bytesReceived += data.length;
    if (rendezvous) this.counters.rendezvousReceived++;
    this.counters.lent++;
    const back = () => {
      this.counters.lent--;
      giveBack();
      this.handOn();
    };
    if (flags & FLAG.RESPONSE) {
      const waiting = this.pendingRequests.get(id);
      const message = new Message(data, id, rendezvous, back);
      if (!waiting) {
        this.counters.lateReplies++;
        message.release();
      } else if (flags & FLAG.ERROR) {
        const text = message.text();
        message.release();
        waiting.error(new RemoteError(text));
      } else {
        waiting.next(message);
      }
      return;
    }
    if (flags & FLAG.REQUEST) {
      this.requestsSource.deliver(new IncomingRequest(data, id, rendezvous, back, (reply, f) => this.enqueue(reply, f, id)));
      return;
    }
    this.messagesSource.deliver(new Message(data, 0, rendezvous, back));
  }

  /** A receive slot is free again: reposted with the others freed this turn (one postRecv). */
  private repost(slot: number): void {
    if (this.ended) return;
    this.toRepost.push(slot);
    if (this.repostQueued) return;
    this.repostQueued = true;
    asapScheduler.schedule(() => this.flushReposts());
  }

  private flushReposts(): void {
    this.repostQueued = false;
    const slots = this.toRepost.splice(0);
    if (this.ended || slots.length === 0) return;
    const wrs = slots.map((slot) => ({ wrId: slot, sg: { mr: this.recvMr, offset: slot * this.slotBytes, length: this.slotBytes } }));
    try {
      this.res.qp.postRecv(wrs);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.posted += slots.length;
    this.credits?.reposted(slots.length);
    if (this.credits?.creditDue) this.pump();
  }

  // ---- ends -----------------------------------------------------------------------

  private protocol(what: string, cause?: unknown): void {
    this.fail(new MessageProtocolError(`The peer broke the message protocol: ${what}`, cause === undefined ? undefined : { cause }));
  }

  /** The layer fails: everything pending fails typed, the connection is closed. */
  private fail(err: unknown): void {
    if (this.ended) return;
    this.end(err);
    this.connection?.close();
  }

  private closedError(): Error {
    const f = this.failure;
    if (f instanceof MessagesClosedError) return f;
    return new MessagesClosedError(undefined, f);
  }

  private end(err: unknown): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.flushTimer);
    this.failure = err;
    // What arrived is handed on before anything fails: nothing is lost (a
    // rendezvous still being READ is lost with the connection).
    for (const arrival of this.inbox.splice(0)) arrival.lend?.();
    const error = this.closedError();
    // A request counts once: as a request, not also as its unsent message.
    for (const item of [...this.urgent.drain(), ...this.replies.drain(), ...this.outgoing.drain()]) {
      if (item.type !== TYPE.DONE && !(item.flags & FLAG.REQUEST)) this.counters.failed++;
      item.reject(error);
    }
    for (const w of [...this.awaitingDone.values()]) {
      w.release();
      this.counters.failed++;
      w.reject(error);
    }
    this.awaitingDone.clear();
    for (const p of [...this.pendingRequests.values()]) {
      this.counters.failed++;
      p.error(error);
    }
    this.pendingRequests.clear();
    for (const w of this.flushWaiters.splice(0)) w.reject(error);
    this.readQueue.length = 0;
    // A clean end completes the sources, a failure errors them; what arrived stays takeable first.
    const clean = err instanceof MessagesClosedError && err.cause === undefined;
    for (const lent of [this.messagesSource, this.requestsSource] as LentSource<Message>[]) {
      for (const m of lent.drain()) {
        if (lent.source.terminated === undefined) {
          lent.source.push(m);
        } else {
          // A source that failed (overflow) takes nothing: the layer releases it.
          this.counters.dropped++;
          m.release();
        }
      }
      if (clean) lent.source.complete();
      else lent.source.error(err instanceof MessageProtocolError ? err : error);
    }
  }
}

function noop(): void {
  // A control message settles nothing.
}
