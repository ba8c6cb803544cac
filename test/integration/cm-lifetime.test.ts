import { expectCleanExit, runFixture } from '../helpers/fixture-child';
import { binding } from '../../src/native/binding';
import { scaled } from '../helpers/slow';

interface Report {
  mode: string;
  timerFired: boolean;
  workers?: Array<{ id: number; seen: string[] }>;
}

// TODO(issue 15): unconditional once the native CM (h-cmnative) is merged.
const nativeCm = typeof (binding() as unknown as Record<string, unknown>).createCmChannel === 'function';
const describeCm = nativeCm ? describe : describe.skip;

/** Listeners and connections hold the process like sockets, until closed or unref'd; the API works in workers. */
describeCm('connection lifetimes (child processes, soft0)', () => {
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
