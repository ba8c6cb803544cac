import { firstValueFrom, timeout } from 'rxjs';
import { CountingCompletion, UINT_MAX } from '../../../src/completion/counting-completion';

describe('CountingCompletion (the kernel completion API)', () => {
  it('try_wait_for_completion: false when done is 0, never blocks', () => {
    const c = new CountingCompletion();
    expect(c.tryWaitForCompletion()).toBe(false);
    expect(c.completionDone()).toBe(false);
  });

  it('complete: each complete() allows exactly one try to succeed', () => {
    const c = new CountingCompletion();
    c.complete();
    c.complete();
    expect(c.count).toBe(2);
    expect(c.tryWaitForCompletion()).toBe(true);
    expect(c.tryWaitForCompletion()).toBe(true);
    expect(c.tryWaitForCompletion()).toBe(false);
  });

  it('completion_done: true if a try would succeed, and consumes nothing', () => {
    const c = new CountingCompletion();
    c.complete();
    expect(c.completionDone()).toBe(true);
    expect(c.completionDone()).toBe(true);
    expect(c.count).toBe(1);
    c.tryWaitForCompletion();
    expect(c.completionDone()).toBe(false);
  });

  it('complete_all: sticky — done = UINT_MAX and every later try succeeds without consuming', () => {
    const c = new CountingCompletion();
    c.completeAll();
    expect(c.count).toBe(UINT_MAX);
    for (let i = 0; i < 1000; i++) expect(c.tryWaitForCompletion()).toBe(true);
    c.complete(); // does not wrap or change UINT_MAX
    expect(c.count).toBe(UINT_MAX);
    expect(c.completionDone()).toBe(true);
  });

  it('complete_all: wakes every waiter', async () => {
    const c = new CountingCompletion();
    const waits = [c.waitForCompletion(), c.waitForCompletion(), c.waitForCompletion()];
    expect(c.waiting).toBe(3);
    c.completeAll();
    await Promise.all(waits);
    expect(c.waiting).toBe(0);
    expect(c.count).toBe(UINT_MAX);
  });

  it('reinit_completion: done = 0, undoing complete_all', () => {
    const c = new CountingCompletion();
    c.completeAll();
    c.reinit();
    expect(c.tryWaitForCompletion()).toBe(false);
    c.complete();
    c.complete();
    c.reinit();
    expect(c.completionDone()).toBe(false);
  });

  it('wait_for_completion: resolves at once when done > 0 and consumes one', async () => {
    const c = new CountingCompletion(1);
    await c.waitForCompletion();
    expect(c.count).toBe(0);
  });

  it('wait_for_completion: waiters are woken one per complete(), FIFO, and consume it', async () => {
    const c = new CountingCompletion();
    const order: number[] = [];
    const w1 = c.waitForCompletion().then(() => order.push(1));
    const w2 = c.waitForCompletion().then(() => order.push(2));
    c.complete();
    expect(c.count).toBe(0); // handed to the first waiter, not left for a try
    expect(c.tryWaitForCompletion()).toBe(false);
    c.complete();
    await Promise.all([w1, w2]);
    expect(order).toEqual([1, 2]);
    expect(c.count).toBe(0);
  });

  it('wait$: emits once when one is consumed for it, synchronously at complete()', () => {
    const c = new CountingCompletion();
    const log: string[] = [];
    c.wait$.subscribe({ next: () => log.push('woken'), complete: () => log.push('|') });
    expect(log).toEqual([]);
    c.complete();
    expect(log).toEqual(['woken', '|']);
    expect(c.count).toBe(0);
  });

  it('wait$: unsubscribing cancels the wait without consuming', () => {
    const c = new CountingCompletion();
    const log: string[] = [];
    const sub = c.wait$.subscribe(() => log.push('a'));
    c.wait$.subscribe(() => log.push('b'));
    sub.unsubscribe();
    c.complete();
    expect(log).toEqual(['b']);
    c.complete();
    expect(c.count).toBe(1); // nobody waiting: it stays for a try
  });

  it('wait$ with timeout() is wait_for_completion_timeout', async () => {
    const c = new CountingCompletion();
    await expect(firstValueFrom(c.wait$.pipe(timeout(5)))).rejects.toThrow();
    expect(c.waiting).toBe(0);
    c.complete();
    expect(c.tryWaitForCompletion()).toBe(true);
  });

  it('should reject a bad initial count', () => {
    expect(() => new CountingCompletion(-1)).toThrow(RangeError);
    expect(() => new CountingCompletion(1.5)).toThrow(RangeError);
  });
});
