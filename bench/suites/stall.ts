/**
 * Suite 7: does one context's bulk data movement stall verbs on another?
 * Samples `registerMemory` + `close` latency on an idle context, first with
 * the device idle (the baseline), then while a second context moves
 * `count` RDMA WRITEs of `size` bytes between two of its own QPs, in the
 * same run. The verb must not wait on the other context's copies (docs/ARCHITECTURE.md, Memory safety).
 */
import { performance } from 'perf_hooks';
import { Context, Mr, Pd, Qp, openDevice } from 'rx-verbs';
import { fmt } from './format';
import { RunConfig, gc } from './rig';

export interface StallSample {
  samples: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
}

function summarise(ms: number[]): StallSample {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
  return { samples: s.length, p50: at(0.5), p99: at(0.99), p999: at(0.999), max: s[s.length - 1] ?? NaN };
}

/** One registerMemory + close on the idle context, in ms. */
function sampleOnce(pd: Pd, buf: Buffer): number {
  const t0 = performance.now();
  pd.registerMemory(buf).close();
  return performance.now() - t0;
}

/** The busy context: a loopback pair and two `size`-byte regions. */
function bulkRig(device: string, size: number, count: number) {
  const ctx = openDevice(device);
  const cq = ctx.createCq({ cqe: count * 2 + 16 });
  const pd = ctx.allocPd();
  const cap = { maxSendWr: count, maxRecvWr: 1 };
  const a = pd.createQp({ sendCq: cq, recvCq: cq, cap });
  const b = pd.createQp({ sendCq: cq, recvCq: cq, cap });
  a.connect(b.endpoint());
  b.connect(a.endpoint());
  const src = pd.registerMemory(Buffer.alloc(size, 1));
  const dst = pd.registerMemory(Buffer.alloc(size), { access: ['LOCAL_WRITE', 'REMOTE_WRITE'] });
  return { ctx, cq, a, src, dst };
}

function postWrites(a: Qp, src: Mr, dst: Mr, count: number): void {
  const wrs = Array.from({ length: count }, (_, i) => ({
    wrId: i,
    opcode: 'RDMA_WRITE' as const,
    sg: { mr: src },
    remote: { addr: dst.addr, rkey: dst.rkey },
  }));
  a.postSend(wrs);
}

export async function stall(cfg: RunConfig) {
  const size = 64 << 20;
  const count = cfg.quick ? 64 : 256;
  cfg.log(`stall: registerMemory latency on an idle context, device idle vs another context moving ${count} x ${size >> 20} MiB RDMA WRITEs`);
  let idleCtx: Context | undefined;
  let bulk: ReturnType<typeof bulkRig> | undefined;
  try {
    idleCtx = openDevice(cfg.device);
    const pd = idleCtx.allocPd();
    const buf = Buffer.alloc(4096);
    bulk = bulkRig(cfg.device, size, count);
    gc();
    const busy: number[] = [];
    let done = 0;
    let failed = 0;
    const t0 = performance.now();
    postWrites(bulk.a, bulk.src, bulk.dst, count);
    // Sample until every WRITE completed; the poll between samples is
    // on the busy context's own CQ, which never takes the shared lock.
    while (done < count) {
      busy.push(sampleOnce(pd, buf));
      const batch = bulk.cq.poll(64);
      for (let i = 0; i < batch.length; i++) if (batch.status[i] !== 0) failed++;
      done += batch.length;
    }
    const seconds = (performance.now() - t0) / 1000;
    if (failed) throw new Error(`stall: ${failed} of the bulk WRITEs failed`);
    // The baseline samples for as long as the busy phase took, so both
    // maxima come from windows of the same length (the machine's own
    // scheduling hiccups hit both alike).
    const idle: number[] = [];
    const until = performance.now() + seconds * 1000;
    while (performance.now() < until) idle.push(sampleOnce(pd, buf));
    const result = {
      size,
      count,
      seconds,
      gbPerSecond: (size * count) / seconds / 1e9,
      idle: summarise(idle),
      busy: summarise(busy),
      maxRatioToIdle: 0,
    };
    result.maxRatioToIdle = result.busy.max / result.idle.max;
    cfg.log(
      `  idle p50 ${fmt(result.idle.p50, 3)} ms max ${fmt(result.idle.max, 3)} ms; busy p50 ${fmt(result.busy.p50, 3)} ms max ${fmt(result.busy.max, 3)} ms (${result.busy.samples} samples, ${fmt(result.gbPerSecond, 2)} GB/s moved)`,
    );
    return result;
  } finally {
    bulk?.ctx.close();
    idleCtx?.close();
  }
}
