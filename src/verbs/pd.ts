import type { NativePd } from '../native/binding';
import { ACCESS, AccessFlag } from './constants';
import type { Context } from './context';
import { Cq } from './cq';
import { Children } from './lifecycle';
import { Mr } from './mr';
import { Qp, QpCapOptions } from './qp';
import { copyOptions, describe, optBool } from './validate';

/** Options of {@link Pd.createQp}. */
export interface CreateQpOptions {
  /** Only `'RC'` (reliable connected) today. */
  type?: 'RC';
  sendCq: Cq;
  recvCq: Cq;
  cap?: QpCapOptions;
  /** Every send produces a completion, whatever its `signaled` says. */
  sqSigAll?: boolean;
}

const CREATE_QP_KEYS = ['type', 'sendCq', 'recvCq', 'cap', 'sqSigAll'] as const;
const QP_CAP_KEYS = ['maxSendWr', 'maxRecvWr', 'maxSendSge', 'maxRecvSge', 'maxInlineData'] as const;

/**
 * A protection domain (`ibv_pd`): memory registered in it is reachable only
 * by QPs of the same PD.
 */
export class Pd {
  /** @internal */
  readonly native: NativePd;
  /** The context it was allocated on. */
  readonly context: Context;
  private readonly children = new Children();

  /** @internal */
  constructor(native: NativePd, context: Context) {
    this.native = native;
    this.context = context;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /**
   * Registers memory (`ibv_reg_mr`). The region keeps `buffer` alive until it
   * is closed. Do not transfer (detach) the underlying ArrayBuffer — e.g. by
   * `postMessage` with a transfer list or `structuredClone` — while it is
   * registered: the device may still write to it, and Node-API offers no way
   * to forbid the detach.
   * @param buffer the memory: a Buffer, typed array, DataView or ArrayBuffer.
   * @param options `access`: flag names, default `['LOCAL_WRITE']`; remote write needs local write.
   */
  registerMemory(buffer: ArrayBufferView | ArrayBuffer, options?: { access?: readonly AccessFlag[] }): Mr {
    const { access: names } = copyOptions(options, ['access'], 'options');
    const access = accessBits(names ?? ['LOCAL_WRITE']);
    const native = this.native.registerMemory(buffer, access);
    const view = ArrayBuffer.isView(buffer)
      ? Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength)
      : Buffer.from(buffer as ArrayBuffer);
    return this.children.add(new Mr(native, this, view));
  }

  /** Creates a queue pair (`ibv_create_qp`, RC). */
  createQp(options: CreateQpOptions): Qp {
    if (typeof options !== 'object' || options === null) throw new TypeError(`options must be an object, got ${describe(options)}`);
    // Each field read once, into plain values, before anything native runs.
    const { type, sendCq, recvCq, cap, sqSigAll } = copyOptions(options, CREATE_QP_KEYS, 'options');
    if ((type ?? 'RC') !== 'RC') throw new RangeError(`only RC queue pairs are supported, got ${describe(type)}`);
    if (!(sendCq instanceof Cq)) throw new TypeError('sendCq must be a Cq from context.createCq()');
    if (!(recvCq instanceof Cq)) throw new TypeError('recvCq must be a Cq from context.createCq()');
    const capCopy = copyOptions(cap, QP_CAP_KEYS, 'cap');
    const sigAll = optBool(sqSigAll, 'sqSigAll', false);
    const native = this.native.createQp(sendCq.native, recvCq.native, capCopy, sigAll);
    return this.children.add(new Qp(native, this, sendCq, recvCq));
  }

  /** Closes its QPs and MRs (newest first), then deallocates (`ibv_dealloc_pd`). Idempotent. */
  close(): void {
    if (this.native.closed) return;
    this.children.closeAll();
    this.native.close();
    this.context.forget(this);
  }

  /** @internal Destroys its QPs first: they hold CQs the context closes next. */
  closeQps(): void {
    this.children.closeAll((child) => child instanceof Qp);
  }

  /** @internal */
  forget(child: Mr | Qp): void {
    this.children.delete(child);
  }
}

/** Access flag names to `ibv_access_flags` bits. */
export function accessBits(names: readonly AccessFlag[]): number {
  if (!Array.isArray(names)) throw new TypeError(`access must be an array of flag names, got ${describe(names)}`);
  let bits = 0;
  for (const name of names) {
    const bit = (ACCESS as Record<string, number>)[name as string];
    if (bit === undefined) throw new RangeError(`unknown access flag ${describe(name)}; expected ${Object.keys(ACCESS).join(', ')}`);
    bits |= bit;
  }
  return bits;
}
