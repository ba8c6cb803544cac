import type { BufferOptions } from '../observables/buffer-options';
import { describe, optInt } from '../core/validate';
import type { Message } from './message';

/** Options of the message layer on a connection (`connectMessages`, `acceptMessages`). */
export interface MessageOptions {
  /**
   * The largest payload a single SEND carries (bytes, 0 to 1 MiB, default
   * 8192); larger messages go by rendezvous (the peer RDMA READs them from
   * the sender's memory). Both sides must agree.
   */
  maxEager?: number;
  /**
   * Data receives this side keeps posted for the peer (2 to 4096, default
   * 64): how many messages the peer may have in flight before it waits for
   * credits. A few more are posted for credit updates.
   */
  depth?: number;
  /** The largest message this side accepts (bytes, up to 2^32 - 1, default 256 MiB). The peer's `send()` of more is a RangeError. */
  maxMessage?: number;
  /** Rendezvous READs in flight at once (1 to 64, default 4). */
  reads?: number;
  /**
   * The buffers of `messages$` and `requests$` (see the hot sources'
   * options). With `'pause'` (the default) messages nobody takes stay in
   * their receive buffers, and their credits are not returned: a slow
   * consumer slows its peer down, nothing is lost.
   */
  buffer?: Pick<BufferOptions<Message>, 'highWaterMark' | 'lowWaterMark' | 'overflow' | 'onDropped'>;
}

/** Options after defaults and checks. */
export interface ResolvedMessageOptions {
  readonly maxEager: number;
  readonly depth: number;
  readonly maxMessage: number;
  readonly reads: number;
  readonly buffer: MessageOptions['buffer'];
}

const KEYS = new Set(['maxEager', 'depth', 'maxMessage', 'reads', 'buffer']);

/** An optional integer option, named as `messages.<what>` in the errors. */
function int(value: unknown, what: string, min: number, max: number, fallback: number): number {
  return optInt(value, `messages.${what}`, min, max, fallback);
}

/** Checks the options (TypeError / RangeError naming the field). */
export function resolveMessageOptions(options: MessageOptions | undefined): ResolvedMessageOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`messages must be an object like { maxEager, depth }, got ${describe(options)}`);
  }
  const o = { ...options };
  for (const key of Object.keys(o)) if (!KEYS.has(key)) throw new TypeError(`messages.${key} is not an option (expected one of ${[...KEYS].join(', ')})`);
  return {
    maxEager: int(o.maxEager, 'maxEager', 0, 1 << 20, 8192),
    depth: int(o.depth, 'depth', 2, 4096, 64),
    maxMessage: int(o.maxMessage, 'maxMessage', 1, 2 ** 32 - 1, 256 << 20),
    reads: int(o.reads, 'reads', 1, 64, 4),
    buffer: o.buffer,
  };
}
