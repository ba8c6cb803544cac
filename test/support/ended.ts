import { EmptyError, firstValueFrom, Observable } from 'rxjs';

/**
 * What {@link seeEnd} looks at: a hot source of any item type (a
 * `HotSource<T>` is not a `HotSource<unknown>`: its buffer options take T).
 */
export type AnySource = Observable<unknown> & {
  readonly terminated: 'complete' | 'error' | undefined;
  tryTake(): unknown;
  take(): Promise<unknown>;
};

/** How a source ended: completed, or failed with an error of this class name. */
export type Ending = { complete: true } | { errorName: string };

/** What a source shows of its end, seen through every door at once. */
export interface SeenEnd {
  terminated: 'complete' | 'error' | undefined;
  /** What a subscriber got synchronously: 'complete', 'error:<name>', or 'nothing'. */
  subscriber: string;
  /** What tryTake() did: 'undefined', 'threw:<name>', or 'item'. */
  tryTake: string;
  /** How take() settled: 'undefined', 'rejected:<name>', 'item', or 'pending' (not settled in a macrotask). */
  take: string;
  /** How firstValueFrom() settled, as take. */
  firstValue: string;
}

const nameOf = (err: unknown) => (err instanceof Error ? err.name : String(err));

/** Settles `p` within a macrotask, or says it is pending: a never-ending source must not hang the test. */
async function settled<T>(p: Promise<T>, show: (value: T) => string): Promise<string> {
  let out = 'pending';
  p.then(
    (v) => (out = show(v)),
    (err: unknown) => (out = `rejected:${nameOf(err)}`),
  );
  await new Promise((r) => setImmediate(r));
  return out;
}

/**
 * Looks at a hot source's end through every door a user has: `terminated`,
 * a subscriber (synchronously), `tryTake()`, `take()` and `firstValueFrom()`.
 * Call it on a source that has nothing buffered.
 */
export async function seeEnd(source: AnySource): Promise<SeenEnd> {
  const terminated = source.terminated;
  let subscriber = 'nothing';
  source
    .subscribe({ next: () => (subscriber = 'item'), complete: () => (subscriber = 'complete'), error: (e: unknown) => (subscriber = `error:${nameOf(e)}`) })
    .unsubscribe();
  let tryTake: string;
  try {
    tryTake = source.tryTake() === undefined ? 'undefined' : 'item';
  } catch (err) {
    tryTake = `threw:${nameOf(err)}`;
  }
  const take = await settled(source.take(), (v) => (v === undefined ? 'undefined' : 'item'));
  const firstValue = await settled(firstValueFrom(source), () => 'item');
  return { terminated, subscriber, tryTake, take, firstValue };
}

/** What {@link seeEnd} shows for a source that ended this way. */
export function endedAs(ending: Ending): SeenEnd {
  if ('complete' in ending) {
    return { terminated: 'complete', subscriber: 'complete', tryTake: 'undefined', take: 'undefined', firstValue: `rejected:${new EmptyError().name}` };
  }
  const name = ending.errorName;
  return { terminated: 'error', subscriber: `error:${name}`, tryTake: `threw:${name}`, take: `rejected:${name}`, firstValue: `rejected:${name}` };
}
