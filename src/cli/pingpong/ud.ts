/**
 * `ibv_ud_pingpong`'s mode (`--ud`): a buffer of size + 40 bytes (receives
 * land with the GRH in front, sends go from byte 40), a UD QP with qkey
 * 0x11111111 that goes INIT -> RTR -> RTS on its own, and an address handle
 * to the peer (global, hop limit 64, when the peer's GID has an interface
 * id, as on RoCE). Messages are limited to the port's active MTU.
 */
import { MTU_BYTES, type Ah } from '../../index';
import { RECV_WRID, SEND_WRID, type Mode, type Shared, type Transport } from './end';
import { Dest, formatGid, gidString, hasInterfaceId } from './wire';

/** ibv_ud_pingpong's qkey, on both ends. */
export const UD_QKEY = 0x11111111;
const GRH = 40;

/** ibv_ud_pingpong's address lines (its local one has a colon before GID). */
export function describeUdDest(which: 'local' | 'remote', d: Dest): string {
  const hex = (n: number, w: number) => n.toString(16).padStart(w, '0');
  const label = which === 'local' ? '  local address: ' : '  remote address:';
  const sep = which === 'local' ? ':' : ',';
  return `${label} LID 0x${hex(d.lid, 4)}, QPN 0x${hex(d.qpn, 6)}, PSN 0x${hex(d.psn, 6)}${sep} GID ${formatGid(d.gid)}`;
}

/** ibv_ud_pingpong's end. */
export const udMode: Mode = {
  program: 'ibv_ud_pingpong',
  headroom: GRH,
  table: 1,
  qpCount: () => 1,
  describe: describeUdDest,
  check(ctx, options) {
    const mtu = MTU_BYTES[ctx.queryPort(options.ibPort).activeMtu] ?? 0;
    if (options.size > mtu) throw new Error(`Requested size larger than port MTU (${mtu})`);
  },
  build({ pd, cq, mr, options }: Shared): Transport {
    const qp = pd.createQp({
      type: 'UD',
      qkey: UD_QKEY,
      sendCq: cq,
      recvCq: cq,
      cap: { maxSendWr: 1, maxRecvWr: options.rxDepth, maxSendSge: 1, maxRecvSge: 1 },
    });
    const inline = qp.cap.maxInlineData >= options.size;
    qp.toInit({ port: options.ibPort });
    const recv = { wrId: RECV_WRID, sg: { mr, offset: 0, length: options.size + GRH } };
    let ah: Ah | undefined;
    let remoteQpn = 0;
    return {
      qps: [qp],
      refillAt: 1,
      postRecvs: (n) => qp.postRecv(Array.from({ length: n }, () => recv)),
      postSend: () =>
        qp.postSend({ wrId: SEND_WRID, sg: { mr, offset: GRH, length: options.size }, ah, remoteQpn, remoteQkey: UD_QKEY, inline }),
      qpIndex: () => 0,
      connect([remote]) {
        qp.toRtr();
        qp.toRts();
        const global = hasInterfaceId(remote.gid);
        ah = pd.createAh({
          port: options.ibPort,
          lid: remote.lid,
          sl: options.sl,
          ...(global ? { gid: gidString(remote.gid), gidIndex: options.gidIndex ?? 0, hopLimit: 64 } : {}),
        });
        remoteQpn = remote.qpn;
      },
    };
  },
};
