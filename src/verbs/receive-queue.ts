import type { NativeQp, NativeSrq } from '../native/binding';
import { refuseClosed } from '../core/refusals';
import { RecvWr, WrEncoder } from './work-request';

/** The native side of a queue that takes receives: a QP's own, or an SRQ. */
type NativeReceiveQueue = Pick<NativeQp & NativeSrq, 'closed' | 'postRecv'>;

const encoder = new WrEncoder();

/**
 * @internal Posts receive work requests to a QP's receive queue or to an
 * SRQ, the one way both do it: the queue's own state first (a closed one is
 * `EBADF` before anything its WRs name), then every WR checked, then one
 * native call for all of them.
 * @param what the queue as messages name it (`'queue pair'`, `'shared receive queue'`).
 * @param verb the verb its errors name (`ibv_post_recv`, `ibv_post_srq_recv`).
 */
export function postReceives(native: NativeReceiveQueue, what: string, verb: string, wr: RecvWr | readonly RecvWr[]): void {
  refuseClosed(what, verb, native.closed);
  const count = encoder.encodeRecv(wr);
  if (count === 0) return;
  native.postRecv(encoder.bytes, count);
}
