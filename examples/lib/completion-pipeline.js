// @ts-check
'use strict';
/**
 * A reusable completion pipeline: the correct event loop (re-arm, ack in
 * batches, drain until empty) followed by natural batching. It only needs
 * something with an `events$` of CQ events, so the same module runs on a
 * native channel and on rx-verbs/testing's virtual one (see its tests).
 */
const { ackEvents, rearm, drainCq, batchCompletions } = require('rx-verbs');

/**
 * @param {{ events$: import('rxjs').Observable<import('rx-verbs').CqEvent> }} channel
 * @param {{ ackEvery?: number, pollMax?: number, maxBatch?: number, scheduler?: import('rxjs').SchedulerLike }} [options]
 * @returns {import('rxjs').Observable<import('rx-verbs').WcBatch>}
 */
function completionPipeline(channel, options = {}) {
  return channel.events$.pipe(
    ackEvents({ every: options.ackEvery ?? 16 }),
    rearm(),
    drainCq({ max: options.pollMax ?? 256 }),
    batchCompletions({ maxSize: options.maxBatch, scheduler: options.scheduler }),
  );
}

module.exports = { completionPipeline };
