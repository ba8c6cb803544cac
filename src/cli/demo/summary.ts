/** What a demo run measured, and the table `rx-verbs demo` prints of it. */

/** What one demo run measured (printed as a table, or as JSON with `--json`). */
export interface DemoSummary {
  device: string;
  messages: number;
  bytes: number;
  seconds: number;
  mbPerSec: number;
  /** Seconds spent writing payloads into the send buffer (memcpy from a ramp). */
  fillSeconds: number;
  /** Seconds spent checking received payloads (memcmp against the ramp). */
  verifySeconds: number;
  /** The rest of `seconds`: posting, the device, and the rx-verbs pipeline. */
  pipelineSeconds: number;
  events: number;
  completions: number;
  wcsPerEvent: number;
  acks: number;
  arms: number;
  wakeups: number;
  verified: number;
  corrupt: number;
  errors: number;
}

/** The summary as (label, value) rows for the table. */
export function summaryRows(s: DemoSummary): [string, string][] {
  return [
    ['device', s.device],
    ['messages', String(s.messages)],
    ['verified', `${s.verified} (${s.corrupt} corrupt, ${s.errors} errors)`],
    ['bytes', String(s.bytes)],
    ['seconds', s.seconds.toFixed(3)],
    ['throughput', `${s.mbPerSec.toFixed(1)} MB/s`],
    ['time in the pipeline', `${s.pipelineSeconds.toFixed(3)} s (${pct(s.pipelineSeconds, s.seconds)})`],
    ['time filling payloads', `${s.fillSeconds.toFixed(3)} s (${pct(s.fillSeconds, s.seconds)})`],
    ['time verifying payloads', `${s.verifySeconds.toFixed(3)} s (${pct(s.verifySeconds, s.seconds)})`],
    ['completion events', String(s.events)],
    ['work completions', String(s.completions)],
    ['WCs per event', s.wcsPerEvent.toFixed(2)],
    ['ack calls', String(s.acks)],
    ['arms', String(s.arms)],
    ['channel wakeups', String(s.wakeups)],
  ];
}

function pct(part: number, whole: number): string {
  return `${((part / whole) * 100).toFixed(1)}%`;
}
