import { firstValueFrom, filter, timeout } from 'rxjs';
import { createSoftDevice, openDevice, AsyncEvent, Context } from '../../src';
import { makePair, region, waitFor, itSoft, expectThrow } from '../support/device';
import { wcs, expectFreshPairWorks, caught } from '../support/verbs-checks';

let deviceSeq = 0;
/** A soft device of its own, so a DEVICE_FATAL cannot touch any other test. */
function isolatedDevice(): Context {
  const name = `asyncev${process.pid % 10000}x${deviceSeq++}`;
  createSoftDevice({ name });
  return openDevice(name);
}

function nextAsync(ctx: Context, type: string, ms = 3000): Promise<AsyncEvent> {
  return firstValueFrom(ctx.asyncEvents$.pipe(filter((e) => e.type === type), timeout({ first: ms })));
}

describe('async events', () => {
  itSoft('CQ_ERR from an overrun arrives on asyncEvents$ with its Cq, and is acked (the CQ can be destroyed)', async () => {
    const p = makePair({ splitCqs: true });
    try {
      const got = nextAsync(p.ctx, 'CQ_ERR');
      p.ctx.faults.overrun(p.recvB);
      const e = await got;
      expect(e.type).toBe('CQ_ERR');
      expect(e.cq).toBe(p.recvB);
      expect(e.qp).toBeUndefined();
      // Acked for us: once its QP is gone the CQ can be destroyed (unacked async events would make this EBUSY).
      p.b.close();
      p.recvB.close();
      expect(p.recvB.closed).toBe(true);
    } finally {
      p.close();
    }
  });

  itSoft('QP_FATAL names each QP on an overrun CQ, and is acked (the QP can be destroyed)', async () => {
    const p = makePair({ splitCqs: true });
    try {
      const got = nextAsync(p.ctx, 'QP_FATAL');
      p.ctx.faults.overrun(p.recvB);
      const e = await got;
      expect(e.qp).toBe(p.b);
      expect(p.b.state).toBe('ERR');
      p.b.close();
      expect(p.b.closed).toBe(true);
      expect(p.a.state).toBe('RTS');
    } finally {
      p.close();
    }
  });

  itSoft('PORT_ERR takes the port down and PORT_ACTIVE brings it back, each as an event naming port 1', async () => {
    const ctx = isolatedDevice();
    try {
      expect(ctx.queryPort(1).stateName).toBe('ACTIVE');
      const down = nextAsync(ctx, 'PORT_ERR');
      ctx.faults.portEvent('PORT_ERR');
      expect(await down).toMatchObject({ type: 'PORT_ERR', port: 1 });
      expect(ctx.queryPort(1).stateName).toBe('DOWN');
      const up = nextAsync(ctx, 'PORT_ACTIVE');
      ctx.faults.portEvent('PORT_ACTIVE');
      expect(await up).toMatchObject({ type: 'PORT_ACTIVE', port: 1 });
      expect(ctx.queryPort(1).stateName).toBe('ACTIVE');
      await expectFreshPairWorks(ctx);
    } finally {
      ctx.close();
    }
  });

  itSoft('async events nobody subscribed to are buffered and can be taken later (tryTake)', async () => {
    const ctx = isolatedDevice();
    try {
      ctx.faults.portEvent('PORT_ERR');
      ctx.faults.portEvent('PORT_ACTIVE');
      const taken: AsyncEvent[] = [];
      expect(
        await waitFor(() => {
          const e = ctx.asyncEvents$.tryTake();
          if (e) taken.push(e);
          return taken.length >= 2;
        }, 2000),
      ).toBe(true);
      expect(taken.map((e) => e.type)).toEqual(['PORT_ERR', 'PORT_ACTIVE']);
      expect(ctx.asyncEvents$.tryTake()).toBeUndefined();
    } finally {
      ctx.close();
    }
  });

  itSoft('DEVICE_FATAL: asyncEvents$ errors with DeviceFatalError', async () => {
    const ctx = isolatedDevice();
    try {
      const seen: string[] = [];
      let error: (Error & { code?: string; device?: string }) | undefined;
      ctx.asyncEvents$.subscribe({ next: (e) => seen.push(e.type), error: (err) => (error = err) });
      ctx.faults.deviceFatal();
      expect(await waitFor(() => error !== undefined, 2000)).toBe(true);
      expect(error!.name).toBe('DeviceFatalError');
      expect(error!.code).toBe('ERR_DEVICE_FATAL');
      expect(error!.device).toBe(ctx.deviceName);
      expect(seen).toContain('DEVICE_FATAL');
      // Sticky: a later subscriber gets the error at once.
      let late: Error | undefined;
      ctx.asyncEvents$.subscribe({ error: (err) => (late = err) });
      expect(late?.name).toBe('DeviceFatalError');
    } finally {
      ctx.close();
    }
  });

  itSoft('DEVICE_FATAL: every hot source errors (completions$ subscribed or not, channel events$)', async () => {
    const ctx = isolatedDevice();
    const p = makePair({ ctx });
    try {
      const errors: Record<string, Error | undefined> = {};
      p.cqA.completions$.subscribe({ error: (err) => (errors.completionsA = err) });
      p.channel.events$.subscribe({ error: (err) => (errors.events = err) });
      const fatal = new Promise<void>((resolve) => ctx.asyncEvents$.subscribe({ error: () => resolve() }));
      ctx.faults.deviceFatal();
      await fatal;
      expect(await waitFor(() => !!errors.completionsA && !!errors.events, 2000)).toBe(true);
      expect(errors.completionsA!.name).toBe('DeviceFatalError');
      expect(errors.events!.name).toBe('DeviceFatalError');
      // A CQ nobody subscribed to: its source is already failed when first used.
      let late: Error | undefined;
      p.cqB.completions$.subscribe({ error: (err) => (late = err) });
      expect(late?.name).toBe('DeviceFatalError');
      expect(() => p.cqB.completions$.tryTake()).toThrow(expect.objectContaining({ name: 'DeviceFatalError' }));
    } finally {
      ctx.close();
    }
  });

  itSoft('DEVICE_FATAL: later verbs fail with EIO; QPs are in ERR', async () => {
    const ctx = isolatedDevice();
    const p = makePair({ ctx });
    try {
      const src = region(p.pd, 8);
      const fatal = nextAsync(ctx, 'DEVICE_FATAL');
      ctx.faults.deviceFatal();
      await fatal;
      expect(p.a.state).toBe('ERR');
      expect(p.b.state).toBe('ERR');
      const eio = { code: 'EIO' };
      expectThrow(() => ctx.allocPd(), 'Error', { ...eio, syscall: 'ibv_alloc_pd' });
      expectThrow(() => ctx.createCq({ cqe: 4 }), 'Error', { ...eio, syscall: 'ibv_create_cq' });
      expectThrow(() => ctx.createCompChannel(), 'Error', { ...eio, syscall: 'ibv_create_comp_channel' });
      expectThrow(() => ctx.queryDevice(), 'Error', { ...eio, syscall: 'ibv_query_device' });
      expectThrow(() => p.pd.registerMemory(Buffer.alloc(8)), 'Error', { ...eio, syscall: 'ibv_reg_mr' });
      expectThrow(() => p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA }), 'Error', { ...eio, syscall: 'ibv_create_qp' });
      expectThrow(() => p.cqA.requestNotify(), 'Error', { ...eio, syscall: 'ibv_req_notify_cq' });
      expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr: src } }), 'Error', { ...eio, syscall: 'ibv_post_send' });
      expectThrow(() => p.a.postRecv({ wrId: 1, sg: { mr: src } }), 'Error', { ...eio, syscall: 'ibv_post_recv' });
      expectThrow(() => p.a.toError(), 'Error', { ...eio, syscall: 'ibv_modify_qp' });
    } finally {
      ctx.close();
    }
  });

  itSoft('DEVICE_FATAL: every object can still be closed, one by one, and the context too', async () => {
    const ctx = isolatedDevice();
    const name = ctx.deviceName;
    const p = makePair({ ctx });
    const mr = region(p.pd, 64);
    // An armed CQ with an event read but not yet acked when the device dies.
    const dst = region(p.pd, 8);
    p.b.postRecv({ wrId: 1, sg: { mr: dst } });
    p.cqB.requestNotify();
    p.a.postSend({ wrId: 2, sg: { mr: region(p.pd, 8) } });
    expect(await waitFor(() => p.channel.tryGetEvent() !== undefined, 2000)).toBe(true);
    expect((await wcs(p.cqB, 1))[0].status).toBe('SUCCESS');
    const fatal = nextAsync(ctx, 'DEVICE_FATAL');
    ctx.faults.deviceFatal();
    await fatal;
    try {
      p.a.close();
      p.b.close();
      mr.close();
      p.cqA.close();
      p.cqB.ack(1);
      p.cqB.close();
      p.channel.close();
      p.pd.close();
      for (const o of [p.a, p.b, mr, p.cqA, p.cqB, p.channel, p.pd]) expect(o.closed).toBe(true);
    } finally {
      ctx.close();
    }
    expect(ctx.closed).toBe(true);
    // A context opened later sees a recovered device.
    const again = openDevice(name);
    try {
      await expectFreshPairWorks(again);
    } finally {
      again.close();
    }
  });

  itSoft('DEVICE_FATAL: ctx.close() closes everything at once, even with subscribers and unacked events', async () => {
    const ctx = isolatedDevice();
    const p = makePair({ ctx });
    const sub = p.cqA.completions$.subscribe({ error: () => undefined });
    const dst = region(p.pd, 8);
    p.a.postRecv({ wrId: 1, sg: { mr: dst } });
    p.cqA.requestNotify();
    ctx.faults.deviceFatal();
    // The fatal event has reached the context (and its subscribers) before close.
    expect(await waitFor(() => ctx.fatalError !== undefined)).toBe(true);
    expect(caught(() => ctx.close())).toBeUndefined();
    expect(ctx.closed).toBe(true);
    expect(p.a.closed && p.cqA.closed && p.channel.closed && p.pd.closed).toBe(true);
    sub.unsubscribe();
    // The process and the default device are fine.
    await expectFreshPairWorks();
  });
});
