/**
 * Type tags (docs/ARCHITECTURE.md, Memory safety; issue 16 item 1): every method, getter and
 * setter of every native class checks its receiver, and constructors accept
 * only what the addon itself passes them. The calls run in a child process
 * (test/fixtures/receiver-tags-child.js): a cast of the wrong object would
 * crash it, and the test sees the signal.
 */
import { expectCleanExit, FixtureResult, runFixture } from '../support/fixture-child';

interface Report {
  members: string[];
  calls: number;
  failures: string[];
  classes: string[];
  foreignExternal: boolean;
}

// The child runs on the device under test (test/fixtures/device.js).
describe('receivers are type-tagged', () => {
  let r: FixtureResult<Report>;
  const slow = process.env.RX_VERBS_ASAN ? 4 : 1;

  beforeAll(async () => {
    r = await runFixture<Report>('receiver-tags-child.js', [], 60_000 * slow);
  }, 70_000 * slow);

  it('the child exits cleanly: no signal, no sanitizer exit code', () => {
    expectCleanExit(r);
  });

  it('enumerates every native class and every member, getters and setters included', () => {
    expect(r.report!.classes).toEqual(expect.arrayContaining(['Context', 'Pd', 'Mr', 'CompletionChannel', 'Cq', 'Qp', 'CmChannel', 'CmId', 'Ah']));
    // The reproducers of issue 16, among the rest.
    expect(r.report!.members).toEqual(
      expect.arrayContaining(['Cq.stats (getter)', 'Cq.cqe (getter)', 'CompletionChannel.budget (setter)', 'Mr.lkey (getter)', 'Qp.modify (method)', 'CmId.localAddress (getter)', 'CmId.modifyQp (method)', 'CmChannel.readEvents (method)', 'Ah.close (method)', 'Pd.createAh (method)']),
    );
    expect(r.report!.calls).toBeGreaterThan(1000);
  });

  it('every wrong receiver (other classes live and closed, plain objects, primitives, undefined, proxies) is a TypeError', () => {
    expect(r.report!.failures).toEqual([]);
  });
});
