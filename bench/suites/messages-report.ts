/** The messages suite's tables, for the terminal and the report page alike (see formatResults). */
import { fmt, fmtRate } from './format';
import { MESSAGE_VARIANTS, MessagesResults, PIPELINED } from './messages';
import type { ResultsWriter } from './report';

const DESCRIBED: Record<string, string> = {
  layer: 'layer (send / messages$)',
  raw: 'raw verbs (completions$ + posts)',
  protocol: 'wire format, least JS (floor)',
  native: 'native C++ pair, same wire format',
};

const GB = 1e9;

/** Table 8 (small messages, rendezvous) and the steady-state line. */
export function messagesTables(m: MessagesResults, writer: ResultsWriter): string[] {
  const { table, line } = writer;
  const raw = { rate: m.rate.raw.rate, p50: m.latency.raw.p50 };
  const nat = { rate: m.rate.native.rate, p50: m.latency.native.p50 };
  const small = table(
    `\n8. Messages of ${m.size} B on soft0 over the soft CM: one way as fast as the sender may go (msg/s, the best round; CPU per message: the JS thread's, ` +
      "the native pair's two threads'), and echoed one at a time (round trip in us, every round's samples); each ratio from the same run",
    ['variant', 'msg/s', 'CPU ns/msg', 'p50', 'p99', 'p99.9', 'rate / raw', 'p50 / raw', 'rate / native', 'p50 / native'],
    MESSAGE_VARIANTS.map((v) => {
      const run = m.rate[v];
      const lat = m.latency[v];
      return [
        DESCRIBED[v],
        fmtRate(run.rate),
        fmt(run.cpuNsPerMessage, 0),
        fmt(lat.p50, 1),
        fmt(lat.p99, 1),
        fmt(lat.p999, 1),
        fmt(run.rate / raw.rate, 2),
        fmt(lat.p50 / raw.p50, 2),
        fmt(run.rate / nat.rate, 2),
        fmt(lat.p50 / nat.p50, 2),
      ];
    }),
  );
  const big = table(
    `\n8b. Rendezvous (above maxEager, 8 KiB): payload GB/s through the layer, one message in flight (each send() settles once the peer has READ it) and ${PIPELINED} in flight, ` +
      'against one plain RDMA READ per message on a plain connection (the floor of a READ rendezvous) and Buffer.copy of the same size (the best round of each)',
    ['size', 'messages', 'layer', `layer, ${PIPELINED} in flight`, 'raw READ (floor)', 'Buffer.copy', 'layer / copy', `${PIPELINED} in flight / copy`, 'raw READ / copy'],
    m.rendezvous.map((x) => [
      `${x.bytes >> 20} MiB`,
      `${x.messages}`,
      fmt(x.layerBytesPerSecond / GB, 2),
      fmt(x.pipelinedBytesPerSecond / GB, 2),
      fmt(x.readBytesPerSecond / GB, 2),
      fmt(x.copyBytesPerSecond / GB, 2),
      fmt(x.ratio, 2),
      fmt(x.pipelinedRatio, 2),
      fmt(x.readRatio, 2),
    ]),
  );
  const s = m.steady;
  const steady = line(
    `\n8c. Steady state, both sides after their warm-up, over ${fmtRate(s.messages)} messages: ${s.registrations} registrations of senders' memory (stats.registrations), ` +
      `${s.receiveBuffers} rendezvous receive buffers made, ${s.cacheHits} registration cache hits`,
  );
  return [small, big, steady];
}
