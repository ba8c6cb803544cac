import { asyncScheduler, concatMap, map, mergeMap, take, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { RunHelpers } from 'rxjs/testing';
import { connect$, Connection, listen, WcBatch } from '../../../src';
import { virtualCm, VirtualPd, VirtualResourceOptions, VirtualResources, VirtualSrq } from '../../../src/testing';

/**
 * The virtual CM's data path: two connected virtual QPs move bytes in
 * virtual time, a hop per frame (latency 1), with the completions, errors
 * and flushes of an RC QP. Both sides are established by frame 5; the
 * tests post from frame 6.
 */
const SERVER = { host: '10.0.0.2', port: 7471 };

interface RawPair {
  client: Connection<VirtualResources>;
  server: Connection<VirtualResources>;
  close(): void;
}

function rawPair(helpers: Pick<RunHelpers, 'hot'>, options: { rnrRetryCount?: number } & VirtualResourceOptions = {}): RawPair {
  const cm = virtualCm(helpers);
  const listener = listen({ ...SERVER, cm });
  let client: Connection<VirtualResources> | undefined;
  let server: Connection<VirtualResources> | undefined;
  listener.requests$.pipe(take(1), mergeMap((r) => r.accept$({ cap: options.cap }))).subscribe((c) => (server = c));
  connect$<VirtualResources, VirtualResourceOptions>({ ...SERVER, cm, ...options }).subscribe((c) => (client = c));
  return {
    get client() {
      return client!;
    },
    get server() {
      return server!;
    },
    close() {
      client?.close();
      server?.close();
      listener.close();
    },
  };
}

/** Each completion of a batch as `OPCODE STATUS byteLen` (and the wr_id). */
const summary = (batch: WcBatch) => batch.toArray().map((wc) => `${wc.wrId} ${wc.opcode} ${wc.status} ${wc.byteLen}`);

/** One run on a scheduler of its own (a TestScheduler's frames go on from one run to the next). */
const testScheduler = {
  run(callback: (helpers: RunHelpers) => void): void {
    new TestScheduler((actual, expected) => expect(actual).toEqual(expected)).run(callback);
  },
};

describe('virtual QP data path', () => {
  it('carries a SEND one hop into the oldest receive; the sender completes one hop later', () => {
    testScheduler.run((helpers) => {
      const p = rawPair(helpers);
      let dst: Buffer | undefined;
      timer(6).subscribe(() => {
        const rmr = p.server.resources.pd.allocMemory(64);
        dst = rmr.buffer;
        p.server.qp.postRecv([{ wrId: 1, sg: { mr: rmr, offset: 0, length: 32 } }, { wrId: 2, sg: { mr: rmr, offset: 32, length: 32 } }]);
        const smr = p.client.resources.pd.allocMemory(16);
        smr.buffer.write('hello');
        p.client.qp.postSend({ wrId: 7, sg: { mr: smr, offset: 0, length: 5 } });
      });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.server.recvCq.completions$), map(summary))).toBe('7ms r 1ms |', { r: ['1 RECV SUCCESS 5'] });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary))).toBe('8ms s |', { s: ['7 SEND SUCCESS 5'] });
      timer(9).subscribe(() => {
        expect(dst!.subarray(0, 5).toString()).toBe('hello');
        expect(p.server.qp.receivesPosted).toBe(1);
        const wc = p.server.recvCq.poll();
        expect(wc.length).toBe(0);
        p.close();
      });
    });
  });

  it('names the QPs in a receive completion: qpNum the receiver, srcQp the sender', () => {
    const seen: Array<{ qpNum: number; srcQp: number }> = [];
    let qps: number[] = [];
    testScheduler.run((helpers) => {
      const p = rawPair(helpers);
      timer(6).subscribe(() => {
        qps = [p.server.qp.qpNum, p.client.qp.qpNum];
        p.server.recvCq.completions$.subscribe((b) => seen.push(...b.toArray().map((wc) => ({ qpNum: wc.qpNum, srcQp: wc.srcQp }))));
        p.server.qp.postRecv({ wrId: 1, sg: { mr: p.server.resources.pd.allocMemory(8) } });
        p.client.qp.postSend({ wrId: 2, sg: { mr: p.client.resources.pd.allocMemory(8) } });
      });
      timer(9).subscribe(() => p.close());
    });
    expect(seen).toEqual([{ qpNum: qps[0], srcQp: qps[1] }]);
  });

  it('RDMA READs what the peer region holds when the request reaches it, landing one hop later', () => {
    testScheduler.run((helpers) => {
      const p = rawPair(helpers);
      let local: Buffer | undefined;
      let remote: Buffer | undefined;
      timer(6).subscribe(() => {
        const rmr = p.server.resources.pd.registerMemory(Buffer.from('the original bytes'), { access: ['LOCAL_WRITE', 'REMOTE_READ'] });
        remote = rmr.buffer;
        const lmr = p.client.resources.pd.allocMemory(64);
        local = lmr.buffer;
        p.client.qp.postSend({ wrId: 3, opcode: 'RDMA_READ', sg: { mr: lmr, offset: 0, length: 12 }, remote: { addr: rmr.remoteAddr(4), rkey: rmr.rkey } });
      });
      // Rewritten after the READ took its bytes (at 7), before they land (later at 8): the READ has the old ones.
      helpers.hot('--------a').subscribe(() => {
        expect(local!.subarray(0, 12).every((b) => b === 0)).toBe(true);
        remote!.write('XXXXXXXXXXXXXXXXXX');
      });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary))).toBe('8ms s |', { s: ['3 RDMA_READ SUCCESS 12'] });
      timer(9).subscribe(() => {
        expect(local!.subarray(0, 12).toString()).toBe('original byt');
        p.close();
      });
    });
  });

  it('fails a READ with REM_ACCESS_ERR for a bad rkey, a range past the region or no REMOTE_READ; the responder goes to ERR', () => {
    for (const bad of ['rkey', 'range', 'access'] as const) {
      testScheduler.run((helpers) => {
        const p = rawPair(helpers);
        timer(6).subscribe(() => {
          const rmr = p.server.resources.pd.allocMemory(64, { access: bad === 'access' ? ['LOCAL_WRITE'] : ['LOCAL_WRITE', 'REMOTE_READ'] });
          p.server.qp.postRecv({ wrId: 9, sg: { mr: p.server.resources.pd.allocMemory(8) } });
          const lmr = p.client.resources.pd.allocMemory(64);
          const remote = { addr: rmr.remoteAddr(bad === 'range' ? 1 : 0), rkey: bad === 'rkey' ? rmr.rkey + 1000 : rmr.rkey };
          p.client.qp.postSend({ wrId: 1, opcode: 'RDMA_READ', sg: { mr: lmr, offset: 0, length: 64 }, remote });
          // Posted behind it: flushed once the QP is in the error state.
          p.client.qp.postSend({ wrId: 2, sg: { mr: lmr, offset: 0, length: 1 } });
        });
        const client$ = timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary));
        helpers.expectObservable(client$).toBe('8ms s |', { s: ['1 RDMA_READ REM_ACCESS_ERR 0', '2 SEND WR_FLUSH_ERR 0'] });
        // The responder found the error: its posted receive is flushed as it enters the error state.
        const server$ = timer(6).pipe(mergeMap(() => p.server.recvCq.completions$), map(summary));
        helpers.expectObservable(server$).toBe('7ms r 1ms |', { r: ['9 RECV WR_FLUSH_ERR 0'] });
        timer(9).subscribe(() => {
          expect([p.client.qp.state, p.server.qp.state]).toEqual(['ERR', 'ERR']);
          p.close();
        });
      });
    }
  });

  it('with rnrRetryCount 0, a SEND that finds no receive completes RNR_RETRY_EXC_ERR a round trip after it was posted', () => {
    testScheduler.run((helpers) => {
      const p = rawPair(helpers, { rnrRetryCount: 0 });
      timer(6).subscribe(() => {
        const mr = p.client.resources.pd.allocMemory(8);
        p.client.qp.postSend([{ wrId: 1, sg: { mr } }, { wrId: 2, sg: { mr } }]);
      });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary))).toBe('8ms s |', {
        s: ['1 SEND RNR_RETRY_EXC_ERR 0', '2 SEND WR_FLUSH_ERR 0'],
      });
      timer(9).subscribe(() => {
        expect(p.client.qp.state).toBe('ERR');
        // In the error state a post completes at once, flushed.
        p.client.qp.postRecv({ wrId: 5, sg: { mr: p.client.resources.pd.allocMemory(8) } });
        expect(summary(p.client.recvCq.poll())).toEqual(['5 RECV WR_FLUSH_ERR 0']);
        p.close();
      });
    });
  });

  it('retries a SEND every round trip, rnrRetryCount times: a receive posted in time takes it, else RNR_RETRY_EXC_ERR', () => {
    for (const postAt of [10, 12]) {
      testScheduler.run((helpers) => {
        const p = rawPair(helpers, { rnrRetryCount: 2 });
        timer(6).subscribe(() => p.client.qp.postSend({ wrId: 1, sg: { mr: p.client.resources.pd.allocMemory(8) } }));
        timer(postAt).subscribe(() => p.server.qp.postRecv({ wrId: 2, sg: { mr: p.server.resources.pd.allocMemory(8) } }));
        // tries at 7, 9 and 11: a receive posted at 10 is found by the last one
        const expected = postAt === 10 ? ['1 SEND SUCCESS 8'] : ['1 SEND RNR_RETRY_EXC_ERR 0'];
        helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary))).toBe('12ms s |', { s: expected });
        timer(13).subscribe(() => p.close());
      });
    }
  });

  it('with rnrRetryCount 7 a SEND waits for a receive and reaches it one hop after it is posted', () => {
    testScheduler.run((helpers) => {
      const p = rawPair(helpers);
      timer(6).subscribe(() => p.client.qp.postSend({ wrId: 1, sg: { mr: p.client.resources.pd.allocMemory(8) } }));
      timer(20).subscribe(() => p.server.qp.postRecv({ wrId: 2, sg: { mr: p.server.resources.pd.allocMemory(8) } }));
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.server.recvCq.completions$), map(summary))).toBe('21ms r 1ms |', { r: ['2 RECV SUCCESS 8'] });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary))).toBe('22ms s |', { s: ['1 SEND SUCCESS 8'] });
      timer(23).subscribe(() => p.close());
    });
  });

  it('fails a SEND larger than the receive: LOC_LEN_ERR there, REM_INV_REQ_ERR here; a region of another PD is LOC_PROT_ERR', () => {
    testScheduler.run((helpers) => {
      const p = rawPair(helpers);
      timer(6).subscribe(() => {
        p.server.qp.postRecv({ wrId: 1, sg: { mr: p.server.resources.pd.allocMemory(4) } });
        p.client.qp.postSend({ wrId: 2, sg: { mr: p.client.resources.pd.allocMemory(8) } });
      });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.server.recvCq.completions$), map(summary))).toBe('7ms r 1ms |', { r: ['1 RECV LOC_LEN_ERR 0'] });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary))).toBe('8ms s |', { s: ['2 SEND REM_INV_REQ_ERR 0'] });
      timer(9).subscribe(() => p.close());
    });
    testScheduler.run((helpers) => {
      const p = rawPair(helpers);
      // Posting checks the entry; the device finds that the region is another PD's.
      timer(6).subscribe(() => p.client.qp.postSend({ wrId: 3, sg: { mr: new VirtualPd().allocMemory(8) } }));
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary))).toBe('8ms s |', { s: ['3 SEND LOC_PROT_ERR 0'] });
      timer(9).subscribe(() => p.close());
    });
  });

  it('flushes what is posted when the QP enters the error state (a disconnect); a READ flushed in flight lands nothing', () => {
    testScheduler.run((helpers) => {
      const p = rawPair(helpers);
      let local: Buffer | undefined;
      timer(6).subscribe(() => {
        p.client.qp.postRecv([{ wrId: 1, sg: { mr: p.client.resources.pd.allocMemory(8) } }, { wrId: 2, sg: { mr: p.client.resources.pd.allocMemory(8) } }]);
        const rmr = p.server.resources.pd.registerMemory(Buffer.from('remote'), { access: ['LOCAL_WRITE', 'REMOTE_READ'] });
        const lmr = p.client.resources.pd.allocMemory(6);
        local = lmr.buffer;
        p.client.qp.postSend({ wrId: 3, opcode: 'RDMA_READ', sg: { mr: lmr }, remote: { addr: rmr.addr, rkey: rmr.rkey } });
        // After the READ took the bytes at 7, before they land at 8: what the CM does when the peer disconnects.
        asyncScheduler.schedule(() => p.client.qp.modify('ERR'), 1);
      });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.recvCq.completions$), map(summary))).toBe('7ms r 1ms |', { r: ['1 RECV WR_FLUSH_ERR 0', '2 RECV WR_FLUSH_ERR 0'] });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.sendCq.completions$), map(summary))).toBe('7ms s 1ms |', { s: ['3 RDMA_READ WR_FLUSH_ERR 0'] });
      timer(9).subscribe(() => {
        expect(local!.every((b) => b === 0)).toBe(true);
        p.close();
      });
    });
  });

  it('flushes both sides when the peer disconnects: its receives at once, ours when DISCONNECTED arrives', () => {
    testScheduler.run((helpers) => {
      const p = rawPair(helpers);
      timer(6).subscribe(() => {
        p.client.qp.postRecv({ wrId: 1, sg: { mr: p.client.resources.pd.allocMemory(8) } });
        p.server.recvCq.completions$.subscribe();
      });
      helpers.hot('10ms a').subscribe(() => p.server.close());
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.recvCq.completions$), map(summary))).toBe('11ms r |', { r: ['1 RECV WR_FLUSH_ERR 0'] });
      timer(12).subscribe(() => p.close());
    });
  });

  it('lets a SEND to a QP on a VirtualSrq take one of its receives (no bytes: play the receive), RNR when none is left', () => {
    const srq = new VirtualSrq(4);
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers);
      const listener = listen({ ...SERVER, cm });
      let server: Connection<VirtualResources> | undefined;
      listener.requests$.pipe(take(1), mergeMap((r) => r.accept$({ srq }))).subscribe((c) => (server = c));
      let client: Connection<VirtualResources> | undefined;
      connect$<VirtualResources, VirtualResourceOptions>({ ...SERVER, cm, rnrRetryCount: 0 }).subscribe((c) => (client = c));
      timer(6).subscribe(() => {
        srq.postRecv(1);
        expect(() => server!.qp.postRecv({ wrId: 1, sg: { mr: server!.resources.pd.allocMemory(8) } })).toThrow(/post receives to the SRQ/);
        const mr = client!.resources.pd.allocMemory(8);
        client!.qp.postSend([{ wrId: 1, sg: { mr } }, { wrId: 2, sg: { mr } }]);
      });
      // One completion each, in order, at 8 (in one batch or two: each lands from an action of its own).
      const completions$ = timer(6).pipe(mergeMap(() => client!.sendCq.completions$), concatMap(summary));
      helpers.expectObservable(completions$).toBe('8ms (ab) 8ms |', { a: '1 SEND SUCCESS 8', b: '2 SEND RNR_RETRY_EXC_ERR 0' });
      timer(20).subscribe(() => {
        expect(srq.posted).toBe(0);
        expect(server!.recvCq.depth).toBe(0);
        client!.close();
        server!.close();
        listener.close();
      });
    });
  });

  it('refuses bad posts as the native QP does: TypeError, RangeError, EBADF, EINVAL outside RTS, ENOMEM past cap with badWr', () => {
    let checked = 0;
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers);
      const listener = listen({ ...SERVER, cm });
      listener.requests$.pipe(take(1)).subscribe((r) => void r.accept({ cap: { maxSendWr: 2 } }));
      let client: Connection<VirtualResources> | undefined;
      connect$<VirtualResources, VirtualResourceOptions>({
        ...SERVER,
        cm,
        cap: { maxSendWr: 2, maxRecvWr: 1 },
        prepare: (r) => {
          // In INIT: receives may be posted, sends not yet.
          const mr = r.pd.allocMemory(8);
          expect(() => r.qp.postSend({ wrId: 1, sg: { mr } })).toThrow(expect.objectContaining({ code: 'EINVAL', syscall: 'ibv_post_send', badWr: 0 }));
          r.qp.postRecv({ wrId: 1, sg: { mr } });
          expect(() => r.qp.postRecv({ wrId: 2, sg: { mr } })).toThrow(expect.objectContaining({ code: 'ENOMEM', badWr: 0 }));
          checked++;
        },
      }).subscribe((c) => (client = c));
      timer(6).subscribe(() => {
        const { qp, pd } = client!.resources;
        const mr = pd.allocMemory(8);
        expect(() => qp.postSend({ wrId: 1, sg: { mr: {} as never } })).toThrow(TypeError);
        expect(() => qp.postSend({ wrId: -1, sg: { mr } })).toThrow(RangeError);
        expect(() => qp.postSend({ wrId: 1, sg: { mr, offset: 4, length: 8 } })).toThrow(/past the end of the region/);
        expect(() => qp.postSend({ wrId: 1, opcode: 'RDMA_WRITE' as never, sg: { mr } })).toThrow(RangeError);
        expect(() => qp.postSend({ wrId: 1, opcode: 'RDMA_READ', sg: { mr } })).toThrow(/remote/);
        expect(() => qp.postSend([{ wrId: 1, sg: [{ mr }, { mr }] }])).toThrow(expect.objectContaining({ code: 'EINVAL' }));
        expect(() => qp.postSend([1, 2, 3].map((wrId) => ({ wrId, sg: { mr } })))).toThrow(expect.objectContaining({ code: 'ENOMEM', badWr: 2 }));
        expect(qp.sendsOutstanding).toBe(2);
        const closed = pd.allocMemory(8);
        closed.close();
        expect(() => qp.postSend({ wrId: 1, sg: { mr: closed } })).toThrow(expect.objectContaining({ code: 'EBADF' }));
        client!.close();
        expect(() => qp.postSend({ wrId: 1, sg: { mr } })).toThrow(expect.objectContaining({ code: 'EBADF' }));
        listener.close();
        checked++;
      });
    });
    expect(checked).toBe(2);
  });
});

describe('virtual PD and regions', () => {
  it('allocates zeroed regions and registers user memory as a view, each with its own keys and addresses', () => {
    const pd = new VirtualPd();
    const a = pd.allocMemory(100, { access: ['LOCAL_WRITE', 'REMOTE_READ'] });
    const user = new Uint8Array(16);
    const b = pd.registerMemory(user.subarray(4));
    expect([a.length, b.length]).toEqual([100, 12]);
    expect(a.buffer.every((x) => x === 0)).toBe(true);
    b.buffer[0] = 9;
    expect(user[4]).toBe(9);
    expect(a.rkey).not.toBe(b.rkey);
    expect(b.addr >= a.addr + 100n).toBe(true);
    expect(a.remoteAddr(5)).toBe(a.addr + 5n);
    expect(pd.openRegions).toBe(2);
    pd.close();
    expect([a.closed, b.closed, pd.openRegions]).toEqual([true, true, 0]);
    expect(() => pd.allocMemory(8)).toThrow(expect.objectContaining({ code: 'EBADF' }));
  });

  it('refuses bad input with TypeError / RangeError', () => {
    const pd = new VirtualPd();
    expect(() => pd.allocMemory('8' as never)).toThrow(TypeError);
    expect(() => pd.allocMemory(0)).toThrow(RangeError);
    expect(() => pd.allocMemory(8, { access: ['NOPE' as never] })).toThrow(RangeError);
    expect(() => pd.allocMemory(8, { access: ['REMOTE_WRITE'] })).toThrow(/need LOCAL_WRITE/);
    expect(() => pd.registerMemory('x' as never)).toThrow(TypeError);
    expect(() => pd.registerMemory(new ArrayBuffer(0))).toThrow(RangeError);
  });
});
