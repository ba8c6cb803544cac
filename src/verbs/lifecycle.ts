/**
 * Parent/child bookkeeping for the verbs objects: a parent closes its live
 * children newest first before itself, which is the safe destroy order
 * (QP, CQ, channel, MR, PD, context), and every close is idempotent.
 */
export interface Closable {
  /** Releases the object; idempotent. */
  close(): void;
  /** True once closed. */
  readonly closed: boolean;
}

/** The set of live children of one verbs object. */
export class Children {
  private readonly live = new Set<Closable>();

  /** Tracks a child; returns it. */
  add<T extends Closable>(child: T): T {
    this.live.add(child);
    return child;
  }

  /** Forgets a child (it closed itself). */
  delete(child: Closable): void {
    this.live.delete(child);
  }

  /** The live children, oldest first. */
  list(): Closable[] {
    return [...this.live];
  }

  /** How many children are alive. */
  get size(): number {
    return this.live.size;
  }

  /**
   * Closes every child (or those `which` selects), newest first. The first
   * error is rethrown after trying all.
   */
  closeAll(which: (child: Closable) => boolean = () => true): void {
    let first: unknown;
    for (const child of [...this.live].reverse()) {
      if (!which(child)) continue;
      try {
        child.close();
      } catch (err) {
        first ??= err;
      }
      if (child.closed) this.live.delete(child);
    }
    if (first !== undefined) throw first;
  }
}
