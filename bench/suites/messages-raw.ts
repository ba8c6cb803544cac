/**
 * The JS baselines of the messages suite, on a plain `connect()`/`accept()`
 * connection over the soft CM, both ends in this thread:
 * - `raw`: the raw verbs pipeline (`completions$` and posts, SMALL-byte
 *   SENDs, flow control for free: the sender reads the receiver's count);
 * - `read`: one RDMA READ per large message, nothing else: the floor of a
 *   rendezvous that READs;
 * - `protocol`: the least JS that speaks the layer's wire format (its
 *   16-byte header written and read through DataViews, credits as
 *   src/messages/credits.ts counts them, a CREDIT once the threshold is
 *   owed), with no Promise, Observable or object per message: the floor of
 *   any JS implementation of that format on this pipeline.
 */
import { performance } from 'perf_hooks';
import { Subscription } from 'rxjs';
import { Connection, WC_OPCODES, WcBatch } from 'rx-verbs';
import { cpuStart, immediate, threadNsPer } from './rig';

/** Payload bytes of the small messages (the 64 B). */
export const SMALL = 64;
/** The wire format's header (src/messages/wire.ts). */
const HEADER = 16;
/** Message types of the wire format. */
export const EAGER = 1;
export const CREDIT = 4;
/** Header bytes before each payload. */
export const HEADER_BYTES = HEADER;

/** One pass of the one-way rate: messages moved and how fast. */
export interface MessageRateRun {
  variant: string;
  messages: number;
  seconds: number;
  rate: number;
  /** JS-thread CPU per message, ns (for the native pair: both its threads'). */
  cpuNsPerMessage: number;
  error?: string;
}

/**
 * One side: a receive buffer of a header and SMALL bytes for each receive
 * the QP takes (all posted at once), as many send buffers as it sends,
 * registered once; every send signaled (as the layer's, which recycles its
 * send buffers on completion). Both CQs stay subscribed for its life; a run
 * sets what a receive does (`onRecv`, which reposts) and what follows each
 * batch (`after`).
 */
export class RawEnd {
  /** Receives it keeps posted. */
  readonly slots: number;
  private readonly sends: number;
  private readonly recvMr;
  private readonly sendMr;
  readonly recvView: DataView;
  readonly sendView: DataView;
  readonly recvBytes: Buffer;
  readonly sendBytes: Buffer;
  private readonly freeSends: number[] = [];
  private readonly subs: Subscription[] = [];
  onRecv: (slot: number, byteLen: number) => void = () => undefined;
  /** An RDMA READ of this side completed (its send buffers are not involved). */
  onRead: () => void = () => undefined;
  after: () => void = () => undefined;
  fail: (e: unknown) => void = () => undefined;
  failure: unknown;
  static readonly SLOT = HEADER + SMALL;

  constructor(readonly conn: Connection) {
    this.slots = conn.qp.cap.maxRecvWr;
    this.sends = conn.qp.cap.maxSendWr;
    this.recvMr = conn.pd.allocMemory(this.slots * RawEnd.SLOT, { access: ['LOCAL_WRITE'] });
    this.sendMr = conn.pd.allocMemory(this.sends * RawEnd.SLOT, { access: ['LOCAL_WRITE'] });
    this.recvBytes = this.recvMr.buffer;
    this.sendBytes = this.sendMr.buffer;
    this.recvView = new DataView(this.recvBytes.buffer, this.recvBytes.byteOffset, this.recvBytes.byteLength);
    this.sendView = new DataView(this.sendBytes.buffer, this.sendBytes.byteOffset, this.sendBytes.byteLength);
    this.sendBytes.fill(7);
    for (let i = this.sends - 1; i >= 0; i--) this.freeSends.push(i);
    for (let s = 0; s < this.slots; s++) this.postRecv(s);
    const handle = (b: WcBatch) => {
      for (let i = 0; i < b.length; i++) {
        if (b.statusAt(i) !== 0) return this.failed(new Error(`a completion failed with status ${b.statusAt(i)}`));
        const opcode = b.opcodeAt(i);
        if (opcode === WC_OPCODES.RECV) this.onRecv(b.wrIdLow(i), b.byteLenAt(i));
        else if (opcode === WC_OPCODES.RDMA_READ) this.onRead();
        else this.freeSends.push(b.wrIdLow(i));
      }
      this.after();
    };
    for (const cq of new Set([conn.sendCq, conn.recvCq])) this.subs.push(cq.completions$.subscribe({ next: handle, error: (e: unknown) => this.failed(e) }));
  }

  private failed(e: unknown): void {
    this.failure ??= e;
    this.fail(e);
  }

  postRecv(slot: number): void {
    this.conn.qp.postRecv({ wrId: slot, sg: { mr: this.recvMr, offset: slot * RawEnd.SLOT, length: RawEnd.SLOT } });
  }

  get canSend(): boolean {
    return this.freeSends.length > 0;
  }

  /** Every send completed. */
  get idle(): boolean {
    return this.freeSends.length === this.sends;
  }

  /** A free send buffer (check canSend first); fill it at `slot * SLOT`, then post it. */
  take(): number {
    return this.freeSends.pop()!;
  }

  post(slot: number, length: number): void {
    this.conn.qp.postSend({ wrId: slot, sg: { mr: this.sendMr, offset: slot * RawEnd.SLOT, length } });
  }

  close(): void {
    for (const s of this.subs.splice(0)) s.unsubscribe();
    this.recvMr.close();
    this.sendMr.close();
  }
}

/** A pair's two ends: `a` accepted (the receiver of one-way runs), `b` connected. */
export interface RawEnds {
  a: RawEnd;
  b: RawEnd;
}

/** Resolves once neither end has a send in flight (a run's last completions are in), and detaches the run. */
async function settled(e: RawEnds): Promise<void> {
  for (let i = 0; !(e.a.idle && e.b.idle); i++) {
    if (e.a.failure || e.b.failure) throw e.a.failure ?? e.b.failure;
    if (i > 10_000) throw new Error('sends never completed');
    await immediate();
  }
  for (const end of [e.a, e.b]) {
    end.onRecv = () => undefined;
    end.onRead = () => undefined;
    end.after = () => undefined;
  }
}

/**
 * One-way: `warmup` then `n` timed messages b -> a; `start` begins sending
 * (and is what each batch calls again), `counted()` is how many the
 * receiver has; the run ends when it has them all.
 */
async function oneWay(ends: RawEnds, variant: string, n: number, warmup: number, setup: (limit: () => number, arrived: () => void) => () => void): Promise<MessageRateRun> {
  let got = 0;
  let limit = warmup;
  let cpu = cpuStart();
  await new Promise<void>((resolve, reject) => {
    ends.a.fail = ends.b.fail = reject;
    const pump = setup(
      () => limit,
      () => {
        if (++got !== limit) return;
        if (limit === warmup) {
          limit = warmup + n;
          cpu = cpuStart();
        } else resolve();
      },
    );
    pump();
  });
  const seconds = (performance.now() - cpu.wall) / 1000;
  const cpuNsPerMessage = threadNsPer(cpu, n);
  await settled(ends);
  return { variant, messages: n, seconds, rate: n / seconds, cpuNsPerMessage };
}

/**
 * The raw pipeline's rate: the receiver reposts each receive at once; the
 * sender posts SMALL bytes while the receiver has one posted that it has
 * not used (a count both ends share in this one thread).
 */
export function rawRate(ends: RawEnds, n: number, warmup: number): Promise<MessageRateRun> {
  const { a: rx, b: tx } = ends;
  return oneWay(ends, 'raw', n, warmup, (limit, arrived) => {
    let credits = rx.slots;
    let sent = 0;
    const pump = () => {
      while (sent < limit() && credits > 0 && tx.canSend) {
        tx.post(tx.take(), SMALL);
        sent++;
        credits--;
      }
    };
    rx.onRecv = (slot) => {
      rx.postRecv(slot);
      credits++;
      arrived();
    };
    tx.onRecv = () => ends.b.fail(new Error('raw: the sender received'));
    rx.after = tx.after = pump;
    return pump;
  });
}

/** The raw round trip: b posts a SEND, a's handler reposts and posts one back; us per round trip. */
export async function rawPing(ends: RawEnds, iters: number, warmup: number): Promise<Float64Array> {
  const { a, b } = ends;
  const out = new Float64Array(iters);
  await new Promise<void>((resolve, reject) => {
    let k = 0;
    let t0 = 0;
    const go = () => {
      t0 = performance.now();
      b.post(b.take(), SMALL);
    };
    a.fail = b.fail = reject;
    a.onRecv = (slot) => {
      a.postRecv(slot);
      a.post(a.take(), SMALL);
    };
    b.onRecv = (slot) => {
      const t = performance.now();
      b.postRecv(slot);
      if (k >= warmup) out[k - warmup] = (t - t0) * 1000;
      if (++k === warmup + iters) resolve();
      else go();
    };
    go();
  });
  await settled(ends);
  return out;
}

/**
 * One end's credits, as src/messages/credits.ts counts them (the layer's
 * default depth, 64, both ways; a fresh window per run, every receive
 * posted). Exported for the test that plays it against the layer.
 */
export class Credits {
  private peerPosted: number;
  private sent = 0;
  private posted: number;
  private announced: number;
  /** Threshold and reserve for depth 64: max(2, 64 / 4) and ceil(64 / 16) + 4 + min(64, 16) (the rendezvous window). */
  private readonly threshold = 16;
  private readonly reserve = 24;

  constructor(receives: number) {
    this.posted = this.announced = this.peerPosted = receives;
  }

  get canSendData(): boolean {
    return ((this.peerPosted - this.sent) | 0) > this.reserve;
  }

  get creditDue(): boolean {
    return ((this.posted - this.announced) | 0) >= this.threshold && ((this.peerPosted - this.sent) | 0) >= 1;
  }

  granted(grant: number): void {
    if (((grant - this.peerPosted) | 0) > 0) this.peerPosted = grant;
  }

  reposted(): void {
    this.posted = (this.posted + 1) | 0;
  }

  spend(): number {
    this.sent = (this.sent + 1) | 0;
    this.announced = this.posted;
    return this.posted >>> 0;
  }
}

/** Writes a header and posts the slot: EAGER with `length` payload bytes (already in the slot), or a CREDIT. */
export function postMessage(end: RawEnd, credits: Credits, type: number, length: number, slot = end.take()): void {
  const at = slot * RawEnd.SLOT;
  const v = end.sendView;
  v.setUint8(at, type);
  v.setUint8(at + 1, 0);
  v.setUint16(at + 2, 0, true);
  v.setUint32(at + 4, credits.spend(), true);
  v.setUint32(at + 8, 0, true);
  v.setUint32(at + 12, length, true);
  end.post(slot, HEADER + length);
}

/** Reads a receive's header: takes its grant, checks its length; its type. */
export function readMessage(end: RawEnd, credits: Credits, slot: number, byteLen: number): number {
  const at = slot * RawEnd.SLOT;
  const v = end.recvView;
  credits.granted(v.getUint32(at + 4, true));
  const type = v.getUint8(at);
  if (type === EAGER && byteLen !== HEADER + v.getUint32(at + 12, true)) throw new Error('protocol: an eager message of the wrong length');
  return type;
}

/** The least JS speaking the wire format, one way: EAGER messages b -> a, CREDITs back. */
export function protocolRate(ends: RawEnds, n: number, warmup: number): Promise<MessageRateRun> {
  const { a: rx, b: tx } = ends;
  const rxc = new Credits(rx.slots);
  const txc = new Credits(tx.slots);
  return oneWay(ends, 'protocol', n, warmup, (limit, arrived) => {
    let sent = 0;
    const pump = () => {
      while (sent < limit() && txc.canSendData && tx.canSend) {
        postMessage(tx, txc, EAGER, SMALL);
        sent++;
      }
      if (txc.creditDue && tx.canSend) postMessage(tx, txc, CREDIT, 0);
    };
    rx.onRecv = (slot, byteLen) => {
      const type = readMessage(rx, rxc, slot, byteLen);
      rx.postRecv(slot);
      rxc.reposted();
      if (type === EAGER) arrived();
    };
    rx.after = () => {
      if (rxc.creditDue && rx.canSend) postMessage(rx, rxc, CREDIT, 0);
      // The warm-up may end after the sender's last completion: go on from here too.
      pump();
    };
    tx.onRecv = (slot, byteLen) => {
      readMessage(tx, txc, slot, byteLen);
      tx.postRecv(slot);
      txc.reposted();
    };
    tx.after = pump;
    return pump;
  });
}

/** The least JS speaking the wire format, echoed: a copies each EAGER's payload into its reply. */
export async function protocolPing(ends: RawEnds, iters: number, warmup: number): Promise<Float64Array> {
  const { a, b } = ends;
  const ac = new Credits(a.slots);
  const bc = new Credits(b.slots);
  const out = new Float64Array(iters);
  await new Promise<void>((resolve, reject) => {
    let k = 0;
    let t0 = 0;
    const go = () => {
      t0 = performance.now();
      postMessage(b, bc, EAGER, SMALL);
    };
    a.fail = b.fail = reject;
    a.onRecv = (slot, byteLen) => {
      if (readMessage(a, ac, slot, byteLen) === EAGER) {
        const to = a.take();
        const from = slot * RawEnd.SLOT + HEADER;
        a.recvBytes.copy(a.sendBytes, to * RawEnd.SLOT + HEADER, from, from + SMALL);
        postMessage(a, ac, EAGER, SMALL, to);
      }
      a.postRecv(slot);
      ac.reposted();
    };
    b.onRecv = (slot, byteLen) => {
      const t = performance.now();
      const type = readMessage(b, bc, slot, byteLen);
      b.postRecv(slot);
      bc.reposted();
      if (type !== EAGER) return;
      if (k >= warmup) out[k - warmup] = (t - t0) * 1000;
      if (++k === warmup + iters) resolve();
      else go();
    };
    go();
  });
  await settled(ends);
  return out;
}

/**
 * The floor of a READ rendezvous: a reads `big` from b's memory (registered
 * once, outside the timing) into a buffer of its own, `count` times one
 * after another, after one untimed; bytes per second.
 */
export async function rawRead(ends: RawEnds, big: Buffer, count: number): Promise<number> {
  const { a, b } = ends;
  const source = b.conn.pd.registerMemory(big, { access: ['LOCAL_WRITE', 'REMOTE_READ'] });
  const dest = a.conn.pd.allocMemory(big.length, { access: ['LOCAL_WRITE'] });
  try {
    const once = () =>
      new Promise<void>((resolve, reject) => {
        a.fail = reject;
        a.onRead = resolve;
        a.conn.qp.postSend({ wrId: 0, opcode: 'RDMA_READ', sg: { mr: dest, offset: 0, length: big.length }, remote: { addr: source.addr, rkey: source.rkey } });
      });
    await once();
    const t0 = performance.now();
    for (let i = 0; i < count; i++) await once();
    const seconds = (performance.now() - t0) / 1000;
    if (dest.buffer[big.length - 1] !== big[big.length - 1]) throw new Error('read: the bytes differ');
    return (big.length * count) / seconds;
  } finally {
    await settled(ends);
    dest.close();
    source.close();
  }
}
