/**
 * What the connection commands need of a connection: its verbs objects and
 * the end of the connection. The package's `Connection` has this shape; the
 * commands are written against it so their protocol code does not care how
 * the connection was made.
 */
import { Subscription, type Observable } from 'rxjs';
import type { Cq, Pd, Qp, WcBatch } from '../../index';

/** The verbs objects of one end of an RC connection (what `prepare` gets, before the connection is up). */
export interface LinkResources {
  readonly pd: Pd;
  readonly qp: Qp;
  readonly sendCq: Cq;
  readonly recvCq: Cq;
}

/** One end of a connected RC queue pair. */
export interface Link extends LinkResources {
  /** Emits (or errors) once when the peer or the device ends the connection. */
  readonly disconnected$: Observable<unknown>;
}

/**
 * Feeds every completion of the link's CQs (one subscription per distinct
 * CQ, on the native fast path `completions$`: event, ack, re-arm, poll) to
 * `onBatch`. A failing source goes to `onError`.
 */
export function feedCompletions(link: LinkResources, onBatch: (batch: WcBatch) => void, onError: (err: unknown) => void): Subscription {
  const all = new Subscription();
  const cqs = link.sendCq === link.recvCq ? [link.sendCq] : [link.sendCq, link.recvCq];
  for (const cq of cqs) all.add(cq.completions$.subscribe({ next: onBatch, error: onError }));
  return all;
}

/**
 * Takes what the link's CQs hold right now (`tryTake()`: never blocks) and
 * hands it to `onBatch`. Run it when the connection ends: a completion the
 * device produced before the peer's disconnect may still sit in a CQ when
 * the disconnect event is read first, and the protocol must see it.
 */
export function drainCompletions(link: LinkResources, onBatch: (batch: WcBatch) => void): void {
  const cqs = link.sendCq === link.recvCq ? [link.sendCq] : [link.sendCq, link.recvCq];
  for (const cq of cqs) {
    if (cq.closed) continue;
    for (let batch = cq.completions$.tryTake(); batch !== undefined; batch = cq.completions$.tryTake()) onBatch(batch);
  }
}

/**
 * Watches the end of the connection: on `disconnected$` (a value, an error
 * or completion) it first drains the CQs into `onBatch`, then calls `onEnd`
 * with the error, if any.
 */
export function watchEnd(link: Link, onBatch: (batch: WcBatch) => void, onEnd: (err?: unknown) => void): Subscription {
  const end = (err?: unknown) => {
    try {
      drainCompletions(link, onBatch);
    } catch {
      // a CQ that failed or closed has nothing more to give; the end is what matters
    }
    onEnd(err);
  };
  return link.disconnected$.subscribe({ next: () => end(), error: (err) => end(err), complete: () => end() });
}
