/**
 * rping's wire pieces: the 16-byte advertisement, the ping text, the
 * options with rping's letters and bounds, and the mailbox the protocol
 * loops await. The connection itself is tested in
 * test/integration/rping.test.ts.
 */
import { parseOptions } from '../../../src/cli/shared/options';
import { Mailbox } from '../../../src/cli/shared/mailbox';
import { withDeadline } from '../../../src/cli/shared/deadline';
import { LOOPBACK_COUNT, OPTIONS, resolveOptions } from '../../../src/cli/rping/options';
import { cString, cStringBytes, decodeInfo, encodeInfo, fillPing, INFO_BYTES, MAX_SIZE, MIN_SIZE } from '../../../src/cli/rping/wire';
import { CLIENT_OPTIONS, SERVER_OPTIONS, resolveOptions as resolvePair } from '../../../src/cli/rdma-pair/options';

describe('rping advertisement', () => {
  it('is 16 bytes: be64 address, be32 rkey, be32 size', () => {
    const out = Buffer.alloc(INFO_BYTES);
    encodeInfo({ addr: 0x0102030405060708n, rkey: 0xa0b0c0d0, size: 64 }, out);
    expect(out.toString('hex')).toBe('0102030405060708a0b0c0d000000040');
    expect(decodeInfo(out)).toEqual({ addr: 0x0102030405060708n, rkey: 0xa0b0c0d0, size: 64 });
  });

  it('refuses a short message', () => {
    expect(() => decodeInfo(Buffer.alloc(12))).toThrow(RangeError);
  });
});

describe('rping ping text', () => {
  const ping = (n: number, size = 64) => {
    const b = Buffer.alloc(size, 0xff);
    fillPing(b, n);
    return b;
  };

  it('is the text, then letters from A rotating by ping, then NUL (rping -v output)', () => {
    expect(cString(ping(0))).toBe('rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr');
    expect(cString(ping(1))).toBe('rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs');
    expect(ping(0)[63]).toBe(0);
    expect(cStringBytes(ping(0))).toBe(64);
  });

  it('wraps the letters after z, and the starting letter after 58 pings', () => {
    expect(cString(ping(57)).slice('rdma-ping-57: '.length, 'rdma-ping-57: '.length + 3)).toBe('zAB');
    expect(cString(ping(58)).slice('rdma-ping-58: '.length, 'rdma-ping-58: '.length + 2)).toBe('AB');
    expect(cString(ping(10, 200))).toMatch(/^rdma-ping-10: KLMN.*xyzABC/);
  });

  it('fits the largest ping number in the smallest size', () => {
    const b = ping(2147483647, MIN_SIZE);
    expect(cString(b).startsWith('rdma-ping-2147483647: ')).toBe(true);
    expect(b[MIN_SIZE - 1]).toBe(0);
    expect(cStringBytes(b)).toBe(MIN_SIZE);
  });

  it('has rping\'s size bounds', () => {
    expect(MIN_SIZE).toBe(26);
    expect(MAX_SIZE).toBe(65535);
  });
});

describe('rping options', () => {
  const parse = (...argv: string[]) => resolveOptions(parseOptions(argv, OPTIONS));

  it('takes rping\'s letters and defaults', () => {
    expect(parse('-s')).toMatchObject({ role: 'server', port: 7174, size: 64, count: 0, persistent: false, addr: undefined });
    expect(parse('-c', '-a', '10.0.0.1', '-C', '5', '-S', '100', '-v', '-V', '-d', '-p', '9999', '-q')).toMatchObject({
      role: 'client',
      addr: '10.0.0.1',
      count: 5,
      size: 100,
      verbose: true,
      validate: true,
      debug: true,
      port: 9999,
    });
    expect(parse('-s', '-P', '-a', '198.18.0.1')).toMatchObject({ persistent: true, addr: '198.18.0.1' });
    expect(parse('-c', '-a', '::1', '-I', '::1')).toMatchObject({ sourceAddr: '::1' });
  });

  it.each([
    [[], /give a role/],
    [['-s', '-c'], /one role at a time/],
    [['-c'], /needs the server's address/],
    [['-s', '-S', '25'], /--size must be an integer in 26..65535/],
    [['-s', '-S', '65536'], /--size/],
    [['-c', '-a', 'x', '-C', '-1'], /--count/],
    [['-s', '-p', '0'], /--port/],
    [['-s', '-C', 'many'], /needs a number/],
    [['-s', '-x'], /^unknown option '-x'$/],
    [['--loopback', '--clients', '4'], /persistent server/],
    [['-s', '--clients', '2', '-P'], /^--clients goes with --loopback$/],
    [['-s', '--clients', '1'], /^--clients goes with --loopback$/],
    [['-c', '-a', 'x', '-P'], /^-P\/--persistent goes with -s\/--server or --loopback$/],
    [['-s', '-I', '10.0.0.1'], /^-I\/--source-addr goes with -c\/--client or --loopback$/],
    [['-s', 'host'], /unexpected argument 'host'/],
  ])('refuses %j', (argv, message) => {
    expect(() => parse(...(argv as string[]))).toThrow(message as RegExp);
  });

  it("--loopback makes LOOPBACK_COUNT pings unless -C says (a check that ends); -s and -c keep rping's 0, until the peer goes", () => {
    expect(LOOPBACK_COUNT).toBe(10);
    expect(parse('--loopback')).toMatchObject({ role: 'loopback', count: LOOPBACK_COUNT });
    expect(parse('--loopback', '-C', '0')).toMatchObject({ count: 0 });
    expect(parse('--loopback', '-C', '3')).toMatchObject({ count: 3 });
    expect(parse('-s')).toMatchObject({ count: 0 });
    expect(parse('-c', '-a', 'x')).toMatchObject({ count: 0 });
  });
});

describe('rdma-server / rdma-client options', () => {
  it('take -s and -p with rdma_server\'s and rdma_client\'s defaults', () => {
    expect(resolvePair('server', parseOptions([], SERVER_OPTIONS))).toMatchObject({ role: 'server', host: '0.0.0.0', port: 7471 });
    expect(resolvePair('client', parseOptions([], CLIENT_OPTIONS))).toMatchObject({ role: 'client', host: '127.0.0.1', port: 7471 });
    expect(resolvePair('client', parseOptions(['-s', '198.18.0.1', '-p', '9000'], CLIENT_OPTIONS))).toMatchObject({
      host: '198.18.0.1',
      port: 9000,
    });
  });

  it('refuse a bad port and stray arguments', () => {
    expect(() => resolvePair('server', parseOptions(['-p', '70000'], SERVER_OPTIONS))).toThrow(/--port/);
    expect(() => resolvePair('server', parseOptions(['x'], SERVER_OPTIONS))).toThrow(/unexpected argument/);
  });
});

describe('Mailbox', () => {
  it('hands items over in order, queued or awaited', async () => {
    const m = new Mailbox<number>();
    m.put(1);
    const second = m.take().then(() => m.take());
    m.put(2);
    await expect(second).resolves.toBe(2);
  });

  it('lets queued items be taken after the end, then rejects with the reason', async () => {
    const m = new Mailbox<number>();
    m.put(1);
    m.end(new Error('gone'));
    m.put(2);
    await expect(m.take()).resolves.toBe(1);
    await expect(m.take()).rejects.toThrow('gone');
  });

  it('rejects a waiting taker when it ends, and a second taker at once', async () => {
    const m = new Mailbox<number>();
    const waiting = m.take();
    await expect(m.take()).rejects.toThrow(/one taker/);
    m.end(new Error('first'));
    m.end(new Error('second'));
    await expect(waiting).rejects.toThrow('first');
    expect(m.done).toBe(true);
  });
});

describe('withDeadline', () => {
  it('passes the result through in time and names the step when late', async () => {
    await expect(withDeadline(Promise.resolve(5), 1000, 'x')).resolves.toBe(5);
    await expect(withDeadline(new Promise(() => undefined), 10, 'the server')).rejects.toThrow(
      'timed out after 10 ms waiting for the server',
    );
  });
});
