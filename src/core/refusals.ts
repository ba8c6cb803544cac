/**
 * The rule book's refusals as TypeScript states them: what a verb refuses
 * instead of blocking or corrupting rdma-core's counters. The addon states
 * the same rules in `src/native/rules/` with the same messages, codes and
 * verbs (a test holds the two to each other), so a marble test on the
 * virtual CQ fails exactly as the device would.
 */

/**
 * The kinds of verbs object, in the safe teardown order: each is destroyed
 * before every kind it uses (a QP uses its PD, CQs and perhaps an SRQ; an
 * SRQ, an address handle and an MR use their PD; a CQ its channel; all of
 * them their context).
 */
export const TEARDOWN_ORDER = ['QP', 'SRQ', 'AH', 'CQ', 'MR', 'PD', 'completion channel', 'CM id', 'CM event channel', 'context'] as const;

/** One kind of verbs object, as messages name it. */
export type ObjectKind = (typeof TEARDOWN_ORDER)[number];

/** How many of each kind use one object (or are still open on it). */
export type Users = Partial<Record<ObjectKind, number>>;

const DESTROY_VERB: Record<ObjectKind, string> = {
  QP: 'ibv_destroy_qp',
  SRQ: 'ibv_destroy_srq',
  AH: 'ibv_destroy_ah',
  CQ: 'ibv_destroy_cq',
  MR: 'ibv_dereg_mr',
  PD: 'ibv_dealloc_pd',
  'completion channel': 'ibv_destroy_comp_channel',
  'CM id': 'rdma_destroy_id',
  'CM event channel': 'rdma_destroy_event_channel',
  context: 'ibv_close_device',
};

/** The errno values the refusals use, with glibc's `strerror` text. */
const ERRNO = {
  EBADF: { errno: 9, text: 'Bad file descriptor' },
  ENOMEM: { errno: 12, text: 'Cannot allocate memory' },
  EBUSY: { errno: 16, text: 'Device or resource busy' },
  EINVAL: { errno: 22, text: 'Invalid argument' },
} as const;

/** An errno failure of a verb, shaped like the addon's (`code`, `errno`, `syscall`). */
export interface VerbsFailure extends Error {
  /** The errno name (`'EBUSY'`). */
  readonly code: string;
  /** The negated errno, as Node's system errors carry it. */
  readonly errno: number;
  /** The verb that failed. */
  readonly syscall: string;
}

/**
 * @internal A verb's errno failure as the addon words it:
 * `<verb> failed: <CODE> (<strerror>): <detail>`, with `code`, `errno`, `syscall`.
 */
export function verbsFailure(code: keyof typeof ERRNO, verb: string, detail: string): VerbsFailure {
  const { errno, text } = ERRNO[code];
  return Object.assign(new Error(`${verb} failed: ${code} (${text}): ${detail}`), { code, errno: -errno, syscall: verb });
}

/**
 * Acking more completion events than were read and not yet acked corrupts
 * libibverbs' counters: a RangeError, since the caller's count is wrong.
 * @throws RangeError when `n` exceeds `unacked`.
 */
export function refuseOverAck(n: number, unacked: number): void {
  if (n <= unacked) return;
  throw new RangeError(`cannot ack ${n} events: only ${unacked} were delivered and not yet acked`);
}

/**
 * An object cannot go while anything uses it (`EBUSY` from its destroy verb).
 * @param self the kind of object being destroyed.
 * @param users how many of each kind still use it.
 * @throws an Error with `code: 'EBUSY'` while any count is non-zero.
 */
export function refuseBusy(self: ObjectKind, users: Users): void {
  const listed = TEARDOWN_ORDER.filter((k) => (users[k] ?? 0) > 0).map((k) => `${users[k]} ${k}(s)`);
  if (listed.length === 0) return;
  const list = listed.length === 1 ? listed[0] : `${listed.slice(0, -1).join(', ')} and ${listed[listed.length - 1]}`;
  throw verbsFailure('EBUSY', DESTROY_VERB[self], `${list} still use this ${self}: close them first`);
}

/**
 * A CQ cannot go while QPs use it or while events naming it are unacked:
 * libibverbs' `ibv_destroy_cq` would wait for those acks forever.
 * @throws an Error with `code: 'EBUSY'`, the first reason that holds.
 */
export function refuseBusyCq(qps: number, unackedEvents: number, unackedAsync: number): void {
  refuseBusy('CQ', { QP: qps });
  const verb = DESTROY_VERB.CQ;
  if (unackedEvents > 0) {
    throw verbsFailure(
      'EBUSY',
      verb,
      `${unackedEvents} events not acknowledged (ack every event read from the channel; libibverbs would block here forever)`,
    );
  }
  if (unackedAsync > 0) throw verbsFailure('EBUSY', verb, `${unackedAsync} async event(s) naming this CQ not acknowledged`);
}

/**
 * A verb on an object that is closed fails with `EBADF` naming the object,
 * as the addon's wrappers say it (src/native/util/wrap.h). Checked before
 * anything the call names (the MRs and AHs of its work requests): the
 * object's own state comes first.
 * @param what the object as messages name it (`'queue pair'`, `'shared receive queue'`).
 * @param verb the verb that was called.
 * @param closed whether the object is closed.
 * @throws an Error with `code: 'EBADF'` when `closed`.
 */
export function refuseClosed(what: string, verb: string, closed: boolean): void {
  if (closed) throw verbsFailure('EBADF', verb, `the ${what} is closed`);
}
