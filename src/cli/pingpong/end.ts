/**
 * What the loops and roles of `rx-verbs pingpong` need from one end, so the
 * RC end (side.ts, ibv_rc_pingpong's) and the UD end (ud-side.ts,
 * ibv_ud_pingpong's) run the same way.
 */
import type { CompletionChannel, Context, Cq, WcBatch } from '../../index';
import type { SideOptions } from './side';
import { Side } from './side';
import { UdSide } from './ud-side';
import type { Dest } from './wire';

/** One end of a ping-pong. */
export interface PingPongEnd {
  readonly ctx: Context;
  readonly channel: CompletionChannel | undefined;
  readonly cq: Cq;
  readonly local: Dest;
  readonly options: SideOptions;
  /** Sends and receives completed. */
  scnt: number;
  rcnt: number;
  readonly done: boolean;
  connect(remote: Dest): void;
  start(isClient: boolean): void;
  handle(batch: WcBatch): void;
  report(): string[];
  close(): void;
}

/** An RC end, or with `ud` a UD one. */
export function makeEnd(options: SideOptions & { ud?: boolean }): PingPongEnd {
  return options.ud ? new UdSide(options) : new Side(options);
}
