/**
 * Typed errors of the reactive surface. Each has a stable `name` and a
 * `code` string so callers can switch on them without `instanceof` (which
 * breaks across duplicated package copies). Kept free of any native import:
 * the operators and the testing kit throw them without the addon.
 */
import { WC_STATUS_TEXT, wcStatusName, WcStatus } from './constants';
import type { WcBatch, WorkCompletion } from './wc-batch';

/** The `code` values of the errors below. */
export const ERROR_CODES = {
  WORK_COMPLETION: 'ERR_WORK_COMPLETION',
  CQ_OVERRUN: 'ERR_CQ_OVERRUN',
  DEVICE_FATAL: 'ERR_DEVICE_FATAL',
  BUFFER_OVERFLOW: 'ERR_BUFFER_OVERFLOW',
} as const;

/**
 * A work completion that did not succeed, as `failOnError()` raises it.
 * The message words the status the way `ibv_wc_status_str()` does.
 */
export class WorkCompletionError extends Error {
  override readonly name = 'WorkCompletionError';
  readonly code = ERROR_CODES.WORK_COMPLETION;
  /** The failed completion. */
  readonly completion: WorkCompletion;
  /** Its status name (`'REM_ACCESS_ERR'`, ...). */
  readonly status: WcStatus | 'UNKNOWN';
  /** Its numeric `ibv_wc_status`. */
  readonly statusCode: number;
  /** Its index in `batch`, when it came from one. */
  readonly index: number | undefined;
  /** The batch it came from, when it came from one. */
  readonly batch: WcBatch | undefined;

  /**
   * @param completion the failed completion.
   * @param where the batch and index it was read from, if any.
   */
  constructor(completion: WorkCompletion, where?: { batch?: WcBatch; index?: number }) {
    const statusCode = where?.batch && where.index !== undefined ? where.batch.status[where.index] : undefined;
    const text = completion.status === 'UNKNOWN' ? 'unknown' : WC_STATUS_TEXT[completion.status];
    super(
      `Work completion failed: ${text} (${completion.status}) for wr_id ${completion.wrId}` +
        ` on QP ${completion.qpNum}` +
        (completion.vendorErr ? `, vendor error 0x${completion.vendorErr.toString(16)}` : ''),
    );
    this.completion = completion;
    this.status = completion.status;
    this.statusCode = statusCode ?? statusNumber(completion.status);
    this.index = where?.index;
    this.batch = where?.batch;
  }

  /** The error for completion `index` of `batch`. */
  static fromBatch(batch: WcBatch, index: number): WorkCompletionError {
    const wc = batch.at(index);
    if (!wc) throw new RangeError(`No completion ${index} in a batch of ${batch.length}`);
    return new WorkCompletionError(wc, { batch, index });
  }
}

function statusNumber(status: WcStatus | 'UNKNOWN'): number {
  for (let i = 0; ; i++) {
    const name = wcStatusName(i);
    if (name === 'UNKNOWN') return -1;
    if (name === status) return i;
  }
}

/**
 * A completion arrived at a full CQ (the async event `CQ_ERR`): the CQ is
 * unusable and the QPs on it went to the error state. Gate posting with
 * credits (`credits()`) so in-flight work requests stay within CQ depth.
 */
export class CqOverrunError extends Error {
  override readonly name = 'CqOverrunError';
  readonly code = ERROR_CODES.CQ_OVERRUN;
  /** The depth of the CQ that overran, when known. */
  readonly cqe: number | undefined;

  constructor(message = 'Completion queue overrun', options?: { cqe?: number; cause?: unknown }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.cqe = options?.cqe;
  }
}

/** The device reported `DEVICE_FATAL`: every object on it is dead. */
export class DeviceFatalError extends Error {
  override readonly name = 'DeviceFatalError';
  readonly code = ERROR_CODES.DEVICE_FATAL;
  /** The device name, when known. */
  readonly device: string | undefined;

  constructor(message = 'Device fatal error', options?: { device?: string; cause?: unknown }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.device = options?.device;
  }
}

/**
 * A hot source's buffer was full and its overflow strategy is `'error'`.
 * A `RangeError`, as the buffer's bound was exceeded.
 */
export class BufferOverflowError extends RangeError {
  override readonly name = 'BufferOverflowError';
  readonly code = ERROR_CODES.BUFFER_OVERFLOW;
  /** The high-water mark that was exceeded. */
  readonly highWaterMark: number;

  constructor(highWaterMark: number, message?: string) {
    super(message ?? `Buffer overflow: more than ${highWaterMark} items pending and overflow is 'error'`);
    this.highWaterMark = highWaterMark;
  }
}
