/**
 * The addon (src/native/rules/) and the TS rule book (src/core/refusals.ts)
 * state the same refusals: same error class, message, code, errno and verb,
 * on the device under test and on the virtual CQ of the testing kit.
 */
import { refuseBusy, refuseBusyCq, refuseOverAck } from '../../src/core/refusals';
import { virtualCq } from '../../src/testing';
import type { Mr } from '../../src';
import { makePair, Pair, region, waitFor } from '../support/device';
import { caught } from '../support/verbs-checks';

/** Sends A -> B and reads B's completion event from the channel, leaving it unacked; returns B's receive region. */
async function readOneEventOnB(p: Pair): Promise<Mr> {
  const recv = region(p.pd, 8);
  p.b.postRecv({ wrId: 1, sg: { mr: recv } });
  p.cqB.requestNotify();
  p.a.postSend({ wrId: 2, sg: { mr: region(p.pd, 8) }, signaled: false });
  expect(await waitFor(() => p.channel.tryGetEvent() !== undefined)).toBe(true);
  return recv;
}

/** The parts of an error the rules fix. */
function shape(err: unknown): Record<string, unknown> {
  const e = err as Error & Record<string, unknown>;
  return { class: e?.constructor?.name, message: e?.message, code: e?.code, errno: e?.errno, syscall: e?.syscall };
}

describe('one rule book for the addon and TS', () => {
  it('refuses an over-ack the same way on the device, on the virtual CQ and in TS', () => {
    const p = makePair();
    try {
      const native = caught(() => p.cqA.ack(3));
      const cq = virtualCq(undefined);
      const virtual = caught(() => cq.ack(3));
      const ts = caught(() => refuseOverAck(3, 0));
      expect(native?.name).toBe('RangeError'); // another realm's RangeError: jest runs tests in a vm context
      expect(shape(native)).toEqual(shape(ts));
      expect(shape(virtual)).toEqual(shape(ts));
    } finally {
      p.close();
    }
  });

  it('refuses to destroy a CQ with unacked events the same way on the device and on the virtual CQ', async () => {
    const p = makePair();
    try {
      await readOneEventOnB(p);
      p.b.close();
      const native = caught(() => p.cqB.close());

      const cq = virtualCq(undefined);
      cq.channel.events$.subscribe();
      cq.requestNotify();
      cq.addCompletions({});
      const virtual = caught(() => cq.close());

      expect(native).toMatchObject({ code: 'EBUSY', syscall: 'ibv_destroy_cq' });
      expect(shape(native)).toEqual(shape(caught(() => refuseBusyCq(0, 1, 0))));
      expect(shape(virtual)).toEqual(shape(native));
      p.cqB.ack(1);
      cq.ack(1);
    } finally {
      p.close();
    }
  });

  it('refuses to destroy a CQ, PD, channel or context still in use with the TS rule book\'s messages', () => {
    const p = makePair(); // one channel, two CQs, one PD with two QPs
    try {
      region(p.pd, 8);
      expect(shape(caught(() => p.cqA.native.close()))).toEqual(shape(caught(() => refuseBusy('CQ', { QP: 1 }))));
      expect(shape(caught(() => p.pd.native.close()))).toEqual(shape(caught(() => refuseBusy('PD', { QP: 2, MR: 1 }))));
      expect(shape(caught(() => p.channel.native.close()))).toEqual(
        shape(caught(() => refuseBusy('completion channel', { CQ: 2 }))),
      );
      expect(shape(caught(() => p.ctx.native.close()))).toEqual(
        shape(caught(() => refuseBusy('context', { QP: 2, CQ: 2, MR: 1, PD: 1, 'completion channel': 1 }))),
      );
    } finally {
      p.close();
    }
  });

  it('closes a context with every kind of child in the safe order, leaving nothing to refuse', async () => {
    const p = makePair();
    const recv = await readOneEventOnB(p);
    expect(p.cqB.unacked).toBe(1); // settled (acked) by the teardown before the CQ goes
    p.ctx.close();
    for (const o of [p.a, p.b, p.cqA, p.cqB, recv, p.pd, p.channel, p.ctx]) expect(o.closed).toBe(true);
  });
});
