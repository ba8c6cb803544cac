/**
 * Names of rdma-core's enumerations, indexed by their numeric values, so a
 * number read from a work completion maps to the name `ibv_wc_status_str()`
 * and friends would print. Kept free of any native import: the testing kit
 * and the operators use it without the addon.
 */

/** Work completion status names, indexed by `enum ibv_wc_status`. */
export const WC_STATUS_NAMES = [
  'SUCCESS', 'LOC_LEN_ERR', 'LOC_QP_OP_ERR', 'LOC_EEC_OP_ERR', 'LOC_PROT_ERR',
  'WR_FLUSH_ERR', 'MW_BIND_ERR', 'BAD_RESP_ERR', 'LOC_ACCESS_ERR', 'REM_INV_REQ_ERR',
  'REM_ACCESS_ERR', 'REM_OP_ERR', 'RETRY_EXC_ERR', 'RNR_RETRY_EXC_ERR',
  'LOC_RDD_VIOL_ERR', 'REM_INV_RD_REQ_ERR', 'REM_ABORT_ERR', 'INV_EECN_ERR',
  'INV_EEC_STATE_ERR', 'FATAL_ERR', 'RESP_TIMEOUT_ERR', 'GENERAL_ERR',
  'TM_ERR', 'TM_RNDV_INCOMPLETE',
] as const;

/** A work completion status as rdma-core names it. */
export type WcStatus = (typeof WC_STATUS_NAMES)[number];

/**
 * Human-readable status strings, as `ibv_wc_status_str()` words them, for
 * error messages.
 */
export const WC_STATUS_TEXT: Readonly<Record<WcStatus, string>> = {
  SUCCESS: 'success',
  LOC_LEN_ERR: 'local length error',
  LOC_QP_OP_ERR: 'local QP operation error',
  LOC_EEC_OP_ERR: 'local EE context operation error',
  LOC_PROT_ERR: 'local protection error',
  WR_FLUSH_ERR: 'Work Request Flushed Error',
  MW_BIND_ERR: 'memory management operation error',
  BAD_RESP_ERR: 'bad response error',
  LOC_ACCESS_ERR: 'local access error',
  REM_INV_REQ_ERR: 'remote invalid request error',
  REM_ACCESS_ERR: 'remote access error',
  REM_OP_ERR: 'remote operation error',
  RETRY_EXC_ERR: 'transport retry counter exceeded',
  RNR_RETRY_EXC_ERR: 'RNR retry counter exceeded',
  LOC_RDD_VIOL_ERR: 'local RDD violation error',
  REM_INV_RD_REQ_ERR: 'remote invalid RD request',
  REM_ABORT_ERR: 'aborted error',
  INV_EECN_ERR: 'invalid EE context number',
  INV_EEC_STATE_ERR: 'invalid EE context state',
  FATAL_ERR: 'fatal error',
  RESP_TIMEOUT_ERR: 'response timeout error',
  GENERAL_ERR: 'general error',
  TM_ERR: 'TM error',
  TM_RNDV_INCOMPLETE: 'TM software rendezvous',
};

/** Work completion opcodes (`enum ibv_wc_opcode`). */
export const WC_OPCODES = {
  SEND: 0,
  RDMA_WRITE: 1,
  RDMA_READ: 2,
  COMP_SWAP: 3,
  FETCH_ADD: 4,
  BIND_MW: 5,
  LOCAL_INV: 6,
  TSO: 7,
  RECV: 128,
  RECV_RDMA_WITH_IMM: 129,
} as const;

/** A work completion opcode as rdma-core names it. */
export type WcOpcode = keyof typeof WC_OPCODES;

const WC_OPCODE_BY_VALUE = new Map<number, WcOpcode>(
  Object.entries(WC_OPCODES).map(([name, value]) => [value, name as WcOpcode]),
);

/** The name of a numeric work completion opcode (`'UNKNOWN'` if none). */
export function wcOpcodeName(value: number): WcOpcode | 'UNKNOWN' {
  return WC_OPCODE_BY_VALUE.get(value) ?? 'UNKNOWN';
}

/** The name of a numeric work completion status (`'UNKNOWN'` if none). */
export function wcStatusName(value: number): WcStatus | 'UNKNOWN' {
  return WC_STATUS_NAMES[value] ?? 'UNKNOWN';
}

/** Send work request opcodes (`enum ibv_wr_opcode`). */
export const WR_OPCODES = {
  RDMA_WRITE: 0,
  RDMA_WRITE_WITH_IMM: 1,
  SEND: 2,
  SEND_WITH_IMM: 3,
  RDMA_READ: 4,
  ATOMIC_CMP_AND_SWP: 5,
  ATOMIC_FETCH_AND_ADD: 6,
} as const;

/** A send opcode rx-verbs can post. */
export type WrOpcode = keyof typeof WR_OPCODES;

/** Work completion flags (`enum ibv_wc_flags`). */
export const WC_FLAGS = { GRH: 1, WITH_IMM: 2 } as const;

/** Memory region access flags (`enum ibv_access_flags`). */
export const ACCESS = {
  LOCAL_WRITE: 1,
  REMOTE_WRITE: 2,
  REMOTE_READ: 4,
  REMOTE_ATOMIC: 8,
} as const;

/** An access flag name. */
export type AccessFlag = keyof typeof ACCESS;

/** QP state names, indexed by `enum ibv_qp_state`. */
export const QP_STATE_NAMES = ['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'SQE', 'ERR'] as const;

/** A QP state as rdma-core names it. */
export type QpState = (typeof QP_STATE_NAMES)[number];

/** Async event type names, indexed by `enum ibv_event_type`. */
export const ASYNC_EVENT_NAMES = [
  'CQ_ERR', 'QP_FATAL', 'QP_REQ_ERR', 'QP_ACCESS_ERR', 'COMM_EST', 'SQ_DRAINED',
  'PATH_MIG', 'PATH_MIG_ERR', 'DEVICE_FATAL', 'PORT_ACTIVE', 'PORT_ERR',
  'LID_CHANGE', 'PKEY_CHANGE', 'SM_CHANGE', 'SRQ_ERR', 'SRQ_LIMIT_REACHED',
  'QP_LAST_WQE_REACHED', 'CLIENT_REREGISTER', 'GID_CHANGE',
] as const;

/** An async event type as rdma-core names it. */
export type AsyncEventType = (typeof ASYNC_EVENT_NAMES)[number];

/** Port state names, indexed by `enum ibv_port_state`. */
export const PORT_STATE_NAMES = ['NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER'] as const;

/** MTU in bytes for `enum ibv_mtu` values 1..5. */
export const MTU_BYTES = [0, 256, 512, 1024, 2048, 4096] as const;

/** The names of the access flags set in `bits` (`enum ibv_access_flags`), in {@link ACCESS} order; unknown bits are left out. */
export function accessFlagNames(bits: number): AccessFlag[] {
  return (Object.keys(ACCESS) as AccessFlag[]).filter((name) => (bits & ACCESS[name]) !== 0);
}

/**
 * The transport retry count a connection gets unless told otherwise
 * (`qp.connect()`'s `retryCnt`, the CM's `retryCount`): how often a QP
 * resends a packet its peer did not acknowledge before the work request
 * fails with `RETRY_EXC_ERR`. A peer that vanished without a word (its host
 * or link gone) is noticed only this way, after about (count + 1) times the
 * QP's ACK timeout. Not 7, the most the field holds: rxe (Soft-RoCE)
 * retries for ever at 7, so a dead peer would never be noticed there.
 */
export const DEFAULT_RETRY_COUNT = 6;

/**
 * The receiver-not-ready retry count a connection gets unless told
 * otherwise (`qp.connect()`'s `rnrRetry`, the CM's `rnrRetryCount`): how
 * often a QP resends after its peer answered "no receive posted". 7 means
 * for ever, as librdmacm and rping default to: a peer that is gone sends no
 * such answer, so waiting for a live one's receives never hides a dead one.
 */
export const DEFAULT_RNR_RETRY_COUNT = 7;
