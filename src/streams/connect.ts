import { connectMessages$, MessageConnectOptions } from '../messages/connect';
import { describe } from '../core/validate';
import { RdmaSocket, RdmaSocketOptions } from './socket';

/** Options of {@link connectSocket}: those of `connectMessages()` (host, port, the layer's sizes, ...) and the socket's. */
export interface SocketConnectOptions extends Omit<MessageConnectOptions, 'host'>, RdmaSocketOptions {
  /** The peer's numeric address (default `'127.0.0.1'`). */
  host?: string;
  /** Sets the socket's idle timeout (`socket.setTimeout()`) once connected. */
  timeout?: number;
}

const SOCKET_KEYS = ['allowHalfOpen', 'readableHighWaterMark', 'writableHighWaterMark', 'timeout'] as const;

/**
 * Connects a byte-stream socket, as `net.connect()` does: returns the
 * socket at once (writes queue until connected), emits `'connect'` when the
 * connection is up, or `'error'` then `'close'` when it cannot be made
 * (with `connectMessages()`' errors). `onConnect` is added once for
 * `'connect'`. Destroying it while connecting cancels the attempt.
 *
 * ```ts
 * const socket = connectSocket(7000, '198.18.0.1', () => console.log('connected'));
 * socket.end('hello\n');
 * socket.pipe(process.stdout);
 * ```
 * @throws TypeError / RangeError for bad arguments (bad connect options
 *   fail the socket with `'error'` instead, as `net` does).
 */
export function connectSocket(port: number, host?: string, onConnect?: () => void): RdmaSocket;
export function connectSocket(options: SocketConnectOptions, onConnect?: () => void): RdmaSocket;
export function connectSocket(portOrOptions: number | SocketConnectOptions, hostOrListener?: string | (() => void), onConnect?: () => void): RdmaSocket {
  let options: SocketConnectOptions;
  let listener: (() => void) | undefined;
  if (typeof portOrOptions === 'number') {
    options = { port: portOrOptions, host: typeof hostOrListener === 'string' ? hostOrListener : undefined };
    listener = typeof hostOrListener === 'function' ? hostOrListener : onConnect;
  } else if (typeof portOrOptions === 'object' && portOrOptions !== null) {
    options = portOrOptions;
    listener = typeof hostOrListener === 'function' ? hostOrListener : onConnect;
  } else {
    throw new TypeError(`connectSocket() takes a port or an options object, got ${describe(portOrOptions)}`);
  }
  if (listener !== undefined && typeof listener !== 'function') throw new TypeError(`the connect listener must be a function, got ${describe(listener)}`);
  const { allowHalfOpen, readableHighWaterMark, writableHighWaterMark, timeout, ...rest } = options;
  const socket = new RdmaSocket({ allowHalfOpen, readableHighWaterMark, writableHighWaterMark });
  if (listener) socket.once('connect', listener);
  if (timeout !== undefined) socket.setTimeout(timeout);
  const connectOptions = { ...rest, host: rest.host ?? '127.0.0.1' } as MessageConnectOptions;
  for (const key of SOCKET_KEYS) delete (connectOptions as unknown as Record<string, unknown>)[key];
  // The attempt starts after this call returns, so 'connect' and 'error' listeners can be added first.
  process.nextTick(() => {
    if (socket.destroyed) return;
    const attempt = connectMessages$(connectOptions).subscribe({
      next: (layer) => socket.attach(layer, true),
      error: (err: unknown) => socket.destroy(err instanceof Error ? err : new Error(String(err))),
    });
    socket.abort = () => attempt.unsubscribe();
  });
  return socket;
}
