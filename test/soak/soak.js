#!/usr/bin/env node
// Bounded soak: mixed traffic with faults for N minutes, watching for growth.
//
//   npm run soak -- --minutes 10        (or --seconds 45 for CI)
//
// Traffic: several pairs on soft0 (SEND / RDMA_WRITE(+IMM) / RDMA_READ of
// random sizes, byte-checked), consumed through completions$ and through the
// explicit path (events$ + ackEvents/rearm/drainCq), posting gated by credits.
// Faults, periodically: error completions, empty events, spurious wakeups,
// duplicate events on/off, an overrun on a pair (its CQ_ERR and its sources'
// CqOverrunError are awaited; then the pair is closed and recreated),
// whole-context open/close cycles, and worker threads started and
// terminated mid-traffic.
// Every second: RSS, heap used, open fds (/proc/self/fd), active handles and
// the addon's live objects, printed as a table.
// Fails (exit 1) when, after the warm-up, it grew beyond the bounds:
//   RSS +RSS_MB (default 20 MB) between the first and the last quarter of
//   the run (medians), heap +HEAP_MB (default 16 MB) likewise, fds more than
//   FD_SLACK (default 4) above the post-warm-up baseline at the end, live
//   objects not back to the baseline once traffic stopped and everything
//   was closed; also on any data error or lost completion, on any source
//   error or async event other than those of an overrun it injected itself
//   (the CQ it overran, reported as CQ_ERR and CqOverrunError), on an
//   injected overrun that is never reported, and on ctx.close() refusing.
'use strict';
const fs = require('fs');
const path = require('path');
const { Worker } = require('worker_threads');
const rx = require('../../dist');
const { binding } = require('../../dist/native/binding');

const argv = process.argv.slice(2);
const num = (n, d) => (argv.includes(`--${n}`) ? Number(argv[argv.indexOf(`--${n}`) + 1]) : d);
const SECONDS = argv.includes('--seconds') ? num('seconds', 60) : num('minutes', 1) * 60;
// The allocator's working set with worker threads coming and going (each
// worker's isolate, per-thread malloc arenas) takes about half a minute to
// plateau on a 2-core machine: growth is judged after that, and after at
// least a third of the run.
const WARMUP = num('warmup', Math.max(30, Math.round(SECONDS / 3)));
const PAIRS = num('pairs', 4);
const RSS_MB = num('rss-mb', 20);
const HEAP_MB = num('heap-mb', 16);
const FD_SLACK = num('fd-slack', 4);
const WORKER = path.join(__dirname, '..', 'fixtures', 'worker-traffic.js');

const fds = () => fs.readdirSync('/proc/self/fd').length;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rand = (n) => Math.floor(Math.random() * n);
const failures = [];
const failOnce = new Set();
function problem(msg) {
  if (failOnce.has(msg)) return;
  failOnce.add(msg);
  failures.push(msg);
  process.stderr.write(`soak: ${msg}\n`);
}

const counters = { sends: 0, writes: 0, reads: 0, bytes: 0, errorWcs: 0, overruns: 0, overrunsReported: 0, recreated: 0, ctxCycles: 0, workers: 0, faults: 0 };
/** How long an injected overrun may go unreported before that is a failure. */
const OVERRUN_REPORT_MS = 5000;

/** One pair with its own context and traffic loop. */
class Lane {
  constructor(id) {
    this.id = id;
    this.mode = id % 2 === 0 ? 'fast' : 'explicit';
    this.closed = false;
    const ctx = (this.ctx = rx.openDevice('soft0'));
    this.channel = ctx.createCompChannel();
    this.cqA = ctx.createCq({ cqe: 128, channel: this.channel, context: 'A' });
    this.cqB = ctx.createCq({ cqe: 128, channel: this.channel, context: 'B' });
    const pd = (this.pd = ctx.allocPd());
    const cap = { maxSendWr: 32, maxRecvWr: 32, maxSendSge: 2, maxRecvSge: 2 };
    this.a = pd.createQp({ sendCq: this.cqA, recvCq: this.cqA, cap });
    this.b = pd.createQp({ sendCq: this.cqB, recvCq: this.cqB, cap });
    this.a.connect(this.b.endpoint());
    this.b.connect(this.a.endpoint());
    this.src = pd.registerMemory(Buffer.alloc(65536), { access: ['LOCAL_WRITE', 'REMOTE_READ'] });
    this.dst = pd.registerMemory(Buffer.alloc(65536), { access: ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ'] });
    this.credit = rx.credits({ capacity: 16 });
    this.outstanding = new Map(); // wrId -> check
    this.free = Array.from({ length: 16 }, (_, i) => i); // 4 KiB slots: in-flight WRs never share bytes
    this.completed = 0;
    this.nextId = 1;
    this.subs = [];
    // An overrun this lane injected on cqB (see overrun()): when, and what has reported it.
    this.overrun = undefined;
    const onBatch = (batch) => this.onBatch(batch);
    // Which source may error when cqB overruns: its own completions$ on the
    // fast path; on the explicit path the one pipeline (its re-arm or poll of cqB).
    const onError = (where) => (err) => this.onSourceError(where, err);
    if (this.mode === 'fast') {
      this.subs.push(this.cqA.completions$.subscribe({ next: onBatch, error: onError('cqA') }));
      this.subs.push(this.cqB.completions$.subscribe({ next: onBatch, error: onError('cqB') }));
    } else {
      this.subs.push(
        this.channel.events$.pipe(rx.ackEvents({ every: 8 }), rx.rearm(), rx.drainCq({ max: 32 })).subscribe({ next: onBatch, error: onError('events') }),
      );
      this.cqA.requestNotify();
      this.cqB.requestNotify();
    }
    this.subs.push(
      ctx.asyncEvents$.subscribe({
        next: (e) => this.onAsyncEvent(e),
        error: (err) => problem(`lane ${id}: asyncEvents$ error ${err && err.name} ${err && err.message}`),
      }),
    );
  }

  /** Injects an overrun on cqB; the lane stops posting and waits for it to be reported. */
  injectOverrun() {
    counters.overruns++;
    this.overrun = { at: Date.now(), cqErr: false, sourceError: false };
    this.ctx.faults.overrun(this.cqB);
  }

  /**
   * The only async events expected: CQ_ERR for the CQ this lane overran, and
   * QP_FATAL for the QP that completes into it (it went to the error state).
   */
  onAsyncEvent(e) {
    if (this.overrun && e.type === 'CQ_ERR' && e.cq === this.cqB && !this.overrun.cqErr) this.overrun.cqErr = true;
    else if (this.overrun && e.type === 'QP_FATAL' && e.qp === this.b) this.overrun.qpFatal = true;
    else problem(`lane ${this.id}: unexpected async event ${e.type}${e.cq ? ` on CQ ${e.cq.context}` : ''}${this.overrun ? '' : ' (no overrun injected)'}`);
    this.settle();
  }

  /**
   * The only source error expected comes from the source that reads the CQ
   * this lane overran: CqOverrunError from cqB's completions$ on the fast
   * path; on the explicit path the pipeline's own verbs call on cqB (the
   * re-arm or the poll) fails, and its error says so: EIO from that verb.
   */
  onSourceError(where, err) {
    const expected =
      this.mode === 'fast'
        ? where === 'cqB' && err && err.name === 'CqOverrunError'
        : where === 'events' && err && (err.name === 'CqOverrunError' || (err.code === 'EIO' && /^ibv_(req_notify|poll)_cq$/.test(err.syscall)));
    if (this.overrun && expected && !this.overrun.sourceError) this.overrun.sourceError = true;
    else problem(`lane ${this.id}: unexpected error from ${where}: ${err && err.name} ${err && err.code} ${err && err.syscall} ${err && err.message}${this.overrun ? '' : ' (no overrun injected)'}`);
    this.settle();
  }

  /**
   * An injected overrun is reported once CQ_ERR names cqB and (fast path)
   * cqB's completions$ errored with CqOverrunError. The explicit pipeline
   * errors only if it touches cqB again (re-arm or poll), which it need not.
   */
  settle() {
    const o = this.overrun;
    if (!o || this.broken) return;
    if (o.cqErr && (o.sourceError || this.mode === 'explicit')) {
      this.broken = true;
      counters.overrunsReported++;
    }
  }

  /** An overrun injected long ago that nothing reported. */
  overrunUnreported(now) {
    return this.overrun !== undefined && !this.broken && now - this.overrun.at > OVERRUN_REPORT_MS;
  }

  onBatch(batch) {
    for (let i = 0; i < batch.length; i++) {
      const id = batch.wrIdLow(i);
      const status = batch.status[i];
      const check = this.outstanding.get(id);
      if (!check) {
        // Injected completions (wr_id >= 0x40000000) are expected; anything else is a duplicate.
        if (id >= 0x40000000) {
          if (status !== 0) counters.errorWcs++;
          continue;
        }
        if (!this.overrun) problem(`lane ${this.id}: completion for unknown/duplicate wr_id ${id}`);
        continue;
      }
      if (status !== 0) {
        // After an injected overrun the QPs went to ERR: their WRs flush.
        if (!this.overrun) problem(`lane ${this.id}: ${rx.wcStatusName(status)} for wr ${id}`);
        this.outstanding.delete(id);
        continue;
      }
      check.left--;
      if (check.left === 0) {
        this.outstanding.delete(id);
        check.done();
        this.free.push(check.slot);
        this.completed++;
        this.credit.complete();
      }
    }
    this.pump();
  }

  pump() {
    if (this.closed || this.overrun) return;
    try {
      while (this.free.length > 0 && this.credit.tryWaitForCompletion()) this.postOne();
    } catch (err) {
      problem(`lane ${this.id}: post failed ${err.code} ${err.message}`);
    }
  }

  postOne() {
    const id = this.nextId++ & 0x3fffffff;
    const slot = this.free.pop();
    const size = 1 + rand(rand(2) ? 256 : 4096);
    const off = slot * 4096;
    const fill = 1 + rand(250);
    const kind = rand(3);
    if (kind === 0) {
      // SEND a -> b: two completions (send on A, recv on B).
      this.src.buffer.fill(fill, off, off + size);
      this.outstanding.set(id, {
        slot,
        left: 2,
        done: () => {
          counters.sends++;
          counters.bytes += size;
          if (this.dst.buffer[off] !== fill || this.dst.buffer[off + size - 1] !== fill) problem(`lane ${this.id}: SEND bytes wrong`);
        },
      });
      this.b.postRecv({ wrId: id, sg: { mr: this.dst, offset: off, length: size } });
      this.a.postSend({ wrId: id, sg: { mr: this.src, offset: off, length: size } });
    } else if (kind === 1) {
      // RDMA_WRITE(_WITH_IMM) a -> b.dst.
      this.src.buffer.fill(fill, off, off + size);
      const imm = rand(2) === 1;
      this.outstanding.set(id, {
        slot,
        left: imm ? 2 : 1,
        done: () => {
          counters.writes++;
          counters.bytes += size;
          if (this.dst.buffer[off] !== fill || this.dst.buffer[off + size - 1] !== fill) problem(`lane ${this.id}: WRITE bytes wrong`);
        },
      });
      if (imm) this.b.postRecv({ wrId: id, sg: { mr: this.dst, offset: 0, length: 0 } });
      this.a.postSend({
        wrId: id,
        opcode: imm ? 'RDMA_WRITE_WITH_IMM' : 'RDMA_WRITE',
        imm: imm ? id : undefined,
        sg: { mr: this.src, offset: off, length: size },
        remote: { addr: this.dst.remoteAddr(off), rkey: this.dst.rkey },
      });
    } else {
      // RDMA_READ b.src -> a.dst region (a reads from src through b's key: same PD).
      this.src.buffer.fill(fill, off, off + size);
      this.outstanding.set(id, {
        slot,
        left: 1,
        done: () => {
          counters.reads++;
          counters.bytes += size;
          if (this.dst.buffer[off] !== fill || this.dst.buffer[off + size - 1] !== fill) problem(`lane ${this.id}: READ bytes wrong`);
        },
      });
      this.a.postSend({
        wrId: id,
        opcode: 'RDMA_READ',
        sg: { mr: this.dst, offset: off, length: size },
        remote: { addr: this.src.remoteAddr(off), rkey: this.src.rkey },
      });
    }
  }

  /** Injected trouble that must not disturb the traffic. */
  fault() {
    if (this.closed || this.overrun) return;
    counters.faults++;
    const f = this.ctx.faults;
    switch (rand(5)) {
      case 0:
        f.errorCompletion(this.cqB, { wrId: 0x40000000 + rand(1000), status: rx.WC_STATUS_NAMES[1 + rand(22)], opcode: 'RECV', qpNum: this.b.qpNum });
        break;
      case 1:
        for (let i = 0; i < 50; i++) f.emptyEvent(rand(2) ? this.cqA : this.cqB);
        break;
      case 2:
        f.spuriousWakeup(this.channel);
        break;
      case 3:
        f.duplicateEvents(rand(2) === 0);
        break;
      default:
        f.completionBeforeArm(this.cqA, { wrId: 0x40000000 + rand(1000), status: 'SUCCESS', opcode: 'SEND', qpNum: this.a.qpNum });
    }
  }

  /** The outstanding WRs have nowhere to go once the lane is broken; close it. */
  close() {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.subs) s.unsubscribe();
    try {
      this.ctx.close();
    } catch (err) {
      // ctx.close() acks what the library read before destroying (a bug once:
      // EBUSY after the explicit pipeline errored). Refusing is a failure;
      // ack by hand and close again so the soak goes on and reports it.
      problem(`lane ${this.id}: ctx.close() threw ${err.code} ${err.message}`);
      for (const cq of [this.cqA, this.cqB]) if (!cq.closed && cq.unacked > 0) cq.ack(cq.unacked);
      this.ctx.close();
    }
  }

  /** A lane that checks nothing is outstanding for long (a lost completion). */
  stale(now) {
    if (this.overrun || this.closed) return false;
    if (this.outstanding.size === 0) {
      this.lastProgress = now;
      return false;
    }
    if (this.progressMark !== this.completed) {
      this.progressMark = this.completed;
      this.lastProgress = now;
    }
    return now - (this.lastProgress ?? now) > 5000;
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : 0;
}

(async () => {
  const start = Date.now();
  const end = start + SECONDS * 1000;
  const lanes = Array.from({ length: PAIRS }, (_, i) => new Lane(i));
  let laneSeq = PAIRS;
  for (const l of lanes) l.pump();
  const samples = [];
  const workers = new Set();
  let second = 0;
  const header = ['t(s)', 'rss MB', 'heap MB', 'fds', 'handles', 'live', 'sends', 'writes', 'reads', 'errWC', 'overruns', 'ctxCyc', 'workers'];
  console.log(header.map((h) => h.padStart(8)).join(' '));

  const sample = () => {
    const m = process.memoryUsage();
    const row = {
      t: Math.round((Date.now() - start) / 1000),
      rss: m.rss / 1048576,
      heap: m.heapUsed / 1048576,
      fds: fds(),
      handles: process._getActiveHandles().length,
      live: binding().liveObjects(),
    };
    samples.push(row);
    console.log(
      [row.t, row.rss.toFixed(1), row.heap.toFixed(1), row.fds, row.handles, row.live, counters.sends, counters.writes, counters.reads, counters.errorWcs, counters.overruns, counters.ctxCycles, counters.workers]
        .map((v) => String(v).padStart(8))
        .join(' '),
    );
  };

  const chaos = setInterval(() => {
    const now = Date.now();
    for (const l of lanes) if (rand(3) === 0) l.fault();
    // Occasionally: an overrun on one lane; its sources error and it is replaced.
    if (rand(40) === 0) {
      const k = rand(lanes.length);
      const l = lanes[k];
      // Its in-flight WRs now fail (RETRY_EXC_ERR, WR_FLUSH_ERR): expected.
      if (!l.overrun && !l.closed) l.injectOverrun();
    }
    for (let k = 0; k < lanes.length; k++) {
      const l = lanes[k];
      if (l.broken) {
        l.close();
        lanes[k] = new Lane(laneSeq++);
        lanes[k].pump();
        counters.recreated++;
      } else if (l.overrunUnreported(now)) {
        problem(`lane ${l.id}: overrun injected ${OVERRUN_REPORT_MS / 1000} s ago and not reported (CQ_ERR ${l.overrun.cqErr}, source error ${l.overrun.sourceError})`);
      } else if (l.stale(now)) {
        problem(`lane ${l.id}: ${l.outstanding.size} WR(s) outstanding with no progress for 5 s (lost completions?)`);
      }
    }
    // Open/close cycles of whole contexts with objects and a subscription.
    if (rand(4) === 0) {
      const ctx = rx.openDevice('soft0');
      const ch = ctx.createCompChannel();
      const cq = ctx.createCq({ cqe: 8, channel: ch });
      const sub = cq.completions$.subscribe();
      ctx.allocPd().registerMemory(Buffer.alloc(64));
      sub.unsubscribe();
      ctx.close();
      counters.ctxCycles++;
    }
  }, 20);

  const workerLoop = setInterval(() => {
    if (workers.size >= 2) return;
    const w = new Worker(WORKER, { workerData: { id: 1 + rand(250), messages: 500, forever: true } });
    workers.add(w);
    counters.workers++;
    w.on('error', (err) => problem(`worker error ${err.message}`));
    w.once('message', () => {
      setTimeout(() => {
        w.terminate().finally(() => workers.delete(w));
      }, 50 + rand(300));
    });
  }, 400);

  while (Date.now() < end) {
    await sleep(1000 - ((Date.now() - start) % 1000));
    sample();
    second++;
  }
  clearInterval(chaos);
  clearInterval(workerLoop);
  await Promise.all([...workers].map((w) => w.terminate()));
  // Let in-flight work settle, then close everything. An overrun injected in
  // the last moments must still be reported first.
  const settleEnd = Date.now() + OVERRUN_REPORT_MS;
  while (lanes.some((l) => l.overrun && !l.broken) && Date.now() < settleEnd) await sleep(10);
  for (const l of lanes) if (l.overrun && !l.broken) problem(`lane ${l.id}: overrun injected at the end and never reported`);
  await sleep(200);
  for (const l of lanes) l.close();
  for (let i = 0; i < 5; i++) {
    if (global.gc) global.gc();
    await sleep(50);
  }
  sample();
  const final = samples[samples.length - 1];

  // Growth checks after the warm-up.
  const steady = samples.slice(0, -1).filter((s) => s.t > WARMUP);
  const verdicts = [];
  if (steady.length >= 4) {
    const q = Math.max(1, Math.floor(steady.length / 4));
    const first = steady.slice(0, q);
    const last = steady.slice(-q);
    const rssGrowth = median(last.map((s) => s.rss)) - median(first.map((s) => s.rss));
    const heapGrowth = median(last.map((s) => s.heap)) - median(first.map((s) => s.heap));
    const fdBase = Math.min(...first.map((s) => s.fds));
    verdicts.push([`RSS growth (median of last vs first quarter after warm-up)`, `${rssGrowth.toFixed(1)} MB`, `<= ${RSS_MB} MB`, rssGrowth <= RSS_MB]);
    verdicts.push([`heap growth (same)`, `${heapGrowth.toFixed(1)} MB`, `<= ${HEAP_MB} MB`, heapGrowth <= HEAP_MB]);
    verdicts.push([`fds at the end vs after warm-up`, `${final.fds} vs ${fdBase}`, `<= +${FD_SLACK}`, final.fds <= fdBase + FD_SLACK]);
  } else {
    verdicts.push(['run long enough to judge growth', `${steady.length} samples after warm-up`, '>= 4', false]);
  }
  verdicts.push([`live native objects once all closed`, String(final.live), '0', final.live === 0]);
  const totalWork = counters.sends + counters.writes + counters.reads;
  verdicts.push(['operations completed and checked', String(totalWork), '> 0', totalWork > 0]);
  verdicts.push(['injected overruns reported (CQ_ERR on the CQ overrun, and its source errored)', `${counters.overrunsReported} of ${counters.overruns}`, 'all', counters.overrunsReported === counters.overruns]);
  verdicts.push(['data / lost-completion / unexpected error problems', String(failures.length), '0', failures.length === 0]);
  console.log('\nsoak summary:', JSON.stringify({ seconds: SECONDS, warmup: WARMUP, pairs: PAIRS, ...counters }));
  for (const [what, got, bound, ok] of verdicts) console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}: ${got} (bound ${bound})`);
  for (const f of failures) console.log(`FAIL ${f}`);
  const ok = verdicts.every((v) => v[3]);
  console.log(ok ? 'soak: PASS' : 'soak: FAIL');
  process.exit(ok ? 0 : 1);
})().catch((err) => {
  console.error('soak: harness failed', err);
  process.exit(2);
});
