/**
 * Typed failures of the message layer (docs/ARCHITECTURE.md, The message layer). Each has a stable
 * `name` and `code`, as the verbs and CM errors do. Addon-free.
 */

/** The `code` values of the message layer's errors. */
export const MESSAGE_ERROR_CODES = {
  MISMATCH: 'ERR_MSG_MISMATCH',
  PROTOCOL: 'ERR_MSG_PROTOCOL',
  CLOSED: 'ERR_MSG_CLOSED',
  REMOTE: 'ERR_MSG_REMOTE',
  TIMEOUT: 'ERR_MSG_TIMEOUT',
} as const;

/**
 * The two sides could not agree on the message layer at set-up: one side
 * did not ask for it, their protocol versions differ, or their eager sizes
 * do. `field` names what differs, `local` and `peer` say both values.
 */
export class MessagesMismatchError extends Error {
  override readonly name = 'MessagesMismatchError';
  readonly code = MESSAGE_ERROR_CODES.MISMATCH;
  /** What differs: `'layer'` (one side has none), `'version'` or `'maxEager'`. */
  readonly field: 'layer' | 'version' | 'maxEager';
  /** This side's value (`undefined`: none). */
  readonly local: number | undefined;
  /** The peer's value (`undefined`: it did not ask for the layer). */
  readonly peer: number | undefined;
  /** @internal What the passive side rejects the request with, so the peer learns why. */
  rejectData: Uint8Array | undefined;
  constructor(field: 'layer' | 'version' | 'maxEager', local: number | undefined, peer: number | undefined) {
    super(
      field === 'layer'
        ? `The message layer was not agreed: ${local === undefined ? 'this side' : 'the peer'} did not ask for it`
        : `The message layer was not agreed: ${field} is ${local} here and ${peer} at the peer`,
    );
    this.field = field;
    this.local = local;
    this.peer = peer;
  }
}

/**
 * The peer broke the message protocol (a header that cannot be, a length
 * past what was agreed): the connection is closed and everything pending
 * fails with this.
 */
export class MessageProtocolError extends Error {
  override readonly name = 'MessageProtocolError';
  readonly code = MESSAGE_ERROR_CODES.PROTOCOL;
}

/**
 * The connection under the message layer ended (the peer left, it was
 * closed, or it failed: `cause` says how) before a send, request or
 * rendezvous finished.
 */
export class MessagesClosedError extends Error {
  override readonly name = 'MessagesClosedError';
  readonly code = MESSAGE_ERROR_CODES.CLOSED;
  constructor(message = 'The message layer is closed: the connection ended', cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/** The peer's request handler failed; `message` is what it said. */
export class RemoteError extends Error {
  override readonly name = 'RemoteError';
  readonly code = MESSAGE_ERROR_CODES.REMOTE;
}

/** No reply came within the request's `timeoutMs`. */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
  readonly code = MESSAGE_ERROR_CODES.TIMEOUT;
  readonly timeoutMs: number;
  constructor(timeoutMs: number) {
    super(`No reply within ${timeoutMs} ms`);
    this.timeoutMs = timeoutMs;
  }
}
