import { Agent, AgentOptions } from 'http';
import type { Duplex } from 'stream';
import { connectSocket, SocketConnectOptions } from './connect';

/** Options of an {@link RdmaAgent}: `http.Agent`'s, and those of each socket it connects. */
export interface RdmaAgentOptions extends AgentOptions {
  /** Options of each {@link connectSocket} (the layer's sizes, ...); the request's host and port fill in the rest. */
  socket?: Omit<SocketConnectOptions, 'host' | 'port'>;
}

/**
 * An `http.Agent` whose connections are RDMA byte-stream sockets: Node's
 * `http` client runs over RDMA unchanged, with the agent's keep-alive and
 * socket pool (`keepAlive: true` reuses connections between requests).
 *
 * ```ts
 * const agent = new RdmaAgent({ keepAlive: true });
 * http.get({ host: '198.18.0.1', port: 8080, path: '/', agent }, (res) => res.pipe(process.stdout));
 * ```
 */
export class RdmaAgent extends Agent {
  private readonly socketOptions: Omit<SocketConnectOptions, 'host' | 'port'>;

  constructor(options: RdmaAgentOptions = {}) {
    const { socket, ...agentOptions } = options;
    super(agentOptions);
    this.socketOptions = socket ?? {};
  }

  /** @internal Called by `http.Agent` for each new connection. */
  createConnection(options: { host?: string | null; port?: number | string | null }): Duplex {
    return connectSocket({ ...this.socketOptions, host: options.host ?? '127.0.0.1', port: Number(options.port ?? 80) });
  }
}
