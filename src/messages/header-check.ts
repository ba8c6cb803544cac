import { FLAG, Header, HEADER_BYTES, RENDEZVOUS_BYTES, TYPE } from './wire';

/** The flags each type may carry (README, "Message protocol"). */
const MESSAGE_FLAGS = new Set([0, FLAG.REQUEST, FLAG.RESPONSE, FLAG.RESPONSE | FLAG.ERROR]);

/**
 * What is wrong with a header that arrived in a SEND of `byteLen` bytes,
 * or `undefined` when it is one a correct peer sends: a known type, the
 * flags that type may carry, the reserved field 0, and a length that is
 * what arrived. Ids are checked where they are looked up; a rendezvous
 * descriptor's contents and the grant where they are used.
 */
export function headerProblem(h: Header, byteLen: number, maxEager: number): string | undefined {
  if (h.reserved !== 0) return `a header whose reserved field is ${h.reserved}`;
  const sized = (payload: number) => (byteLen === HEADER_BYTES + payload && h.length === payload ? undefined : `a ${name(h.type)} of ${h.length} bytes in a SEND of ${byteLen}`);
  switch (h.type) {
    case TYPE.EAGER:
      if (!MESSAGE_FLAGS.has(h.flags)) return `a message with flags ${h.flags}`;
      if ((h.flags === 0) !== (h.id === 0)) return `a message with flags ${h.flags} and id ${h.id}`;
      if (h.length > maxEager) return `an eager message of ${h.length} bytes (maxEager ${maxEager})`;
      return sized(h.length);
    case TYPE.RENDEZVOUS:
      if (!MESSAGE_FLAGS.has(h.flags)) return `a rendezvous with flags ${h.flags}`;
      if (h.id === 0) return 'a rendezvous with id 0';
      return sized(RENDEZVOUS_BYTES);
    case TYPE.DONE:
      if (h.flags !== 0 && h.flags !== FLAG.CANCELLED) return `a DONE with flags ${h.flags}`;
      return sized(0);
    case TYPE.CREDIT:
      if (h.flags !== 0 || h.id !== 0) return `a CREDIT with flags ${h.flags} and id ${h.id}`;
      return sized(0);
    default:
      return `a message of type ${h.type}`;
  }
}

function name(type: number): string {
  return type === TYPE.EAGER ? 'message' : type === TYPE.RENDEZVOUS ? 'rendezvous descriptor' : type === TYPE.DONE ? 'DONE' : 'CREDIT';
}
