/**
 * A deadline for one awaited step of a command: rejects with a clear message
 * naming the step when it takes longer than `ms`. The timer never keeps the
 * process alive and is cleared as soon as the step settles.
 */
export function withDeadline<T>(step: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    timer.unref();
  });
  return Promise.race([step, late]).finally(() => clearTimeout(timer));
}
