/**
 * The connection manager over the raw binding (NativeCmChannel / NativeCmId),
 * for the native CM suites: an event log fed by the channel's poller, the
 * verbs side of one end of a connection (built on the id's own device), and
 * the whole librdmacm sequence for ids without a QP, played by both ends.
 * Not a test file itself.
 */
import { binding, NativeCmChannel, NativeCmEvent, NativeCmId } from '../../src/native/binding';
import { Context, Cq, Mr, Pd, Qp, WcBatch } from '../../src';
import { scaled } from './slow';

/** librdmacm's event type numbers. */
export const CmEvent = {
  ADDR_RESOLVED: 0,
  ADDR_ERROR: 1,
  ROUTE_RESOLVED: 2,
  ROUTE_ERROR: 3,
  CONNECT_REQUEST: 4,
  CONNECT_RESPONSE: 5,
  CONNECT_ERROR: 6,
  UNREACHABLE: 7,
  REJECTED: 8,
  ESTABLISHED: 9,
  DISCONNECTED: 10,
  DEVICE_REMOVAL: 11,
} as const;

/** QP states `modifyQp` takes. */
export const QpState = { INIT: 1, RTR: 2, RTS: 3, ERR: 6 } as const;

/**
 * What one CM channel delivered, in order, through its poller
 * (`handleCmEvents`): `next()` waits for the next event not yet taken.
 */
export class EventLog {
  readonly events: NativeCmEvent[] = [];
  private taken = 0;
  private wake: (() => void) | undefined;

  constructor(readonly channel: NativeCmChannel) {
    channel.setOwner(this);
    channel.watch(true);
  }

  handleCmEvents(events: NativeCmEvent[]): void {
    this.events.push(...events);
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** The next event (of `type`, when given: others before it are an error). */
  async next(type?: number, ms = 5000): Promise<NativeCmEvent> {
    const deadline = Date.now() + scaled(ms);
    while (this.taken >= this.events.length) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no CM event within ${ms} ms (waiting for ${type ?? 'any'})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    const ev = this.events[this.taken++];
    if (type !== undefined && ev.type !== type) {
      throw new Error(`expected CM event ${type}, got ${ev.type} (status ${ev.status})`);
    }
    return ev;
  }

  /** Events delivered and not yet taken. */
  get pending(): number {
    return this.events.length - this.taken;
  }

  close(): void {
    if (!this.channel.closed) this.channel.watch(false);
  }
}

/** The verbs side of one end of a connection, on the id's own device. */
export class End {
  readonly ctx: Context;
  readonly pd: Pd;
  readonly cq: Cq;
  readonly qp: Qp;
  readonly mr: Mr;
  readonly buf: Buffer;

  constructor(readonly id: NativeCmId, readonly slots = 8, readonly slotSize = 256) {
    this.ctx = new Context(id.openContext());
    this.cq = this.ctx.createCq({ cqe: 4 * slots });
    this.pd = this.ctx.allocPd();
    this.qp = this.pd.createQp({
      sendCq: this.cq,
      recvCq: this.cq,
      cap: { maxSendWr: slots, maxRecvWr: slots, maxSendSge: 1, maxRecvSge: 1 },
    });
    this.buf = Buffer.alloc(2 * slots * slotSize);
    this.mr = this.pd.registerMemory(this.buf, { access: ['LOCAL_WRITE'] });
  }

  /** Receive slot i (the first half of the buffer). */
  recvSlot(i: number): Buffer {
    return this.buf.subarray(i * this.slotSize, (i + 1) * this.slotSize);
  }

  /** Posts a receive on every slot. */
  postRecvs(): void {
    for (let i = 0; i < this.slots; i++) {
      this.qp.postRecv({ wrId: i, sg: { mr: this.mr, offset: i * this.slotSize, length: this.slotSize } });
    }
  }

  /** Sends `data` (at most slotSize bytes) from send slot i. */
  send(i: number, data: Buffer): void {
    const off = (this.slots + i) * this.slotSize;
    data.copy(this.buf, off);
    this.qp.postSend({ wrId: 1000 + i, sg: { mr: this.mr, offset: off, length: data.length }, signaled: true });
  }

  /** Polls until `n` completions came (or the deadline passed). */
  async completions(n: number, ms = 5000): Promise<WcBatch> {
    const got: WcBatch[] = [];
    let count = 0;
    const deadline = Date.now() + scaled(ms);
    while (count < n && Date.now() < deadline) {
      const b = this.cq.poll(n - count);
      if (b.length > 0) {
        got.push(b);
        count += b.length;
      } else {
        await new Promise((r) => setImmediate(r));
      }
    }
    return WcBatch.concat(got);
  }

  close(): void {
    this.ctx.close();
  }
}

/** Message i of side `tag`: deterministic bytes of varying length. */
export function message(tag: string, i: number): Buffer {
  return Buffer.from(`${tag}:${i}:`.padEnd(16 + ((i * 37) % 200), String.fromCharCode(97 + (i % 26))));
}

/**
 * Sends `n` messages (at most `a.slots`) each way and checks every byte
 * arrived; returns how many were verified.
 */
export async function exchange(a: End, b: End, n: number): Promise<number> {
  a.postRecvs();
  b.postRecvs();
  for (let i = 0; i < n; i++) {
    a.send(i, message('a', i));
    b.send(i, message('b', i));
  }
  let verified = 0;
  for (const [end, from] of [[a, 'b'], [b, 'a']] as const) {
    const wcs = await end.completions(2 * n);
    if (wcs.length !== 2 * n) throw new Error(`expected ${2 * n} completions, got ${wcs.length}`);
    for (let k = 0; k < wcs.length; k++) {
      const wc = wcs.at(k)!;
      if (wc.status !== 'SUCCESS') throw new Error(`completion ${k} failed with status ${wc.status}`);
      if (wc.opcode !== 'RECV') continue; // a send's completion
      const i = Number(wc.wrId);
      const want = message(from, i);
      if (wc.byteLen !== want.length || !end.recvSlot(i).subarray(0, want.length).equals(want)) {
        throw new Error(`message ${i} from ${from} arrived wrong`);
      }
      verified++;
    }
  }
  return verified;
}

/** A listener, a client and an accepted connection between them (soft CM). */
export interface SoftConnection {
  server: EventLog;
  client: EventLog;
  listener: NativeCmId;
  /** The accepted id (from CONNECT_REQUEST). */
  accepted: NativeCmId;
  /** The connecting id. */
  connecting: NativeCmId;
  serverEnd: End;
  clientEnd: End;
  request: NativeCmEvent;
  response: NativeCmEvent;
  /** Closes everything, ids before their channels (idempotent). */
  close(): void;
}

/** Options of {@link softConnection}. */
export interface SoftConnectionOptions {
  host?: string;
  connectData?: Uint8Array;
  acceptData?: Uint8Array;
}

/** The whole sequence on the soft CM, as an application would play it. */
export async function softConnection(options: SoftConnectionOptions = {}): Promise<SoftConnection> {
  const b = binding();
  const host = options.host ?? '127.0.0.1';
  const server = new EventLog(b.createCmChannel('soft'));
  const client = new EventLog(b.createCmChannel('soft'));
  const listener = server.channel.createId();
  listener.bind({ host, port: 0 });
  listener.listen(8);
  const connecting = client.channel.createId();
  connecting.resolveAddr({ host, port: listener.localAddress!.port }, 1000);
  await client.next(CmEvent.ADDR_RESOLVED);
  connecting.resolveRoute(1000);
  await client.next(CmEvent.ROUTE_RESOLVED);
  const clientEnd = new End(connecting);
  connecting.modifyQp(clientEnd.qp.native, QpState.INIT);
  connecting.connect({ qpNum: clientEnd.qp.qpNum, privateData: options.connectData });
  const request = await server.next(CmEvent.CONNECT_REQUEST);
  const accepted = request.id;
  const serverEnd = new End(accepted);
  for (const s of [QpState.INIT, QpState.RTR, QpState.RTS]) accepted.modifyQp(serverEnd.qp.native, s);
  accepted.accept({ qpNum: serverEnd.qp.qpNum, privateData: options.acceptData });
  const response = await client.next(CmEvent.CONNECT_RESPONSE);
  connecting.modifyQp(clientEnd.qp.native, QpState.RTR);
  connecting.modifyQp(clientEnd.qp.native, QpState.RTS);
  connecting.establish();
  await client.next(CmEvent.ESTABLISHED);
  await server.next(CmEvent.ESTABLISHED);
  const all = { server, client, listener, accepted, connecting, serverEnd, clientEnd, request, response };
  return {
    ...all,
    close() {
      clientEnd.close();
      serverEnd.close();
      for (const id of [connecting, accepted, listener]) id.close();
      for (const log of [server, client]) {
        log.close();
        log.channel.close();
      }
    },
  };
}
