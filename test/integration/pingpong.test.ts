/**
 * `rx-verbs pingpong` on soft0: the built CLI (dist/cli/main.js, made by
 * `npm run build:ts`, which `npm test` runs first) in --loopback mode, with
 * polling and with both event pipelines; plus the connection exchange of
 * ibv_rc_pingpong, byte for byte. Interop with the real ibv_rc_pingpong runs
 * on rxe0 in the VM (test/rxe).
 */
import { execFile } from 'child_process';
import * as net from 'net';
import * as path from 'path';
import { decodeDest, encodeDest, formatGid, listen, exchangeAsClient, MESSAGE_BYTES, gidBytes, gidString } from '../../src/cli/pingpong/wire';
import { SRQ_TABLE } from '../../src/cli/pingpong/srq';
import { OPTIONS, resolveOptions } from '../../src/cli/pingpong/options';
import { runPair } from '../../src/cli/pingpong/run';
import { parseOptions } from '../../src/cli/shared/options';

const MAIN = path.resolve(__dirname, '../../dist/cli/main.js');

function cli(args: string[], timeout = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, 'pingpong', ...args], { timeout }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Both sides' report lines, as rc_pingpong prints them, with the right figures. */
function expectReports(stdout: string, size: number, iters: number): void {
  for (const side of ['server', 'client']) {
    expect(stdout).toMatch(new RegExp(`^\\[${side}\\] ${size * iters * 2} bytes in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d Mbit/sec$`, 'm'));
    expect(stdout).toMatch(new RegExp(`^\\[${side}\\] ${iters} iters in \\d+\\.\\d\\d seconds = \\d+\\.\\d\\d usec/iter$`, 'm'));
    expect(stdout).toMatch(new RegExp(`^\\[${side}\\]  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID `, 'm'));
  }
}

describe('rx-verbs pingpong --loopback on soft0', () => {
  it.each([
    ['polling', [], 64, 500],
    ['polling, 64 KiB', [], 65536, 100],
    ['events, operators pipeline', ['-e'], 4096, 300],
    ['events, native pipeline', ['-e', '--pipeline', 'native'], 4096, 300],
    ['events, small rx-depth', ['-e', '-r', '2'], 64, 200],
  ])('%s', async (_name, extra, size, iters) => {
    const r = await cli(['--loopback', '-d', 'soft0', '-p', '0', '-s', String(size), '-n', String(iters), ...(extra as string[])]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expectReports(r.stdout, size as number, iters as number);
  });

  it.each([
    ['--ud, polling', [], 1024, 300],
    ['--ud, events, operators pipeline', ['-e'], 1024, 300],
    ['--ud, events, native pipeline, global addresses', ['-e', '--pipeline', 'native', '-g', '0'], 4096, 200],
  ])('%s: ibv_ud_pingpong\'s lines (a colon before the local GID)', async (_name, extra, size, iters) => {
    const r = await cli(['--loopback', '--ud', '-d', 'soft0', '-p', '0', '-s', String(size), '-n', String(iters), ...(extra as string[])]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const side of ['server', 'client']) {
      expect(r.stdout).toMatch(new RegExp(`^\\[${side}\\] ${(size as number) * (iters as number) * 2} bytes in \\d+\\.\\d\\d seconds = `, 'm'));
      expect(r.stdout).toMatch(new RegExp(`^\\[${side}\\]  local address:  LID 0x[0-9a-f]{4}, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}: GID `, 'm'));
    }
  });

  it('--ud: a size above the port MTU fails as ibv_ud_pingpong does', async () => {
    const r = await cli(['--loopback', '--ud', '-d', 'soft0', '-p', '0', '-s', '4097', '-n', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Requested size larger than port MTU \(4096\)/);
  });

  it('says to use --loopback when asked to serve on a soft device', async () => {
    const r = await cli(['-d', 'soft0', '-p', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/soft device.*--loopback/);
  });

  it.each([
    ['-q without --srq', ['-q', '4'], /^rx-verbs pingpong: -q\/--num-qp goes with --srq; see 'rx-verbs pingpong --help'$/],
    ['-q with --ud', ['--ud', '-q', '4'], /-q\/--num-qp goes with --srq/],
    ['--pipeline without -e', ['--pipeline', 'native'], /--pipeline goes with -e\/--events/],
    ['a second server host', ['host1', 'host2'], /unexpected argument 'host2' \(this command takes one: server-host\)/],
  ])('an option of another mode or a stray argument is a usage error (exit 2) before anything runs: %s', async (_name, args, message) => {
    const r = await cli(['-d', 'soft0', '-p', '0', ...(args as string[])]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim()).toMatch(message as RegExp);
  });

  it('rejects bad options with a usage error (exit 2)', async () => {
    const r = await cli(['--loopback', '-m', '1000']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--mtu must be one of/);
  });

  it('--help says how soft devices are used', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--loopback/);
    expect(r.stdout).toMatch(/-e, --events/);
  });
});

describe("ibv_rc_pingpong's connection exchange", () => {
  const dest = { lid: 0x12, qpn: 0xabcdef, psn: 0x123456, gid: gidBytes('0000:0000:0000:0000:0000:ffff:7f00:0001') };

  it('encodes LID:QPN:PSN:GID as 51 characters and a NUL', () => {
    const msg = encodeDest(dest);
    expect(msg.length).toBe(MESSAGE_BYTES);
    expect(MESSAGE_BYTES).toBe(52);
    expect(msg.toString('latin1')).toBe('0012:abcdef:123456:00000000000000000000ffff7f000001\0');
    expect(decodeDest(msg)).toEqual(dest);
  });

  it('rejects a malformed message', () => {
    expect(() => decodeDest(Buffer.from('hello\0'))).toThrow(/malformed/);
  });

  it('formats GIDs like inet_ntop', () => {
    expect(formatGid(dest.gid)).toBe('::ffff:127.0.0.1');
    expect(formatGid(new Uint8Array(16))).toBe('::');
    expect(formatGid(gidBytes('fe80:0000:0000:0000:0200:00ff:fe00:0000'))).toBe('fe80::200:ff:fe00:0');
    expect(gidString(dest.gid)).toBe('0000:0000:0000:0000:0000:ffff:7f00:0001');
  });

  it('server side: speaks to a client written like rc_pingpong (52 bytes out, 52 in, "done")', async () => {
    const listener = await listen(0, '127.0.0.1');
    const connected: unknown[] = [];
    const serverMine = { ...dest, qpn: 0x42 };
    const served = listener.exchange([serverMine], (r) => connected.push(...r));
    const socket = net.connect({ host: '127.0.0.1', port: listener.port });
    await new Promise((r) => socket.once('connect', r));
    socket.write(Buffer.from('0000:000007:000009:00000000000000000000000000000000\0', 'latin1'));
    const reply = await new Promise<Buffer>((resolve) => {
      let got = Buffer.alloc(0);
      socket.on('data', (b) => {
        got = Buffer.concat([got, b]);
        if (got.length >= 52) resolve(got);
      });
    });
    socket.end(Buffer.from('done\0', 'latin1'));
    const [remote] = await served;
    expect(reply.length).toBe(52);
    expect(decodeDest(reply)).toEqual(serverMine);
    expect(remote).toEqual({ lid: 0, qpn: 7, psn: 9, gid: new Uint8Array(16) });
    expect(connected).toEqual([remote]); // the QP is connected before the answer goes out
  });

  it('client side: sends first, reads the answer, ends with "done\\0"', async () => {
    const received: Buffer[] = [];
    const server = net.createServer((s) => {
      s.on('data', (b) => {
        received.push(b);
        if (Buffer.concat(received).length === 52) s.write(encodeDest({ ...dest, qpn: 0x99 }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const remotes = await exchangeAsClient('127.0.0.1', port, [dest]);
      expect(remotes.map((r) => r.qpn)).toEqual([0x99]);
      await new Promise((r) => setTimeout(r, 50));
      const all = Buffer.concat(received);
      expect(all.subarray(0, 52)).toEqual(encodeDest(dest));
      expect(all.subarray(52).toString('latin1')).toBe('done\0');
    } finally {
      server.close();
    }
  });
});

describe('rx-verbs pingpong --srq (ibv_srq_pingpong) --loopback on soft0', () => {
  it.each([
    ['polling, 16 QPs', [], 4096, 1000],
    ['polling, 8 QPs, one receive each', ['-q', '8', '-r', '8'], 64, 500],
    ['events, operators pipeline', ['-e', '-q', '4'], 4096, 300],
    ['events, native pipeline', ['-e', '--pipeline', 'native', '-q', '32', '-r', '64'], 64, 600],
  ])('%s', async (_name, extra, size, iters) => {
    const r = await cli(['--srq', '--loopback', '-d', 'soft0', '-p', '0', '-s', String(size), '-n', String(iters), ...(extra as string[])]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expectReports(r.stdout, size as number, iters as number);
    // one local and one remote line per QP on each side, every QPN distinct
    const qps = Number((extra as string[])[(extra as string[]).indexOf('-q') + 1] ?? 16) || 16;
    for (const side of ['server', 'client']) {
      const local = r.stdout.match(new RegExp(`^\\[${side}\\]  local address: .*QPN 0x([0-9a-f]{6})`, 'gm')) ?? [];
      const remote = r.stdout.match(new RegExp(`^\\[${side}\\]  remote address: `, 'gm')) ?? [];
      expect(local).toHaveLength(qps);
      expect(remote).toHaveLength(qps);
      expect(new Set(local).size).toBe(qps);
    }
  });

  it('refuses fewer receives than QPs, as ibv_srq_pingpong (usage error)', async () => {
    const r = await cli(['--srq', '--loopback', '-q', '8', '-r', '4']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/rx_depth 4 is too small for 8 QPs/);
  });
});

describe("ibv_srq_pingpong's connection exchange", () => {
  const mine = [1, 2, 3].map((q) => ({ lid: 0, qpn: 0x100 + q, psn: q, gid: gidBytes('0000:0000:0000:0000:0000:ffff:7f00:0001') }));

  it('client side: 256 addresses out (zeros past -q), 256 in, then "done\\0"', async () => {
    const received: Buffer[] = [];
    const server = net.createServer((s) => {
      s.on('data', (b) => {
        received.push(b);
        if (Buffer.concat(received).length === 256 * 52) {
          s.write(Buffer.concat(Array.from({ length: 256 }, (_, i) => encodeDest({ lid: 0, qpn: i < 3 ? 0x900 + i : 0, psn: 0, gid: new Uint8Array(16) }))));
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const remotes = await exchangeAsClient('127.0.0.1', port, mine, SRQ_TABLE);
      expect(remotes.map((d) => d.qpn)).toEqual([0x900, 0x901, 0x902]);
      await new Promise((r) => setTimeout(r, 50));
      const all = Buffer.concat(received);
      expect(all.length).toBe(256 * 52 + 5);
      for (let i = 0; i < 3; i++) expect(all.subarray(i * 52, (i + 1) * 52)).toEqual(encodeDest(mine[i]));
      expect(all.subarray(3 * 52, 4 * 52).toString('latin1')).toBe('0000:000000:000000:00000000000000000000000000000000\0');
      expect(all.subarray(256 * 52).toString('latin1')).toBe('done\0');
    } finally {
      server.close();
    }
  });

  it('server side: reads 256, connects, answers 256, waits for "done"', async () => {
    const listener = await listen(0, '127.0.0.1', SRQ_TABLE);
    const connected: unknown[] = [];
    const served = listener.exchange(mine, (r) => connected.push(r));
    const socket = net.connect({ host: '127.0.0.1', port: listener.port });
    await new Promise((r) => socket.once('connect', r));
    socket.write(Buffer.concat(Array.from({ length: 256 }, (_, i) => encodeDest({ lid: 0, qpn: i < 3 ? 7 + i : 0, psn: 9, gid: new Uint8Array(16) }))));
    const reply = await new Promise<Buffer>((resolve) => {
      let got = Buffer.alloc(0);
      socket.on('data', (b) => {
        got = Buffer.concat([got, b]);
        if (got.length >= 256 * 52) resolve(got);
      });
    });
    socket.end(Buffer.from('done\0', 'latin1'));
    const remotes = await served;
    expect(reply.length).toBe(256 * 52);
    expect(decodeDest(reply.subarray(52, 104))).toEqual(mine[1]);
    expect(decodeDest(reply.subarray(3 * 52, 4 * 52)).qpn).toBe(0);
    expect(remotes.map((d) => d.qpn)).toEqual([7, 8, 9]);
    expect(connected).toEqual([remotes]);
  });
});

describe('-c (--chk): the received buffer validated as rdma-core validates it', () => {
  it.each([
    ['RC, 4 pages', [], 16384, 300],
    ['RC, events, 2 pages and a bit', ['-e'], 9000, 200],
    ['--srq, 2 pages', ['--srq', '-q', '4'], 8192, 400],
    ['--ud', ['--ud'], 1024, 300],
    ['--ud, events', ['--ud', '-e', '--pipeline', 'native'], 2048, 200],
  ])('%s: both ends with -c, the server finds every page marked', async (_name, extra, size, iters) => {
    const r = await cli(['--loopback', '-c', '-d', 'soft0', '-p', '0', '-s', String(size), '-n', String(iters), ...(extra as string[])]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^\\[server\\] ${(size as number) * (iters as number) * 2} bytes in `, 'm'));
    expect(r.stdout).not.toMatch(/invalid data/);
  });

  /** The options of `rx-verbs pingpong <args>` on soft0, in one process. */
  const parse = (args: string[]) => resolveOptions(parseOptions(['--loopback', '-d', 'soft0', '-p', '0', ...args], OPTIONS), () => 'soft0');

  it.each([
    ['RC', [], 8192, ['invalid data in page 0', 'invalid data in page 1']],
    ['RC, a page and a byte', [], 4097, ['invalid data in page 0', 'invalid data in page 1']],
    ['--srq', ['--srq', '-q', '3'], 8192, ['invalid data in page 0', 'invalid data in page 1']],
    ['--ud', ['--ud'], 1024, ['invalid data in page 0']],
  ])('%s: a server with -c whose client does not mark its pages reports each page, after the report lines', async (_name, extra, size, pages) => {
    const server = parse(['-c', '-s', String(size), '-n', '50', ...(extra as string[])]);
    const lines: string[] = [];
    await runPair(server, { ...server, chk: false }, (l) => lines.push(l));
    const serverLines = lines.filter((l) => l.startsWith('[server] ') && !/address/.test(l));
    expect(serverLines.slice(2)).toEqual((pages as string[]).map((p) => `[server] ${p}`));
    expect(serverLines[1]).toMatch(/^\[server\] 50 iters in /);
    expect(lines.filter((l) => /invalid data/.test(l) && l.startsWith('[client]'))).toEqual([]);
  });

  it('a client with -c and a server without: nothing is checked, nothing reported (as rdma-core: only the server checks)', async () => {
    const client = parse(['-c', '-s', '8192', '-n', '50']);
    const lines: string[] = [];
    await runPair({ ...client, chk: false }, client, (l) => lines.push(l));
    expect(lines.filter((l) => /invalid data/.test(l))).toEqual([]);
    expect(lines.filter((l) => / iters in /.test(l))).toHaveLength(2);
  });
});

describe("ibv_rc_pingpong's device-feature options", () => {
  it.each([
    ['-o', /-o\/--odp is not supported: rx-verbs registers pinned memory only/],
    ['-O', /-O\/--iodp is not supported/],
    ['--ts', /-t\/--ts is not supported: .*no timestamp/],
    ['-j', /-j\/--dm is not supported: .*device memory/],
  ])('%s fails before anything runs, saying why (exit 1)', async (flag, message) => {
    const r = await cli(['--loopback', '-d', 'soft0', '-p', '0', '-n', '10', flag as string]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message as RegExp);
    expect(r.stdout).toBe('');
  });

  it('--srq -o is refused too (ibv_srq_pingpong has -o), and its missing options are usage errors', async () => {
    const odp = await cli(['--srq', '--loopback', '-d', 'soft0', '-p', '0', '-o']);
    expect(odp.code).toBe(1);
    expect(odp.stderr).toMatch(/-o\/--odp is not supported/);
    const ts = await cli(['--srq', '--loopback', '-d', 'soft0', '-p', '0', '-t']);
    expect(ts.code).toBe(2);
    expect(ts.stderr).toMatch(/-t\/--ts is not an option of ibv_srq_pingpong/);
    const ud = await cli(['--ud', '--loopback', '-d', 'soft0', '-p', '0', '-N']);
    expect(ud.code).toBe(2);
    expect(ud.stderr).toMatch(/-N\/--new_send is not an option of ibv_ud_pingpong/);
  });

  it("refuses -P without -o as ibv_rc_pingpong does, and -o with -j", async () => {
    const p = await cli(['--loopback', '-d', 'soft0', '-p', '0', '-P']);
    expect(p.code).toBe(2);
    expect(p.stderr).toMatch(/prefetch is valid only with on-demand memory region/);
    const dm = await cli(['--loopback', '-d', 'soft0', '-p', '0', '-o', '-j']);
    expect(dm.code).toBe(2);
    expect(dm.stderr).toMatch(/DM memory region can't be on demand/);
  });

  it('-N (--new_send) runs: the new send API makes the same SEND on the wire', async () => {
    const r = await cli(['--loopback', '-d', 'soft0', '-p', '0', '-s', '64', '-n', '100', '-N', '-c']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expectReports(r.stdout, 64, 100);
  });

  it('--help lists -c and the feature options', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    for (const o of ['-c, --chk', '-o, --odp', '-O, --iodp', '-P, --prefetch', '-t, --ts', '-j, --dm', '-N, --new_send']) expect(r.stdout).toContain(o);
  });
});
