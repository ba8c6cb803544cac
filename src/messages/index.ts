/**
 * The message layer on a connection (docs/ARCHITECTURE.md, The message layer): pooled receive buffers,
 * credits, messages of any size (rendezvous above the eager size),
 * request/response with cancellation.
 */
export { connectMessages, acceptMessages, connectMessages$, acceptMessages$ } from './connect';
export type { MessageConnectOptions, MessageAcceptOptions } from './connect';
export { MessageConnection, IncomingRequest } from './message-connection';
export type { MessageStats, RequestOptions, ServeResult } from './message-connection';
export { Message } from './message';
export type { MessageOptions } from './options';
export type { MessageTransport, TransportCq, TransportMr, TransportPd, TransportQp, TransportRecvWr, TransportSendWr, TransportSge } from './transport';
