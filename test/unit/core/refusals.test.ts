import { refuseBusy, refuseBusyCq, refuseOverAck, TEARDOWN_ORDER } from '../../../src/core/refusals';

/** What `fn` threw (fails the test when it threw nothing). */
function thrown(fn: () => void): Error & { code?: string; errno?: number; syscall?: string } {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a refusal');
}

describe('the rule book (TS)', () => {
  it('lists the kinds in the safe teardown order: every kind before what it uses', () => {
    const before = (a: string, b: string) => TEARDOWN_ORDER.indexOf(a as never) < TEARDOWN_ORDER.indexOf(b as never);
    // A QP uses its PD and CQs, an MR its PD, a CQ its channel, all of them the context.
    for (const [child, parent] of [
      ['QP', 'PD'],
      ['QP', 'CQ'],
      ['MR', 'PD'],
      ['CQ', 'completion channel'],
      ['PD', 'context'],
      ['completion channel', 'context'],
    ]) {
      expect(before(child, parent)).toBe(true);
    }
  });

  it('refuses an over-ack with a RangeError, and allows acking exactly what is unacked', () => {
    expect(() => refuseOverAck(2, 2)).not.toThrow();
    expect(() => refuseOverAck(0, 0)).not.toThrow();
    const err = thrown(() => refuseOverAck(3, 1));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.message).toBe('cannot ack 3 events: only 1 were delivered and not yet acked');
  });

  it('refuses to destroy what is still used, with EBUSY from the destroy verb, listing the users in teardown order', () => {
    expect(() => refuseBusy('PD', {})).not.toThrow();
    expect(() => refuseBusy('PD', { QP: 0, MR: 0 })).not.toThrow();
    const pd = thrown(() => refuseBusy('PD', { MR: 1, QP: 2 }));
    expect(pd).toMatchObject({ code: 'EBUSY', errno: -16, syscall: 'ibv_dealloc_pd' });
    expect(pd.message).toBe(
      'ibv_dealloc_pd failed: EBUSY (Device or resource busy): 2 QP(s) and 1 MR(s) still use this PD: close them first',
    );
    const ctx = thrown(() => refuseBusy('context', { PD: 1, 'completion channel': 1, CQ: 3 }));
    expect(ctx).toMatchObject({ code: 'EBUSY', syscall: 'ibv_close_device' });
    expect(ctx.message).toMatch(/: 3 CQ\(s\), 1 PD\(s\) and 1 completion channel\(s\) still use this context: close them first$/);
  });

  it('refuses to destroy a CQ that QPs use, then one with unacked events, then one with unacked async events', () => {
    expect(() => refuseBusyCq(0, 0, 0)).not.toThrow();
    expect(thrown(() => refuseBusyCq(1, 1, 1)).message).toMatch(/: 1 QP\(s\) still use this CQ: close them first$/);
    const events = thrown(() => refuseBusyCq(0, 2, 1));
    expect(events).toMatchObject({ code: 'EBUSY', syscall: 'ibv_destroy_cq' });
    expect(events.message).toMatch(/: 2 events not acknowledged \(ack every event read from the channel; libibverbs would block here forever\)$/);
    expect(thrown(() => refuseBusyCq(0, 0, 1)).message).toMatch(/: 1 async event\(s\) naming this CQ not acknowledged$/);
  });
});
