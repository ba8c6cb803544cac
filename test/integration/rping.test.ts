/**
 * `rx-verbs rping`, `rdma-server` and `rdma-client` on soft0: the built CLI
 * (dist/cli/main.js) in --loopback mode (the soft CM exists inside one
 * process), both ends ours, connected through listen()/connect(). The -v
 * lines are checked against the text rdma-core's rping makes, generated
 * here independently of the CLI's code. Interop with rdma-core's rping,
 * rdma_server and rdma_client runs across two guests (test/rxe).
 */
import { execFile } from 'child_process';
import * as path from 'path';

const MAIN = path.resolve(__dirname, '../../dist/cli/main.js');

function cli(args: string[], env: NodeJS.ProcessEnv = {}, timeout = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { timeout, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The text of ping `n` at `size` bytes as rping's client makes it (its C loop, transcribed). */
function rpingText(n: number, size: number): string {
  const head = `rdma-ping-${n}: `;
  let out = head.slice(0, size - 1);
  let c = 65 + (n % 58);
  for (let i = head.length; i < size - 1; i++) {
    out += String.fromCharCode(c);
    c = c === 122 ? 65 : c + 1;
  }
  return out;
}

function linesOf(stdout: string, prefix: string): string[] {
  return stdout.split('\n').filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length));
}

describe('rx-verbs rping --loopback on soft0', () => {
  it('pings -C times; -v prints the lines rping prints, on both sides, in order', async () => {
    const r = await cli(['rping', '--loopback', '-p', '0', '-C', '60', '-v', '-V']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const expected = Array.from({ length: 60 }, (_, i) => rpingText(i, 64));
    expect(linesOf(r.stdout, 'ping data: ')).toEqual(expected);
    expect(linesOf(r.stdout, 'server ping data: ')).toEqual(expected);
    expect(expected[0]).toBe('rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr');
    expect(expected[58].slice(14, 16)).toBe('AB'); // the starting letter wrapped
  });

  it.each([26, 1000, 65535])('-S %i: data verified (-V) end to end', async (size) => {
    const r = await cli(['rping', '--loopback', '-p', '0', '-C', '5', '-S', String(size), '-V', '-v']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(linesOf(r.stdout, 'ping data: ')).toEqual(Array.from({ length: 5 }, (_, i) => rpingText(i, size)));
  });

  it('--loopback without -C makes 10 pings and ends with a line saying so (rping would ping silently forever)', async () => {
    const r = await cli(['rping', '--loopback', '-p', '0', '-V']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('rping --loopback: 10 pings of 64 bytes, data verified\n');
  });

  it('-P serves many clients at once, each verified', async () => {
    const r = await cli(['rping', '--loopback', '-p', '0', '-P', '--clients', '6', '-C', '40', '-V', '-v']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const pings = linesOf(r.stdout, 'ping data: ');
    expect(pings).toHaveLength(6 * 40);
    for (let i = 0; i < 40; i++) expect(pings.filter((l) => l === rpingText(i, 64))).toHaveLength(6);
    expect(linesOf(r.stdout, 'server ping data: ')).toHaveLength(6 * 40);
    expect(r.stdout).toMatch(/^rping --loopback: 240 pings of 64 bytes from 6 clients, data verified$/m);
  });

  it('-V catches data the server spoiled (test hook) and exits 1', async () => {
    const r = await cli(['rping', '--loopback', '-p', '0', '-C', '5', '-V', '-v'], { RX_VERBS_TEST_RPING_CORRUPT: '2' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^rx-verbs: data mismatch in ping 2$/m);
    expect(linesOf(r.stdout, 'ping data: ')).toEqual([rpingText(0, 64), rpingText(1, 64)]);
  });

  it('without -V the spoiled ping goes through, and -v shows it differ', async () => {
    const r = await cli(['rping', '--loopback', '-p', '0', '-C', '4', '-v'], { RX_VERBS_TEST_RPING_CORRUPT: '1' });
    expect(r.code).toBe(0);
    const got = linesOf(r.stdout, 'ping data: ');
    expect(got).toHaveLength(4);
    expect(got[1]).not.toBe(rpingText(1, 64));
    expect([got[0], got[2], got[3]]).toEqual([rpingText(0, 64), rpingText(2, 64), rpingText(3, 64)]);
  });

  it('-d tells the steps', async () => {
    const r = await cli(['rping', '--loopback', '-p', '0', '-C', '1', '-d']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^server: listening on 127\.0\.0\.1:\d+$/m);
    expect(r.stdout).toMatch(/^server: rdma read completion$/m);
    expect(r.stdout).toMatch(/^server: rdma write completion$/m);
    expect(r.stdout).toMatch(/^server: 127\.0\.0\.1:\d+ disconnected after 1 pings$/m);
  });

  it('-I connects from the given source address; one no device has fails clearly', async () => {
    const ok = await cli(['rping', '--loopback', '-p', '0', '-C', '2', '-V', '-d', '-I', '127.0.0.1']);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^server: connection request from 127\.0\.0\.1:\d+$/m);
    const bad = await cli(['rping', '--loopback', '-p', '0', '-C', '2', '-I', '192.0.2.7']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^rx-verbs: .*EADDRNOTAVAIL.*192\.0\.2\.7/m);
  });

  it.each([
    [['rping', '-S', '25', '--loopback'], /--size must be an integer in 26\.\.65535/],
    [['rping', '--loopback', '-a', '127.0.0.1'], /--loopback serves on 127\.0\.0\.1: give no -a/],
    [['rping', '-c'], /needs the server's address \(-a\)/],
    [['rping'], /give a role/],
    [['rping', '-s', '-Z'], /^rx-verbs rping: unknown option '-Z'; see 'rx-verbs rping --help'\n$/],
    [['rping', '--loopback', '--cm', 'ib'], /--cm must be 'soft' or 'rdmacm'/],
  ])('%j is a usage error (exit 2)', async (args, message) => {
    const r = await cli(args as string[]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message as RegExp);
    expect(r.stdout).toBe('');
  });

  it('says to use --loopback for a soft CM address across processes', async () => {
    for (const role of [['-s', '-a', '127.0.0.1'], ['-c', '-a', '127.0.0.1']]) {
      const r = await cli(['rping', ...role]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/connection manager of soft0, which exists inside one process only: use --loopback/);
    }
  });

  it("--help lists rping's letters", async () => {
    const r = await cli(['rping', '--help']);
    expect(r.code).toBe(0);
    for (const flag of ['-s', '-c', '-a', '-I', '-p', '-C', '-S', '-v', '-V', '-d', '-P', '-q']) expect(r.stdout).toContain(`  ${flag}, --`);
    expect(r.stdout).toContain('(default 7174)');
  });
});

describe('rx-verbs rdma-server / rdma-client --loopback on soft0', () => {
  it.each([['rdma-client'], ['rdma-server']])('%s --loopback: one 16-byte exchange each way, echo verified', async (command) => {
    const r = await cli([command, '--loopback', '-p', '0', '-v']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        'rdma_server: start',
        'rdma_client: start',
        'rdma_server: received 72782d766572627320636c69656e7400', // "rx-verbs client\0"
        'rdma_client: received 72782d766572627320636c69656e7400',
        'rdma_client: end 0',
        'rdma_server: end 0',
      ]),
    );
    expect(lines).toHaveLength(6);
  });

  it('prints their lines, and end -1 with the error on failure', async () => {
    const r = await cli(['rdma-client', '-s', '127.0.0.1']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('rdma_client: start\nrdma_client: end -1\n');
    expect(r.stderr).toMatch(/use --loopback/);
  });

  it('bad options are usage errors (exit 2), --help shows the defaults', async () => {
    const bad = await cli(['rdma-server', '-p', '65536']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--port must be an integer in 1\.\.65535/);
    const help = await cli(['rdma-client', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('(default 7471)');
    expect(help.stdout).toContain('(default 127.0.0.1)');
  });

  it('rx-verbs --help lists the three commands', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {2}rping +RDMA READ\/WRITE ping/m);
    expect(r.stdout).toMatch(/^ {2}rdma-server +/m);
    expect(r.stdout).toMatch(/^ {2}rdma-client +/m);
  });
});
