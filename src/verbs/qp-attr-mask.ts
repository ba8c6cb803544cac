/**
 * rdma-core's `enum ibv_qp_attr_mask` (verbs.h): which fields of the
 * attributes an `ibv_modify_qp` call sets. The one TypeScript statement of
 * the bits; the addon's provider interface states them for C++.
 * @internal
 */
export const QP_ATTR_MASK = {
  STATE: 1 << 0,
  ACCESS_FLAGS: 1 << 3,
  PKEY_INDEX: 1 << 4,
  PORT: 1 << 5,
  QKEY: 1 << 6,
  AV: 1 << 7,
  PATH_MTU: 1 << 8,
  TIMEOUT: 1 << 9,
  RETRY_CNT: 1 << 10,
  RNR_RETRY: 1 << 11,
  RQ_PSN: 1 << 12,
  MAX_QP_RD_ATOMIC: 1 << 13,
  MIN_RNR_TIMER: 1 << 15,
  SQ_PSN: 1 << 16,
  MAX_DEST_RD_ATOMIC: 1 << 17,
  DEST_QPN: 1 << 20,
} as const;

const M = QP_ATTR_MASK;

/**
 * The attributes each step of an RC QP's connection sets, as rdma-core's
 * `rc_pingpong` sets them (and as the device requires for the step).
 * @internal
 */
export const RC_TRANSITION_MASK = {
  INIT: M.STATE | M.PKEY_INDEX | M.PORT | M.ACCESS_FLAGS,
  RTR: M.STATE | M.AV | M.PATH_MTU | M.DEST_QPN | M.RQ_PSN | M.MAX_DEST_RD_ATOMIC | M.MIN_RNR_TIMER,
  RTS: M.STATE | M.TIMEOUT | M.RETRY_CNT | M.RNR_RETRY | M.SQ_PSN | M.MAX_QP_RD_ATOMIC,
} as const;

/**
 * The same for a UD QP: no remote, no RDMA; its qkey at INIT.
 * @internal
 */
export const UD_TRANSITION_MASK = {
  INIT: M.STATE | M.PKEY_INDEX | M.PORT | M.QKEY,
  RTR: M.STATE,
  RTS: M.STATE | M.SQ_PSN,
} as const;
