import type { TransportMr, TransportPd } from './transport';

interface Entry {
  mr: TransportMr;
  /** Where the registered bytes start in their `ArrayBuffer`, and how many. */
  offset: number;
  length: number;
  /** Rendezvous in flight that the peer may still READ through it. */
  uses: number;
}

/**
 * Registrations of the memory behind large messages, so a sender that
 * reuses its buffers makes no `ibv_reg_mr` in steady state. Each entry
 * registers exactly the bytes of one message's view for remote READ (the
 * peer can read those and nothing else of the `ArrayBuffer` around them),
 * and is found again by backing store and range: a later message in the
 * same bytes, or inside them, hits. At most `maxEntries` are kept, the
 * least recently used one that no rendezvous still needs going first. An
 * entry keeps its `ArrayBuffer` alive (the device may read it) until
 * evicted or the layer closes.
 */
export class RegistrationCache {
  /** By backing store; most recently used last (a Map keeps insertion order). */
  private readonly entries = new Map<Entry, ArrayBuffer>();
  private readonly byBacking = new WeakMap<ArrayBuffer, Entry[]>();
  /** `ibv_reg_mr` calls made. */
  registrations = 0;
  /** Lookups that found a registration. */
  hits = 0;

  constructor(
    private readonly pd: TransportPd,
    private readonly maxEntries = 64,
  ) {}

  /**
   * The region covering `bytes` and where they start in it, held until
   * {@link RegistrationCache.done}.
   */
  acquire(bytes: Uint8Array): { mr: TransportMr; addr: bigint; entry: Entry } {
    const backing = bytes.buffer as ArrayBuffer;
    const start = bytes.byteOffset;
    const end = start + bytes.byteLength;
    const list = this.byBacking.get(backing) ?? [];
    let entry = list.find((e) => !e.mr.closed && e.offset <= start && end <= e.offset + e.length);
    if (entry) {
      this.hits++;
      this.entries.delete(entry);
      this.entries.set(entry, backing);
    } else {
      this.evict();
      entry = { mr: this.pd.registerMemory(bytes, { access: ['LOCAL_WRITE', 'REMOTE_READ'] }), offset: start, length: bytes.byteLength, uses: 0 };
      this.registrations++;
      list.push(entry);
      this.byBacking.set(backing, list);
      this.entries.set(entry, backing);
    }
    entry.uses++;
    return { mr: entry.mr, addr: entry.mr.addr + BigInt(start - entry.offset), entry };
  }

  /** The peer is done reading through `entry`. */
  done(entry: Entry): void {
    entry.uses--;
  }

  /** Deregisters everything (the layer closes; nothing may be read any more). */
  close(): void {
    for (const entry of this.entries.keys()) entry.mr.close();
    this.entries.clear();
  }

  private evict(): void {
    if (this.entries.size < this.maxEntries) return;
    for (const [entry, backing] of this.entries) {
      if (entry.uses > 0) continue;
      entry.mr.close();
      this.entries.delete(entry);
      const list = this.byBacking.get(backing);
      if (list) list.splice(list.indexOf(entry), 1);
      return;
    }
  }
}
