// The installed package's smoke suite, run by test.js with each Node binary
// from the app folder it installed rx-verbs into: the CommonJS entry points,
// the addon's origin, a short soft0 pipeline, and a worker thread that does
// the same. Prints one line per check; exits non-zero on the first failure.
'use strict';
const assert = require('assert');
const path = require('path');
const { Worker, isMainThread, parentPort } = require('worker_threads');

/** Sends `n` messages alice -> bob on soft0 and checks each through completions$. */
async function pipeline(rx, n) {
  const { firstValueFrom } = require('rxjs');
  const { filter, take, toArray, mergeMap } = require('rxjs/operators');
  const ctx = rx.openDevice('soft0');
  try {
    const channel = ctx.createCompChannel();
    const cq = ctx.createCq({ cqe: 2 * n + 8, channel });
    const pd = ctx.allocPd();
    const alice = pd.createQp({ sendCq: cq, recvCq: cq });
    const bob = pd.createQp({ sendCq: cq, recvCq: cq });
    alice.connect(bob.endpoint());
    bob.connect(alice.endpoint());
    const inbox = pd.registerMemory(Buffer.alloc(64 * n), { access: ['LOCAL_WRITE'] });
    const outbox = pd.registerMemory(Buffer.alloc(64 * n));
    for (let i = 0; i < n; i++) {
      outbox.buffer.write(`message ${i}`, 64 * i);
      bob.postRecv({ wrId: BigInt(i), sg: { mr: inbox, offset: 64 * i, length: 64 } });
    }
    const received = firstValueFrom(
      cq.completions$.pipe(
        mergeMap((batch) => [...batch]),
        filter((wc) => wc.opcode === 'RECV'),
        take(n),
        toArray(),
      ),
    );
    for (let i = 0; i < n; i++) alice.postSend({ wrId: BigInt(i), sg: { mr: outbox, offset: 64 * i, length: 64 } });
    const wcs = await received;
    for (const wc of wcs) {
      assert.strictEqual(wc.status, 'SUCCESS');
      const i = Number(wc.wrId);
      assert.strictEqual(inbox.buffer.toString('utf8', 64 * i, 64 * i + `message ${i}`.length), `message ${i}`);
    }
    return wcs.length;
  } finally {
    ctx.close();
  }
}

async function main() {
  const rx = require('rx-verbs');
  const testing = require('rx-verbs/testing');
  assert.strictEqual(typeof rx.openDevice, 'function');
  assert.strictEqual(typeof testing.virtualCq, 'function');
  const addon = require('node-gyp-build').resolve(path.dirname(require.resolve('rx-verbs/package.json')));
  const expected = process.env.RX_VERBS_SMOKE_ADDON;
  if (expected) assert.ok(addon.endsWith(expected), `addon loaded from ${addon}, expected ${expected}`);
  console.log(`require: ok (node ${process.version} ${process.arch}; addon ${path.basename(path.dirname(addon))}/${path.basename(addon)})`);
  // The prebuilt binaries always carry the real providers: a user who
  // installs rdma-core later gets its devices without rebuilding.
  assert.strictEqual(rx.hasIbverbs(), true, 'the addon was built without the ibverbs provider');
  const cm = rx.rdmacmStatus();
  assert.ok(cm.available || !/built without/.test(cm.reason), `rdma_cm provider missing: ${cm.reason}`);
  console.log(`providers: ibverbs compiled in; rdma_cm ${cm.available ? 'available' : `compiled in (${cm.reason})`}`);
  const names = rx.listDevices().map((d) => d.name);
  assert.ok(names.includes('soft0'), `devices: ${names}`);
  console.log(`devices: ${names.join(', ')}`);
  console.log(`pipeline: ${await pipeline(rx, 64)} messages verified on soft0`);
  const fromWorker = await new Promise((resolve, reject) => {
    const w = new Worker(__filename, { env: process.env });
    w.once('message', resolve);
    w.once('error', reject);
    w.once('exit', (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)));
  });
  assert.strictEqual(fromWorker, 32);
  console.log(`worker thread: ${fromWorker} messages verified on soft0`);
}

if (isMainThread) {
  main().then(
    () => console.log('smoke (CommonJS): passed'),
    (err) => {
      console.error(`smoke (CommonJS) failed: ${err.stack || err}`);
      process.exit(1);
    },
  );
} else {
  pipeline(require('rx-verbs'), 32).then((n) => parentPort.postMessage(n));
}
