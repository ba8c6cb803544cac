/**
 * Typed failures of the byte-stream sockets (src/streams). Their `code`s are
 * Node's own where Node has one for the same event, so code written for
 * `net.Socket` (an `http` agent that retries on `ECONNRESET`) reads them
 * the same way. Addon-free.
 */

/**
 * The peer's side of the connection ended without ending its stream first
 * (it destroyed its socket, its process died, or the link failed): the
 * bytes it had not yet delivered are gone, as after a TCP reset. `cause` is
 * the message layer's error, when it failed.
 */
export class SocketResetError extends Error {
  override readonly name = 'SocketResetError';
  readonly code = 'ECONNRESET';
  constructor(message = 'The peer closed the connection without ending its stream', cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/** The socket's peer sent more data after it had ended its stream. */
export class SocketProtocolError extends Error {
  override readonly name = 'SocketProtocolError';
  readonly code = 'ERR_SOCKET_PROTOCOL';
}
