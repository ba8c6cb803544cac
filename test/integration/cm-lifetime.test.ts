import { expectCleanExit, runFixture } from '../support/fixture-child';
import { scaled } from '../support/slow';

interface Report {
  mode: string;
  timerFired: boolean;
  workers?: Array<{ id: number; seen: string[] }>;
}

/** Listeners and connections hold the process like sockets, until closed or unref'd; the API works in workers. */
describe('connection lifetimes (child processes, soft0)', () => {
  const HANG = scaled(20_000);

  it('lets the process exit once everything is closed', async () => {
    const r = await runFixture<Report>('cm-lifetime.js', ['closed'], HANG);
    expectCleanExit(r);
    expect(r.report!.timerFired).toBe(false);
  });

  it("lets the process exit while open but unref'd", async () => {
    const r = await runFixture<Report>('cm-lifetime.js', ['unref'], HANG);
    expectCleanExit(r);
    expect(r.report!.timerFired).toBe(false);
  });

  it('keeps the process alive while a listener and its connections are open', async () => {
    const r = await runFixture<Report>('cm-lifetime.js', ['open'], HANG);
    expectCleanExit(r);
    expect(r.report!.timerFired).toBe(true);
  });

  it('listens, connects and accepts inside worker threads', async () => {
    const r = await runFixture<Report>('cm-lifetime.js', ['workers'], HANG);
    expectCleanExit(r);
    expect(r.report!.workers!.map((w) => w.seen)).toEqual([
      ['server', 'client'],
      ['server', 'client'],
      ['server', 'client'],
    ]);
  });
});
