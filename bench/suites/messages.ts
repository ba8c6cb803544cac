/**
 * Suite 8: the message layer (docs/ARCHITECTURE.md, The message layer) on soft0, each figure against its
 * baselines in the same process and run:
 * - 64-byte messages one way as fast as the sender may go (rate) and echoed
 *   (round trip): the layer against the raw verbs pipeline on the same kind
 *   of connection (messages-raw.ts), the least JS speaking the same wire
 *   format on that pipeline (the floor of any JS layer of this protocol),
 *   and a native C++ pair of the same protocol (bench/native/messages.cc);
 * - rendezvous messages of 1 to 16 MiB against `Buffer.copy` of the same size,
 *   with one plain RDMA READ per message (the floor of a READ rendezvous);
 * - the registrations and receive buffers both sides make once warmed up.
 */
import { fmt, fmtRate } from './format';
import { LatencyStats, stats } from './latency';
import { copyRate, layerBig, layerPair, layerPing, LayerPair, layerRate, plainPair, PlainPair, steadyCounters } from './messages-layer';
import { MessageRateRun, protocolPing, protocolRate, RawEnd, RawEnds, rawPing, rawRate, rawRead, SMALL } from './messages-raw';
import { immediate, native, RunConfig, sleep } from './rig';

/** MiB sizes of the rendezvous runs. */
const BIG_MIB = [1, 4, 16];

/** The variants of the small-message runs, in the order each round runs them. */
export const MESSAGE_VARIANTS = ['layer', 'raw', 'protocol', 'native'] as const;
export type MessageVariant = (typeof MESSAGE_VARIANTS)[number];

/** Rendezvous messages the pipelined runs keep in flight: the layer's default `reads` (READs at once). */
export const PIPELINED = 4;

/** Rendezvous throughput at one size against Buffer.copy of that size (the best round of each). */
export interface RendezvousRun {
  bytes: number;
  /** Messages per round. */
  messages: number;
  /**
   * Payload bytes per second through the layer, one message in flight
   * (`await send()` each: it settles once the peer READ it and said DONE),
   * from the first send to the last one settled.
   */
  layerBytesPerSecond: number;
  /** The same with PIPELINED sends in flight. */
  pipelinedBytesPerSecond: number;
  /** Bytes per second of one RDMA READ per message on a plain connection, one in flight: the floor of a READ rendezvous. */
  readBytesPerSecond: number;
  /** Bytes per second of `Buffer.copy` of the same size. */
  copyBytesPerSecond: number;
  /** One in flight against Buffer.copy (what the target judges). */
  ratio: number;
  pipelinedRatio: number;
  readRatio: number;
}

export interface MessagesResults {
  /** Payload bytes of the small messages. */
  size: number;
  /** Each variant's best round. */
  rate: Record<MessageVariant, MessageRateRun>;
  /** Each variant's round trips, every round's samples merged. */
  latency: Record<MessageVariant, LatencyStats>;
  rendezvous: RendezvousRun[];
  /**
   * What both sides of the layer made after their warm-up, over the
   * measured part of the small and large runs: registrations of senders'
   * memory (`stats.registrations`), rendezvous receive buffers, cache hits,
   * and the messages that crossed meanwhile.
   */
  steady: { registrations: number; receiveBuffers: number; cacheHits: number; messages: number };
  rateToRaw: number;
  p50ToRaw: number;
  /** The floor: the least JS of the same wire format against the raw pipeline. */
  protocolRateToRaw: number;
  protocolP50ToRaw: number;
  rateToNative: number;
  p50ToNative: number;
  /** The raw pipeline against the native pair: where any JS layer starts from. */
  rawRateToNative: number;
  rawP50ToNative: number;
  /** The worst size's ratio to Buffer.copy. */
  rendezvousToCopy: number;
  /** The raw READ's ratio to Buffer.copy at that size: the floor. */
  readToCopyThere: number;
}

function nativeRate(n: number, warmup: number): MessageRateRun {
  const r = native().messagesPair({ mode: 'rate', count: n, warmup, size: SMALL });
  return { variant: 'native', messages: r.messages, seconds: r.seconds, rate: r.messages / r.seconds, cpuNsPerMessage: (r.cpuSeconds * 1e9) / Math.max(1, r.messages), ...(r.error ? { error: r.error } : {}) };
}

function nativePing(iters: number, warmup: number): Float64Array {
  const r = native().messagesPair({ mode: 'pingpong', count: iters, warmup, size: SMALL });
  if (r.error) throw new Error(`native messages pair: ${r.error}`);
  return new Float64Array(r.rtts!);
}

const closeAll = (...things: Array<{ close(): void } | undefined>) => {
  for (const t of things) t?.close();
};

function merged(xs: Float64Array[]): Float64Array {
  const out = new Float64Array(xs.reduce((s, x) => s + x.length, 0));
  let at = 0;
  for (const x of xs) {
    out.set(x, at);
    at += x.length;
  }
  return out;
}

type Steady = MessagesResults['steady'];
const addSteady = (into: Steady, before: Steady, after: Steady) => {
  for (const k of Object.keys(into) as (keyof Steady)[]) into[k] += after[k] - before[k];
};

/** One round on fresh connections: every variant's rate, then every variant's round trips. */
async function round(cfg: RunConfig, r: number, rate: Partial<Record<MessageVariant, MessageRateRun>>, samples: Record<MessageVariant, Float64Array[]>, steady: Steady): Promise<void> {
  const q = cfg.quick;
  const n = q ? 20_000 : 200_000;
  // The first round warms the JIT up; the later ones only their connections.
  const warm = r === 0 ? (q ? 5_000 : 20_000) : 1_000;
  const iters = q ? 2_000 : 20_000;
  const pingWarm = r === 0 ? (q ? 500 : 2_000) : 200;
  const lp = await layerPair();
  let pp: PlainPair | undefined;
  let ends: RawEnds | undefined;
  try {
    pp = await plainPair(lp.b);
    ends = { a: new RawEnd(pp.a), b: new RawEnd(pp.b) };
    const e = ends;
    const before = steadyCounters(lp);
    const rateRuns: Record<MessageVariant, () => Promise<MessageRateRun> | MessageRateRun> = {
      layer: () => layerRate(lp, n, warm),
      raw: () => rawRate(e, n, warm),
      protocol: () => protocolRate(e, n, warm),
      native: () => nativeRate(n, warm),
    };
    for (const v of MESSAGE_VARIANTS) {
      const run = await rateRuns[v]();
      if (run.error) cfg.log(`  messages rate ${v}: ${run.error}`);
      if (!rate[v] || run.rate > rate[v]!.rate) rate[v] = run;
      cfg.log(`  messages rate round ${r + 1} ${v.padEnd(8)} ${fmtRate(run.rate)} msg/s  ${fmt(run.cpuNsPerMessage, 0)} ns CPU/msg`);
      await immediate();
    }
    const pingRuns: Record<MessageVariant, () => Promise<Float64Array> | Float64Array> = {
      layer: () => layerPing(lp, iters, pingWarm),
      raw: () => rawPing(e, iters, pingWarm),
      protocol: () => protocolPing(e, iters, pingWarm),
      native: () => nativePing(iters, pingWarm),
    };
    const p50s: string[] = [];
    for (const v of MESSAGE_VARIANTS) {
      const us = await pingRuns[v]();
      samples[v].push(us);
      p50s.push(`${v} ${fmt(stats(v, us).p50, 1)}`);
      await immediate();
    }
    cfg.log(`  messages round trip round ${r + 1} p50 (us): ${p50s.join(', ')}`);
    if (r > 0) addSteady(steady, before, steadyCounters(lp));
  } finally {
    closeAll(ends?.a, ends?.b, lp.b, lp.a, lp.listener, pp?.b, pp?.a, pp?.listener);
  }
}

/**
 * Each size on one connection, warmed up with PIPELINED in flight (the
 * sender's registration and the receiver's buffers made then), then rounds
 * of one in flight, PIPELINED in flight and Buffer.copy.
 */
async function rendezvous(cfg: RunConfig, rounds: number, steady: Steady): Promise<RendezvousRun[]> {
  const out: RendezvousRun[] = [];
  const lp: LayerPair = await layerPair();
  let pp: PlainPair | undefined;
  let ends: RawEnds | undefined;
  try {
    pp = await plainPair(lp.b);
    ends = { a: new RawEnd(pp.a), b: new RawEnd(pp.b) };
    for (const mib of BIG_MIB) {
      const big = Buffer.alloc(mib << 20, mib);
      const count = Math.max(PIPELINED, Math.round((cfg.quick ? 48 : 512) / mib));
      let one = 0;
      let pipelined = 0;
      let copy = 0;
      let read = 0;
      await layerBig(lp, big, PIPELINED, PIPELINED);
      const before = steadyCounters(lp);
      for (let r = 0; r < rounds; r++) {
        one = Math.max(one, await layerBig(lp, big, count));
        pipelined = Math.max(pipelined, await layerBig(lp, big, count, PIPELINED));
        read = Math.max(read, await rawRead(ends, big, count));
        copy = Math.max(copy, copyRate(big, count));
      }
      addSteady(steady, before, steadyCounters(lp));
      out.push({
        bytes: big.length,
        messages: count,
        layerBytesPerSecond: one,
        pipelinedBytesPerSecond: pipelined,
        readBytesPerSecond: read,
        copyBytesPerSecond: copy,
        ratio: one / copy,
        pipelinedRatio: pipelined / copy,
        readRatio: read / copy,
      });
      cfg.log(`  rendezvous ${mib} MiB: layer ${fmt(one / 1e9, 2)} GB/s (${PIPELINED} in flight: ${fmt(pipelined / 1e9, 2)}), raw READ ${fmt(read / 1e9, 2)}, Buffer.copy ${fmt(copy / 1e9, 2)} GB/s`);
    }
  } finally {
    closeAll(ends?.a, ends?.b, lp.b, lp.a, lp.listener, pp?.b, pp?.a, pp?.listener);
  }
  return out;
}

export async function messages(cfg: RunConfig): Promise<MessagesResults> {
  if (cfg.device !== 'soft0') cfg.log(`messages: runs on soft0 over the soft CM (not ${cfg.device})`);
  const rounds = cfg.quick ? 2 : 5;
  const rate: Partial<Record<MessageVariant, MessageRateRun>> = {};
  const samples = Object.fromEntries(MESSAGE_VARIANTS.map((v) => [v, [] as Float64Array[]])) as Record<MessageVariant, Float64Array[]>;
  const steady: Steady = { registrations: 0, receiveBuffers: 0, cacheHits: 0, messages: 0 };
  cfg.log(`messages: ${SMALL} B messages, ${rounds} rounds of ${MESSAGE_VARIANTS.join(', ')}`);
  for (let r = 0; r < rounds; r++) {
    await round(cfg, r, rate, samples, steady);
    await sleep(20);
  }
  const latency = Object.fromEntries(MESSAGE_VARIANTS.map((v) => [v, stats(v, merged(samples[v]))])) as Record<MessageVariant, LatencyStats>;
  const big = await rendezvous(cfg, rounds, steady);
  const rates = rate as Record<MessageVariant, MessageRateRun>;
  const worst = big.reduce((w, x) => (x.ratio < w.ratio ? x : w));
  return {
    size: SMALL,
    rate: rates,
    latency,
    rendezvous: big,
    steady,
    rateToRaw: rates.layer.rate / rates.raw.rate,
    p50ToRaw: latency.layer.p50 / latency.raw.p50,
    protocolRateToRaw: rates.protocol.rate / rates.raw.rate,
    protocolP50ToRaw: latency.protocol.p50 / latency.raw.p50,
    rateToNative: rates.layer.rate / rates.native.rate,
    p50ToNative: latency.layer.p50 / latency.native.p50,
    rawRateToNative: rates.raw.rate / rates.native.rate,
    rawP50ToNative: latency.raw.p50 / latency.native.p50,
    rendezvousToCopy: worst.ratio,
    readToCopyThere: worst.readRatio,
  };
}
