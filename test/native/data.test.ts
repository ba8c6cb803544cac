import { randomBytes } from 'crypto';
import { Subscription } from 'rxjs';
import { ackEvents, rearm, drainCq, WcBatch, WC_FLAGS, WC_OPCODES, SendWr } from '../../src';
import { credits } from '../../src/completion';
import { makePair, waitFor, Pair } from '../support/device';
import { scaled } from '../support/slow';

/**
 * How long a stream may take before it counts as stalled (waitFor scales it
 * by the slow-machine factor), and each test's budget: that plus set-up.
 */
const STREAM_DEADLINE_MS = 40_000;
const TEST_TIMEOUT_MS = scaled(STREAM_DEADLINE_MS + 20_000);

const KiB = 1024;
const MAX = 64 * KiB;
/** In-flight messages (and receive/target slots). */
const WINDOW = 32;

/** Small seeded PRNG (mulberry32), so a failure can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Mode = 'send' | 'write';

interface Result {
  delivered: number;
  sendCompletions: number;
  badSendStatus: number;
  mismatches: string[];
  maxSendInFlight: number;
  maxRecvInFlight: number;
  asyncErrors: string[];
}

/**
 * Streams `total` messages of random sizes (1 B .. 64 KiB) from p.a to p.b.
 * - 'send': SENDs into WINDOW receive slots.
 * - 'write': RDMA WRITEs into WINDOW target slots, each signalled to the
 *   receiver either by RDMA_WRITE_WITH_IMM (even i) or by a plain RDMA_WRITE
 *   followed by a zero-length SEND_WITH_IMM (odd i); imm = i.
 * The sender's completions are consumed through cqA.completions$ (the native
 * fast path), the receiver's through channel.events$ + ackEvents/rearm/drainCq
 * (the explicit path), both on the one channel watcher. Posting is gated by
 * two credit pools: one for the sender's CQ (returned by its completions) and
 * one for the receiver's slots (returned once a message is verified).
 */
async function stream(p: Pair, total: number, mode: Mode, seed: number): Promise<Result> {
  const rand = prng(seed);
  const pool = randomBytes(4 * 1024 * KiB + MAX);
  const src = p.pd.registerMemory(pool, { access: ['LOCAL_WRITE'] });
  const slots = p.pd.registerMemory(Buffer.alloc(WINDOW * MAX), { access: ['LOCAL_WRITE', 'REMOTE_WRITE'] });
  const tiny = p.pd.registerMemory(Buffer.alloc(8 * WINDOW), { access: ['LOCAL_WRITE'] });
  const lens = new Uint32Array(total);
  const offs = new Uint32Array(total);
  for (let i = 0; i < total; i++) {
    lens[i] = 1 + Math.floor(rand() * MAX);
    offs[i] = Math.floor(rand() * (pool.length - lens[i]));
  }
  const r: Result = { delivered: 0, sendCompletions: 0, badSendStatus: 0, mismatches: [], maxSendInFlight: 0, maxRecvInFlight: 0, asyncErrors: [] };
  const subs = new Subscription();
  subs.add(p.ctx.asyncEvents$.subscribe((e) => r.asyncErrors.push(e.type)));

  const sendCompletions$ = p.cqA.completions$;
  const sendCredit = credits({ capacity: Math.min(WINDOW, p.cqA.cqe), release$: sendCompletions$ });
  const slotCredit = credits({ capacity: WINDOW });

  // Receives: one per message, into slot (k % WINDOW) for SENDs, a tiny buffer for writes.
  let recvPosted = 0;
  const postRecv = () => {
    while (recvPosted < total && recvPosted - r.delivered < WINDOW) {
      const slot = recvPosted % WINDOW;
      const sg = mode === 'send' ? { mr: slots, offset: slot * MAX, length: MAX } : { mr: tiny, offset: slot * 8, length: 8 };
      p.b.postRecv({ wrId: recvPosted, sg });
      recvPosted++;
    }
  };

  const verify = (batch: WcBatch) => {
    for (let k = 0; k < batch.length; k++) {
      const i = r.delivered; // RC keeps order
      const len = lens[i];
      const slot = i % WINDOW;
      const expected = pool.subarray(offs[i], offs[i] + len);
      const got = slots.buffer.subarray(slot * MAX, slot * MAX + len);
      const status = batch.status[k];
      const imm = batch.imm[k];
      const withImm = (batch.flags[k] & WC_FLAGS.WITH_IMM) !== 0;
      if (status !== 0) r.mismatches.push(`#${i}: receive status ${status}`);
      else if (batch.wrId[k] !== BigInt(i)) r.mismatches.push(`#${i}: receive wr_id ${batch.wrId[k]}`);
      else if (mode === 'send' && batch.byteLen[k] !== len) r.mismatches.push(`#${i}: byteLen ${batch.byteLen[k]} != ${len}`);
      else if (mode === 'write' && (!withImm || imm !== i)) r.mismatches.push(`#${i}: imm ${withImm ? imm : 'none'}`);
      else if (mode === 'write' && i % 2 === 0 && batch.opcode[k] !== WC_OPCODES.RECV_RDMA_WITH_IMM)
        r.mismatches.push(`#${i}: opcode ${batch.opcode[k]}`);
      else if (mode === 'write' && i % 2 === 1 && (batch.opcode[k] !== WC_OPCODES.RECV || batch.byteLen[k] !== 0))
        r.mismatches.push(`#${i}: opcode ${batch.opcode[k]} byteLen ${batch.byteLen[k]}`);
      else if (!got.equals(expected)) r.mismatches.push(`#${i}: ${len} bytes differ (seed ${seed})`);
      r.delivered++;
      if (r.mismatches.length > 20) throw new Error(r.mismatches.join('\n'));
    }
    slotCredit.release(batch.length);
    postRecv();
    pump();
  };

  let posted = 0;
  const pump = () => {
    while (posted < total) {
      if (!slotCredit.tryWaitForCompletion()) return;
      if (!sendCredit.tryWaitForCompletion()) {
        slotCredit.release(1);
        return;
      }
      const i = posted++;
      const slot = i % WINDOW;
      const sg = { mr: src, offset: offs[i], length: lens[i] };
      let wr: SendWr | SendWr[];
      if (mode === 'send') wr = { wrId: i, sg };
      else if (i % 2 === 0) wr = { wrId: i, opcode: 'RDMA_WRITE_WITH_IMM', imm: i, sg, remote: { addr: slots.remoteAddr(slot * MAX), rkey: slots.rkey } };
      else
        wr = [
          { wrId: 1_000_000 + i, opcode: 'RDMA_WRITE', signaled: false, sg, remote: { addr: slots.remoteAddr(slot * MAX), rkey: slots.rkey } },
          { wrId: i, opcode: 'SEND_WITH_IMM', imm: i, sg: { mr: src, offset: 0, length: 0 } },
        ];
      p.a.postSend(wr);
      r.maxSendInFlight = Math.max(r.maxSendInFlight, sendCredit.inFlight);
      r.maxRecvInFlight = Math.max(r.maxRecvInFlight, slotCredit.inFlight);
    }
  };

  subs.add(
    sendCompletions$.subscribe((b) => {
      r.sendCompletions += b.length;
      for (let k = 0; k < b.length; k++) if (b.status[k] !== 0) r.badSendStatus++;
      pump();
    }),
  );
  // The receiver: explicit event mode. Arm first, then consume events.
  subs.add(p.channel.events$.pipe(ackEvents({ every: 16 }), rearm(), drainCq({ max: 64 })).subscribe(verify));
  p.cqB.requestNotify();
  postRecv();
  pump();
  await waitFor(() => (r.delivered >= total && r.sendCompletions >= total) || r.mismatches.length > 0 || r.badSendStatus > 0, STREAM_DEADLINE_MS);
  subs.unsubscribe();
  sendCredit.close();
  return r;
}

/** The sender's CQ holds at most WINDOW, the receiver's at most WINDOW: make both deeper than that, but not by much. */
function pair(): Pair {
  return makePair({ cqe: 2 * WINDOW, cap: { maxSendWr: 2 * WINDOW + 2, maxRecvWr: WINDOW, maxSendSge: 1, maxRecvSge: 1 } });
}

describe('data integrity under load', () => {
  it('10,000 SENDs of random sizes (1 B .. 64 KiB) arrive byte for byte, in order, nothing overruns', async () => {
    const p = pair();
    try {
      const seed = Date.now() & 0x7fffffff;
      const r = await stream(p, 10_000, 'send', seed);
      expect(r.mismatches).toEqual([]);
      expect({ delivered: r.delivered, sendCompletions: r.sendCompletions, badSendStatus: r.badSendStatus }).toEqual({
        delivered: 10_000,
        sendCompletions: 10_000,
        badSendStatus: 0,
      });
      expect(r.asyncErrors).toEqual([]);
      expect(r.maxSendInFlight).toBeLessThanOrEqual(WINDOW);
      expect(r.maxRecvInFlight).toBeLessThanOrEqual(WINDOW);
      expect(p.a.state).toBe('RTS');
      expect(p.b.state).toBe('RTS');
      expect(p.cqB.unacked).toBe(0); // ackEvents flushed on unsubscribe
    } finally {
      p.close();
    }
  }, TEST_TIMEOUT_MS);

  it('10,000 RDMA WRITEs of random sizes (1 B .. 64 KiB) land byte for byte, signalled by WRITE_WITH_IMM or a following SEND_WITH_IMM', async () => {
    const p = pair();
    try {
      const seed = (Date.now() * 7) & 0x7fffffff;
      const r = await stream(p, 10_000, 'write', seed);
      expect(r.mismatches).toEqual([]);
      expect({ delivered: r.delivered, sendCompletions: r.sendCompletions, badSendStatus: r.badSendStatus }).toEqual({
        delivered: 10_000,
        sendCompletions: 10_000,
        badSendStatus: 0,
      });
      expect(r.asyncErrors).toEqual([]);
      expect(p.a.state).toBe('RTS');
      expect(p.b.state).toBe('RTS');
    } finally {
      p.close();
    }
  }, TEST_TIMEOUT_MS);
});
