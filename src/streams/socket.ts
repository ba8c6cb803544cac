import { Duplex } from 'stream';
import { isIP } from 'net';
import type { Subscription } from 'rxjs';
import { SocketProtocolError, SocketResetError } from '../core/stream-errors';
import type { Message } from '../messages/message';
import type { MessageConnection } from '../messages/message-connection';

/** Options of an {@link RdmaSocket} (those of `stream.Duplex` that mean something here). */
export interface RdmaSocketOptions {
  /**
   * Keep the writable side open after the peer ended its stream (default
   * `false`: the socket ends its own side then, as `net.Socket` does).
   */
  allowHalfOpen?: boolean;
  /** Bytes buffered for reading before the socket stops taking the peer's messages (and so stops returning its credits). */
  readableHighWaterMark?: number;
  /** Bytes buffered for writing before `write()` returns false. */
  writableHighWaterMark?: number;
}

/** `socket.address()`: where this end is, in `net`'s shape. */
export interface SocketAddress {
  address: string;
  family: 'IPv4' | 'IPv6';
  port: number;
}

const FIN = new Uint8Array(0);

/**
 * A byte stream over a connection's message layer, with `net.Socket`'s
 * habits: a `stream.Duplex` that `http`, `stream.pipeline` and
 * `for await` run on unchanged. Made by {@link connectSocket} or handed to
 * an {@link RdmaServer}'s `'connection'` listeners.
 *
 * Framing: each write is one message or more (small writes that Node
 * buffered together, e.g. between `cork()` and `uncork()`, share one
 * message; a write past the peer's message size is cut); an empty message
 * ends the stream (`end()`), so empty writes send nothing. Large writes go
 * by rendezvous: the peer READs them from the written buffer, and the
 * write's callback runs once it did, so the buffer must not change before.
 *
 * Back-pressure is the layer's credits: a socket whose reader does not
 * read (paused, or its buffer at `readableHighWaterMark`) takes no more
 * messages, so their credits stay with it and the peer's `write()`s queue
 * up until `writableHighWaterMark` makes them return false.
 *
 * Ends, as TCP has them: `end()` sends the end of the stream after
 * everything written and settles `'finish'` once the peer's device took it
 * all; the peer reads to `'end'`. When both sides ended, the connection
 * closes and `'close'` follows. `destroy()` closes at once: the peer's
 * socket fails with {@link SocketResetError} (`ECONNRESET`), as it does
 * when this process dies. `'error'` and `'close'` come once each.
 *
 * ```ts
 * const socket = connectSocket(7000, '198.18.0.1', () => socket.end('hello'));
 * for await (const chunk of socket) process.stdout.write(chunk);
 * ```
 */
export class RdmaSocket extends Duplex {
  /** True until connected (or failed). */
  connecting = true;
  /** Bytes received. */
  bytesRead = 0;
  private sent = 0;
  private layer: MessageConnection | undefined;
  /** A `take()` is waiting for the next message. */
  private pulling = false;
  /** `_read()` was called before the layer was there. */
  private wanted = false;
  /** Writes and the end asked for before the layer was there, in order. */
  private readonly early: Array<() => void> = [];
  /** The peer's end of stream was read. */
  private finReceived = false;
  /** The layer ended: what is left of the peer's messages, in order. */
  private rest: Message[] | undefined;
  private restError: unknown;
  private ends: Subscription | undefined;
  private idleMs = 0;
  private idle: ReturnType<typeof setTimeout> | undefined;
  private referenced = true;

  constructor(options: RdmaSocketOptions = {}) {
    super({
      allowHalfOpen: options.allowHalfOpen ?? false,
      readableHighWaterMark: options.readableHighWaterMark,
      writableHighWaterMark: options.writableHighWaterMark,
      emitClose: true,
      autoDestroy: true,
      decodeStrings: true,
    });
  }

  /**
   * @internal The connection is there: reads and writes asked for so far
   * start, and the client side emits `'connect'` and `'ready'`.
   */
  attach(layer: MessageConnection, announce: boolean): void {
    if (this.destroyed) {
      layer.close();
      return;
    }
    this.layer = layer;
    this.connecting = false;
    if (!this.referenced) layer.connection.unref();
    this.ends = layer.connection.disconnected$.subscribe({
      next: () => this.layerEnded(),
      error: () => this.layerEnded(),
      complete: () => this.layerEnded(),
    });
    if (announce) {
      this.emit('connect');
      this.emit('ready');
    }
    this.touch();
    for (const go of this.early.splice(0)) go();
    if (this.wanted) this.pull();
  }

  /** The connection's message layer (`undefined` while connecting). */
  get messages(): MessageConnection | undefined {
    return this.layer;
  }

  /** Bytes handed to the connection (those still buffered by `write()` not counted). */
  get bytesWritten(): number {
    return this.sent;
  }

  /** The peer's address (`undefined` while connecting). */
  get remoteAddress(): string | undefined {
    return this.layer?.connection.peerAddress?.host;
  }

  /** The peer's port. */
  get remotePort(): number | undefined {
    return this.layer?.connection.peerAddress?.port;
  }

  /** `'IPv4'` or `'IPv6'`, as the peer's address reads. */
  get remoteFamily(): 'IPv4' | 'IPv6' | undefined {
    const host = this.remoteAddress;
    return host === undefined ? undefined : familyOf(host);
  }

  /** This end's address. */
  get localAddress(): string | undefined {
    return this.layer?.connection.localAddress?.host;
  }

  /** This end's port. */
  get localPort(): number | undefined {
    return this.layer?.connection.localAddress?.port;
  }

  /** Where this end is, in `net`'s shape (`{}` while connecting, as `net.Socket` answers). */
  address(): SocketAddress | Record<string, never> {
    const local = this.layer?.connection.localAddress;
    return local ? { address: local.host, family: familyOf(local.host), port: local.port } : {};
  }

  /** `'opening'`, `'open'`, `'readOnly'`, `'writeOnly'` or `'closed'`, as `net.Socket` says. */
  get readyState(): 'opening' | 'open' | 'readOnly' | 'writeOnly' | 'closed' {
    if (this.connecting) return 'opening';
    if (this.destroyed) return 'closed';
    if (this.readable && this.writable) return 'open';
    if (this.readable) return 'readOnly';
    if (this.writable) return 'writeOnly';
    return 'closed';
  }

  /**
   * Emits `'timeout'` after `ms` without reading or writing (0: never), as
   * `net.Socket` does; nothing is closed by it. `listener` is added once
   * for `'timeout'`.
   */
  setTimeout(ms: number, listener?: () => void): this {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw new RangeError(`the timeout must be a number of ms >= 0, got ${String(ms)}`);
    this.idleMs = ms;
    if (listener) this.once('timeout', listener);
    clearTimeout(this.idle);
    this.idle = undefined;
    if (ms > 0 && !this.destroyed) {
      this.idle = setTimeout(() => this.emit('timeout'), ms);
      this.idle.unref();
    }
    return this;
  }

  /** The idle timeout set with `setTimeout()` (0: none). */
  get timeout(): number {
    return this.idleMs;
  }

  /**
   * Does nothing: there is no Nagle here. Each write goes as soon as the
   * peer's credits allow; small writes are joined only when Node hands
   * them over together (`cork()`).
   */
  setNoDelay(_noDelay?: boolean): this {
    return this;
  }

  /**
   * Does nothing. A reliable connection learns of a dead peer when a send
   * runs out of transport retries, or when the CM reports the disconnect;
   * an idle one learns nothing until then. Use `setTimeout()` and a
   * heartbeat of your own where that matters.
   */
  setKeepAlive(_enable?: boolean, _initialDelay?: number): this {
    return this;
  }

  /** Lets the process exit while only this socket is open. */
  unref(): this {
    this.referenced = false;
    this.layer?.connection.unref();
    return this;
  }

  /** Keeps the process alive while the socket is open (the default). */
  ref(): this {
    this.referenced = true;
    this.layer?.connection.ref();
    return this;
  }

  // ---- reading -------------------------------------------------------------------

  /** @internal Node's Readable asks for data: take the peer's messages while the reader wants them. */
  override _read(): void {
    if (!this.layer) this.wanted = true;
    else this.pull();
  }

  /** Takes messages while the reader wants bytes; a message nobody takes keeps its credit. */
  private pull(): void {
    if (this.pulling || this.finReceived || this.destroyed) return;
    const rest = this.rest;
    if (rest) {
      while (rest.length > 0) if (!this.deliver(rest.shift()!)) return;
      return;
    }
    const source = this.layer!.messages$;
    try {
      for (let m = source.tryTake(); m !== undefined; m = source.tryTake()) if (!this.deliver(m)) return;
    } catch {
      return; // the layer failed: layerEnded() says how
    }
    if (source.terminated !== undefined) return;
    this.pulling = true;
    source.take().then(
      (m) => {
        this.pulling = false;
        if (m === undefined) return this.settleEnd(true);
        if (this.rest) {
          // It came before what the layer's end left.
          this.rest.unshift(m);
          return this.settleEnd(true);
        }
        if (this.deliver(m)) this.pull();
      },
      () => {
        this.pulling = false;
        this.settleEnd(true);
      },
    );
  }

  /** Hands one message to the reader; whether it wants more. */
  private deliver(m: Message): boolean {
    if (this.destroyed) {
      m.release();
      return false;
    }
    const n = m.length;
    if (n === 0) {
      m.release();
      this.finReceived = true;
      this.push(null);
      return false;
    }
    if (this.finReceived) {
      m.release();
      this.destroy(new SocketProtocolError('The peer sent data after ending its stream'));
      return false;
    }
    // The copy frees the pooled buffer (and its credit) at once.
    const chunk = Buffer.from(m.data);
    m.release();
    this.bytesRead += n;
    this.touch();
    return this.push(chunk);
  }

  /**
   * The connection ended: nothing more comes. What the layer had received
   * is kept in order; if the peer's end of stream is among it the reader
   * gets it all, otherwise the peer went away mid-stream and the socket
   * fails (a `take()` still waiting decides once it settles).
   */
  private layerEnded(): void {
    if (this.rest || !this.layer) return;
    const rest: Message[] = [];
    const source = this.layer.messages$;
    try {
      for (let m = source.tryTake(); m !== undefined; m = source.tryTake()) rest.push(m);
    } catch (err) {
      this.restError = err;
    }
    this.rest = rest;
    if (!this.pulling) this.settleEnd(false);
  }

  /** The peer's end of stream was read, or is among what the layer's end left. */
  private get endsCleanly(): boolean {
    return this.finReceived || (this.rest?.some((m) => m.length === 0) ?? false);
  }

  /** `wanted`: a read is waiting (a `take()` stood for it). */
  private settleEnd(wanted: boolean): void {
    const rest = this.rest;
    if (!rest || this.destroyed) return;
    if (this.endsCleanly) {
      // A clean end: the reader reads to it.
      if (wanted) this.pull();
      return;
    }
    for (const m of rest.splice(0)) m.release();
    this.destroy(new SocketResetError(undefined, this.restError));
  }

  // ---- writing -------------------------------------------------------------------

  /** @internal Node's Writable hands over one write. */
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.sendChunks([chunk], callback);
  }

  /** @internal Node's Writable hands over the writes buffered meanwhile, together. */
  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    this.sendChunks(
      chunks.map((c) => c.chunk),
      callback,
    );
  }

  private sendChunks(chunks: Buffer[], callback: (error?: Error | null) => void): void {
    const layer = this.layer;
    if (!layer) {
      this.early.push(() => this.sendChunks(chunks, callback));
      return;
    }
    const limits = layer.peerLimits!;
    const pieces = frame(chunks, limits.maxEager, limits.maxMessage);
    let bytes = 0;
    const sends = pieces.map((p) => {
      bytes += p.length;
      return layer.send(p);
    });
    Promise.all(sends).then(
      () => {
        this.sent += bytes;
        this.touch();
        callback();
      },
      (err: unknown) => callback(this.writeFailure(err)),
    );
  }

  /** @internal `end()`: the end of the stream goes after every write. */
  override _final(callback: (error?: Error | null) => void): void {
    const layer = this.layer;
    if (!layer) {
      this.early.push(() => this._final(callback));
      return;
    }
    // The end goes after every write, and 'finish' waits until the peer's device took it all.
    layer
      .send(FIN)
      .then(() => layer.flush())
      .then(
        () => callback(),
        (err: unknown) => callback(this.writeFailure(err)),
      );
  }

  /** A write that failed because the connection ended: the reset, when the peer went away. */
  private writeFailure(err: unknown): Error {
    if (this.rest && !this.endsCleanly) return new SocketResetError(undefined, err);
    return err instanceof Error ? err : new Error(String(err));
  }

  /** @internal `destroy()`: the connection closes at once. */
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    clearTimeout(this.idle);
    this.ends?.unsubscribe();
    for (const m of this.rest?.splice(0) ?? []) m.release();
    this.connecting = false;
    this.layer?.close();
    this.abort?.();
    callback(error);
  }

  /** @internal Cancels the connect in progress (set by `connectSocket`). */
  abort: (() => void) | undefined;

  private touch(): void {
    this.idle?.refresh();
  }
}

/**
 * Cuts the chunks into messages: neighbours that fit together within the
 * eager size share one (one copy, as the eager send makes anyway); a chunk
 * past it goes alone, by rendezvous, cut at the peer's message size; empty
 * chunks send nothing (an empty message would end the stream).
 */
export function frame(chunks: readonly Buffer[], maxEager: number, maxMessage: number): Buffer[] {
  const out: Buffer[] = [];
  let small: Buffer[] = [];
  let smallBytes = 0;
  const flushSmall = () => {
    if (small.length === 1) out.push(small[0]);
    else if (small.length > 1) out.push(Buffer.concat(small, smallBytes));
    small = [];
    smallBytes = 0;
  };
  for (const chunk of chunks) {
    if (chunk.length === 0) continue;
    if (chunk.length > maxEager) {
      flushSmall();
      for (let at = 0; at < chunk.length; at += maxMessage) out.push(chunk.subarray(at, Math.min(chunk.length, at + maxMessage)));
      continue;
    }
    if (smallBytes + chunk.length > maxEager) flushSmall();
    small.push(chunk);
    smallBytes += chunk.length;
  }
  flushSmall();
  return out;
}

function familyOf(host: string): 'IPv4' | 'IPv6' {
  return isIP(host) === 6 ? 'IPv6' : 'IPv4';
}
