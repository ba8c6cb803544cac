import { createSoftDevice, openDevice, Context } from '../../src';
import { TEST_DEVICE, itSoft, makePair, waitFor } from '../support/device';
import { AnySource, endedAs, seeEnd } from '../support/ended';

/**
 * docs/ARCHITECTURE.md, Hot sources: a source of an object that is already closed is born
 * terminated. Each hot source of the verbs objects, first touched after its
 * object closed, ends exactly as the same source touched before the close
 * does: its subscriber, tryTake(), take() and firstValueFrom() see the end
 * at once, never silence.
 */
interface Kind {
  name: string;
  /** Opens what the source belongs to; returns how to touch the source, how to close its owner, and a clean-up. */
  open(ctx: Context): { touch(): AnySource; close(): void };
}

const KINDS: Kind[] = [
  {
    name: 'cq.completions$ after cq.close()',
    open: (ctx) => {
      const cq = ctx.createCq({ cqe: 4, channel: ctx.createCompChannel() });
      return { touch: () => cq.completions$, close: () => cq.close() };
    },
  },
  {
    name: 'cq.completions$ after ctx.close()',
    open: (ctx) => {
      const cq = ctx.createCq({ cqe: 4, channel: ctx.createCompChannel() });
      return { touch: () => cq.completions$, close: () => ctx.close() };
    },
  },
  {
    name: 'channel.events$ after channel.close()',
    open: (ctx) => {
      const channel = ctx.createCompChannel();
      return { touch: () => channel.events$, close: () => channel.close() };
    },
  },
  {
    name: 'channel.events$ after ctx.close()',
    open: (ctx) => {
      const channel = ctx.createCompChannel();
      ctx.createCq({ cqe: 4, channel });
      return { touch: () => channel.events$, close: () => ctx.close() };
    },
  },
  {
    name: 'ctx.asyncEvents$ after ctx.close()',
    open: (ctx) => ({ touch: () => ctx.asyncEvents$, close: () => ctx.close() }),
  },
];

describe.each(KINDS)('a source first touched after its object closed: $name', ({ open }) => {
  it('is born completed: the subscriber completes, tryTake() gives undefined, take() resolves undefined', async () => {
    const ctx = openDevice(TEST_DEVICE);
    try {
      const late = open(ctx);
      late.close();
      expect(await seeEnd(late.touch())).toEqual(endedAs({ complete: true }));
    } finally {
      ctx.close();
    }
  });

  it('ends as the same source touched before the close does', async () => {
    const ctx = openDevice(TEST_DEVICE);
    try {
      const early = open(ctx);
      const source = early.touch();
      expect(source.terminated).toBeUndefined();
      early.close();
      expect(await seeEnd(source)).toEqual(endedAs({ complete: true }));
    } finally {
      ctx.close();
    }
  });
});

describe('failures and a source first touched after the close: it ends as the close left it', () => {
  it('a CQ told of a failure only after its close (a connection that borrowed it lost its device) still ended cleanly', async () => {
    const ctx = openDevice(TEST_DEVICE);
    try {
      const early = ctx.createCq({ cqe: 4, channel: ctx.createCompChannel() });
      const earlySource = early.completions$;
      const late = ctx.createCq({ cqe: 4, channel: ctx.createCompChannel() });
      early.close();
      late.close();
      for (const cq of [early, late]) cq.fail(new Error('device removed'));
      expect(await seeEnd(earlySource)).toEqual(endedAs({ complete: true }));
      expect(await seeEnd(late.completions$)).toEqual(endedAs({ complete: true }));
    } finally {
      ctx.close();
    }
  });

  itSoft('an overrun CQ (CQ_ERR), then closed: completions$ errors with CqOverrunError, as when touched before', async () => {
    const p = makePair({ splitCqs: true });
    try {
      const early = p.ctx.createCq({ cqe: 4, channel: p.channel });
      const earlySource = early.completions$;
      const late = p.ctx.createCq({ cqe: 4, channel: p.channel });
      let errors = 0;
      earlySource.subscribe({ error: () => errors++ });
      p.ctx.faults.overrun(early);
      p.ctx.faults.overrun(late);
      // CQ_ERR for the two reaches them through the async watcher; the early one's source shows it.
      expect(await waitFor(() => errors === 1)).toBe(true);
      early.close();
      late.close();
      expect(await seeEnd(earlySource)).toEqual(endedAs({ errorName: 'CqOverrunError' }));
      expect(await seeEnd(late.completions$)).toEqual(endedAs({ errorName: 'CqOverrunError' }));
    } finally {
      p.close();
    }
  });

  itSoft('a context after DEVICE_FATAL, then closed: asyncEvents$ errors with DeviceFatalError', async () => {
    const name = `closedsrc${process.pid % 10000}`;
    createSoftDevice({ name });
    const ctx = openDevice(name);
    try {
      const cq = ctx.createCq({ cqe: 4, channel: ctx.createCompChannel() });
      let failed = false;
      cq.completions$.subscribe({ error: () => (failed = true) });
      ctx.faults.deviceFatal();
      expect(await waitFor(() => failed)).toBe(true);
      ctx.close();
      expect(await seeEnd(ctx.asyncEvents$)).toEqual(endedAs({ errorName: 'DeviceFatalError' }));
    } finally {
      ctx.close();
    }
  });
});
