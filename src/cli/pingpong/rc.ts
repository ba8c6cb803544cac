/**
 * `ibv_rc_pingpong`'s mode: one RC QP with one send slot and rx-depth
 * receive slots of its own, connected to the peer's one QP (through the GRH
 * when the peer's GID has an interface id, as on RoCE).
 */
import { RECV_WRID, SEND_WRID, type EndOptions, type Mode, type Shared, type Transport } from './end';
import { Dest, describeDest, gidString, hasInterfaceId } from './wire';

/** rc_pingpong's RTR/RTS attributes, towards a peer whose GID is `remoteGid`. */
export function rcConnection(options: EndOptions, remoteGid: Uint8Array) {
  const global = hasInterfaceId(remoteGid);
  return {
    global,
    conn: {
      port: options.ibPort,
      mtu: options.mtu,
      sl: options.sl,
      gidIndex: global ? (options.gidIndex ?? 0) : undefined,
      timeout: 14,
      retryCnt: 7,
      rnrRetry: 7,
      minRnrTimer: 12,
    },
  };
}

/** The RTR endpoint of the peer's QP `remote` (its GID only when `global`). */
export function rcEndpoint(options: EndOptions, remote: Dest, global: boolean, gid = remote.gid) {
  return { qpNum: remote.qpn, lid: remote.lid, psn: remote.psn, port: options.ibPort, gid: global ? gidString(gid) : undefined };
}

/** ibv_rc_pingpong's end. */
export const rcMode: Mode = {
  program: 'ibv_rc_pingpong',
  headroom: 0,
  table: 1,
  qpCount: () => 1,
  describe: describeDest,
  build({ pd, cq, mr, options }: Shared): Transport {
    const qp = pd.createQp({
      sendCq: cq,
      recvCq: cq,
      cap: { maxSendWr: 1, maxRecvWr: options.rxDepth, maxSendSge: 1, maxRecvSge: 1 },
    });
    const inline = qp.cap.maxInlineData >= options.size;
    qp.toInit({ port: options.ibPort, access: [] });
    const recv = { wrId: RECV_WRID, sg: { mr } };
    const send = { wrId: SEND_WRID, opcode: 'SEND', sg: { mr }, signaled: true, inline } as const;
    return {
      qps: [qp],
      refillAt: 1,
      postRecvs: (n) => qp.postRecv(Array.from({ length: n }, () => recv)),
      postSend: () => qp.postSend(send),
      // rc_pingpong does not look: its one QP is the only one on the CQ
      qpIndex: () => 0,
      connect([remote]) {
        const { global, conn } = rcConnection(options, remote.gid);
        qp.toRtr(rcEndpoint(options, remote, global), conn);
        qp.toRts(conn);
      },
    };
  },
};
