// @ts-check
'use strict';
/**
 * A user's own pipeline: completions of one CQ, failed ones split off to an
 * error log, successful receives turned into message lengths. Written
 * against the CqLike interface, so it runs on a native CQ and on the testing
 * kit's virtual one alike.
 */
const { map, filter } = require('rxjs');
const { ackEvents, rearm, drainCq, batchCompletions, splitErrors } = require('rx-verbs');

/**
 * @param {{ events$: import('rxjs').Observable<import('rx-verbs').CqEvent> }} channel
 * @param {(failed: import('rx-verbs').WcBatch) => void} onErrors
 */
function messageSizes(channel, onErrors) {
  return channel.events$.pipe(
    ackEvents({ every: 4 }),
    rearm(),
    drainCq(),
    batchCompletions(),
    splitErrors(onErrors),
    map((batch) => Array.from(batch.byteLen.filter((_, i) => batch.opcode[i] === 128))),
    filter((sizes) => sizes.length > 0),
  );
}

module.exports = { messageSizes };
