/**
 * The two ways to wait for completions, as rc_pingpong has them:
 * - polling (default): spin on `cq.poll()` until every side is done. It holds
 *   the event loop, like rc_pingpong's busy loop; with `--loopback` one loop
 *   drives both sides, in turns.
 * - events (`-e`): sleep on the completion channel through the rx-verbs
 *   pipeline — `channel.events$` with `ackEvents()`, `rearm()`, `drainCq()`
 *   (`--pipeline operators`), or the native fast path `cq.completions$`
 *   (`--pipeline native`, event -> ack -> re-arm -> poll done in C++).
 */
import { Subscription } from 'rxjs';
import { ackEvents, drainCq, rearm, type CompletionChannel, type Cq, type WcBatch } from '../../index';

/** What the loops drive: one end of a ping-pong (end.ts's, in any mode). */
export interface LoopSide {
  readonly cq: Cq;
  readonly channel: CompletionChannel | undefined;
  readonly scnt: number;
  readonly rcnt: number;
  readonly done: boolean;
  readonly options: { iters: number };
  handle(batch: WcBatch): void;
}
type Side = LoopSide;

/** How `-e` consumes the channel. */
export type Pipeline = 'operators' | 'native';

/** The error when a side makes no progress for `timeoutMs`. */
function stalled(side: Side, timeoutMs: number): Error {
  return new Error(
    `no completion for ${timeoutMs / 1000} s (sent ${side.scnt}, received ${side.rcnt} of ${side.options.iters}): is the peer gone?`,
  );
}

/**
 * Polls the sides' CQs in turns until all are done (synchronous). With
 * `timeoutMs` > 0 it gives up when no side completed anything for that long.
 */
export function pollUntilDone(sides: readonly Side[], timeoutMs = 0): void {
  let live = sides.filter((s) => !s.done);
  let spins = 0;
  let lastProgress = Date.now();
  while (live.length > 0) {
    let progress = false;
    for (const side of live) {
      const batch = side.cq.poll(16);
      if (batch.length > 0) {
        side.handle(batch);
        progress = true;
      }
    }
    if (progress) {
      if (live.some((s) => s.done)) live = live.filter((s) => !s.done);
      if (timeoutMs > 0) lastProgress = Date.now();
    } else if (timeoutMs > 0 && (++spins & 1023) === 0 && Date.now() - lastProgress > timeoutMs) {
      throw stalled(live[0], timeoutMs);
    }
  }
}

/**
 * Sleeps on `side`'s completion channel until it is done. The CQ is armed
 * after subscribing and polled once after arming (what was queued before the
 * arm raises no event); the pipeline then re-arms on every event and polls
 * the CQ empty, so nothing that lands between a poll and an arm is lost.
 */
export function eventsUntilDone(side: Side, pipeline: Pipeline, timeoutMs = 0): Promise<void> {
  const channel = side.channel;
  if (!channel) return Promise.reject(new Error('events mode needs a completion channel'));
  return new Promise<void>((resolve, reject) => {
    let subscription: Subscription | undefined;
    let finished = false;
    let watchdog: NodeJS.Timeout | undefined;
    let seen = -1;
    if (timeoutMs > 0) {
      watchdog = setInterval(() => {
        const now = side.scnt + side.rcnt;
        if (now === seen) finish(stalled(side, timeoutMs));
        seen = now;
      }, timeoutMs);
    }
    const finish = (err?: unknown) => {
      if (finished) return;
      finished = true;
      if (watchdog) clearInterval(watchdog);
      subscription?.unsubscribe(); // ackEvents flushes its acks here
      if (err === undefined) resolve();
      else reject(err);
    };
    const onBatch = (batch: WcBatch) => {
      if (finished) return;
      try {
        side.handle(batch);
      } catch (err) {
        finish(err);
        return;
      }
      if (side.done) finish();
    };
    if (pipeline === 'native') {
      // the fast path arms and polls when it starts
      subscription = side.cq.completions$.subscribe({ next: onBatch, error: finish });
    } else {
      subscription = channel.events$
        .pipe(ackEvents({ every: 16 }), rearm(), drainCq({ max: 16 }))
        .subscribe({ next: onBatch, error: finish });
      try {
        side.cq.requestNotify();
        const first = side.cq.poll(16);
        if (first.length > 0) onBatch(first);
      } catch (err) {
        finish(err);
      }
    }
    if (finished) subscription.unsubscribe();
  });
}
