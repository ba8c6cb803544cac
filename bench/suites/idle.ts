/** Suite 4: CPU used with armed channels and live subscriptions and no traffic. */
import { Subscription } from 'rxjs';
import { ackEvents, batchCompletions, drainCq, openDevice, rearm } from 'rx-verbs';
import { fmt } from './format';
import { RunConfig, cpuPercent, cpuStart, gc, sleep } from './rig';

export async function idle(cfg: RunConfig) {
  const seconds = cfg.quick ? 2 : 5;
  cfg.log(`idle: armed channels and live subscriptions, no traffic, ${seconds} s`);
  const ctx = openDevice(cfg.device);
  try {
    const channels = [ctx.createCompChannel(), ctx.createCompChannel()];
    const fastCqs = [0, 1, 2, 3].map((i) => ctx.createCq({ cqe: 256, channel: channels[i % 2] }));
    const opCq = ctx.createCq({ cqe: 256, channel: channels[0] });
    const sub = new Subscription();
    for (const cq of fastCqs) sub.add(cq.completions$.subscribe(() => undefined));
    sub.add(channels[0].events$.pipe(ackEvents(), rearm(), drainCq(), batchCompletions()).subscribe(() => undefined));
    opCq.requestNotify();
    await sleep(200);
    gc();
    const wakeups0 = channels.map((c) => c.wakeups.total);
    const cpu = cpuStart();
    await sleep(seconds * 1000);
    const pct = cpuPercent(cpu);
    const wakeups = channels.reduce((n, c, i) => n + c.wakeups.total - wakeups0[i], 0);
    sub.unsubscribe();
    cfg.log(`  ${fmt(pct, 3)}% of a core, ${wakeups} channel wakeups`);
    return { cpuPercent: pct, seconds, channels: channels.length, cqs: fastCqs.length + 1, wakeups };
  } finally {
    ctx.close();
  }
}
