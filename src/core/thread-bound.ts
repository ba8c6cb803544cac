/**
 * Verbs objects are handles on native resources of the thread (the Node.js
 * environment) that made them, so they cannot cross to another thread:
 * `postMessage` and `structuredClone` copy only own enumerable properties,
 * and a copy would arrive as a dead plain object (`{ native: {}, pd: ... }`,
 * no methods, nothing behind it). Node 20 has no `markAsUncloneable`, so
 * the refusal is an own enumerable accessor that throws a `DataCloneError`
 * when the structured-clone algorithm reads it. It is defined before any
 * other property of the object (by this base class's constructor), so the
 * message names the object that was posted, not one reached through it.
 *
 * Little else reads it: `util.inspect` shows it as `[Getter]` without
 * calling it, identity (`===`, jest's `toBe`) never touches it, and
 * `JSON.stringify` (like jest's printer) asks `toJSON()` first. Copying a
 * verbs object's properties (`{ ...qp }`, `Object.assign`) runs into it,
 * which is as it should be: such a copy is not the object either.
 */

/** The own property whose getter refuses the copy. */
const TRIPWIRE = 'threadBound';

function nameOf(o: object): string {
  return (o as { constructor?: { name?: string } }).constructor?.name || 'This rx-verbs object';
}

function refuse(this: object): never {
  const name = nameOf(this);
  throw new DOMException(
    `${name} cannot be sent to another thread (postMessage, structuredClone): it is a handle on native ` +
      'resources that belong to the thread that made it, and a copy would be a dead object. ' +
      'Open the device in that thread (openDevice()) and make its own objects there; to share bytes, ' +
      'register the same SharedArrayBuffer in each thread.',
    'DataCloneError',
  );
}

/**
 * The base of every verbs object (Context, Pd, Mr, Cq, Qp, Srq, Ah,
 * CompletionChannel; any class that wraps native resources): it makes `postMessage`
 * and `structuredClone` of the object throw a `DataCloneError` that names
 * its class and says what to do instead, rather than deliver a dead copy.
 * Work-completion batches are data and cross as copies (see `WcBatch`).
 */
export abstract class ThreadBound {
  /** Installs the refusal as the object's first own property. */
  protected constructor() {
    Object.defineProperty(this, TRIPWIRE, { get: refuse, enumerable: true, configurable: false });
  }

  /**
   * What `JSON.stringify` writes for it: its class name in brackets
   * (`"[Qp]"`). A handle has no JSON form; this keeps logs of objects that
   * hold one (an async event's `qp`) from tripping over the refusal.
   */
  toJSON(): string {
    return `[${nameOf(this)}]`;
  }
}
