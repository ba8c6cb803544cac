import type { RunHelpers } from 'rxjs/testing';
import type { CmAddress, CmConnParam } from '../core/cm';
import type { VirtualCmId } from './virtual-cm-id';

/**
 * How a scripted peer answers a connect request: `'accept'`, `'reject'`
 * (the peer's application rejects), `'no-listener'` (nobody listens on
 * the port), `'unreachable'`, `'silent'` (never answers: the connect
 * times out) or `'no-host'` (the address does not resolve).
 */
export type PeerAnswer = 'accept' | 'reject' | 'no-listener' | 'unreachable' | 'silent' | 'no-host';

/** An answer, with the private data an accept or reject carries. */
export interface PeerBehaviour {
  answer: PeerAnswer;
  privateData?: Uint8Array;
}

/** Options of `cm.peer()`. */
export interface VirtualPeerOptions {
  /** The answer before the script's first letter (default `'accept'`). */
  answer?: PeerAnswer | PeerBehaviour;
  /**
   * A hot marble of answers over time: `a` accept, `r` reject, `n` no
   * listener, `u` unreachable, `s` silent, `x` no such host; `values`
   * overrides or adds letters.
   */
  script?: string;
  /** What the letters of `script` stand for, beyond the defaults. */
  values?: Record<string, PeerAnswer | PeerBehaviour>;
  /** A hot marble: at each letter the peer disconnects every connection it has. */
  disconnects?: string;
}

const LETTERS: Record<string, PeerAnswer> = {
  a: 'accept',
  r: 'reject',
  n: 'no-listener',
  u: 'unreachable',
  s: 'silent',
  x: 'no-host',
};

function behaviour(value: PeerAnswer | PeerBehaviour): PeerBehaviour {
  return typeof value === 'string' ? { answer: value } : value;
}

/** A scripted remote server of the virtual CM (see `VirtualCm.peer`). */
export class VirtualPeer {
  /** How it answers a connect request now. */
  current: PeerBehaviour;
  /** The private data of every connect request it received, in order. */
  readonly requests: Uint8Array[] = [];
  private readonly accepted: VirtualCmId[] = [];

  /** @internal */
  constructor(
    readonly address: CmAddress,
    options: VirtualPeerOptions,
    helpers?: Pick<RunHelpers, 'hot'>,
  ) {
    this.current = behaviour(options.answer ?? 'accept');
    if ((options.script !== undefined || options.disconnects !== undefined) && !helpers) {
      throw new TypeError('a peer script needs the TestScheduler.run helpers');
    }
    if (options.script !== undefined) {
      const values = { ...LETTERS, ...options.values };
      helpers!.hot<string>(options.script).subscribe((letter) => {
        const v = values[letter];
        if (v === undefined) throw new RangeError(`peer script: no answer for the letter '${letter}'`);
        this.current = behaviour(v);
      });
    }
    if (options.disconnects !== undefined) helpers!.hot(options.disconnects).subscribe(() => this.disconnectAll());
  }

  /** Answers later requests this way. */
  set(answer: PeerAnswer | PeerBehaviour): void {
    this.current = behaviour(answer);
  }

  /** Its connections that are live now (accepted, not disconnected). */
  get connections(): number {
    return this.accepted.filter((id) => !id.closed && (id.state === 'accepting' || id.state === 'connected')).length;
  }

  /** Disconnects every live connection (the peer's side; `disconnected$` fires on ours). */
  disconnectAll(): void {
    for (const id of this.accepted.splice(0)) {
      if (!id.closed && id.state !== 'disconnected') id.disconnect();
    }
  }

  /** @internal A request it accepts. */
  track(id: VirtualCmId, param: CmConnParam): void {
    this.requests.push(param.privateData ? new Uint8Array(param.privateData) : new Uint8Array(0));
    this.accepted.push(id);
  }
}
