/**
 * The connection manager's native half over the raw binding (docs/ARCHITECTURE.md, Connections):
 * the soft CM plays librdmacm's event sequence for ids without a QP, QPs
 * made on the id's own device are moved with modifyQp, and data then flows
 * through them. Soft only: on rxe0 these skip (test/skips.txt), and the
 * rdma_cm provider is proven across two guests (test/rxe/cm-pair.js).
 */
import { DEFAULT_RETRY_COUNT } from '../../src/core/constants';
import { binding, NativeCmChannel, NativeCmId } from '../../src/native/binding';
import { expectThrow, itSoft, waitFor } from '../support/device';
import { CmEvent, End, EventLog, exchange, QpState, softConnection } from '../support/cm-raw';

const b = binding();
const EHOSTUNREACH = 113;
const ETIMEDOUT = 110;

/** A channel that is never watched: events wait in it for readEvents(). */
function quietChannel(): NativeCmChannel {
  return b.createCmChannel('soft');
}

/** A listening id on 127.0.0.1 (any port) and its channel's log. */
function listening(backlog = 8): { log: EventLog; id: NativeCmId; port: number } {
  const log = new EventLog(b.createCmChannel('soft'));
  const id = log.channel.createId();
  id.bind({ host: '127.0.0.1', port: 0 });
  id.listen(backlog);
  return { log, id, port: id.localAddress!.port };
}

/** A client id with its route resolved to 127.0.0.1:port. */
async function routed(log: EventLog, port: number, host = '127.0.0.1'): Promise<NativeCmId> {
  const id = log.channel.createId();
  id.resolveAddr({ host, port }, 1000);
  await log.next(CmEvent.ADDR_RESOLVED);
  id.resolveRoute(1000);
  await log.next(CmEvent.ROUTE_RESOLVED);
  return id;
}

function closeAll(logs: EventLog[], ids: NativeCmId[]): void {
  for (const id of ids) id.close();
  for (const log of logs) {
    log.close();
    log.channel.close();
  }
}

/** A soft device (made once per process) that answers on `addresses`. */
function softDevice(name: string, addresses: string[]): void {
  if (!b.listDevices().some((d) => d.name === name)) b.createSoftDevice({ name, addresses });
}

/** One call that must throw: what it is, the call, the error's name and (errno errors) its code. */
type Refusal = [what: string, call: () => unknown, name: 'TypeError' | 'RangeError' | 'Error', code?: string];

/** Each call throws as its row says; a failure names the row. */
function expectRefusals(rows: Refusal[]): void {
  for (const [what, call, name, code] of rows) {
    try {
      expectThrow(call, name, code ? { code } : {});
    } catch (err) {
      throw new Error(`${what}: ${(err as Error).message}`);
    }
  }
}

describe('soft CM: the connection sequence', () => {
  itSoft('listen, resolve, connect, accept, establish: every event in order, private data and QP numbers exchanged, data verified both ways', async () => {
    const c = await softConnection({ connectData: Buffer.from('hello server'), acceptData: Buffer.from('welcome client') });
    try {
      expect(c.request.listener).toBe(c.listener);
      expect(c.request.privateData.toString()).toBe('hello server');
      expect(c.request.qpNum).toBe(c.clientEnd.qp.qpNum);
      expect(c.response.privateData.toString()).toBe('welcome client');
      expect(c.response.qpNum).toBe(c.serverEnd.qp.qpNum);
      expect(c.accepted.channel).toBe(c.server.channel);
      expect(c.accepted.localAddress).toEqual(c.listener.localAddress);
      expect(c.accepted.peerAddress).toEqual(c.connecting.localAddress);
      expect(c.connecting.peerAddress).toEqual(c.listener.localAddress);
      expect(c.clientEnd.ctx.deviceName).toBe('soft0');
      expect(c.clientEnd.qp.state).toBe('RTS');
      expect(c.serverEnd.qp.state).toBe('RTS');
      expect(await exchange(c.clientEnd, c.serverEnd, 8)).toBe(16);
      expect(c.server.pending + c.client.pending).toBe(0);
    } finally {
      c.close();
    }
  });

  itSoft('connect and accept take the default connection parameters, and the peer sees them as the IB CM reports them', async () => {
    const c = await softConnection();
    try {
      expect(c.request.privateData.length).toBe(0);
      expect(c.request).toMatchObject({ status: 0, responderResources: 1, initiatorDepth: 1, retryCount: DEFAULT_RETRY_COUNT, rnrRetryCount: 7, srq: false });
    } finally {
      c.close();
    }
  });

  itSoft('IPv6: a listener on ::1 is reached at ::1', async () => {
    const c = await softConnection({ host: '::1' });
    try {
      expect(c.connecting.peerAddress!.host).toBe('::1');
      expect(await exchange(c.clientEnd, c.serverEnd, 2)).toBe(4);
    } finally {
      c.close();
    }
  });

  itSoft('a listener bound to 0.0.0.0 takes connections to every IPv4 address of every soft device', async () => {
    softDevice('softcm1', ['198.18.7.1']);
    const server = new EventLog(b.createCmChannel('soft'));
    const client = new EventLog(b.createCmChannel('soft'));
    const listener = server.channel.createId();
    listener.bind({ host: '0.0.0.0', port: 0 });
    listener.listen(4);
    const port = listener.localAddress!.port;
    const ids: NativeCmId[] = [];
    try {
      for (const host of ['127.0.0.1', '198.18.7.1']) {
        const id = await routed(client, port, host);
        ids.push(id);
        const end = new End(id);
        id.modifyQp(end.qp.native, QpState.INIT);
        id.connect({ qpNum: end.qp.qpNum });
        const req = await server.next(CmEvent.CONNECT_REQUEST);
        ids.push(req.id);
        expect(req.id.localAddress!.host).toBe(host);
        const ctx = req.id.openContext();
        expect(ctx.deviceName).toBe(host === '127.0.0.1' ? 'soft0' : 'softcm1');
        ctx.close();
        req.id.reject();
        expect((await client.next(CmEvent.REJECTED)).status).toBe(28);
        end.close();
      }
    } finally {
      closeAll([server, client], [...ids, listener]);
    }
  });

  itSoft('servesContext: true for a context of the id\'s device only; bad input is a TypeError, a closed context or id EBADF', () => {
    softDevice('softcm1', ['198.18.7.1']);
    const ch = quietChannel();
    const id = ch.createId();
    const unbound = ch.createId();
    const own = b.openDevice('soft0');
    const other = b.openDevice('softcm1');
    try {
      id.bind({ host: '127.0.0.1', port: 0 });
      expect(id.servesContext(own)).toBe(true);
      expect(id.servesContext(other)).toBe(false);
      expect(unbound.servesContext(own)).toBe(false);
      for (const bad of [undefined, null, 1, {}, id]) expectThrow(() => id.servesContext(bad as never), 'TypeError');
      other.close();
      expectThrow(() => id.servesContext(other), 'Error', { code: 'EBADF' });
      id.close();
      expectThrow(() => id.servesContext(own), 'Error', { code: 'EBADF' });
    } finally {
      own.close();
      other.close();
      id.close();
      unbound.close();
      ch.close();
    }
  });

  itSoft('a connection between two soft devices (the client bound to its own device) carries data', async () => {
    softDevice('softcm1', ['198.18.7.1']);
    const server = new EventLog(b.createCmChannel('soft'));
    const client = new EventLog(b.createCmChannel('soft'));
    const listener = server.channel.createId();
    listener.bind({ host: '127.0.0.1', port: 0 });
    listener.listen(4);
    const id = client.channel.createId();
    const ids = [id, listener];
    try {
      id.resolveAddr({ host: '127.0.0.1', port: listener.localAddress!.port }, 1000, { host: '198.18.7.1', port: 0 });
      await client.next(CmEvent.ADDR_RESOLVED);
      expect(id.localAddress!.host).toBe('198.18.7.1');
      id.resolveRoute(1000);
      await client.next(CmEvent.ROUTE_RESOLVED);
      const ce = new End(id);
      expect(ce.ctx.deviceName).toBe('softcm1');
      id.modifyQp(ce.qp.native, QpState.INIT);
      id.connect({ qpNum: ce.qp.qpNum });
      const req = await server.next(CmEvent.CONNECT_REQUEST);
      ids.push(req.id);
      const se = new End(req.id);
      for (const s of [QpState.INIT, QpState.RTR, QpState.RTS]) req.id.modifyQp(se.qp.native, s);
      req.id.accept({ qpNum: se.qp.qpNum });
      await client.next(CmEvent.CONNECT_RESPONSE);
      id.modifyQp(ce.qp.native, QpState.RTR);
      id.modifyQp(ce.qp.native, QpState.RTS);
      id.establish();
      await server.next(CmEvent.ESTABLISHED);
      // The active side hears nothing more: as with rdma_cm, whose kernel
      // reports no ESTABLISHED to an id that has no QP attached.
      await new Promise((r) => setTimeout(r, 20));
      expect(client.pending).toBe(0);
      expect(await exchange(ce, se, 4)).toBe(8);
      ce.close();
      se.close();
    } finally {
      closeAll([server, client], ids);
    }
  });
});

describe('soft CM: endings and failures', () => {
  // Either side disconnects: its own DISCONNECTED, then the peer's; after
  // that, disconnecting again (from either side) raises nothing more.
  for (const { title, from } of [
    { title: 'disconnect from the client: both sides get DISCONNECTED once; disconnecting again is a no-op', from: 'client' },
    { title: 'disconnect from the server: both sides get DISCONNECTED', from: 'server' },
  ] as const) {
    itSoft(title, async () => {
      const c = await softConnection();
      try {
        const client = { id: c.connecting, log: c.client };
        const server = { id: c.accepted, log: c.server };
        const [own, peer] = from === 'client' ? [client, server] : [server, client];
        own.id.disconnect();
        await own.log.next(CmEvent.DISCONNECTED);
        await peer.log.next(CmEvent.DISCONNECTED);
        peer.id.disconnect();
        own.id.disconnect();
        c.client.channel.createId().close(); // a round trip through each channel
        expect(c.client.pending + c.server.pending).toBe(0);
      } finally {
        c.close();
      }
    });
  }

  itSoft('closing a connected id: the peer gets DISCONNECTED, and close() never blocks and is idempotent', async () => {
    const c = await softConnection();
    try {
      c.accepted.close();
      c.accepted.close();
      expect(c.accepted.closed).toBe(true);
      await c.client.next(CmEvent.DISCONNECTED);
      expectThrow(() => c.accepted.accept({ qpNum: 1 }), 'Error', { code: 'EBADF' });
    } finally {
      c.close();
    }
  });

  itSoft('reject with private data: REJECTED, status 28 (consumer defined), with the bytes; the id can neither accept nor reject again', async () => {
    const { log: server, id: listener, port } = listening();
    const client = new EventLog(b.createCmChannel('soft'));
    const id = await routed(client, port);
    const end = new End(id);
    const ids = [id, listener];
    try {
      id.connect({ qpNum: end.qp.qpNum, privateData: Buffer.from('let me in') });
      const req = await server.next(CmEvent.CONNECT_REQUEST);
      ids.push(req.id);
      req.id.reject(Buffer.from('go away'));
      const rej = await client.next(CmEvent.REJECTED);
      expect(rej.status).toBe(28);
      expect(rej.privateData.toString()).toBe('go away');
      expectThrow(() => req.id.reject(), 'Error', { code: 'EINVAL' });
      expectThrow(() => req.id.accept({ qpNum: 1 }), 'Error', { code: 'EINVAL' });
    } finally {
      end.close();
      closeAll([server, client], ids);
    }
  });

  itSoft('accept twice is EINVAL; the connection it made still works', async () => {
    const c = await softConnection();
    try {
      expectThrow(() => c.accepted.accept({ qpNum: c.serverEnd.qp.qpNum }), 'Error', { code: 'EINVAL' });
      expectThrow(() => c.accepted.reject(), 'Error', { code: 'EINVAL' });
      expect(await exchange(c.clientEnd, c.serverEnd, 2)).toBe(4);
    } finally {
      c.close();
    }
  });

  itSoft('no listener on the port: REJECTED with status 8 (invalid service id)', async () => {
    const { log: server, id: listener, port } = listening();
    listener.close(); // the port is free again
    const client = new EventLog(b.createCmChannel('soft'));
    const id = await routed(client, port);
    try {
      id.connect({ qpNum: 0x11 });
      const rej = await client.next(CmEvent.REJECTED);
      expect(rej.status).toBe(8);
      expect(rej.id).toBe(id);
    } finally {
      closeAll([server, client], [id]);
    }
  });

  itSoft('an address no soft device has: ADDR_ERROR with -EHOSTUNREACH', async () => {
    const client = new EventLog(b.createCmChannel('soft'));
    const id = client.channel.createId();
    try {
      id.resolveAddr({ host: '203.0.113.9', port: 7471 }, 1000);
      const ev = await client.next(CmEvent.ADDR_ERROR);
      expect(ev.status).toBe(-EHOSTUNREACH);
      expectThrow(() => id.openContext(), 'Error', { code: 'ENODEV' });
      // The id can try again.
      id.resolveAddr({ host: '127.0.0.1', port: 7471 }, 1000);
      await client.next(CmEvent.ADDR_RESOLVED);
    } finally {
      closeAll([client], [id]);
    }
  });

  itSoft('a black-holed address (198.18.0.0/15, on no device): ADDR_ERROR with -ETIMEDOUT once timeoutMs passed', async () => {
    const client = new EventLog(b.createCmChannel('soft'));
    const id = client.channel.createId();
    try {
      id.resolveAddr({ host: '198.19.255.77', port: 7471 }, 50);
      const ev = await client.next(CmEvent.ADDR_ERROR);
      expect(ev.status).toBe(-ETIMEDOUT);
    } finally {
      closeAll([client], [id]);
    }
  });

  itSoft('closing an id while its address resolution is pending: no event ever comes for it', async () => {
    const client = new EventLog(b.createCmChannel('soft'));
    const id = client.channel.createId();
    const other = client.channel.createId();
    try {
      id.resolveAddr({ host: '198.19.255.78', port: 7471 }, 30);
      id.close();
      other.resolveAddr({ host: '198.19.255.79', port: 7471 }, 60);
      const ev = await client.next(CmEvent.ADDR_ERROR);
      expect(ev.id).toBe(other);
    } finally {
      closeAll([client], [other]);
    }
  });

  itSoft('a client that gives up before the answer (its id closed): the server id hears nothing (as rxe) and its accept fails; an unread request is withdrawn', async () => {
    const { log: server, id: listener, port } = listening();
    const client = new EventLog(b.createCmChannel('soft'));
    const ids = [listener];
    try {
      const id = await routed(client, port);
      id.connect({ qpNum: 0x11 });
      const req = await server.next(CmEvent.CONNECT_REQUEST);
      ids.push(req.id);
      id.close();
      // The kernel's ucma drops a new id's events until it is accepted: no
      // REJECTED here; the accept finds the request gone.
      await expect(server.next(undefined, 300)).rejects.toThrow(/no CM event/);
      expectThrow(() => req.id.accept({ qpNum: 1 }), 'Error', { code: 'EINVAL' });

      // Unread: the listener's channel is not read until after the client left.
      server.channel.watch(false);
      const id2 = await routed(client, port);
      id2.connect({ qpNum: 0x12 });
      id2.close();
      expect(server.channel.readEvents()).toEqual([]);
      server.channel.watch(true);
    } finally {
      closeAll([server, client], ids);
    }
  });

  itSoft('a listener closed with requests pending (unread): each client gets REJECTED 28, and the channel can then close', async () => {
    const quiet = quietChannel();
    const listener = quiet.createId();
    listener.bind({ host: '127.0.0.1', port: 0 });
    listener.listen(8);
    const client = new EventLog(b.createCmChannel('soft'));
    const ids: NativeCmId[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const id = await routed(client, listener.localAddress!.port);
        id.connect({ qpNum: 0x11 + i });
        ids.push(id);
      }
      expectThrow(() => quiet.close(), 'Error', { code: 'EBUSY' });
      listener.close();
      for (let i = 0; i < 3; i++) expect((await client.next(CmEvent.REJECTED)).status).toBe(28);
      expect(quiet.readEvents()).toEqual([]);
      quiet.close();
    } finally {
      closeAll([client], ids);
      if (!quiet.closed) quiet.close();
    }
  });

  itSoft('backlog: requests queued unread beyond it are rejected (status 28); reading them makes room', async () => {
    const quiet = quietChannel();
    const listener = quiet.createId();
    listener.bind({ host: '127.0.0.1', port: 0 });
    listener.listen(2);
    const client = new EventLog(b.createCmChannel('soft'));
    const ids: NativeCmId[] = [listener];
    try {
      const connect = async () => {
        const id = await routed(client, listener.localAddress!.port);
        ids.push(id);
        id.connect({ qpNum: 0x20 });
        return id;
      };
      await connect();
      await connect();
      const third = await connect();
      const rej = await client.next(CmEvent.REJECTED);
      expect(rej.id).toBe(third);
      expect(rej.status).toBe(28);
      const read = quiet.readEvents();
      expect(read.map((e) => e.type)).toEqual([CmEvent.CONNECT_REQUEST, CmEvent.CONNECT_REQUEST]);
      ids.push(...read.map((e) => e.id));
      await connect();
      const fourth = quiet.readEvents();
      expect(fourth.map((e) => e.type)).toEqual([CmEvent.CONNECT_REQUEST]);
      ids.push(...fourth.map((e) => e.id));
    } finally {
      for (const id of ids) id.close();
      for (const e of quiet.readEvents()) e.id.close();
      quiet.close();
      client.close();
      client.channel.close();
    }
  });

  itSoft('device removal (soft DEVICE_FATAL): DEVICE_REMOVAL for every id on that device, the peer on another device is disconnected', async () => {
    softDevice('softcm-fatal', ['198.19.9.1']);
    const server = new EventLog(b.createCmChannel('soft'));
    const client = new EventLog(b.createCmChannel('soft'));
    const listener = server.channel.createId();
    listener.bind({ host: '198.19.9.1', port: 0 });
    listener.listen(4);
    const ids = [listener];
    try {
      // The client sits on soft0 (bound there), the server on softcm-fatal.
      const id = client.channel.createId();
      id.resolveAddr({ host: '198.19.9.1', port: listener.localAddress!.port }, 1000, { host: '127.0.0.1', port: 0 });
      await client.next(CmEvent.ADDR_RESOLVED);
      id.resolveRoute(1000);
      await client.next(CmEvent.ROUTE_RESOLVED);
      ids.push(id);
      const ce = new End(id);
      id.modifyQp(ce.qp.native, QpState.INIT);
      id.connect({ qpNum: ce.qp.qpNum });
      const req = await server.next(CmEvent.CONNECT_REQUEST);
      ids.push(req.id);
      const se = new End(req.id);
      for (const s of [QpState.INIT, QpState.RTR, QpState.RTS]) req.id.modifyQp(se.qp.native, s);
      req.id.accept({ qpNum: se.qp.qpNum });
      await client.next(CmEvent.CONNECT_RESPONSE);
      id.modifyQp(ce.qp.native, QpState.RTR);
      id.modifyQp(ce.qp.native, QpState.RTS);
      id.establish();
      await server.next(CmEvent.ESTABLISHED);

      se.ctx.faults.deviceFatal();
      const removed = [await server.next(CmEvent.DEVICE_REMOVAL), await server.next(CmEvent.DEVICE_REMOVAL)];
      expect(new Set(removed.map((e) => e.id))).toEqual(new Set([listener, req.id]));
      // The client (on soft0) sees its peer go.
      expect(ce.ctx.deviceName).toBe('soft0');
      await client.next(CmEvent.DISCONNECTED);
      expectThrow(() => req.id.disconnect(), 'Error', { code: 'ENODEV' });
      ce.close();
      se.close();
    } finally {
      closeAll([server, client], ids);
    }
  });

  itSoft('a soft device answers on the addresses it was created with; softCmAddresses lists them, softCmServes knows them in any spelling', () => {
    expect(b.softCmServes('198.18.7.9')).toBe(false);
    softDevice('softcm1', ['198.18.7.1']);
    const all = b.softCmAddresses();
    expect(all.soft0).toEqual(['127.0.0.1', '::1']);
    expect(all.softcm1).toEqual(['198.18.7.1']);
    expect(['127.0.0.1', '::1', '0:0:0:0:0:0:0:1', '198.18.7.1'].map((h) => b.softCmServes(h))).toEqual([true, true, true, true]);
    expect(['198.18.7.2', '0.0.0.0', '::', 'localhost', ''].map((h) => b.softCmServes(h))).toEqual([false, false, false, false, false]);
    expectThrow(() => b.softCmServes(1 as unknown as string), 'TypeError');
    expectThrow(() => b.createSoftDevice({ name: 'softcm-dup', addresses: ['127.0.0.1'] }), 'Error', { code: 'EADDRINUSE' });
    expectThrow(() => b.createSoftDevice({ name: 'softcm-bad', addresses: ['localhost'] }), 'TypeError');
    expectThrow(() => b.createSoftDevice({ name: 'softcm-bad', addresses: 'x' as unknown as string[] }), 'TypeError');
    expect(b.listDevices().some((d) => d.name === 'softcm-dup' || d.name === 'softcm-bad')).toBe(false);
  });
});

describe('soft CM: the steps the channel takes itself (resolveAddr routeTimeoutMs, connect qp)', () => {
  /** Accepts the next request with a QP in RTS (its id joins `ids` to be closed). */
  async function acceptNext(server: EventLog, ids: NativeCmId[]): Promise<End> {
    const request = await server.next(CmEvent.CONNECT_REQUEST);
    ids.push(request.id);
    const end = new End(request.id);
    for (const s of [QpState.INIT, QpState.RTR, QpState.RTS]) request.id.modifyQp(end.qp.native, s);
    request.id.accept({ qpNum: end.qp.qpNum });
    return end;
  }

  itSoft('routeTimeoutMs: ROUTE_RESOLVED comes without ADDR_RESOLVED; qp: CONNECT_RESPONSE comes established with the QP in RTS, and data flows both ways', async () => {
    const { log: server, id: listener, port } = listening();
    const client = new EventLog(b.createCmChannel('soft'));
    const id = client.channel.createId();
    const ends: End[] = [];
    const ids: NativeCmId[] = [id];
    try {
      id.resolveAddr({ host: '127.0.0.1', port }, 1000, null, 1000);
      const routed = await client.next();
      expect(routed.type).toBe(CmEvent.ROUTE_RESOLVED);
      const mine = new End(id);
      ends.push(mine);
      id.modifyQp(mine.qp.native, QpState.INIT);
      id.connect({ qpNum: mine.qp.qpNum, privateData: Buffer.from('steps') }, mine.qp.native);
      const theirs = await acceptNext(server, ids);
      ends.push(theirs);
      const response = await client.next(CmEvent.CONNECT_RESPONSE);
      expect(response.established).toBe(true);
      expect(response.error).toBeUndefined();
      expect(mine.qp.state).toBe('RTS');
      await server.next(CmEvent.ESTABLISHED);
      expect(await exchange(mine, theirs, 4)).toBe(8);
      // Nothing else was delivered for the id: no ADDR_RESOLVED, no ESTABLISHED.
      expect(client.events.map((e) => e.type)).toEqual([CmEvent.ROUTE_RESOLVED, CmEvent.CONNECT_RESPONSE]);
    } finally {
      for (const e of ends) e.close();
      closeAll([server, client], [...ids, listener]);
    }
  });

  itSoft('a step that fails arrives as the event error (an errno Error), and a QP closed before the response leaves the steps to the caller', async () => {
    softDevice('softcm1', ['198.18.7.1']);
    const { log: server, id: listener, port } = listening();
    const client = new EventLog(b.createCmChannel('soft'));
    const ids: NativeCmId[] = [];
    const ends: End[] = [];
    try {
      // A QP of another device: INIT on CONNECT_RESPONSE fails.
      const a = client.channel.createId();
      ids.push(a);
      a.resolveAddr({ host: '127.0.0.1', port }, 1000, null, 1000);
      await client.next(CmEvent.ROUTE_RESOLVED);
      const right = new End(a);
      const other = new End(routedOther());
      ends.push(right, other);
      a.modifyQp(right.qp.native, QpState.INIT);
      a.connect({ qpNum: right.qp.qpNum }, other.qp.native);
      ends.push(await acceptNext(server, ids));
      const failed = await client.next(CmEvent.CONNECT_RESPONSE);
      expect(failed.established).toBeUndefined();
      // The addon's Error (another realm than jest's): an errno Error by its fields.
      expect(Object.prototype.toString.call(failed.error)).toBe('[object Error]');
      expect((failed.error as NodeJS.ErrnoException).code).toBe('EINVAL');
      expect(failed.error!.message).toMatch(/id's device/);

      // The QP closed between connect and the response: the event comes plain.
      const c = client.channel.createId();
      ids.push(c);
      c.resolveAddr({ host: '127.0.0.1', port }, 1000, null, 1000);
      await client.next(CmEvent.ROUTE_RESOLVED);
      const gone = new End(c);
      ends.push(gone);
      c.modifyQp(gone.qp.native, QpState.INIT);
      c.connect({ qpNum: gone.qp.qpNum }, gone.qp.native);
      gone.qp.close();
      ends.push(await acceptNext(server, ids));
      const response = await client.next(CmEvent.CONNECT_RESPONSE);
      expect(response.established).toBeUndefined();
      expect(response.error).toBeUndefined();
    } finally {
      for (const e of ends) e.close();
      closeAll([server, client], [...ids, listener]);
    }

    /** An id resolved on softcm1 (its device's QPs cannot serve a soft0 id). */
    function routedOther(): NativeCmId {
      const o = client.channel.createId();
      ids.push(o);
      o.bind({ host: '198.18.7.1', port: 0 });
      return o;
    }
  });

  itSoft('bad step arguments are TypeError/RangeError/EBADF before anything is sent', () => {
    const ch = quietChannel();
    const id = ch.createId();
    try {
      expectThrow(() => id.resolveAddr({ host: '127.0.0.1', port: 1 }, 1000, null, 0), 'RangeError');
      expectThrow(() => id.resolveAddr({ host: '127.0.0.1', port: 1 }, 1000, null, 'x' as unknown as number), 'TypeError');
      expect(ch.readEvents()).toEqual([]);
      expectThrow(() => id.connect({ qpNum: 1 }, {} as never), 'TypeError');
      expectThrow(() => id.connect({ qpNum: 1 }, 7 as never), 'TypeError');
      expectThrow(() => id.connect({ qpNum: 1 }, id as never), 'TypeError');
      const ctx = b.openDevice('soft0');
      try {
        const pd = ctx.allocPd();
        const cq = ctx.createCq(4, null);
        const qp = pd.createQp(cq, cq, { maxSendWr: 1, maxRecvWr: 1, maxSendSge: 1, maxRecvSge: 1 });
        qp.close();
        expectThrow(() => id.connect({ qpNum: 1 }, qp), 'Error', { code: 'EBADF' });
        pd.close();
        cq.close();
      } finally {
        ctx.close();
      }
      expect(ch.readEvents()).toEqual([]);
    } finally {
      id.close();
      ch.close();
    }
  });
});

describe('soft CM: channels', () => {
  itSoft('an accepted id migrated to its own channel outlives the listener and its channel: data and DISCONNECTED still flow', async () => {
    const c = await softConnection();
    const own = new EventLog(b.createCmChannel('soft'));
    try {
      c.accepted.migrate(own.channel);
      expect(c.accepted.channel).toBe(own.channel);
      c.listener.close();
      c.server.close();
      c.server.channel.close();
      expect(c.server.channel.closed).toBe(true);
      expect(await exchange(c.clientEnd, c.serverEnd, 4)).toBe(8);
      c.connecting.disconnect();
      expect((await own.next(CmEvent.DISCONNECTED)).id).toBe(c.accepted);
      await c.client.next(CmEvent.DISCONNECTED);
    } finally {
      c.close();
      own.close();
      own.channel.close();
    }
  });

  itSoft('events not yet read follow a migrated id to its new channel', async () => {
    const c = await softConnection();
    const quiet = quietChannel();
    try {
      c.client.channel.watch(false);
      c.accepted.disconnect();
      c.connecting.migrate(quiet);
      const evs = quiet.readEvents();
      expect(evs.map((e) => [e.type, e.id])).toEqual([[CmEvent.DISCONNECTED, c.connecting]]);
      c.connecting.migrate(c.client.channel);
      c.client.channel.watch(true);
    } finally {
      c.close();
      quiet.close();
    }
  });

  itSoft('a channel still used by ids refuses to close (EBUSY) and keeps working; it closes once they are closed', async () => {
    const log = new EventLog(b.createCmChannel('soft'));
    const id = log.channel.createId();
    try {
      expectThrow(() => log.channel.close(), 'Error', { code: 'EBUSY', syscall: 'rdma_destroy_event_channel' });
      expect(log.channel.closed).toBe(false);
      id.resolveAddr({ host: '127.0.0.1', port: 1 }, 1000);
      await log.next(CmEvent.ADDR_RESOLVED);
    } finally {
      id.close();
      log.close();
      log.channel.close();
      log.channel.close();
    }
    expect(log.channel.fd).toBe(-1);
    expectThrow(() => log.channel.createId(), 'Error', { code: 'EBADF' });
  });

  itSoft('200 connect/close cycles leave the fd count and the live objects where they were', async () => {
    const fs = await import('fs');
    const fds = () => fs.readdirSync('/proc/self/fd').length;
    const { log: server, id: listener, port } = listening(64);
    const client = new EventLog(b.createCmChannel('soft'));
    const cycle = async () => {
      const id = await routed(client, port);
      id.connect({ qpNum: 0x33 });
      const req = await server.next(CmEvent.CONNECT_REQUEST);
      req.id.accept({ qpNum: 0x34 });
      await client.next(CmEvent.CONNECT_RESPONSE);
      id.establish();
      await server.next(CmEvent.ESTABLISHED);
      id.close();
      await server.next(CmEvent.DISCONNECTED);
      req.id.close();
    };
    try {
      for (let i = 0; i < 10; i++) await cycle(); // warm up
      const before = { fds: fds(), live: b.liveObjects() };
      for (let i = 0; i < 200; i++) await cycle();
      expect({ fds: fds(), live: b.liveObjects() }).toEqual(before);
    } finally {
      closeAll([server, client], [listener]);
    }
  });
});

describe('soft CM: bad input and misuse', () => {
  let log: EventLog;
  let id: NativeCmId;
  beforeEach(() => {
    log = new EventLog(b.createCmChannel('soft'));
    id = log.channel.createId();
  });
  afterEach(() => closeAll([log], [id]));

  itSoft('createCmChannel takes "rdmacm" or "soft"; createId a known port space', () => {
    expectRefusals([
      ['an unknown provider', () => b.createCmChannel('nope' as 'soft'), 'TypeError'],
      ['a provider that is not a string', () => b.createCmChannel(1 as unknown as 'soft'), 'TypeError'],
      ['an unknown port space', () => log.channel.createId(7), 'RangeError'],
      ['a port space that is not a number', () => log.channel.createId('x' as unknown as number), 'TypeError'],
      ['the UDP port space', () => log.channel.createId(0x0111), 'Error', 'EPROTONOSUPPORT'],
      ['an owner without a handler', () => log.channel.setOwner({} as never), 'TypeError'],
    ]);
  });

  itSoft('addresses: a numeric host (TypeError otherwise, names are never resolved) and a port 0..65535 (RangeError)', () => {
    for (const bad of [undefined, null, 'x', { host: 'localhost', port: 1 }, { host: 1, port: 1 }, { host: '127.0.0.1' }, { host: '1.2.3.4.5', port: 1 }]) {
      expectThrow(() => id.bind(bad as never), 'TypeError');
    }
    for (const port of [-1, 65536, 1.5, NaN, Infinity]) expectThrow(() => id.bind({ host: '127.0.0.1', port }), 'RangeError');
    expectThrow(() => id.resolveAddr({ host: 'example.com', port: 1 }, 100), 'TypeError');
    expectThrow(() => id.resolveAddr({ host: '127.0.0.1', port: 1 }, 100, { host: 'a', port: 0 }), 'TypeError');
    expect(id.localAddress).toBeNull();
  });

  itSoft('timeouts are positive integers, backlogs non-negative', () => {
    expectRefusals([
      ...[0, -5, 1.5, 2 ** 31].map((t): Refusal => [`resolveAddr timeout ${t}`, () => id.resolveAddr({ host: '127.0.0.1', port: 1 }, t), 'RangeError']),
      ['a resolveAddr timeout that is not a number', () => id.resolveAddr({ host: '127.0.0.1', port: 1 }, '5' as unknown as number), 'TypeError'],
      ['resolveRoute timeout 0', () => id.resolveRoute(0), 'RangeError'],
      ['backlog -1', () => id.listen(-1), 'RangeError'],
      ['a backlog that is not a number', () => id.listen('1' as unknown as number), 'TypeError'],
    ]);
  });

  itSoft('private data: 56 bytes to connect, 196 to accept, 148 to reject; one more is a RangeError before anything is sent', async () => {
    const { log: server, id: listener, port } = listening();
    const cid = await routed(log, port);
    try {
      expectThrow(() => cid.connect({ qpNum: 1, privateData: Buffer.alloc(57) }), 'RangeError');
      expectThrow(() => cid.connect({ qpNum: 1, privateData: 'x' as unknown as Uint8Array }), 'TypeError');
      expectThrow(() => cid.connect({ qpNum: 1, privateData: new Uint16Array(2) as unknown as Uint8Array }), 'TypeError');
      expectThrow(() => cid.connect({ qpNum: 2 ** 24 }), 'RangeError');
      expectThrow(() => cid.connect({} as never), 'TypeError');
      expectThrow(() => cid.connect({ qpNum: 1, retryCount: 8 }), 'RangeError');
      expectThrow(() => cid.connect({ qpNum: 1, srq: 1 as unknown as boolean }), 'TypeError');
      expect(server.pending).toBe(0);
      // Every length up to the limit arrives as it was sent.
      for (let len = 0; len <= 56; len++) {
        const one = len === 56 ? cid : await routed(log, port);
        const data = Buffer.alloc(len, len);
        one.connect({ qpNum: 1, privateData: data });
        const req = await server.next(CmEvent.CONNECT_REQUEST);
        expect(req.privateData).toEqual(data);
        if (len === 56) {
          expectThrow(() => req.id.accept({ qpNum: 2, privateData: Buffer.alloc(197) }), 'RangeError');
          expectThrow(() => req.id.reject(Buffer.alloc(149)), 'RangeError');
          req.id.reject(Buffer.alloc(148, 1));
          expect((await log.next(CmEvent.REJECTED)).privateData).toEqual(Buffer.alloc(148, 1));
        } else {
          req.id.accept({ qpNum: 2, privateData: Buffer.alloc(196, 2) });
          expect((await log.next(CmEvent.CONNECT_RESPONSE)).privateData).toEqual(Buffer.alloc(196, 2));
          one.close();
          await server.next(CmEvent.REJECTED);
        }
        req.id.close();
      }
    } finally {
      closeAll([server], [cid, listener]);
    }
  });

  itSoft('state misuse is an errno Error: bind twice, listen unbound, connect before the route or on a listener, connect twice, establish early', async () => {
    // A fresh id: nothing but bind and resolveAddr makes sense yet.
    expectRefusals([
      ['listen unbound', () => id.listen(1), 'Error', 'EINVAL'],
      ['resolveRoute before the address', () => id.resolveRoute(100), 'Error', 'EINVAL'],
      ['connect before the route', () => id.connect({ qpNum: 1 }), 'Error', 'EINVAL'],
      ['establish before connecting', () => id.establish(), 'Error', 'EINVAL'],
      ['disconnect unconnected', () => id.disconnect(), 'Error', 'EINVAL'],
      ['accept without a request', () => id.accept({ qpNum: 1 }), 'Error', 'EINVAL'],
      ['openContext with no device', () => id.openContext(), 'Error', 'ENODEV'],
      ['bind to an address no device has', () => id.bind({ host: '192.0.2.1', port: 0 }), 'Error', 'EADDRNOTAVAIL'],
    ]);
    id.bind({ host: '127.0.0.1', port: 0 });
    expectThrow(() => id.bind({ host: '127.0.0.1', port: 0 }), 'Error', { code: 'EINVAL' });
    id.listen(0);
    expectThrow(() => id.connect({ qpNum: 1 }), 'Error', { code: 'EINVAL' });
    expectThrow(() => id.resolveAddr({ host: '127.0.0.1', port: 1 }, 100), 'Error', { code: 'EINVAL' });
    const other = log.channel.createId();
    try {
      expectThrow(() => other.bind({ host: '127.0.0.1', port: id.localAddress!.port }), 'Error', { code: 'EADDRINUSE' });
      expectThrow(() => other.bind({ host: '0.0.0.0', port: id.localAddress!.port }), 'Error', { code: 'EADDRINUSE' });
      other.resolveAddr({ host: '127.0.0.1', port: id.localAddress!.port }, 100);
      await log.next(CmEvent.ADDR_RESOLVED);
      other.resolveRoute(100);
      await log.next(CmEvent.ROUTE_RESOLVED);
      other.connect({ qpNum: 1 });
      expectThrow(() => other.connect({ qpNum: 1 }), 'Error', { code: 'EISCONN' });
      expectThrow(() => other.establish(), 'Error', { code: 'EINVAL' });
      const req = await log.next(CmEvent.CONNECT_REQUEST);
      req.id.close();
    } finally {
      other.close();
    }
  });

  itSoft('modifyQp: a Qp and a state (1, 2, 3 or 6); a QP of another device is EINVAL, RTR before the peer is known is EINVAL', async () => {
    softDevice('softcm1', ['198.18.7.1']);
    id.resolveAddr({ host: '127.0.0.1', port: 9 }, 100);
    await log.next(CmEvent.ADDR_RESOLVED);
    const here = new End(id);
    const other = log.channel.createId();
    other.bind({ host: '198.18.7.1', port: 0 });
    const there = new End(other);
    try {
      expectThrow(() => id.modifyQp({} as never, 1), 'TypeError');
      expectThrow(() => id.modifyQp(here.ctx.native as never, 1), 'TypeError');
      expectThrow(() => id.modifyQp(here.qp.native, 4), 'RangeError');
      expectThrow(() => id.modifyQp(here.qp.native, '1' as unknown as number), 'TypeError');
      expectThrow(() => id.modifyQp(there.qp.native, QpState.INIT), 'Error', { code: 'EINVAL' });
      id.modifyQp(here.qp.native, QpState.INIT);
      expectThrow(() => id.modifyQp(here.qp.native, QpState.RTR), 'Error', { code: 'EINVAL' });
      id.modifyQp(here.qp.native, QpState.ERR);
      expect(here.qp.state).toBe('ERR');
      here.qp.close();
      expectThrow(() => id.modifyQp(here.qp.native, QpState.INIT), 'Error', { code: 'EBADF' });
    } finally {
      here.close();
      there.close();
      other.close();
    }
  });

  itSoft('a bad call leaves everything else working', async () => {
    expectThrow(() => id.bind({ host: 'nope', port: 1 }), 'TypeError');
    const c = await softConnection();
    try {
      expectThrow(() => c.accepted.migrate({} as never), 'TypeError');
      expectThrow(() => c.connecting.connect({ qpNum: 1, privateData: Buffer.alloc(100) }), 'RangeError');
      expect(await exchange(c.clientEnd, c.serverEnd, 2)).toBe(4);
    } finally {
      c.close();
    }
    expect(await waitFor(() => true)).toBe(true);
  });
});

describe('soft CM: arbitrary input', () => {
  itSoft('random arguments to every CmId method: each call works or throws a TypeError, a RangeError or an errno Error; nothing leaks', () => {
    const trap = new Error('from a getter');
    const values: unknown[] = [
      undefined, null, 0, -1, 1, 2, 3, 6, 2 ** 31, NaN, 'x', '127.0.0.1', {}, [], Buffer.alloc(10),
      { host: '127.0.0.1', port: 0 }, { host: '::1', port: 1 }, { host: '198.19.0.1', port: 5 },
      { qpNum: 1 }, { qpNum: 1, privateData: Buffer.alloc(300) }, () => 0,
      new Proxy({}, { get: () => { throw trap; } }),
    ];
    const live0 = b.liveObjects();
    const a = quietChannel();
    const c = quietChannel();
    const ids = [a.createId(), a.createId(), c.createId()];
    const methods = ['bind', 'listen', 'resolveAddr', 'resolveRoute', 'openContext', 'servesContext', 'modifyQp', 'connect', 'accept', 'reject', 'establish', 'disconnect', 'migrate'] as const;
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const odd: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const id = ids[i % ids.length];
      const m = methods[rnd(methods.length)];
      const args = [values[rnd(values.length)], values[rnd(values.length)], values[rnd(values.length)], values[rnd(values.length)]];
      if (m === 'migrate' && rnd(2) === 0) args[0] = rnd(2) ? a : c;
      try {
        const r = (id[m] as (...x: unknown[]) => unknown)(...args) as { close?: () => void } | undefined;
        r?.close?.();
      } catch (err) {
        const e = err as Error & { code?: string };
        if (e !== trap && e.name !== 'TypeError' && e.name !== 'RangeError' && !/^E[A-Z]+$/.test(e.code ?? '')) odd.push(`${m}: ${e.name} ${e.message}`);
      }
      for (const ch of [a, c]) for (const ev of ch.readEvents()) if (ev.type === CmEvent.CONNECT_REQUEST) ev.id.close();
    }
    for (const id of ids) id.close();
    a.close();
    c.close();
    expect(odd).toEqual([]);
    expect(b.liveObjects()).toBe(live0);
  });

  itSoft('a getter that closes the id or the channel while its arguments are read: EBADF, never a use after free', () => {
    const ch = quietChannel();
    let id = ch.createId();
    const closing = (v: unknown) => ({ get host() { id.close(); return v; }, port: 0 });
    expectThrow(() => id.bind(closing('127.0.0.1') as never), 'Error', { code: 'EBADF' });
    id = ch.createId();
    expectThrow(() => id.connect({ get qpNum() { id.close(); return 1; } } as never), 'Error', { code: 'EBADF' });
    id = ch.createId();
    expectThrow(() => id.resolveAddr({ host: '127.0.0.1', port: 1 }, { valueOf: () => 5 } as never), 'TypeError');
    const other = quietChannel();
    other.close();
    expectThrow(() => id.migrate(other), 'Error', { code: 'EBADF' });
    id.close();
    ch.close();
  });
});

describe('rdma_cm provider', () => {
  it('rdmacmStatus says whether an rdmacm channel can be made here; where not, making one is an errno Error with the same reason', () => {
    const status = b.rdmacmStatus();
    expect(typeof status.available).toBe('boolean');
    if (!status.available) {
      // librdmacm is missing (or the build had no headers for it), or it
      // loads and the kernel has no RDMA CM (a host without RDMA devices).
      expect(status.reason).toMatch(/librdmacm|the kernel's RDMA CM \(\/dev\/infiniband\/rdma_cm\)/);
      const err = expectThrow(() => b.createCmChannel('rdmacm'), 'Error', { syscall: 'rdma_create_event_channel' });
      expect(err.code).toMatch(/^E[A-Z]+$/);
      expect(err.message).toContain(status.reason);
      return;
    }
    // A kernel with an RDMA CM (the rxe guests): the channel and an id work.
    const ch = b.createCmChannel('rdmacm');
    expect(ch.provider).toBe('rdmacm');
    const id = ch.createId();
    expect(id.localAddress).toBeNull();
    expectThrow(() => id.openContext(), 'Error', { code: 'ENODEV' });
    expectThrow(() => ch.close(), 'Error', { code: 'EBUSY' });
    id.close();
    ch.close();
  });
});
