// @ts-check
'use strict';
/**
 * A distributed counter and a lock, with RDMA atomics.
 *
 * A "server" exposes three 64-bit words in one region registered with
 * REMOTE_ATOMIC. Each worker has its own RC queue pair to the server and,
 * every round:
 *   - bumps the counter with one fetch-and-add (no lock needed);
 *   - takes the lock with compare-and-swap (0 -> its id; it holds the lock
 *     when the value it got back is 0), then reads the plain `total` word
 *     with RDMA READ, writes total + 1 back with RDMA WRITE, and releases
 *     the lock with compare-and-swap (its id -> 0).
 * Both words end at workers x rounds: no increment is lost.
 *
 *   node examples/08-atomic-counter.js [workers] [rounds]
 */
const { openDevice } = require('rx-verbs');

const WORKERS = Number(process.argv[2] ?? 4);
const ROUNDS = Number(process.argv[3] ?? 50);
const ATOMIC_QP = /** @type {const} */ (['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ', 'REMOTE_ATOMIC']);
const COUNTER = 0;
const LOCK = 8;
const TOTAL = 16;

const ctx = openDevice();
const cq = ctx.createCq({ cqe: 2 * WORKERS + 8, channel: ctx.createCompChannel() });
const pd = ctx.allocPd();

// The server's words. A BigUint64Array views them in host order, which is
// the order the device's atomics use.
const shared = new BigUint64Array(3);
const sharedMr = pd.registerMemory(shared, { access: ['LOCAL_WRITE', 'REMOTE_READ', 'REMOTE_WRITE', 'REMOTE_ATOMIC'] });
const remote = (offset) => ({ addr: sharedMr.remoteAddr(offset), rkey: sharedMr.rkey });

// Every WR gets its own wr_id; its completion settles its promise.
/** @type {Map<bigint, { resolve: () => void, reject: (e: Error) => void }>} */
const waiting = new Map();
let nextWrId = 1n;
const subscription = cq.completions$.subscribe((batch) => {
  for (const wc of batch) {
    const w = waiting.get(wc.wrId);
    waiting.delete(wc.wrId);
    if (wc.status === 'SUCCESS') w?.resolve();
    else w?.reject(new Error(`${wc.opcode} failed: ${wc.status}`));
  }
});

class Worker {
  /** @param {number} id */
  constructor(id) {
    this.id = BigInt(id);
    this.qp = pd.createQp({ sendCq: cq, recvCq: cq, cap: { maxSendWr: 2, maxRecvWr: 1 } });
    const server = pd.createQp({ sendCq: cq, recvCq: cq, cap: { maxSendWr: 1, maxRecvWr: 1 } });
    this.qp.connect(server.endpoint(), { access: ATOMIC_QP });
    server.connect(this.qp.endpoint(), { access: ATOMIC_QP });
    // The worker's own 8 bytes: an atomic's original value, or a READ/WRITE's word.
    this.word = new BigUint64Array(1);
    this.mr = pd.registerMemory(this.word, { access: ['LOCAL_WRITE'] });
  }

  /** @param {Omit<import('rx-verbs').SendWr, 'wrId' | 'sg'>} wr */
  run(wr) {
    const wrId = nextWrId++;
    return new Promise((resolve, reject) => {
      waiting.set(wrId, { resolve, reject });
      this.qp.postSend({ ...wr, wrId, sg: { mr: this.mr } });
    });
  }

  /** Adds `n` to the word at `offset`; resolves to the value before. */
  async fetchAdd(offset, n) {
    await this.run({ opcode: 'ATOMIC_FETCH_AND_ADD', remote: remote(offset), compareAdd: n });
    return this.word[0];
  }

  /** Stores `swap` at `offset` if it holds `expected`; resolves to the value it held. */
  async compareSwap(offset, expected, swap) {
    await this.run({ opcode: 'ATOMIC_CMP_AND_SWP', remote: remote(offset), compareAdd: expected, swap });
    return this.word[0];
  }

  async lock() {
    while ((await this.compareSwap(LOCK, 0n, this.id)) !== 0n) {
      // Held by someone else: try again (each try is one round trip).
    }
  }

  async unlock() {
    const held = await this.compareSwap(LOCK, this.id, 0n);
    if (held !== this.id) throw new Error(`worker ${this.id} released a lock held by ${held}`);
  }

  async read(offset) {
    await this.run({ opcode: 'RDMA_READ', remote: remote(offset) });
    return this.word[0];
  }

  async write(offset, value) {
    this.word[0] = value;
    await this.run({ opcode: 'RDMA_WRITE', remote: remote(offset) });
  }
}

async function main() {
  const workers = Array.from({ length: WORKERS }, (_, i) => new Worker(i + 1));
  await Promise.all(
    workers.map(async (w) => {
      for (let r = 0; r < ROUNDS; r++) {
        await w.fetchAdd(COUNTER, 1n);
        await w.lock();
        await w.write(TOTAL, (await w.read(TOTAL)) + 1n);
        await w.unlock();
      }
    }),
  );
  const expected = BigInt(WORKERS * ROUNDS);
  console.log(`${WORKERS} workers x ${ROUNDS} rounds: counter ${shared[0]}, total under the lock ${shared[2]}, lock ${shared[1] === 0n ? 'free' : 'held'}`);
  console.log(shared[0] === expected && shared[2] === expected && shared[1] === 0n ? 'no increment lost' : 'INCREMENTS LOST');
  return shared[0] === expected && shared[2] === expected;
}

main()
  .then((ok) => {
    process.exitCode = ok ? 0 : 1;
  })
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    subscription.unsubscribe();
    ctx.close();
  });
