/**
 * The messages suite's verbs floor (bench/suites/messages-raw.ts) claims to
 * be the least JS that speaks the message layer's wire format: here it
 * talks to a real MessageConnection on soft0, both ways, with
 * `rnrRetryCount: 0` (a credit it got wrong would fail a completion). Its
 * set-up is written by hand from the wire format's description, as the
 * suite's C++ peer writes it.
 */
import { firstValueFrom } from 'rxjs';
import { acceptMessages, connect, listen, Message } from '../../src';
import { CREDIT, Credits, EAGER, HEADER_BYTES, postMessage, RawEnd, readMessage, SMALL } from '../../bench/suites/messages-raw';

/** Version 1, maxEager 8192, depth 64, maxMessage 256 MiB. */
function setupBytes(): Uint8Array {
  const b = Buffer.alloc(16);
  b.write('RXM', 0, 'latin1');
  b.writeUInt8(1, 3);
  b.writeUInt32LE(8192, 4);
  b.writeUInt16LE(64, 8);
  b.writeUInt32LE(256 << 20, 12);
  return b;
}

describe("the messages bench's wire-format floor against the message layer", () => {
  it('its messages reach messages$ and the layer\'s reach it, on credits both ways: no RNR, nothing lost, in order', async () => {
    const listener = listen({ host: '127.0.0.1', port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r));
    // What the layer asks of a peer of depth 64: 88 receives (64 and the reserve: 8 for CREDITs, 16 for DONEs), 92 sends.
    const conn = await connect({ host: '127.0.0.1', port: listener.address!.port, rnrRetryCount: 0, privateData: setupBytes(), cap: { maxSendWr: 92, maxRecvWr: 88 }, cqe: 92 });
    const layer = await accepted;
    const end = new RawEnd(conn);
    try {
      expect(layer.peerLimits).toEqual({ maxEager: 8192, depth: 64, maxMessage: 256 << 20 });
      const credits = new Credits(end.slots);
      const n = 1000;
      const fromLayer = 300;
      let sent = 0;
      const seen: number[] = [];
      const failed = new Promise<never>((_, reject) => (end.fail = reject));
      const pump = () => {
        while (sent < n && credits.canSendData && end.canSend) {
          const slot = end.take();
          end.sendBytes.fill(sent & 0xff, slot * RawEnd.SLOT + HEADER_BYTES, (slot + 1) * RawEnd.SLOT);
          postMessage(end, credits, EAGER, SMALL, slot);
          sent++;
        }
        if (credits.creditDue && end.canSend) postMessage(end, credits, CREDIT, 0);
      };
      end.onRecv = (slot, byteLen) => {
        if (readMessage(end, credits, slot, byteLen) === EAGER) seen.push(end.recvBytes[slot * RawEnd.SLOT + HEADER_BYTES]);
        end.postRecv(slot);
        credits.reposted();
      };
      end.after = pump;
      // The floor -> the layer: far more than the 70 receives the layer posted.
      const got: number[] = [];
      const all = new Promise<void>((resolve) =>
        layer.messages$.subscribe((m: Message) => {
          expect(m.length).toBe(SMALL);
          got.push(m.data[SMALL - 1]);
          m.release();
          if (got.length === n) resolve();
        }),
      );
      pump();
      await Promise.race([all, failed]);
      expect(got).toEqual(Array.from({ length: n }, (_, i) => i & 0xff));
      // The layer -> the floor, which answers with CREDITs.
      await Promise.race([Promise.all(Array.from({ length: fromLayer }, (_, i) => layer.send(Buffer.alloc(SMALL, i & 0xff)))), failed]);
      const until = Date.now() + 5000;
      while (seen.length < fromLayer && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
      expect(seen).toEqual(Array.from({ length: fromLayer }, (_, i) => i & 0xff));
      expect(layer.stats.creditStalls).toBeGreaterThan(0);
      expect(layer.stats.creditMessages).toBeGreaterThan(0);
      expect(layer.closed).toBe(false);
    } finally {
      end.close();
      layer.close();
      conn.close();
      listener.close();
    }
  });
});
