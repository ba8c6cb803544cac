/**
 * Byte-stream sockets over the message layer, with `net.Socket`'s habits:
 * `http`, `stream.pipeline` and `for await` run on them unchanged.
 */
export { RdmaSocket, frame } from './socket';
export type { RdmaSocketOptions, SocketAddress } from './socket';
export { connectSocket } from './connect';
export type { SocketConnectOptions } from './connect';
export { RdmaServer, createSocketServer } from './server';
export type { SocketServerOptions } from './server';
export { RdmaAgent } from './http-agent';
export type { RdmaAgentOptions } from './http-agent';
