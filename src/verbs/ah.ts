import { ThreadBound } from '../core/thread-bound';
import type { NativeAddress, NativeAh } from '../native/binding';
import type { Pd } from './pd';
import { closeChildOf } from './lifecycle';
import { WC_FLAGS } from '../core/constants';
import { readGrh } from '../core/grh';
import { verbsFailure } from '../core/refusals';
import type { WorkCompletion } from '../core/wc-batch';
import { checkInt, checkObject, copyOptions, describe, optInt } from '../core/validate';

/**
 * Where an address handle points: a LID (InfiniBand) or a GID (routed IB,
 * and always on RoCE, where it makes the datagram carry a GRH).
 */
export interface AhOptions {
  /** Local port the datagrams leave from (default 1). */
  port?: number;
  /** Destination LID (InfiniBand LID routing; ignored by RoCE). */
  lid?: number;
  /** Destination GID: the address becomes global (a GRH is sent). Required on RoCE. */
  gid?: string;
  /** Local GID index the GRH's source GID comes from (default 0). */
  gidIndex?: number;
  /** Service level (default 0). */
  sl?: number;
  /** GRH hop limit (default 1: the local subnet/link). */
  hopLimit?: number;
  /** GRH traffic class (default 0). */
  trafficClass?: number;
  /** GRH flow label, 20 bits (default 0). */
  flowLabel?: number;
}

const AH_KEYS = ['port', 'lid', 'gid', 'gidIndex', 'sl', 'hopLimit', 'trafficClass', 'flowLabel'] as const;

/**
 * An address handle (`ibv_ah`): a destination for a UD queue pair's sends
 * ({@link SendWr.ah}). From {@link Pd.createAh} or {@link Pd.createAhFromWc}.
 * A posted work request copies the address, so closing the handle while
 * sends are in flight is allowed (as in rdma-core, nothing counts an
 * address handle's users). It goes with its PD, as every child of a PD
 * does: `pd.close()` closes it first.
 */
export class Ah extends ThreadBound {
  /** @internal */
  readonly native: NativeAh;
  /** The PD it belongs to. */
  readonly pd: Pd;
  /** The address it was created with (a copy). */
  readonly address: Readonly<AhOptions>;

  /** @internal */
  constructor(native: NativeAh, pd: Pd, address: AhOptions) {
    super();
    this.native = native;
    this.pd = pd;
    this.address = Object.freeze({ ...address });
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /** Destroys the handle (`ibv_destroy_ah`). Idempotent. */
  close(): void {
    closeChildOf(this.pd, this, this.native);
  }
}

/** @internal Validates `options` once, into plain values, and creates the native handle. */
export function createAh(pd: Pd, options: AhOptions): Ah {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`address must be an object ({ lid } or { gid, gidIndex }), got ${describe(options)}`);
  }
  const o = copyOptions(options, AH_KEYS, 'address');
  if (o.gid === undefined && o.lid === undefined) throw new TypeError('address needs a lid or a gid');
  if (o.gid !== undefined && typeof o.gid !== 'string') throw new TypeError(`address.gid must be a GID string, got ${describe(o.gid)}`);
  const native: NativeAddress = {
    portNum: optInt(o.port, 'address.port', 1, 255, 1),
    dlid: o.lid === undefined ? 0 : checkInt(o.lid, 'address.lid', 0, 0xffff),
    sl: optInt(o.sl, 'address.sl', 0, 15, 0),
  };
  if (o.gid !== undefined) {
    native.dgid = o.gid;
    native.sgidIndex = optInt(o.gidIndex, 'address.gidIndex', 0, 255, 0);
    native.hopLimit = optInt(o.hopLimit, 'address.hopLimit', 0, 255, 1);
    native.trafficClass = optInt(o.trafficClass, 'address.trafficClass', 0, 255, 0);
    native.flowLabel = optInt(o.flowLabel, 'address.flowLabel', 0, 0xfffff, 0);
  }
  return new Ah(pd.native.createAh(native), pd, o);
}

/**
 * @internal The address that answers a received datagram, as rdma-core's
 * `ibv_init_ah_from_wc` builds it: the sender's LID and service level from
 * the completion and, when the completion has the GRH flag, the sender's
 * GID from the GRH, sent from the local GID the datagram was addressed to.
 */
export function addressFromWc(pd: Pd, wc: Pick<WorkCompletion, 'flags' | 'slid' | 'sl'>, grh: ArrayBufferView | ArrayBufferLike, port: number): AhOptions {
  checkObject(wc, 'wc');
  const { flags, slid, sl } = wc;
  const portNum = checkInt(port, 'port', 1, 255);
  const address: AhOptions = { port: portNum, lid: checkInt(slid, 'wc.slid', 0, 0xffff), sl: checkInt(sl, 'wc.sl', 0, 15) };
  if ((checkInt(flags, 'wc.flags', 0, 0xffffffff) & WC_FLAGS.GRH) === 0) {
    if (address.lid === 0) {
      throw new RangeError('the completion has no GRH and no source LID (wc.slid 0): nothing says who sent it; was it a successful UD receive?');
    }
    return address;
  }
  const h = readGrh(grh);
  address.gid = h.sgid;
  address.gidIndex = localGidIndex(pd, portNum, h.dgid);
  address.hopLimit = h.hopLimit;
  address.trafficClass = h.trafficClass;
  address.flowLabel = h.flowLabel;
  return address;
}

/**
 * The index of `gid` in the port's GID table: the local GID a datagram was
 * sent to is the one its answer leaves from. The first match, as rdma-core
 * finds it (which cannot tell a RoCE v1 entry from a v2 entry of the same
 * GID apart: its GID types are in sysfs, not in the verbs).
 */
function localGidIndex(pd: Pd, port: number, gid: string): number {
  const ctx = pd.context;
  const entries = ctx.queryPort(port).gidTblLen;
  for (let i = 0; i < entries; i++) {
    let here: string;
    try {
      here = ctx.queryGid(port, i);
    } catch {
      break; // past the table's populated entries, as rdma-core's search stops
    }
    if (here === gid) return i;
  }
  throw verbsFailure('EINVAL', 'ibv_init_ah_from_wc', `the datagram was sent to GID ${gid}, which is not in port ${port}'s GID table`);
}
