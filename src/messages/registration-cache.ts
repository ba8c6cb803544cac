import type { TransportMr, TransportPd } from './transport';

interface Entry {
  mr: TransportMr;
  /** Rendezvous in flight that the peer may still READ through it. */
  uses: number;
}

/**
 * Registrations of the memory behind large messages, keyed by backing
 * store (the `ArrayBuffer`), so a sender that reuses its buffers makes no
 * `ibv_reg_mr` in steady state. Each entry registers the whole
 * `ArrayBuffer` for remote READ; at most `maxEntries` are kept, the least
 * recently used one that no rendezvous still needs going first. An entry
 * keeps its `ArrayBuffer` alive (the device may read it) until evicted or
 * the layer closes.
 */
export class RegistrationCache {
  private readonly entries = new Map<ArrayBuffer, Entry>();
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
    let entry = this.entries.get(backing);
    if (entry && !entry.mr.closed) {
      this.hits++;
      // Most recently used last.
      this.entries.delete(backing);
      this.entries.set(backing, entry);
    } else {
      this.evict();
      entry = { mr: this.pd.registerMemory(backing, { access: ['LOCAL_WRITE', 'REMOTE_READ'] }), uses: 0 };
      this.registrations++;
      this.entries.set(backing, entry);
    }
    entry.uses++;
    return { mr: entry.mr, addr: entry.mr.addr + BigInt(bytes.byteOffset), entry };
  }

  /** The peer is done reading through `entry`. */
  done(entry: Entry): void {
    entry.uses--;
  }

  /** Deregisters everything (the layer closes; nothing may be read any more). */
  close(): void {
    for (const entry of this.entries.values()) entry.mr.close();
    this.entries.clear();
  }

  private evict(): void {
    if (this.entries.size < this.maxEntries) return;
    for (const [backing, entry] of this.entries) {
      if (entry.uses > 0) continue;
      entry.mr.close();
      this.entries.delete(backing);
      return;
    }
  }
}
