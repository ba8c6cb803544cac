/** Suite 6: ns per completion of each operator against a plain RxJS pipeline of the same shape. */
import { performance } from 'perf_hooks';
import { asapScheduler, filter, map, mergeMap, Observable, observeOn, OperatorFunction, Subject, tap } from 'rxjs';
import { ackEvents, batchCompletions, CqEvent, CqLike, drainCq, failOnError, rearm, splitErrors, steer, toTakeable, WcBatch } from 'rx-verbs';
import { fmt } from './format';
import { RunConfig, immediate } from './rig';

/** An in-memory CQ: each event finds one batch of `k` WCs, then the CQ is empty. */
export class SynthCq implements CqLike {
  readonly cqe = 1 << 20;
  arms = 0;
  acked = 0;
  private full = false;
  constructor(private readonly batch: WcBatch, private readonly empty: WcBatch) {}
  fill(): void {
    this.full = true;
  }
  requestNotify(): void {
    this.arms++;
  }
  poll(): WcBatch {
    if (!this.full) return this.empty;
    this.full = false;
    return this.batch;
  }
  ack(n: number): void {
    this.acked += n;
  }
}

export interface OperatorCase {
  name: string;
  /** What flows in: CQ events (driving the CQ) or batches. */
  input: 'events' | 'batches';
  op: () => OperatorFunction<never, unknown>;
  baseline: () => OperatorFunction<never, unknown>;
  baselineName: string;
  /** Flushes by a scheduler: wait a microtask turn after each wakeup. */
  async?: boolean;
}

export async function operators(cfg: RunConfig) {
  const k = 16;
  const batch = WcBatch.from(Array.from({ length: k }, (_, i) => ({ wrId: i, qpNum: 7 })));
  const empty = WcBatch.empty();
  const cq = new SynthCq(batch, empty);
  const event: CqEvent = { cq, context: undefined };
  const perWakeup = 8;
  const wakeups = cfg.quick ? 15_000 : 60_000;
  const id = <T>() => map((x: T) => x);
  const ackMap = () => {
    const counts = new Map<CqLike, number>();
    return tap((e: CqEvent) => {
      const n = (counts.get(e.cq) ?? 0) + 1;
      if (n >= 16) {
        counts.delete(e.cq);
        e.cq.ack(n);
      } else counts.set(e.cq, n);
    });
  };
  const pollAll = (e: CqEvent) => {
    const out: WcBatch[] = [];
    for (let b = e.cq.poll(64); b.length > 0; b = e.cq.poll(64)) out.push(b);
    return out;
  };
  const cases: OperatorCase[] = [
    { name: 'rearm', input: 'events', op: () => rearm() as never, baseline: () => tap((e: CqEvent) => e.cq.requestNotify(false)) as never, baselineName: 'tap(requestNotify)' },
    { name: 'ackEvents', input: 'events', op: () => ackEvents() as never, baseline: () => ackMap() as never, baselineName: 'tap(Map count, ack/16)' },
    { name: 'drainCq', input: 'events', op: () => drainCq() as never, baseline: () => mergeMap(pollAll) as never, baselineName: 'mergeMap(poll to empty)' },
    { name: 'batchCompletions', input: 'batches', op: () => batchCompletions() as never, baseline: () => id<WcBatch>() as never, baselineName: 'map(identity)', async: true },
    { name: 'steer', input: 'batches', op: () => steer({ by: (b: WcBatch) => b.qpNum[0], to: () => asapScheduler }) as never, baseline: () => observeOn(asapScheduler) as never, baselineName: 'observeOn(asap)', async: true },
    { name: 'failOnError', input: 'batches', op: () => failOnError() as never, baseline: () => tap((b: WcBatch) => { if (!b.allOk()) throw new Error('failed'); }) as never, baselineName: 'tap(allOk or throw)' },
    { name: 'splitErrors', input: 'batches', op: () => splitErrors(() => undefined) as never, baseline: () => filter((b: WcBatch) => b.allOk()) as never, baselineName: 'filter(allOk)' },
    {
      name: 'full pipeline',
      input: 'events',
      op: () => ((s: Observable<CqEvent>) => s.pipe(ackEvents(), rearm(), drainCq(), batchCompletions())) as never,
      baseline: () => ((s: Observable<CqEvent>) => s.pipe(tap((e: CqEvent) => e.cq.requestNotify(false)), ackMap(), mergeMap(pollAll), id<WcBatch>())) as never,
      baselineName: 'tap, tap, mergeMap, map',
      async: true,
    },
  ];

  const drive = async (build: () => OperatorFunction<never, unknown>, input: 'events' | 'batches', isAsync: boolean): Promise<number> => {
    const subject = new Subject<never>();
    let seen = 0;
    const sub = (subject.pipe(build()) as Observable<unknown>).subscribe((b) => {
      seen += (b as WcBatch).length ?? k;
    });
    const t0 = performance.now();
    for (let w = 0; w < wakeups; w++) {
      for (let i = 0; i < perWakeup; i++) {
        if (input === 'events') {
          cq.fill();
          subject.next(event as never);
        } else subject.next(batch as never);
      }
      if (isAsync) await Promise.resolve();
    }
    if (isAsync) await immediate();
    const ns = ((performance.now() - t0) * 1e6) / (wakeups * perWakeup * k);
    sub.unsubscribe();
    if (seen !== wakeups * perWakeup * k) throw new Error(`operators bench: saw ${seen} WCs, expected ${wakeups * perWakeup * k}`);
    return ns;
  };

  const toTakeableCase = async (useOp: boolean): Promise<number> => {
    const subject = new Subject<WcBatch>();
    let seen = 0;
    const t0 = performance.now();
    if (useOp) {
      const takeable = toTakeable(subject, { highWaterMark: perWakeup * 2 });
      for (let w = 0; w < wakeups; w++) {
        for (let i = 0; i < perWakeup; i++) subject.next(batch);
        for (let b = takeable.tryTake(); b; b = takeable.tryTake()) seen += b.length;
      }
      takeable.close();
    } else {
      const queue: WcBatch[] = [];
      const sub = subject.subscribe((b) => queue.push(b));
      for (let w = 0; w < wakeups; w++) {
        for (let i = 0; i < perWakeup; i++) subject.next(batch);
        for (let b = queue.shift(); b; b = queue.shift()) seen += b.length;
      }
      sub.unsubscribe();
    }
    const ns = ((performance.now() - t0) * 1e6) / (wakeups * perWakeup * k);
    if (seen !== wakeups * perWakeup * k) throw new Error('operators bench: toTakeable lost items');
    return ns;
  };

  cfg.log(`operators: synthetic CqLike, ${k} WCs per batch, ${perWakeup} per wakeup, ${wakeups} wakeups`);
  const rounds = cfg.quick ? 3 : 5;
  const rows: { operator: string; nsPerWc: number; baseline: string; baselineNsPerWc: number; ratio: number }[] = [];
  const all = [...cases.map((c) => c.name), 'toTakeable'];
  for (const name of all) {
    let best = Infinity;
    let bestBase = Infinity;
    const c = cases.find((x) => x.name === name);
    for (let r = 0; r < rounds; r++) {
      if (c) {
        best = Math.min(best, await drive(c.op, c.input, !!c.async));
        bestBase = Math.min(bestBase, await drive(c.baseline, c.input, !!c.async));
      } else {
        best = Math.min(best, await toTakeableCase(true));
        bestBase = Math.min(bestBase, await toTakeableCase(false));
      }
    }
    rows.push({ operator: name, nsPerWc: best, baseline: c ? c.baselineName : 'subscribe + array queue', baselineNsPerWc: bestBase, ratio: best / bestBase });
    cfg.log(`  ${name.padEnd(17)} ${fmt(best, 2)} ns/WC  (baseline ${fmt(bestBase, 2)})`);
  }
  return { wcsPerBatch: k, batchesPerWakeup: perWakeup, rows };
}
