// @ts-check
'use strict';
/**
 * Bulk RDMA WRITE with natural batching, steered to different schedulers.
 *
 * Two streams share one completion channel: a bulk stream of large RDMA
 * WRITEs and a small "control" stream of SENDs. Completions are drained with
 * the operators, steered by CQ — control on asapScheduler (microtask,
 * soonest), bulk on asyncScheduler (macrotask) — then batched naturally:
 * each emission holds what accumulated by the end of the wakeup.
 *
 *   node examples/03-bulk-write.js [megabytes]
 */
const { asapScheduler, asyncScheduler } = require('rxjs');
const { openDevice, ackEvents, rearm, drainCq, steer, batchCompletions, credits } = require('rx-verbs');

const MB = Number(process.argv[2] ?? 64);
const CHUNK = 256 * 1024;
const TOTAL = (MB * 1024 * 1024) / CHUNK;
const DEPTH = 16;

const ctx = openDevice();
const channel = ctx.createCompChannel();
const bulkCq = ctx.createCq({ cqe: DEPTH * 2, channel, context: 'bulk' });
const ctlCq = ctx.createCq({ cqe: DEPTH * 2, channel, context: 'control' });
const pd = ctx.allocPd();
const writer = pd.createQp({ sendCq: bulkCq, recvCq: bulkCq, cap: { maxSendWr: DEPTH } });
const target = pd.createQp({ sendCq: ctlCq, recvCq: ctlCq, cap: { maxRecvWr: DEPTH } });
writer.connect(target.endpoint());
target.connect(writer.endpoint());

const src = pd.registerMemory(Buffer.alloc(CHUNK * DEPTH, 0xab));
const dst = pd.registerMemory(Buffer.alloc(CHUNK * DEPTH), { access: ['LOCAL_WRITE', 'REMOTE_WRITE'] });
const ctl = pd.registerMemory(Buffer.alloc(64), { access: ['LOCAL_WRITE'] });

const credit = credits({ capacity: DEPTH });
const seen = { bulk: 0, control: 0, batches: 0 };
let posted = 0;
const t0 = process.hrtime.bigint();

function pump() {
  while (posted < TOTAL && credit.tryWaitForCompletion()) {
    const slot = posted % DEPTH;
    const last = posted === TOTAL - 1;
    writer.postSend({
      wrId: posted,
      // The last chunk carries immediate data: it tells the target "done".
      opcode: last ? 'RDMA_WRITE_WITH_IMM' : 'RDMA_WRITE',
      imm: last ? 0xd0e : undefined,
      sg: { mr: src, offset: slot * CHUNK, length: CHUNK },
      remote: { addr: dst.remoteAddr(slot * CHUNK), rkey: dst.rkey },
    });
    posted++;
  }
}

const sub = channel.events$
  .pipe(
    ackEvents({ every: 8 }),
    rearm(),
    drainCq(),
    steer({ by: (b) => b.qpNum[0], to: (qpn) => (qpn === target.qpNum ? asapScheduler : asyncScheduler) }),
    batchCompletions({ maxSize: 64 }),
  )
  .subscribe((batch) => {
    seen.batches++;
    for (let i = 0; i < batch.length; i++) {
      if (batch.status[i] !== 0) throw new Error(`write failed: ${batch.at(i)?.status}`);
      if (batch.qpNum[i] === target.qpNum) {
        seen.control++;
      } else {
        seen.bulk++;
        credit.complete();
      }
    }
    if (seen.bulk === TOTAL && seen.control === 1) {
      const s = Number(process.hrtime.bigint() - t0) / 1e9;
      console.log(`${MB} MiB in ${TOTAL} writes: ${(MB / s).toFixed(0)} MiB/s, ${seen.batches} batches`);
      console.log(`target notified by immediate data: ${seen.control === 1}`);
      sub.unsubscribe();
      ctx.close();
      return;
    }
    pump();
  });

bulkCq.requestNotify();
ctlCq.requestNotify();
target.postRecv({ wrId: 'done'.length, sg: { mr: ctl } });
pump();
