/**
 * Re-entrancy (docs/ARCHITECTURE.md, Memory safety; issue 16 item 2): native entry points read
 * every JS argument before they take a native object, so a getter (or Proxy
 * trap, or valueOf) that closes the receiver or an argument ends in a clear
 * EBADF error (or a TypeError for values the addon never converts), never a
 * use-after-free. Run in a child (test/fixtures/reentrancy-child.js), which
 * names each case on stderr so a crash points at it.
 */
import { expectCleanExit, FixtureResult, runFixture } from '../support/fixture-child';

interface Report {
  cases: string[];
  failures: string[];
}

// The child runs on the device under test (test/fixtures/device.js); only the
// fault-injection cases (ctx.faults) use soft0, which is always present.
describe('getters that close objects under a native call', () => {
  let r: FixtureResult<Report>;
  const slow = process.env.RX_VERBS_ASAN ? 4 : 1;

  beforeAll(async () => {
    r = await runFixture<Report>('reentrancy-child.js', [], 60_000 * slow);
  }, 70_000 * slow);

  it('the child exits cleanly: no signal, no sanitizer exit code', () => {
    expectCleanExit(r);
  });

  it('covers the reproducers of issue 16 and every object-reading entry point', () => {
    expect(r.report!.cases).toEqual(
      expect.arrayContaining([
        'pd.createQp cap getter closing the pd',
        'pd.createQp cap getter closing the cq',
        'Pd.createQp cap getter (native) closing the pd',
        'Qp.modify attr getter (native) closing the qp',
        'Faults.errorCompletion wc getter (native) closing the cq',
        'Context.watchAsync owner getter (native) closing the ctx',
        'CompletionChannel.setOwner owner getter (native) closing the ch2',
        'Qp.modify with a hostile argument in every position',
        'a nested post from a getter does not change the outer batch',
      ]),
    );
  });

  it('each case ends in the documented error or correct behaviour', () => {
    expect(r.report!.failures).toEqual([]);
  });
});
