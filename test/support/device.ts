/**
 * The device under test and a connected pair on it, for the native and
 * integration suites, and the waits they share. The device under test is
 * `RX_VERBS_TEST_DEVICE` (default `soft0`), so the same files run on the
 * soft device here and on `rxe0` inside the VM.
 */
import { Context, CompletionChannel, Cq, Mr, Pd, Qp, openDevice, WcBatch, ConnectOptions, QpCapOptions } from '../../src';
import { scaled } from './slow';

/** The device the native tests run against. */
export const TEST_DEVICE = process.env.RX_VERBS_TEST_DEVICE ?? 'soft0';
/** GID index to connect with (RoCE needs one); undefined on soft/IB. */
export const TEST_GID_INDEX = process.env.RX_VERBS_TEST_GID_INDEX ? Number(process.env.RX_VERBS_TEST_GID_INDEX) : undefined;
/** Whether fault injection is available (soft devices only). */
export const IS_SOFT = TEST_DEVICE.startsWith('soft');

/** `it` on soft devices only (fault injection, device-specific limits). */
export const itSoft = IS_SOFT ? it : it.skip;

/**
 * Two connected RC QPs on one channel. `cqA`/`cqB` are each QP's send CQ (and
 * its receive CQ unless the CQs are split).
 */
export interface Pair {
  ctx: Context;
  channel: CompletionChannel;
  pd: Pd;
  cqA: Cq;
  cqB: Cq;
  a: Qp;
  b: Qp;
  /** `a`'s send CQ (= cqA). */
  sendA: Cq;
  /** `a`'s receive CQ (cqA unless `splitCqs`). */
  recvA: Cq;
  /** `b`'s send CQ (= cqB). */
  sendB: Cq;
  /** `b`'s receive CQ (cqB unless `splitCqs`). */
  recvB: Cq;
  close(): void;
}

/** Options of {@link makePair}. */
export interface PairOptions {
  cqe?: number;
  cap?: QpCapOptions;
  connect?: ConnectOptions;
  /** One CQ for everything. */
  sharedCq?: boolean;
  /** Separate send and receive CQs for each QP (contexts 'A'/'recvA', 'B'/'recvB'). */
  splitCqs?: boolean;
  /** `a` signals every send WR (sqSigAll). */
  sqSigAllA?: boolean;
  /** The device to build on (it is not closed on failure: the caller owns it). */
  ctx?: Context;
}

/** Opens the test device (unless given one) and connects two QPs to each other. */
export function makePair(options: PairOptions = {}): Pair {
  if (options.sharedCq && options.splitCqs) throw new TypeError('makePair: sharedCq and splitCqs exclude each other');
  const ctx = options.ctx ?? openDevice(TEST_DEVICE);
  try {
    const channel = ctx.createCompChannel();
    const cqe = options.cqe ?? 256;
    const mk = (context: string) => ctx.createCq({ cqe, channel, context });
    const cqA = mk('A');
    const recvA = options.splitCqs ? mk('recvA') : cqA;
    const cqB = options.sharedCq ? cqA : mk('B');
    const recvB = options.splitCqs ? mk('recvB') : cqB;
    const pd = ctx.allocPd();
    const cap = { maxSendWr: 64, maxRecvWr: 64, maxSendSge: 4, maxRecvSge: 4, ...options.cap };
    const a = pd.createQp({ sendCq: cqA, recvCq: recvA, cap, sqSigAll: options.sqSigAllA });
    const b = pd.createQp({ sendCq: cqB, recvCq: recvB, cap });
    const conn: ConnectOptions = { gidIndex: TEST_GID_INDEX, ...options.connect };
    a.connect(b.endpoint({ gidIndex: conn.gidIndex }), conn);
    b.connect(a.endpoint({ gidIndex: conn.gidIndex }), conn);
    return { ctx, channel, pd, cqA, cqB, a, b, sendA: cqA, recvA, sendB: cqB, recvB, close: () => ctx.close() };
  } catch (err) {
    if (!options.ctx) ctx.close();
    throw err;
  }
}

/**
 * Polls `cq` (busy, with event-loop turns) until `n` completions arrived or
 * `ms` (scaled by the slow-machine factor) passed.
 */
export async function pollN(cq: Cq, n: number, ms = 5000): Promise<WcBatch> {
  const batches: WcBatch[] = [];
  let got = 0;
  const deadline = Date.now() + scaled(ms);
  while (got < n) {
    const b = cq.poll(Math.min(256, n - got));
    if (b.length > 0) {
      batches.push(b);
      got += b.length;
      continue;
    }
    if (Date.now() > deadline) break;
    await new Promise((r) => setImmediate(r));
  }
  return WcBatch.concat(batches);
}

/**
 * Waits until `cond()` holds, giving up after `ms` (scaled by the
 * slow-machine factor: a deadline, never a measure); returns whether it held.
 */
export async function waitFor(cond: () => boolean, ms = 5000): Promise<boolean> {
  const deadline = Date.now() + scaled(ms);
  while (!cond()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 1));
  }
  return true;
}

/** Registers a fresh buffer of `size` bytes filled with `fill`. */
export function region(pd: Pd, size: number, access: Parameters<Pd['registerMemory']>[1] = { access: ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ'] }, fill = 0): Mr {
  return pd.registerMemory(Buffer.alloc(size, fill), access);
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * How long a child process or worker fixture may take before it counts as
 * hung: a hang detector, not a speed bound. Under emulation (the rxe VM) a
 * node start that loads the package takes seconds.
 */
export const CHILD_HANG_MS = 90000;

/**
 * Runs `fn` expecting it to throw an error of class `name` (checked by name:
 * errors made by the addon come from another realm than jest's globals).
 */
export function expectThrow(fn: () => unknown, name: string, props: Record<string, unknown> = {}): Error & Record<string, unknown> {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  if (caught === undefined) throw new Error(`expected a ${name} to be thrown, nothing was`);
  const err = caught as Error & Record<string, unknown>;
  expect(err.name).toBe(name);
  expect(err).toMatchObject(props);
  expect(typeof err.message).toBe('string');
  return err;
}
