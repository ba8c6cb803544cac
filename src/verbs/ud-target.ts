import type { NativeAh } from '../native/binding';
import { Ah } from './ah';
import { checkInt, describe } from '../core/validate';

/**
 * A UD send WR's destination in the packed form: the RDMA fields carry it,
 * as `ibv_send_wr`'s union does (see src/native/ud_wrs.h): `rkey` indexes
 * the batch's address handles, `remoteAddr` is `qpn | qkey << 32`.
 */
export interface PackedUdTarget {
  remoteAddr: bigint;
  rkey: number;
}

/**
 * Reads the UD fields of one send WR (already read once from the user's
 * object) and files its address handle in `ahs`.
 */
export function packUdTarget(
  where: string,
  opcode: string,
  fields: { ah: unknown; remoteQpn: unknown; remoteQkey: unknown },
  ahs: NativeAh[],
): PackedUdTarget {
  if (opcode !== 'SEND' && opcode !== 'SEND_WITH_IMM') {
    throw new RangeError(`${where}.opcode must be SEND or SEND_WITH_IMM on a UD QP, got ${opcode}`);
  }
  const { ah, remoteQpn, remoteQkey } = fields;
  if (!(ah instanceof Ah)) throw new TypeError(`${where}.ah must be an Ah from pd.createAh(), got ${describe(ah)}`);
  if (ah.closed) {
    const err = new Error(`${where}.ah is closed`) as Error & { code: string };
    err.code = 'EBADF';
    throw err;
  }
  const qpn = checkInt(remoteQpn, `${where}.remoteQpn`, 0, 0xffffff);
  const qkey = checkInt(remoteQkey, `${where}.remoteQkey`, 0, 0xffffffff);
  let index = ahs.indexOf(ah.native);
  if (index < 0) index = ahs.push(ah.native) - 1;
  return { remoteAddr: BigInt(qpn) | (BigInt(qkey) << 32n), rkey: index };
}
