import { asapScheduler, asyncScheduler, Subscription } from 'rxjs';
import { ackEvents, batchCompletions, credits, drainCq, openDevice, rearm, steer, WcBatch, WC_OPCODES } from '../../index';
import { Progress } from '../shared/progress';
import type { DemoSummary } from './summary';

/** Options of {@link runDemo}. */
export interface DemoOptions {
  device: string;
  messages: number;
  maxSize: number;
  depth: number;
  gidIndex?: number;
  progress: boolean;
}

/** Runs the demo and resolves with its summary. */
export function runDemo(opts: DemoOptions): Promise<DemoSummary> {
  const ctx = openDevice(opts.device);
  const channel = ctx.createCompChannel();
  const sendCq = ctx.createCq({ cqe: opts.depth * 2, channel, context: 'send' });
  const recvCq = ctx.createCq({ cqe: opts.depth * 2, channel, context: 'recv' });
  const pd = ctx.allocPd();
  const cap = { maxSendWr: opts.depth, maxRecvWr: opts.depth };
  const a = pd.createQp({ sendCq, recvCq: sendCq, cap });
  const b = pd.createQp({ sendCq: recvCq, recvCq, cap });
  a.connect(b.endpoint({ gidIndex: opts.gidIndex }), { gidIndex: opts.gidIndex });
  b.connect(a.endpoint({ gidIndex: opts.gidIndex }), { gidIndex: opts.gidIndex });

  // One slot per message in flight on each side; slot = seq % depth.
  const src = pd.registerMemory(Buffer.alloc(opts.depth * opts.maxSize), { access: ['LOCAL_WRITE'] });
  const dst = pd.registerMemory(Buffer.alloc(opts.depth * opts.maxSize), { access: ['LOCAL_WRITE', 'REMOTE_WRITE'] });
  const sizes = new Uint32Array(opts.messages);
  for (let i = 0; i < opts.messages; i++) sizes[i] = 1 + Math.floor(Math.random() ** 3 * opts.maxSize);

  const credit = credits({ capacity: opts.depth });
  const stats = { bytes: 0, verified: 0, corrupt: 0, errors: 0, completions: 0 };
  // Where the time went: filling and checking payloads; the rest is the pipeline.
  const time = { fill: 0n, verify: 0n };
  let posted = 0;
  const started = process.hrtime.bigint();
  const progress = new Progress(opts.progress);

  // Message `seq` is the byte ramp starting at (seq * 31) & 0xff: a slice
  // of one precomputed ramp, so filling is a memcpy and checking a memcmp
  // (the demo measures the pipeline, not a byte loop in JS).
  const ramp = Buffer.alloc(opts.maxSize + 256);
  for (let k = 0; k < ramp.length; k++) ramp[k] = k & 0xff;
  const expected = (seq: number, len: number) => ramp.subarray((seq * 31) & 0xff, ((seq * 31) & 0xff) + len);
  const fill = (seq: number) => {
    const t0 = process.hrtime.bigint();
    src.buffer.set(expected(seq, sizes[seq]), (seq % opts.depth) * opts.maxSize);
    time.fill += process.hrtime.bigint() - t0;
  };
  const verify = (seq: number, len: number) => {
    const t0 = process.hrtime.bigint();
    const off = (seq % opts.depth) * opts.maxSize;
    const ok = len === sizes[seq] && dst.buffer.subarray(off, off + len).equals(expected(seq, len));
    if (ok) stats.verified++;
    else stats.corrupt++;
    stats.bytes += len;
    time.verify += process.hrtime.bigint() - t0;
  };
  const pump = () => {
    while (posted < opts.messages && credit.tryWaitForCompletion()) {
      const seq = posted++;
      const slot = seq % opts.depth;
      fill(seq);
      b.postRecv({ wrId: seq, sg: { mr: dst, offset: slot * opts.maxSize, length: opts.maxSize } });
      if (seq % 2 === 0) {
        a.postSend({ wrId: seq, sg: { mr: src, offset: slot * opts.maxSize, length: sizes[seq] } });
      } else {
        a.postSend({
          wrId: seq,
          opcode: 'RDMA_WRITE_WITH_IMM',
          imm: seq,
          sg: { mr: src, offset: slot * opts.maxSize, length: sizes[seq] },
          remote: { addr: dst.remoteAddr(slot * opts.maxSize), rkey: dst.rkey },
        });
      }
    }
  };

  return new Promise<DemoSummary>((resolve, reject) => {
    const subscription = new Subscription();
    const finish = (err?: unknown) => {
      subscription.unsubscribe();
      progress.done();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const s1 = sendCq.stats;
      const s2 = recvCq.stats;
      const summary: DemoSummary = {
        device: ctx.deviceName,
        messages: opts.messages,
        bytes: stats.bytes,
        seconds,
        mbPerSec: stats.bytes / seconds / 1e6,
        fillSeconds: Number(time.fill) / 1e9,
        verifySeconds: Number(time.verify) / 1e9,
        pipelineSeconds: seconds - Number(time.fill + time.verify) / 1e9,
        events: s1.events + s2.events,
        completions: stats.completions,
        wcsPerEvent: stats.completions / Math.max(1, s1.events + s2.events),
        acks: s1.ackCalls + s2.ackCalls,
        arms: s1.arms + s2.arms,
        wakeups: channel.wakeups.total,
        verified: stats.verified,
        corrupt: stats.corrupt,
        errors: stats.errors,
      };
      ctx.close();
      if (err) reject(err);
      else resolve(summary);
    };
    const onBatch = (batch: WcBatch) => {
      stats.completions += batch.length;
      for (let i = 0; i < batch.length; i++) {
        if (batch.status[i] !== 0) {
          stats.errors++;
          continue;
        }
        const op = batch.opcode[i];
        if (op === WC_OPCODES.RECV) {
          verify(batch.wrIdLow(i), batch.byteLen[i]);
        } else if (op === WC_OPCODES.RECV_RDMA_WITH_IMM) {
          verify(batch.imm[i], sizes[batch.imm[i]]);
        } else continue;
        credit.complete();
      }
      progress.update(() => progressLine(stats.verified, opts.messages, stats.bytes, started, sendCq.stats.events + recvCq.stats.events));
      if (stats.errors > 0) return finish(new Error(`${stats.errors} work completions failed`));
      if (stats.verified + stats.corrupt === opts.messages) return finish();
      pump();
    };
    subscription.add(
      channel.events$
        .pipe(
          ackEvents({ every: 16 }),
          rearm(),
          drainCq({ max: 256 }),
          // Receives (latency-critical here) on the microtask queue, send
          // completions on a macrotask: each CQ keeps its own order.
          steer({ by: (b: WcBatch) => b.qpNum[0], to: (qpn) => (qpn === b.qpNum ? asapScheduler : asyncScheduler) }),
          batchCompletions(),
        )
        .subscribe({ next: onBatch, error: finish }),
    );
    // Arm before the first post; later arms come from rearm().
    sendCq.requestNotify();
    recvCq.requestNotify();
    pump();
  });
}

function progressLine(done: number, total: number, bytes: number, started: bigint, events: number): string {
  const s = Number(process.hrtime.bigint() - started) / 1e9;
  const pct = ((done / total) * 100).toFixed(0).padStart(3);
  return `${pct}%  ${done}/${total} messages  ${(bytes / s / 1e6).toFixed(1)} MB/s  ${(events / s).toFixed(0)} events/s`;
}

