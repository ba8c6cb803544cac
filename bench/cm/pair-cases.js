// The cross-host benchmarks (bench/cm/README.md) as cases of the rxe pair
// harness (test/rxe/pair-cases.js documents the case format): the server
// side on guest a, the measuring client on guest b, every comparison
// against the same server program in the same boot. Variants alternate in
// rounds, so a slow stretch of the emulator hits both alike.
//
// Each case's `bench` says what its client's output measures: `group` (the
// table row), `impl` ('native' | 'ours') and `parse` (its figures from the
// client's output, or undefined when they are missing). pair-report.js
// reads them back from the logs the harness keeps.
'use strict';

const CM_LOOP = 'bench/build/cm-loop';
const OURS_CM = 'node bench/cm/ours.js';
const OURS_CLI = 'node dist/cli/main.js';

/** The `BENCH {json}` line cm-loop and ours.js print. */
const benchLine = (out) => {
  const line = out.split('\n').find((l) => l.startsWith('BENCH {'));
  return line ? JSON.parse(line.slice('BENCH '.length)) : undefined;
};
/** ibv_rc_pingpong's (and rx-verbs pingpong's) second report line. */
const USEC = /^(\d+) iters in ([\d.]+) seconds = ([\d.]+) usec\/iter$/m;
const usecLine = (out) => {
  const m = USEC.exec(out);
  return m ? { iters: Number(m[1]), seconds: Number(m[2]), usecPerIter: Number(m[3]) } : undefined;
};

/** The benchmark cases; `quick` makes them short (the CI run). */
function benchCases(quick) {
  // Under TCG a ping-pong round trip across the guests takes tens of ms:
  // the iteration counts keep the full run within the pair part's bound.
  const rounds = quick ? 1 : 2;
  const connects = quick ? 20 : 200;
  const burst = quick ? 40 : 300;
  const inflight = 8;
  // Not timed: the first connections of a process open the device.
  const warmup = 3;
  const iters = quick ? 200 : 1000;
  const size = 64;
  const out = [];
  const pp = `-e -d "$RXV_DEV" -g "$RXV_GID" -p "$RXV_PORT" -n ${iters} -s ${size}`;
  for (let r = 1; r <= rounds; r++) {
    const round = rounds > 1 ? ` (round ${r}/${rounds})` : '';
    const cmServer = (n) => ({ on: 'a', cmd: `${CM_LOOP} server "$RXV_SELF" "$RXV_PORT" ${n}`, expect: [new RegExp(`^cm-loop server: ${n} accepted, ${n} closed$`)] });
    out.push({
      name: `bench: connect set-up, cm-loop server on a, cm-loop client on b, ${connects} one after another${round}`,
      quick: true,
      timeout: 180,
      bench: { group: 'connect', impl: 'native', parse: benchLine },
      server: cmServer(connects + warmup),
      client: { on: 'b', cmd: `${CM_LOOP} client "$RXV_PEER" "$RXV_PORT" ${connects} 1 ${warmup}`, expect: [/^BENCH \{/] },
    });
    out.push({
      name: `bench: connect set-up, cm-loop server on a, our connect() on b, ${connects} one after another${round}`,
      quick: true,
      timeout: 180,
      bench: { group: 'connect', impl: 'ours', parse: benchLine },
      server: cmServer(connects + warmup),
      client: { on: 'b', cmd: `${OURS_CM} connect "$RXV_PEER" "$RXV_PORT" ${connects} ${warmup}`, expect: [/^BENCH \{/] },
    });
    out.push({
      name: `bench: accept rate, cm-loop server on a, cm-loop client on b, ${burst} with ${inflight} in flight${round}`,
      quick: true,
      timeout: 180,
      bench: { group: 'accept', impl: 'native', parse: benchLine },
      server: cmServer(burst),
      client: { on: 'b', cmd: `${CM_LOOP} client "$RXV_PEER" "$RXV_PORT" ${burst} ${inflight}`, expect: [/^BENCH \{/] },
    });
    out.push({
      name: `bench: accept rate, our Listener on a, cm-loop client on b, ${burst} with ${inflight} in flight${round}`,
      quick: true,
      timeout: 180,
      bench: { group: 'accept', impl: 'ours', parse: benchLine },
      server: { on: 'a', cmd: `${OURS_CM} listen "$RXV_SELF" "$RXV_PORT" ${burst}`, expect: [new RegExp(`^ours listen: ${burst} accepted, ${burst} closed`)] },
      client: { on: 'b', cmd: `${CM_LOOP} client "$RXV_PEER" "$RXV_PORT" ${burst} ${inflight}`, expect: [/^BENCH \{/] },
    });
    const ppServer = { on: 'a', cmd: `ibv_rc_pingpong ${pp}`, expect: [USEC] };
    out.push({
      name: `bench: RC ping-pong -e, ibv_rc_pingpong server on a, ibv_rc_pingpong client on b, ${iters} x ${size} B${round}`,
      quick: true,
      timeout: 180,
      bench: { group: 'pingpong', impl: 'native', parse: usecLine },
      server: ppServer,
      client: { on: 'b', cmd: `ibv_rc_pingpong ${pp} "$RXV_PEER"`, expect: [USEC] },
    });
    out.push({
      name: `bench: RC ping-pong -e, ibv_rc_pingpong server on a, ours (cq.completions$) on b, ${iters} x ${size} B${round}`,
      quick: true,
      timeout: 180,
      bench: { group: 'pingpong', impl: 'ours', parse: usecLine },
      server: ppServer,
      client: { on: 'b', cmd: `${OURS_CLI} pingpong --pipeline native ${pp} "$RXV_PEER"`, expect: [USEC] },
    });
  }
  return out;
}

module.exports = { benchCases };
