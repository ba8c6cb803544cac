import fc from 'fast-check';
import { Subscription } from 'rxjs';
import { HotSource } from '../../../src/observables/hot-source';

/**
 * Exactly once, in order, under random interleavings of the native side
 * producing, subscribers coming and going, demand held and released, and
 * tryTake() — with small water marks so 'pause' kicks in.
 */
type Op =
  | { kind: 'produce'; n: number }
  | { kind: 'subscribe' }
  | { kind: 'unsubscribe'; which: number }
  | { kind: 'retain' }
  | { kind: 'release' }
  | { kind: 'tryTake' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('produce' as const), n: fc.integer({ min: 1, max: 4 }) }),
  fc.constant({ kind: 'subscribe' as const }),
  fc.record({ kind: fc.constant('unsubscribe' as const), which: fc.nat(10) }),
  fc.constant({ kind: 'retain' as const }),
  fc.constant({ kind: 'release' as const }),
  fc.constant({ kind: 'tryTake' as const }),
);

describe('HotSource exactly-once (property)', () => {
  it('should hand every item to exactly one place, in order, losing none', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), fc.integer({ min: 1, max: 5 }), (ops, hwm) => {
        // The native side: items wait here until the driver runs (push) or tryTake pulls.
        const native: number[] = [];
        let running = false;
        let next = 0;
        const source: HotSource<number> = new HotSource<number>(
          {
            start() {
              running = true;
              while (running && native.length > 0) source.push(native.shift()!);
            },
            stop() {
              running = false;
            },
            pull: () => native.shift(),
          },
          { highWaterMark: hwm, lowWaterMark: hwm - 1 },
        );

        // Each consumption: which item, and who got it (a set of subscriber ids, or 'take').
        const consumed: Array<{ item: number; by: string }> = [];
        const subs: Array<{ id: number; sub: Subscription }> = [];
        const holds: Subscription[] = [];
        let nextSubId = 0;
        let maxPending = 0;
        const record = (item: number, by: string) => {
          const last = consumed[consumed.length - 1];
          // Several subscribers receiving the same item is one (multicast) consumption.
          if (last && last.item === item && by !== 'take' && last.by !== 'take') last.by += `,${by}`;
          else consumed.push({ item, by });
        };

        for (const op of ops) {
          switch (op.kind) {
            case 'produce':
              for (let i = 0; i < op.n; i++) {
                native.push(next++);
                if (running) while (running && native.length > 0) source.push(native.shift()!);
              }
              break;
            case 'subscribe': {
              const id = nextSubId++;
              subs.push({ id, sub: source.subscribe((v) => record(v, `s${id}`)) });
              break;
            }
            case 'unsubscribe':
              if (subs.length > 0) subs.splice(op.which % subs.length, 1)[0].sub.unsubscribe();
              break;
            case 'retain':
              holds.push(source.retain());
              break;
            case 'release':
              holds.pop()?.unsubscribe();
              break;
            case 'tryTake': {
              const v = source.tryTake();
              if (v !== undefined) record(v, 'take');
              break;
            }
          }
          maxPending = Math.max(maxPending, source.pending);
        }
        // Drain what is left: the buffer and the native side.
        for (let v = source.tryTake(); v !== undefined; v = source.tryTake()) record(v, 'take');

        // Every item consumed exactly once, in push order.
        expect(consumed.map((c) => c.item)).toEqual(Array.from({ length: next }, (_, i) => i));
        // 'pause' kept the buffer at most one above the high mark (this driver stops at once).
        expect(maxPending).toBeLessThanOrEqual(hwm + 1);
        expect(source.pending).toBe(0);
        expect(native).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('should deliver each pushed item to every subscriber present at that moment', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant('push'), fc.constant('sub'), fc.nat(5)), { maxLength: 60 }), (ops) => {
        const source = new HotSource<number>({ start() {}, stop() {}, pull: () => undefined });
        const received = new Map<number, number[]>();
        const live: Array<{ id: number; sub: Subscription }> = [];
        const expected = new Map<number, number[]>();
        let id = 0;
        let item = 0;
        for (const op of ops) {
          if (op === 'push') {
            if (live.length === 0) continue; // buffering is covered above
            for (const s of live) expected.get(s.id)!.push(item);
            source.push(item++);
          } else if (op === 'sub') {
            const me = id++;
            received.set(me, []);
            expected.set(me, []);
            live.push({ id: me, sub: source.subscribe((v) => received.get(me)!.push(v)) });
          } else if (live.length > 0) {
            live.splice(op % live.length, 1)[0].sub.unsubscribe();
          }
        }
        expect(received).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});
