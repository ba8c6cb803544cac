import { mergeMap, take } from 'rxjs';
import type { RunHelpers } from 'rxjs/testing';
import { acceptMessages$, connectMessages$, listen, Listener, MessageConnection, MessageOptions, MessageTransport } from '../../src';
import { virtualCm, VirtualCm, VirtualCmOptions, VirtualResources } from '../../src/testing';

/** Where the pair's server listens. */
export const SERVER = { host: '10.0.0.2', port: 7471 };

/** A client and a server with the message layer on one virtual CM, filled in as they are established. */
export interface VirtualMessagePair {
  readonly cm: VirtualCm;
  readonly listener: Listener<VirtualResources>;
  /** The connecting side (established at frame 4 with the default latency). */
  readonly client: MessageConnection<MessageTransport>;
  /** The accepting side (established at frame 5). */
  readonly server: MessageConnection<MessageTransport>;
  /** Closes both sides and the listener (inside the run, at the frame it is called). */
  close(): void;
}

/**
 * Connects at frame 0, as a test inside `TestScheduler.run` does: the
 * client connects with `rnrRetryCount: 0` (a credit slip would be a failed
 * completion), the server accepts the first request. Each side throws if
 * read before it is established.
 */
export function virtualMessagePair(
  helpers: Pick<RunHelpers, 'hot'>,
  options: { client?: MessageOptions; server?: MessageOptions; cm?: VirtualCmOptions } = {},
): VirtualMessagePair {
  const cm = virtualCm(helpers, options.cm);
  const listener = listen({ ...SERVER, cm });
  let client: MessageConnection<MessageTransport> | undefined;
  let server: MessageConnection<MessageTransport> | undefined;
  listener.requests$
    .pipe(
      take(1),
      mergeMap((request) => acceptMessages$(request, { messages: options.server })),
    )
    .subscribe((mc) => (server = mc));
  connectMessages$({ ...SERVER, cm, rnrRetryCount: 0, messages: options.client ?? options.server }).subscribe((mc) => (client = mc));
  const established = (side: MessageConnection<MessageTransport> | undefined, name: string) => {
    if (!side) throw new Error(`the ${name} is not established yet`);
    return side;
  };
  return {
    cm,
    listener,
    get client() {
      return established(client, 'client');
    },
    get server() {
      return established(server, 'server');
    },
    close() {
      client?.close();
      server?.close();
      listener.close();
    },
  };
}
