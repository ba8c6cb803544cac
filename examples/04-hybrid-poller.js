// @ts-check
'use strict';
/**
 * A hybrid poller: spin with tryTake() for a bounded time, then arm and park.
 *
 * Busy polling gives the lowest latency and burns a core; sleeping on the
 * completion channel costs a wakeup per event. `take({ spinUs })` does both:
 * it polls with tryTake() (the non-blocking try_wait_for_completion()) for up
 * to spinUs microseconds, and only then arms the CQ and waits for its event.
 * This ping-pong measures the round trip both ways.
 *
 *   node examples/04-hybrid-poller.js [iterations]
 */
const { openDevice } = require('rx-verbs');

const ITERS = Number(process.argv[2] ?? 2000);
const ctx = openDevice();
const channel = ctx.createCompChannel();
const cqA = ctx.createCq({ cqe: 16, channel });
const cqB = ctx.createCq({ cqe: 16, channel });
const pd = ctx.allocPd();
const a = pd.createQp({ sendCq: cqA, recvCq: cqA });
const b = pd.createQp({ sendCq: cqB, recvCq: cqB });
a.connect(b.endpoint());
b.connect(a.endpoint());
const bufA = pd.registerMemory(Buffer.alloc(64), { access: ['LOCAL_WRITE'] });
const bufB = pd.registerMemory(Buffer.alloc(64), { access: ['LOCAL_WRITE'] });

/**
 * Waits for the next receive completion on `cq` (sends are unsignaled).
 * @param {import('rx-verbs').Cq} cq
 * @param {number} spinUs
 */
async function nextRecv(cq, spinUs) {
  for (;;) {
    const batch = await cq.completions$.take({ spinUs });
    if (!batch) throw new Error('source completed');
    for (let i = 0; i < batch.length; i++) if (batch.opcode[i] === 128) return;
  }
}

/**
 * The median round trip in microseconds, parked on the channel (spinUs 0) or spinning first.
 * @param {number} spinUs
 */
async function pingPong(spinUs) {
  const times = [];
  for (let i = 0; i < ITERS; i++) {
    const t0 = process.hrtime.bigint();
    b.postRecv({ wrId: i, sg: { mr: bufB } });
    a.postRecv({ wrId: i, sg: { mr: bufA } });
    a.postSend({ wrId: i, sg: { mr: bufA, length: 8 }, signaled: false });
    await nextRecv(cqB, spinUs);
    b.postSend({ wrId: i, sg: { mr: bufB, length: 8 }, signaled: false });
    await nextRecv(cqA, spinUs);
    times.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  times.sort((x, y) => x - y);
  return times[Math.floor(times.length / 2)];
}

(async () => {
  const parked = await pingPong(0);
  const spun = await pingPong(50);
  console.log(`round trip p50: event mode ${parked.toFixed(1)} us, spin 50 us then park ${spun.toFixed(1)} us`);
  ctx.close();
})();
