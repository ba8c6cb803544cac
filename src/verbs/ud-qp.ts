import type { NativeQp } from '../native/binding';
import type { AccessFlag } from '../core/constants';
import type { Cq } from './cq';
import type { Pd } from './pd';
import type { Srq } from './srq';
import { Qp } from './qp';
import { copyOptions, optInt } from '../core/validate';

import { UD_TRANSITION_MASK } from './qp-attr-mask';

/**
 * An unreliable-datagram queue pair (`IBV_QPT_UD`), from
 * `pd.createQp({ type: 'UD', qkey, ... })`. It is not connected: it goes
 * RESET -> INIT -> RTR -> RTS on its own ({@link UdQp.activate}), and each
 * send names its destination (`{ ah, remoteQpn, remoteQkey }`). Every
 * receive buffer must hold 40 bytes more than the largest message: the
 * device writes the GRH (or, on RoCE v2 over IPv4, the IP header in its
 * last 20 bytes) in front of the payload, and `byteLen` counts them.
 * Messages are limited to the port's MTU; a datagram whose qkey differs
 * from the receiver's is dropped without a trace.
 */
export class UdQp extends Qp {
  /** The QP's qkey: datagrams must carry it to be accepted. */
  readonly qkey: number;

  /** @internal */
  constructor(native: NativeQp, pd: Pd, sendCq: Cq, recvCq: Cq, qkey: number, srq?: Srq) {
    super(native, pd, sendCq, recvCq, srq);
    this.qkey = qkey;
  }

  /** RESET -> INIT on `port` (default 1), with the QP's qkey. UD QPs take no access flags. */
  override toInit(options?: { port?: number; access?: readonly AccessFlag[] }): void {
    const { port, access } = copyOptions(options, ['port', 'access'], 'options');
    if (access !== undefined) throw new TypeError('a UD QP has no access flags (no RDMA operations reach it)');
    this.native.modify(
      { qpState: 1, pkeyIndex: 0, portNum: optInt(port, 'port', 1, 255, 1), qkey: this.qkey },
      UD_TRANSITION_MASK.INIT,
    );
  }

  /** INIT -> RTR: receives are accepted from now on. A UD QP has no remote. */
  override toRtr(): void {
    this.native.modify({ qpState: 2 }, UD_TRANSITION_MASK.RTR);
  }

  /** RTR -> RTS: sends may be posted from now on. */
  override toRts(): void {
    this.native.modify({ qpState: 3, sqPsn: this.psn }, UD_TRANSITION_MASK.RTS);
  }

  /** RESET -> INIT -> RTR -> RTS: ready to send and receive. */
  activate(options?: { port?: number }): void {
    const { port } = copyOptions(options, ['port'], 'options');
    if (this.state === 'RESET') this.toInit({ port });
    this.toRtr();
    this.toRts();
  }

  /** A UD QP is not connected: use {@link UdQp.activate}. Always throws a TypeError. */
  override connect(): void {
    throw new TypeError('a UD QP is not connected to a peer: call activate(), then name the destination in each send');
  }

  /** @internal */
  protected override get datagrams(): boolean {
    return true;
  }
}
