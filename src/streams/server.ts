import { EventEmitter } from 'events';
import type { Subscription } from 'rxjs';
import { listen } from '../cm/listen';
import type { Listener } from '../cm/listen';
import type { CmProvider } from '../cm/native-port';
import { acceptMessages } from '../messages/connect';
import type { MessageAcceptOptions } from '../messages/connect';
import { describe } from '../core/validate';
import { RdmaSocket, RdmaSocketOptions, SocketAddress } from './socket';

/** Options of {@link createSocketServer}: the socket's, and how each connection is accepted. */
export interface SocketServerOptions extends RdmaSocketOptions {
  /** Options of each `acceptMessages()` (the layer's sizes, retry counts, ...). */
  accept?: MessageAcceptOptions;
  /** Which native CM listens (default: as `listen()` picks). */
  provider?: CmProvider;
  /** Connections served at most: requests past it are rejected (the client's connect fails) and `'drop'` says so. */
  maxConnections?: number;
}

/**
 * A server of byte-stream sockets with `net.Server`'s habits: `listen()`,
 * `'listening'`, `'connection'` with an {@link RdmaSocket} per accepted
 * connection, `address()`, `close()` (stops listening; `'close'` once the
 * last connection closed too), `getConnections()`, `ref()` / `unref()`.
 * Node's `http` serves on it: hand each socket to
 * `httpServer.emit('connection', socket)`.
 */
export class RdmaServer extends EventEmitter {
  private listener: Listener | undefined;
  private requests: Subscription | undefined;
  private readonly sockets = new Set<RdmaSocket>();
  private closing = false;
  private referenced = true;
  /** Connections served at most (`Infinity`: no limit). */
  maxConnections: number;

  /** @internal Use {@link createSocketServer}. */
  constructor(private readonly options: SocketServerOptions = {}) {
    super();
    this.maxConnections = options.maxConnections ?? Infinity;
  }

  /** Whether it listens. */
  get listening(): boolean {
    return this.listener !== undefined;
  }

  /**
   * Starts listening on `host:port` (default `0.0.0.0`, which needs
   * librdmacm; give the device's address for the soft CM) and emits
   * `'listening'`; a failure (the port taken, no device on the address)
   * emits `'error'`. `callback` is added once for `'listening'`.
   */
  listen(port?: number, host?: string, callback?: () => void): this;
  listen(options: { port?: number; host?: string; backlog?: number }, callback?: () => void): this;
  listen(
    portOrOptions?: number | { port?: number; host?: string; backlog?: number },
    hostOrCallback?: string | (() => void),
    callback?: () => void,
  ): this {
    let port: number | undefined;
    let host: string | undefined;
    let backlog: number | undefined;
    let done: (() => void) | undefined;
    if (typeof portOrOptions === 'object' && portOrOptions !== null) {
      ({ port, host, backlog } = portOrOptions);
      done = typeof hostOrCallback === 'function' ? hostOrCallback : callback;
    } else {
      if (portOrOptions !== undefined && typeof portOrOptions !== 'number') throw new TypeError(`listen() takes a port number or an options object, got ${describe(portOrOptions)}`);
      port = portOrOptions;
      if (typeof hostOrCallback === 'function') done = hostOrCallback;
      else {
        host = hostOrCallback;
        done = callback;
      }
    }
    if (this.listener) throw new Error('The server is already listening');
    if (done) this.once('listening', done);
    try {
      this.listener = listen({ host: host ?? '0.0.0.0', port: port ?? 0, backlog, provider: this.options.provider });
    } catch (err) {
      process.nextTick(() => this.emit('error', err));
      return this;
    }
    this.closing = false;
    if (!this.referenced) this.listener.unref();
    this.requests = this.listener.requests$.subscribe((request) => {
      if (this.sockets.size >= this.maxConnections) {
        request.reject();
        this.emit('drop', { remoteAddress: request.peerAddress?.host, remotePort: request.peerAddress?.port });
        return;
      }
      const socket = new RdmaSocket(this.options);
      this.track(socket);
      acceptMessages(request, this.options.accept).then(
        (layer) => {
          if (socket.destroyed) return layer.close();
          socket.attach(layer, false);
          this.emit('connection', socket);
        },
        (err: unknown) => {
          socket.destroy();
          // A client that gave up, or without the message layer: the server serves on.
          this.emit('acceptError', err);
        },
      );
    });
    process.nextTick(() => this.emit('listening'));
    return this;
  }

  private track(socket: RdmaSocket): void {
    this.sockets.add(socket);
    socket.once('close', () => {
      this.sockets.delete(socket);
      this.maybeClosed();
    });
  }

  /** Where it listens, in `net`'s shape (`null` when not listening). */
  address(): SocketAddress | null {
    const a = this.listener?.address;
    if (!a) return null;
    return { address: a.host, family: a.host.includes(':') ? 'IPv6' : 'IPv4', port: a.port };
  }

  /** Calls back with the number of open connections. */
  getConnections(callback: (err: Error | null, count: number) => void): this {
    const count = this.sockets.size;
    process.nextTick(() => callback(null, count));
    return this;
  }

  /**
   * Stops listening; connections already accepted go on. `'close'` (and
   * `callback`) once they all closed; `callback` gets an error when the
   * server was not listening, as `net` does.
   */
  close(callback?: (err?: Error) => void): this {
    if (!this.listener) {
      if (callback) process.nextTick(() => callback(Object.assign(new Error('The server is not running'), { code: 'ERR_SERVER_NOT_RUNNING' })));
      return this;
    }
    if (callback) this.once('close', () => callback());
    this.requests?.unsubscribe();
    this.listener.close();
    this.listener = undefined;
    this.closing = true;
    this.maybeClosed();
    return this;
  }

  private maybeClosed(): void {
    if (!this.closing || this.sockets.size > 0) return;
    this.closing = false;
    process.nextTick(() => this.emit('close'));
  }

  /** Lets the process exit while only the server listens. */
  unref(): this {
    this.referenced = false;
    this.listener?.unref();
    return this;
  }

  /** Keeps the process alive while listening (the default). */
  ref(): this {
    this.referenced = true;
    this.listener?.ref();
    return this;
  }
}

/**
 * Makes a server of byte-stream sockets, as `net.createServer()` does;
 * `onConnection` is added for `'connection'`.
 *
 * ```ts
 * const server = createSocketServer((socket) => socket.pipe(socket)); // echo
 * server.listen(7000, '198.18.0.1');
 * ```
 */
export function createSocketServer(onConnection?: (socket: RdmaSocket) => void): RdmaServer;
export function createSocketServer(options: SocketServerOptions, onConnection?: (socket: RdmaSocket) => void): RdmaServer;
export function createSocketServer(
  optionsOrListener?: SocketServerOptions | ((socket: RdmaSocket) => void),
  onConnection?: (socket: RdmaSocket) => void,
): RdmaServer {
  const options = typeof optionsOrListener === 'object' && optionsOrListener !== null ? optionsOrListener : {};
  const listener = typeof optionsOrListener === 'function' ? optionsOrListener : onConnection;
  if (optionsOrListener !== undefined && typeof optionsOrListener !== 'function' && (typeof optionsOrListener !== 'object' || optionsOrListener === null)) {
    throw new TypeError(`createSocketServer() takes options and a connection listener, got ${describe(optionsOrListener)}`);
  }
  if (listener !== undefined && typeof listener !== 'function') throw new TypeError(`the connection listener must be a function, got ${describe(listener)}`);
  const server = new RdmaServer(options);
  if (listener) server.on('connection', listener);
  return server;
}
