// @ts-check
'use strict';
/**
 * A distributed counter and a lock, with RDMA atomics, shared by worker
 * threads.
 *
 * The main thread is the "server": it exposes three 64-bit words in one
 * region registered with REMOTE_ATOMIC, and gives each worker thread a
 * queue pair of its own. Each worker (a `worker_threads` Worker) opens the
 * device itself, as every thread must: verbs objects do not cross threads,
 * endpoints and remote keys (plain data) do. Every round, a worker:
 *   - bumps the counter with one fetch-and-add (no lock needed);
 *   - takes the lock with compare-and-swap (0 -> its id; it holds the lock
 *     when the value it got back is 0), then reads the plain `total` word
 *     with RDMA READ, writes total + 1 back with RDMA WRITE, and releases
 *     the lock with compare-and-swap (its id -> 0).
 * Both words end at workers x rounds: no increment is lost, though the
 * threads run at the same time.
 *
 *   node examples/08-atomic-counter.js [workers] [rounds]
 */
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const { openDevice } = require('rx-verbs');

const ATOMIC_QP = /** @type {const} */ (['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ', 'REMOTE_ATOMIC']);
const COUNTER = 0;
const LOCK = 8;
const TOTAL = 16;

/**
 * What the main thread tells a worker: its id and rounds, the server QP's
 * endpoint and where the words are.
 * @typedef {{ id: number, rounds: number, server: import('rx-verbs').Endpoint, words: { addr: bigint, rkey: number } }} Job
 */

/**
 * What a worker tells the main thread: its endpoint, to connect the server QP to.
 * @typedef {{ endpoint: import('rx-verbs').Endpoint }} Report
 */

/** The server, in the main thread: the words, one QP per worker, and the workers. */
async function server() {
  const workers = Number(process.argv[2] ?? 4);
  const rounds = Number(process.argv[3] ?? 50);
  const ctx = openDevice();
  try {
    const pd = ctx.allocPd();
    // A responder completes nothing: the CQ is there because a QP needs one.
    const cq = ctx.createCq({ cqe: 2 * workers });
    // A BigUint64Array views the words in host order, the order the device's atomics use.
    const shared = new BigUint64Array(3);
    const sharedMr = pd.registerMemory(shared, { access: ['LOCAL_WRITE', 'REMOTE_READ', 'REMOTE_WRITE', 'REMOTE_ATOMIC'] });
    const words = { addr: sharedMr.remoteAddr(0), rkey: sharedMr.rkey };

    const threads = Array.from({ length: workers }, (_, i) => {
      const qp = pd.createQp({ sendCq: cq, recvCq: cq, cap: { maxSendWr: 1, maxRecvWr: 1 } });
      /** @type {Job} */
      const job = { id: i + 1, rounds, server: qp.endpoint(), words };
      const thread = new Worker(__filename, { workerData: job });
      const exited = new Promise((resolve, reject) => {
        thread.once('error', reject);
        thread.once('exit', (code) => (code === 0 ? resolve(undefined) : reject(new Error(`worker ${job.id} exited with ${code}`))));
      });
      // The worker's QP is connected to ours once it has told us its endpoint.
      const ready = new Promise((resolve) => {
        thread.once('message', (/** @type {Report} */ report) => {
          qp.connect(report.endpoint, { access: ATOMIC_QP });
          resolve(undefined);
        });
      });
      return { thread, ready, exited };
    });
    // Every QP pair is up before any worker starts: they all run at once.
    // A worker that fails before it is ready ends the wait with its error.
    await Promise.all(threads.map((t) => Promise.race([t.ready, t.exited])));
    for (const t of threads) t.thread.postMessage('go');
    await Promise.all(threads.map((t) => t.exited));

    const expected = BigInt(workers * rounds);
    console.log(`${workers} worker threads x ${rounds} rounds: counter ${shared[0]}, total under the lock ${shared[2]}, lock ${shared[1] === 0n ? 'free' : 'held'}`);
    console.log(shared[0] === expected && shared[2] === expected && shared[1] === 0n ? 'no increment lost' : 'INCREMENTS LOST');
    return shared[0] === expected && shared[2] === expected;
  } finally {
    ctx.close();
  }
}

/** A worker thread: its own device context, one QP to the server, `rounds` rounds. */
class Client {
  /** @param {Job} job */
  constructor(job) {
    this.id = BigInt(job.id);
    this.words = job.words;
    this.ctx = openDevice();
    const pd = this.ctx.allocPd();
    this.cq = this.ctx.createCq({ cqe: 4, channel: this.ctx.createCompChannel() });
    this.qp = pd.createQp({ sendCq: this.cq, recvCq: this.cq, cap: { maxSendWr: 2, maxRecvWr: 1 } });
    this.qp.connect(job.server, { access: ATOMIC_QP });
    // The worker's own 8 bytes: an atomic's original value, or a READ/WRITE's word.
    this.word = new BigUint64Array(1);
    this.mr = pd.registerMemory(this.word, { access: ['LOCAL_WRITE'] });
    /** @type {Map<bigint, { resolve: () => void, reject: (e: Error) => void }>} */
    this.waiting = new Map();
    this.nextWrId = 1n;
    // Every WR gets its own wr_id; its completion settles its promise.
    this.subscription = this.cq.completions$.subscribe((batch) => {
      for (const wc of batch) {
        const w = this.waiting.get(wc.wrId);
        this.waiting.delete(wc.wrId);
        if (wc.status === 'SUCCESS') w?.resolve();
        else w?.reject(new Error(`${wc.opcode} failed: ${wc.status}`));
      }
    });
  }

  /**
   * Posts `wr` on the worker's own word; resolves when it completes.
   * @param {Omit<import('rx-verbs').SendWr, 'wrId' | 'sg'>} wr
   * @returns {Promise<void>}
   */
  run(wr) {
    const wrId = this.nextWrId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(wrId, { resolve, reject });
      this.qp.postSend({ ...wr, wrId, sg: { mr: this.mr } });
    });
  }

  /**
   * Where the server's word at `offset` is, for this worker's WRs.
   * @param {number} offset
   */
  remote(offset) {
    return { addr: this.words.addr + BigInt(offset), rkey: this.words.rkey };
  }

  /**
   * Adds `n` to the word at `offset`; resolves to the value before.
   * @param {number} offset
   * @param {bigint} n
   */
  async fetchAdd(offset, n) {
    await this.run({ opcode: 'ATOMIC_FETCH_AND_ADD', remote: this.remote(offset), compareAdd: n });
    return this.word[0];
  }

  /**
   * Stores `swap` at `offset` if it holds `expected`; resolves to the value it held.
   * @param {number} offset
   * @param {bigint} expected
   * @param {bigint} swap
   */
  async compareSwap(offset, expected, swap) {
    await this.run({ opcode: 'ATOMIC_CMP_AND_SWP', remote: this.remote(offset), compareAdd: expected, swap });
    return this.word[0];
  }

  async lock() {
    while ((await this.compareSwap(LOCK, 0n, this.id)) !== 0n) {
      // Held by another thread: try again (each try is one round trip).
    }
  }

  async unlock() {
    const held = await this.compareSwap(LOCK, this.id, 0n);
    if (held !== this.id) throw new Error(`worker ${this.id} released a lock held by ${held}`);
  }

  /** @param {number} offset */
  async read(offset) {
    await this.run({ opcode: 'RDMA_READ', remote: this.remote(offset) });
    return this.word[0];
  }

  /**
   * @param {number} offset
   * @param {bigint} value
   */
  async write(offset, value) {
    this.word[0] = value;
    await this.run({ opcode: 'RDMA_WRITE', remote: this.remote(offset) });
  }

  close() {
    this.subscription.unsubscribe();
    this.ctx.close();
  }
}

/** @param {Job} job */
async function worker(job) {
  const port = /** @type {import('worker_threads').MessagePort} */ (parentPort);
  const client = new Client(job);
  try {
    const go = new Promise((resolve) => port.once('message', resolve));
    /** @type {Report} */
    const hello = { endpoint: client.qp.endpoint() };
    port.postMessage(hello);
    await go;
    for (let r = 0; r < job.rounds; r++) {
      await client.fetchAdd(COUNTER, 1n);
      await client.lock();
      await client.write(TOTAL, (await client.read(TOTAL)) + 1n);
      await client.unlock();
    }
  } finally {
    client.close();
  }
}

if (isMainThread) {
  server().then(
    (ok) => {
      process.exitCode = ok ? 0 : 1;
    },
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
} else {
  // A worker that throws ends with the error, which the main thread's 'error' handler reports.
  void worker(/** @type {Job} */ (workerData));
}
