import { isObservable, Observable, Subscription, UnaryFunction } from 'rxjs';
import type { Takeable } from '../core/types';
import { BufferOptions } from './buffer-options';
import { HotSource } from './hot-source';

/** Options of {@link toTakeable}: its bounded buffer (default overflow `'error'`). */
export type ToTakeableOptions<T> = BufferOptions<T>;

/**
 * Any Observable as a Takeable: what {@link toTakeable} returns. It is itself
 * a {@link HotSource} (subscribe to it, `for await` it, `take()` from it),
 * fed by one subscription to the source that lasts until `close()`.
 */
export interface TakeableObservable<T> extends HotSource<T>, Takeable<T> {
  /** Stops: unsubscribes from the source and completes; buffered items stay takeable. Idempotent. */
  close(): void;
  /** Same as `close()`, so it can be handed to anything that takes an Unsubscribable. */
  unsubscribe(): void;
  /** Whether `close()` was called or the source terminated. */
  readonly closed: boolean;
}

/**
 * Subscribes to `source` at once and buffers what it emits, so that
 * `tryTake()` takes one item at a time, synchronously and without blocking;
 * `pending` counts them; after the source errors, `tryTake()` still returns
 * what was buffered, in order, then throws the error.
 *
 * Overflow (at `highWaterMark`, default 1024):
 * - `'error'` (the default here): the takeable fails with `BufferOverflowError`.
 * - `'dropOldest'` / `'dropNewest'`: as for hot sources, with `onDropped`.
 * - `'pause'`: unsubscribes from the source above the high mark and
 *   resubscribes at the low mark. Lossless only for sources that keep their
 *   items while nobody subscribes — every rx-verbs hot source does (the CQ
 *   holds them) — but a Subject would lose items meanwhile and a cold
 *   Observable would start over, so it is not the default.
 *
 * Also usable as an operator: `toTakeable(options)(source$)`. Note that
 * `source$.pipe(toTakeable())` works but types its result as a plain
 * Observable; call it directly to keep the `TakeableObservable` type.
 *
 * ## Example
 * ```ts
 * const acks = toTakeable(ackStream$);
 * setInterval(() => {
 *   for (let a = acks.tryTake(); a !== undefined; a = acks.tryTake()) handle(a);
 * }, 10);
 * ```
 * @param source the Observable to buffer.
 * @param options the bounded buffer.
 */
export function toTakeable<T>(source: Observable<T>, options?: ToTakeableOptions<T>): TakeableObservable<T>;
/** Operator form: `toTakeable(options)(source$)`. */
export function toTakeable<T>(options?: ToTakeableOptions<T>): UnaryFunction<Observable<T>, TakeableObservable<T>>;
export function toTakeable<T>(
  sourceOrOptions?: Observable<T> | ToTakeableOptions<T>,
  maybeOptions?: ToTakeableOptions<T>,
): TakeableObservable<T> | UnaryFunction<Observable<T>, TakeableObservable<T>> {
  if (isObservable(sourceOrOptions)) return createTakeable(sourceOrOptions as Observable<T>, maybeOptions);
  const options = sourceOrOptions as ToTakeableOptions<T> | undefined;
  return (source: Observable<T>) => createTakeable(source, options);
}

function createTakeable<T>(source: Observable<T>, options: ToTakeableOptions<T> = {}): TakeableObservable<T> {
  return new ObservableTakeable(source, options);
}

/** A HotSource whose driver maps demand onto one subscription to an Observable. */
class ObservableTakeable<T> extends HotSource<T> implements TakeableObservable<T> {
  private readonly upstream$: Observable<T>;
  private upstream: Subscription | undefined;
  /** The subscriber forwarding the source while subscribe() is still running. */
  private gate: Subscription | undefined;
  private stopRequested = false;
  private ended = false;
  private readonly demand: Subscription;

  constructor(upstream$: Observable<T>, options: ToTakeableOptions<T>) {
    // The driver can only reach `this` once super() returned: go through a cell.
    const cell: { self?: ObservableTakeable<T> } = {};
    super(
      { start: () => cell.self!.subscribeUpstream(), stop: () => cell.self!.unsubscribeUpstream(), pull: () => undefined },
      { ...options, overflow: options.overflow ?? 'error' },
    );
    cell.self = this;
    this.upstream$ = upstream$;
    this.demand = this.retain(); // subscribes to the source now
  }

  get closed(): boolean {
    return this.ended;
  }

  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.demand.unsubscribe();
    this.complete();
  }

  unsubscribe(): void {
    this.close();
  }

  private subscribeUpstream(): void {
    this.stopRequested = false;
    // Forward through a real Subscriber: unsubscribing it closes it at once,
    // even while the source is still emitting synchronously inside
    // subscribe() (a plain observer could not be stopped before subscribe()
    // returned its Subscription).
    const sub = new Observable<T>((gate) => {
      if (this.stopRequested) gate.unsubscribe();
      this.gate = gate;
      return this.upstream$.subscribe(gate);
    }).subscribe({
      next: (item) => this.push(item),
      error: (err: unknown) => {
        this.ended = true;
        this.error(err);
      },
      complete: () => {
        this.ended = true;
        this.complete();
      },
    });
    this.gate = undefined;
    if (this.stopRequested || this.ended) sub.unsubscribe();
    else this.upstream = sub;
  }

  private unsubscribeUpstream(): void {
    this.stopRequested = true;
    this.gate?.unsubscribe();
    this.upstream?.unsubscribe();
    this.upstream = undefined;
  }
}
