import { headerProblem } from '../../../src/messages/header-check';
import { FLAG, Header, HEADER_BYTES, RENDEZVOUS_BYTES, TYPE } from '../../../src/messages/wire';

const header = (h: Partial<Header>): Header => ({ type: TYPE.EAGER, flags: 0, reserved: 0, grant: 10, id: 0, length: 0, ...h });

describe('message headers: what a correct peer sends', () => {
  it('takes every header the layer itself writes', () => {
    const ok: Array<[Partial<Header>, number]> = [
      [{ type: TYPE.EAGER, length: 0 }, HEADER_BYTES],
      [{ type: TYPE.EAGER, length: 64 }, HEADER_BYTES + 64],
      [{ type: TYPE.EAGER, flags: FLAG.REQUEST, id: 7, length: 3 }, HEADER_BYTES + 3],
      [{ type: TYPE.EAGER, flags: FLAG.RESPONSE, id: 7 }, HEADER_BYTES],
      [{ type: TYPE.EAGER, flags: FLAG.RESPONSE | FLAG.ERROR, id: 7, length: 5 }, HEADER_BYTES + 5],
      [{ type: TYPE.RENDEZVOUS, id: 1, length: RENDEZVOUS_BYTES }, HEADER_BYTES + RENDEZVOUS_BYTES],
      [{ type: TYPE.RENDEZVOUS, flags: FLAG.REQUEST, id: 2, length: RENDEZVOUS_BYTES }, HEADER_BYTES + RENDEZVOUS_BYTES],
      [{ type: TYPE.DONE, id: 3 }, HEADER_BYTES],
      [{ type: TYPE.DONE, flags: FLAG.CANCELLED, id: 3 }, HEADER_BYTES],
      [{ type: TYPE.CREDIT }, HEADER_BYTES],
    ];
    for (const [h, byteLen] of ok) expect([h, headerProblem(header(h), byteLen, 64)]).toEqual([h, undefined]);
  });

  it('names what is wrong with every other', () => {
    const bad: Array<[Partial<Header>, number, RegExp]> = [
      [{ reserved: 1 }, HEADER_BYTES, /reserved field is 1/],
      [{ type: 0 }, HEADER_BYTES, /type 0/],
      [{ type: 5 }, HEADER_BYTES, /type 5/],
      [{ length: 65 }, HEADER_BYTES + 65, /65 bytes \(maxEager 64\)/],
      [{ length: 10 }, HEADER_BYTES + 4, /of 10 bytes in a SEND of 20/],
      [{ length: 0 }, HEADER_BYTES + 1, /in a SEND of 17/],
      [{ flags: FLAG.ERROR }, HEADER_BYTES, /flags 4/],
      [{ flags: FLAG.CANCELLED }, HEADER_BYTES, /flags 8/],
      [{ flags: FLAG.REQUEST | FLAG.RESPONSE, id: 1 }, HEADER_BYTES, /flags 3/],
      [{ flags: FLAG.REQUEST, id: 0 }, HEADER_BYTES, /flags 1 and id 0/],
      [{ flags: 0, id: 9 }, HEADER_BYTES, /flags 0 and id 9/],
      [{ type: TYPE.RENDEZVOUS, id: 0, length: RENDEZVOUS_BYTES }, HEADER_BYTES + RENDEZVOUS_BYTES, /id 0/],
      [{ type: TYPE.RENDEZVOUS, id: 1, length: 19 }, HEADER_BYTES + 19, /descriptor of 19 bytes/],
      [{ type: TYPE.RENDEZVOUS, id: 1, flags: FLAG.CANCELLED, length: RENDEZVOUS_BYTES }, HEADER_BYTES + RENDEZVOUS_BYTES, /flags 8/],
      [{ type: TYPE.DONE, id: 1, flags: FLAG.REQUEST }, HEADER_BYTES, /DONE with flags 1/],
      [{ type: TYPE.DONE, id: 1, length: 4 }, HEADER_BYTES + 4, /DONE of 4 bytes/],
      [{ type: TYPE.CREDIT, length: 4 }, HEADER_BYTES + 4, /CREDIT of 4 bytes/],
      [{ type: TYPE.CREDIT, id: 3 }, HEADER_BYTES, /CREDIT with flags 0 and id 3/],
      [{ type: TYPE.CREDIT, flags: FLAG.CANCELLED }, HEADER_BYTES, /CREDIT with flags 8/],
    ];
    for (const [h, byteLen, why] of bad) expect([h, headerProblem(header(h), byteLen, 64)]).toEqual([h, expect.stringMatching(why)]);
  });
});
