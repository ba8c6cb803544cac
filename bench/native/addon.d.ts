/**
 * The typed face of rx_verbs_bench.node, the native benchmark baselines
 * (bench/native/*.cc), and its loader (addon.js).
 * @packageDocumentation
 */

/** An opaque handle to a running baseline (a tagged External). */
export type BenchHandle = { readonly __benchHandle: unique symbol };

/** Producer settings: WRs to post, credit window, WRs per post, offered rate (0: as fast as credits allow). */
export interface ProducerArgs {
  total?: number;
  window?: number;
  burst?: number;
  rate?: number;
  spin?: number;
}

/** What the native drain loop measured. */
export interface DrainResult {
  seconds: number;
  wcs: number;
  events: number;
  polls: number;
  wakeups: number;
  errors: number;
  checksum: number;
  consumerCpuSeconds: number;
  error?: string;
}

/**
 * How the baselines' QPs reach each other on one port: `gidIndex` (0..255)
 * on RoCE (rxe0: the index of ::ffff:127.0.0.1); absent, by LID (soft devices).
 */
export interface RouteArgs {
  gidIndex?: number;
}

/** The native benchmark baselines. A `device` is a soft device's name or a libibverbs one (rxe0). */
export interface BenchAddon {
  /** The native event-mode drain loop over its own device, run to completion. */
  drain(args: ProducerArgs & RouteArgs & { device?: string; cqe?: number; ackEvery?: number }): DrainResult;
  /** CPU seconds the calling thread has used. */
  threadCpu(): number;
  /**
   * The native ping-pong against a native echo; round trips in microseconds.
   * `spin` busy-polls as `take({ spinUs })` does in the addon (sched_yield
   * between looks at the CQ), `poll` without ever yielding.
   */
  ping(args: RouteArgs & { device?: string; mode?: 'event' | 'poll' | 'spin'; iters?: number; warmup?: number }): ArrayBuffer;
  /**
   * The event-mode ping asleep in Node's event loop (a uv_poll on its channel
   * fd) instead of poll(2), calling no JS until the last round trip: then
   * `callback` gets the round trips in microseconds, or why it failed. With
   * `onCompletion`, JS also hears of each completion before the native side
   * reposts (its status, opcode and low wr_id word), and a round trip ends
   * once that call has returned.
   */
  pingLoopStart(args: RouteArgs & {
    device?: string;
    iters?: number;
    warmup?: number;
    callback: (result: ArrayBuffer | string) => void;
    onCompletion?: (status: number, opcode: number, wrIdLow: number) => void;
  }): BenchHandle;
  /** Stops it (if it has not finished) and releases everything. */
  pingLoopClose(handle: BenchHandle): void;
  /** A producer thread posting to a CQ JS owns; `counter` is its credit counter (u32 at 0). */
  producerCreate(args: RouteArgs & { context: unknown; pd: unknown; cq: unknown; maxWr?: number }): { handle: BenchHandle; counter: ArrayBuffer };
  /** Starts (or restarts) posting; returns at once. */
  producerStart(handle: BenchHandle, args: ProducerArgs): void;
  /** Stops the thread (joins it); what it posted, nothing once closed. */
  producerStop(handle: BenchHandle): { posted?: number; seconds?: number; error?: string };
  /** Stops the thread, destroys its QPs and MR, and lets go of the JS objects it held. */
  producerClose(handle: BenchHandle): void;
  /** The naive binding: its own device, one JS call with a fresh object per completion. */
  naiveCreate(args: RouteArgs & { device?: string; cqe?: number; ackEvery?: number; callback: (wc: { wrId: bigint; status: number; opcode: number; byteLen: number; qpNum: number }) => void }): BenchHandle;
  /** Starts watching the channel and the producer feeding it. */
  naiveStart(handle: BenchHandle, args: ProducerArgs): void;
  /** Stops and releases everything; what it saw. */
  naiveClose(handle: BenchHandle): { events: number; wakeups: number; posted: number; error?: string };
  /**
   * The loop consumer, the floor of a Node.js process: the drain loop's work
   * woken by Node's event loop (a uv_poll on its channel fd), calling
   * `callback` once, when `total` WCs are in (or the run failed). With
   * `onBatch`, every poll's completions also go to JS in one call: their
   * wr_id words (low, high) from byte 0 of `wcBuffer` and their statuses
   * (u32) from byte 2048; `onBatch(n)` says how many.
   */
  loopCreate(args: RouteArgs & {
    device?: string;
    cqe?: number;
    ackEvery?: number;
    callback: (wcs: number) => void;
    onBatch?: (n: number) => void;
    /** At least 3072 bytes; kept (not copied) by the consumer. */
    wcBuffer?: ArrayBuffer;
  }): BenchHandle;
  /** Starts watching the channel and the producer feeding it. */
  loopStart(handle: BenchHandle, args: ProducerArgs): void;
  /** Stops and releases everything; what it saw. */
  loopClose(handle: BenchHandle): { events: number; wakeups: number; posted: number; wcs: number; checksum: number; error?: string };
  /** A native echo peer connected to the QP `peerQpNum` on the JS context and PD given. */
  echoCreate(args: RouteArgs & { context: unknown; pd: unknown; depth?: number; peerQpNum?: number; peerPsn?: number }): { qpNum: number; lid: number; psn: number; handle: BenchHandle };
  /** Starts answering, sleeping on its channel (`event`) or busy-polling (`poll`). */
  echoStart(handle: BenchHandle, args: { mode?: 'event' | 'poll' }): void;
  /** Stops the thread; how many receives it answered. */
  echoStop(handle: BenchHandle): { echoed: number; error?: string };
  /** Stops and destroys its QP, MR, CQ and channel, and lets go of the context and PD. */
  echoClose(handle: BenchHandle): void;
  /**
   * What a first-touch page fault and an empty system call (epoll_wait with
   * a zero timeout, as libuv makes before it sleeps) cost on this machine,
   * in ns: the median of three rounds, measured on the calling thread.
   */
  machineCosts(): { pageFaultNs: number; syscallNs: number };
  /**
   * A native client and server of the message layer's wire format (version
   * 1), connected through this addon's soft CM on its soft0, each on its own
   * thread in event mode (bench/native/messages.cc). `rate`: `warmup` +
   * `count` messages of `size` bytes one way, `seconds` timed over the
   * last `count`; `pingpong`: echoed one at a time, `rtts` in us. A
   * failure is in `error`.
   */
  messagesPair(args: { mode?: 'rate' | 'pingpong'; count?: number; warmup?: number; size?: number }): {
    messages: number;
    seconds: number;
    /** CPU seconds of both threads over the timed part (pingpong: the client's). */
    cpuSeconds: number;
    /** CREDIT messages both sides sent (grants with no data to ride on). */
    creditMessages: number;
    rtts?: ArrayBuffer;
    error?: string;
  };
}

/** Where the bench addon is loaded from (RX_VERBS_BENCH_ADDON, else src/native/build/Release). */
export function addonPath(): string;
/** Builds the bench addon (configuring the build folder for it when needed), quiet unless it fails; the exit status. */
export function build(): number;
/** The bench addon; throws an error that says how to build it when it is missing. */
export function load(): BenchAddon;
/** How to build the bench addon by hand. */
export const BUILD_HINT: string;
