'use strict';
/**
 * Marble-testing a pipeline with rx-verbs/testing: no hardware, no addon.
 *
 *   npx jest examples/05-marble-test
 */
const { TestScheduler } = require('rxjs/testing');
const { virtualCq, expectArms, expectAcks, wrIdsOf } = require('rx-verbs/testing');
const { messageSizes } = require('./my-pipeline');

const RECV = 128;

describe('messageSizes', () => {
  let scheduler;
  beforeEach(() => {
    scheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('emits receive sizes per wakeup, arms before every drain and acks in batches', () => {
    let cq;
    scheduler.run((helpers) => {
      cq = virtualCq(helpers, {
        completions: '-a---b--(cd)---',
        values: {
          a: { opcode: RECV, byteLen: 10 },
          b: { opcode: 0 }, // a send completion: not a message
          c: { opcode: RECV, byteLen: 20 },
          d: { opcode: RECV, byteLen: 30 },
        },
      });
      cq.requestNotify();
      helpers.expectObservable(messageSizes(cq.channel, () => {}), '^-------------!').toBe('-x------y------', {
        x: [10],
        y: [20, 30],
      });
      expectArms(helpers, cq, 'aa---a--(aa)---');
      expectAcks(helpers, cq, '--------4-----');
    });
    cq.assertInvariants();
  });

  it('sends failed completions to the error sink and keeps going', () => {
    const failed = [];
    scheduler.run((helpers) => {
      const cq = virtualCq(helpers, {
        completions: '-a--b--c-',
        values: { a: { opcode: RECV, byteLen: 1 }, b: { opcode: RECV, status: 5, wrId: 42 }, c: { opcode: RECV, byteLen: 3 } },
      });
      cq.requestNotify();
      helpers.expectObservable(messageSizes(cq.channel, (b) => failed.push(...wrIdsOf(b)))).toBe('-x-----y-', { x: [1], y: [3] });
    });
    expect(failed).toEqual([42]);
  });
});
