import { ObjectKind, TEARDOWN_ORDER } from '../core/refusals';

/**
 * Parent/child bookkeeping for the verbs objects. A parent files each child
 * under its kind; closing the parent closes its children, and theirs, in the
 * rule book's teardown order (`TEARDOWN_ORDER` in src/core/refusals.ts, the
 * addon's rules/children.h), so no destroy is refused for a child that is
 * still in use. Every close is idempotent. Whether an object may go while
 * children remain is the addon's rule (EBUSY), not restated here.
 */
export interface Closable {
  /** Releases the object; idempotent. */
  close(): void;
  /** True once closed. */
  readonly closed: boolean;
  /**
   * What a parent's teardown does first, before any child closes, so that
   * this one's close cannot be refused (a CQ acks the events read from it).
   */
  settle?(): void;
  /** Its own children (a PD's MRs and QPs), closed with its parent's. */
  readonly children?: Children;
}

/** A verbs object that keeps a teardown list of its children (a context, a PD). */
export interface Parent {
  /** Takes a child that closed itself off the list. */
  forget(child: Closable): void;
}

/**
 * @internal Destroys a child (a QP, an SRQ, an address handle) once, and
 * takes it off its parent's teardown list.
 * @return false when it was closed already (close is idempotent).
 */
export function closeChildOf(parent: Parent, child: Closable, native: { readonly closed: boolean; close(): void }): boolean {
  if (native.closed) return false;
  native.close();
  parent.forget(child);
  return true;
}

/** The live children of one verbs object, by kind. */
export class Children {
  private readonly live = new Map<Closable, ObjectKind>();

  /** Tracks a child of kind `kind`; returns it. */
  add<T extends Closable>(kind: ObjectKind, child: T): T {
    this.live.set(child, kind);
    return child;
  }

  /** Forgets a child (it closed itself). */
  delete(child: Closable): void {
    this.live.delete(child);
  }

  /** The live children, oldest first. */
  list(): Closable[] {
    return [...this.live.keys()];
  }

  /** How many children are alive. */
  get size(): number {
    return this.live.size;
  }

  /**
   * Closes every child and every child's child: first each settles, then
   * they close kind by kind in the teardown order, newest first within a
   * kind. The first error is rethrown after trying all.
   */
  closeAll(): void {
    const all = this.descendants();
    let first: { err: unknown } | undefined;
    const attempt = (step: () => void) => {
      try {
        step();
      } catch (err) {
        first ??= { err };
      }
    };
    for (const { child } of all) if (!child.closed && child.settle) attempt(() => child.settle!());
    const rank = (kind: ObjectKind) => TEARDOWN_ORDER.indexOf(kind);
    const order = all.reverse().sort((a, b) => rank(a.kind) - rank(b.kind)); // stable: newest first within a kind
    for (const { child, owner } of order) {
      attempt(() => child.close());
      if (child.closed) owner.live.delete(child);
    }
    if (first) throw first.err;
  }

  /** Every live child and, recursively, its own children, oldest first. */
  private descendants(): { child: Closable; kind: ObjectKind; owner: Children }[] {
    const out: { child: Closable; kind: ObjectKind; owner: Children }[] = [];
    for (const [child, kind] of this.live) {
      out.push({ child, kind, owner: this });
      if (child.children) out.push(...child.children.descendants());
    }
    return out;
  }
}
