// @ts-check
'use strict';
/**
 * First steps: a completion channel as an Observable.
 *
 * Opens soft0 (or RX_VERBS_DEVICE), connects two RC queue pairs, and watches
 * the channel's events$: each CQ event is re-armed, acked and drained with
 * the operators, and the work completions are printed.
 *
 *   node examples/01-first-steps.js
 */
const { openDevice, ackEvents, rearm, drainCq } = require('rx-verbs');

const ctx = openDevice();
const channel = ctx.createCompChannel();
const cq = ctx.createCq({ cqe: 64, channel, context: 'my-cq' });
const pd = ctx.allocPd();
const alice = pd.createQp({ sendCq: cq, recvCq: cq });
const bob = pd.createQp({ sendCq: cq, recvCq: cq });
alice.connect(bob.endpoint());
bob.connect(alice.endpoint());
console.log(`device ${ctx.deviceName}: QP ${alice.qpNum} <-> QP ${bob.qpNum} (${alice.state})`);

const message = pd.registerMemory(Buffer.from('hello from alice'));
const inbox = pd.registerMemory(Buffer.alloc(64), { access: ['LOCAL_WRITE'] });

let completions = 0;
const subscription = channel.events$
  .pipe(
    ackEvents({ every: 1 }), // every event read must be acked
    rearm(), // arm again before draining: nothing slips between poll and arm
    drainCq(),
  )
  .subscribe((batch) => {
    for (const wc of batch) {
      completions++;
      console.log(`completion: ${wc.opcode} ${wc.status} wr_id=${wc.wrId} bytes=${wc.byteLen}`);
      if (wc.opcode === 'RECV') console.log(`bob got: "${inbox.buffer.toString('utf8', 0, wc.byteLen)}"`);
    }
    if (completions === 2) {
      // The send's and the receive's completions are in: stop watching
      // (ackEvents flushes its acks on unsubscribe), then close everything.
      subscription.unsubscribe();
      console.log(`done: CQ stats ${JSON.stringify(cq.stats)}`);
      ctx.close();
    }
  });

cq.requestNotify(); // the first arm
bob.postRecv({ wrId: 1n, sg: { mr: inbox } });
alice.postSend({ wrId: 2n, sg: { mr: message } });
