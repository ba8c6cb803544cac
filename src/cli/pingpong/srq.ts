/**
 * `ibv_srq_pingpong`'s mode (`--srq -q N`): one shared receive queue of
 * rx-depth receives and N RC QPs on it (one send slot each), each connected
 * to the peer's QP of the same index. Every QP ping-pongs on its own; the
 * counters and the receive refill are shared, as the receives are.
 */
import { RECV_WRID, SEND_WRID, type Mode, type Shared, type Transport } from './end';
import { rcConnection, rcEndpoint } from './rc';
import { describeDest } from './wire';

/** How many addresses each side sends, whatever `-q` is (srq_pingpong's table). */
export const SRQ_TABLE = 256;

/** ibv_srq_pingpong's end. */
export const srqMode: Mode = {
  program: 'ibv_srq_pingpong',
  headroom: 0,
  table: SRQ_TABLE,
  qpCount: (options) => options.numQp,
  describe: describeDest,
  build({ pd, cq, mr, options }: Shared): Transport {
    const srq = pd.createSrq({ maxWr: options.rxDepth, maxSge: 1 });
    const qps = Array.from({ length: options.numQp }, () =>
      pd.createQp({ sendCq: cq, recvCq: cq, srq, cap: { maxSendWr: 1, maxSendSge: 1 } }),
    );
    const inline = qps.every((qp) => qp.cap.maxInlineData >= options.size);
    const byQpNum = new Map(qps.map((qp, i) => [qp.qpNum, i]));
    for (const qp of qps) qp.toInit({ port: options.ibPort, access: [] });
    const recv = { wrId: RECV_WRID, sg: { mr } };
    const send = { wrId: SEND_WRID, opcode: 'SEND', sg: { mr }, signaled: true, inline } as const;
    return {
      qps,
      // a receive left for each QP's message in flight
      refillAt: options.numQp,
      postRecvs: (n) => srq.postRecv(Array.from({ length: n }, () => recv)),
      postSend: (q) => qps[q].postSend(send),
      qpIndex: (qpNum) => byQpNum.get(qpNum),
      connect(remotes) {
        // srq_pingpong decides the GRH once, from the first remote GID, and uses that GID for all
        const { global, conn } = rcConnection(options, remotes[0].gid);
        qps.forEach((qp, i) => {
          qp.toRtr(rcEndpoint(options, remotes[i], global, remotes[0].gid), conn);
          qp.toRts(conn);
        });
      },
    };
  },
};
