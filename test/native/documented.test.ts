/**
 * Behaviour the README and the API docs promise that no other suite checks:
 * running without libibverbs, the device openDevice() picks, `rx-verbs
 * devices`, the async-event buffer and its drop count, Context.fatalError,
 * WcBatch.allOk() and Qp.psn. Runs on the device under test (soft0 here,
 * rxe0 in the VM), so the device-choice and CLI checks see a real device there.
 */
import { execFile, execFileSync } from 'child_process';
import * as path from 'path';
import { AsyncEvent, Context, WcBatch, createSoftDevice, defaultDeviceName, listDevices, openDevice } from '../../src';
import { devices } from '../../src/cli/devices/command';
import { IS_SOFT, TEST_DEVICE, makePair, pollN, region, waitFor } from '../support/device';
import { scaled } from '../support/slow';
import { caught } from '../support/verbs-checks';

const itSoft = IS_SOFT ? it : it.skip;
const ROOT = path.join(__dirname, '..', '..');

let deviceSeq = 0;
/** A soft device of its own, so device-wide faults touch no other test. */
function isolatedDevice(): Context {
  const name = `doc${process.pid % 10000}x${deviceSeq++}`;
  createSoftDevice({ name });
  return openDevice(name);
}

/** Runs `fn` with RX_VERBS_DEVICE set to `value` (or unset), restoring it after. */
function withDeviceEnv<T>(value: string | undefined, fn: () => T): T {
  const saved = process.env.RX_VERBS_DEVICE;
  if (value === undefined) delete process.env.RX_VERBS_DEVICE;
  else process.env.RX_VERBS_DEVICE = value;
  try {
    return fn();
  } finally {
    if (saved === undefined) delete process.env.RX_VERBS_DEVICE;
    else process.env.RX_VERBS_DEVICE = saved;
  }
}

describe('running where libibverbs.so.1 is missing', () => {
  // The loader reads RXV_IBVERBS_LIBRARY once, at its first use, so this runs
  // in a child process of its own (the binding only: no rxjs to load, which
  // matters under emulation in the VM). On rxe0 it makes a real device vanish.
  it('lists only soft devices, opens soft0 by default, and opening a real device fails with ENODEV naming what is missing', async () => {
    const missing = path.join(ROOT, 'build', 'no-such-dir', 'libibverbs.so.1');
    const script = `
      const { binding } = require(${JSON.stringify(path.join(ROOT, 'dist', 'native', 'binding'))});
      const b = binding();
      const out = { hasIbverbs: b.hasIbverbs(), devices: b.listDevices().map((d) => [d.name, d.provider]) };
      try { b.openDevice('rxe0').close(); out.open = 'opened'; } catch (e) { out.open = { code: e.code, syscall: e.syscall, message: e.message }; }
      const ctx = b.openDevice('soft0'); out.soft0 = ctx.deviceName; ctx.close();
      process.stdout.write(JSON.stringify(out));
    `;
    const env: NodeJS.ProcessEnv = { ...process.env, RXV_IBVERBS_LIBRARY: missing };
    delete env.RX_VERBS_DEVICE;
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['-e', script], { env, timeout: scaled(30000) }, (err, out, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(out),
      ),
    );
    const r = JSON.parse(stdout);
    expect(r.devices.length).toBeGreaterThan(0);
    expect(r.devices.filter(([, provider]: [string, string]) => provider !== 'soft')).toEqual([]);
    expect(r.devices).toContainEqual(['soft0', 'soft']);
    expect(r.soft0).toBe('soft0');
    expect(r.open).toMatchObject({ code: 'ENODEV', syscall: 'ibv_open_device' });
    // It says what is missing: the library (and what provides it), or, in a
    // build without rdma-core's headers, the headers.
    if (r.hasIbverbs) {
      expect(r.open.message).toContain(missing);
      expect(r.open.message).toMatch(/not found.*rdma-core/);
    } else {
      expect(r.open.message).toMatch(/without rdma-core headers.*libibverbs-dev/);
    }
  }, scaled(40000));
});

describe('openDevice() without a name', () => {
  const real = () => listDevices().filter((d) => d.provider !== 'soft');

  it('picks RX_VERBS_DEVICE when set, whatever else exists', () => {
    const ctx = isolatedDevice(); // a second soft device to choose
    const name = ctx.deviceName;
    ctx.close();
    const chosen = withDeviceEnv(name, () => openDevice());
    try {
      expect(chosen.deviceName).toBe(name);
    } finally {
      chosen.close();
    }
    // A name that does not exist fails; it does not fall back to another device.
    const err = withDeviceEnv('nope9', () => caught(() => openDevice()));
    expect(err).toMatchObject({ code: 'ENODEV' });
    // An explicit name beats the variable.
    const explicit = withDeviceEnv('nope9', () => openDevice(TEST_DEVICE));
    try {
      expect(explicit.deviceName).toBe(TEST_DEVICE);
    } finally {
      explicit.close();
    }
  });

  it('without RX_VERBS_DEVICE picks the first real device, else soft0 (soft devices made later do not change that)', () => {
    isolatedDevice().close(); // more soft devices exist than soft0
    const chosen = withDeviceEnv(undefined, () => openDevice());
    try {
      if (IS_SOFT && real().length === 0) {
        // A host without RDMA: the embedded device.
        expect(chosen.deviceName).toBe('soft0');
        expect(chosen.provider).toBe('soft');
      } else {
        // A host with a real device (rxe0 in the VM): that one, through rdma-core.
        expect(chosen.deviceName).toBe(real()[0].name);
        expect(chosen.provider).toBe('ibverbs');
        if (!IS_SOFT) expect(real().map((d) => d.name)).toContain(TEST_DEVICE);
      }
      expect(withDeviceEnv(undefined, defaultDeviceName)).toBe(chosen.deviceName);
    } finally {
      chosen.close();
    }
  });
});

describe('rx-verbs devices', () => {
  /** Runs the command in this process (a node start costs ~20 s under emulation) and returns what it printed. */
  async function runDevices(args: string[]): Promise<{ code: number; out: string }> {
    let out = '';
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      return true;
    });
    try {
      const code = await devices.run(args);
      return { code, out };
    } finally {
      spy.mockRestore();
    }
  }

  it(`describes the device under test (${TEST_DEVICE}) as the library's own queries see it`, async () => {
    const { code, out } = await runDevices(['--json', '--device', TEST_DEVICE]);
    expect(code).toBe(0);
    const [d] = JSON.parse(out);
    const ctx = openDevice(TEST_DEVICE);
    try {
      const attr = ctx.queryDevice();
      const port = ctx.queryPort(1);
      expect(d).toMatchObject({ name: TEST_DEVICE, provider: IS_SOFT ? 'soft' : 'ibverbs', maxQp: attr.maxQp, maxCqe: attr.maxCqe });
      expect(d.ports).toHaveLength(attr.physPortCnt);
      expect(d.ports[0]).toMatchObject({ port: 1, state: port.stateName, lid: port.lid });
      expect(d.ports[0].state).toBe('ACTIVE');
      // Every GID listed is the device's at that index; a RoCE port (rxe) has
      // at least its link-local one.
      expect(d.ports[0].gids.length).toBeGreaterThan(0);
      for (const g of d.ports[0].gids) expect(g.gid).toBe(ctx.queryGid(1, g.index));
      if (!IS_SOFT) expect(d.ports[0].linkLayer).toMatch(/^(Ethernet|InfiniBand)$/);
    } finally {
      ctx.close();
    }
    // The text form names the same device and port state.
    const text = await runDevices(['--device', TEST_DEVICE]);
    expect(text.out).toMatch(new RegExp(`^hca_id:\\t${TEST_DEVICE}\\n`));
    expect(text.out).toContain(`provider:\t\t${d.provider}`);
    expect(text.out).toContain('state:\t\tACTIVE');
  });

  // On a real device, rdma-core's own tool is the truth when it is installed.
  const devinfo = (() => {
    if (IS_SOFT) return undefined;
    try {
      return execFileSync('ibv_devinfo', ['-d', TEST_DEVICE], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return undefined;
    }
  })();
  (devinfo ? it : it.skip)("agrees with rdma-core's ibv_devinfo (real devices, where rdma-core's tools are installed)", async () => {
    const [d] = JSON.parse((await runDevices(['--json', '--device', TEST_DEVICE])).out);
    const field = (name: string) => devinfo!.match(new RegExp(`^\\s*${name}:\\s*(\\S+)`, 'm'))?.[1];
    expect(d.nodeGuid).toBe(field('node_guid'));
    expect(String(d.ports[0].activeMtu)).toBe(field('active_mtu'));
    expect(d.ports[0].linkLayer).toBe(field('link_layer'));
  });
});

describe('async events nobody takes', () => {
  itSoft('are buffered up to the high-water mark (1024); beyond it the oldest are dropped and counted in droppedAsyncEvents', async () => {
    const ctx = isolatedDevice();
    try {
      expect(ctx.droppedAsyncEvents).toBe(0);
      const HIGH = 1024;
      const N = HIGH + 7;
      // Alternating port events, ending with PORT_ACTIVE so the port is left up.
      const typeAt = (i: number) => ((N - 1 - i) % 2 === 0 ? 'PORT_ACTIVE' : 'PORT_ERR');
      for (let i = 0; i < N; i++) ctx.faults.portEvent(typeAt(i));
      // The context always watches its async fd: every event is read, kept or dropped.
      expect(await waitFor(() => ctx.asyncEvents$.pending + ctx.droppedAsyncEvents === N)).toBe(true);
      expect(ctx.droppedAsyncEvents).toBe(N - HIGH);
      expect(ctx.asyncEvents$.pending).toBe(HIGH);
      const kept: AsyncEvent[] = [];
      for (let e = ctx.asyncEvents$.tryTake(); e; e = ctx.asyncEvents$.tryTake()) kept.push(e);
      // The newest HIGH survived, in order.
      expect(kept.map((e) => e.type)).toEqual(Array.from({ length: HIGH }, (_, k) => typeAt(N - HIGH + k)));
      expect(kept.every((e) => e.port === 1)).toBe(true);
      expect(ctx.queryPort(1).stateName).toBe('ACTIVE');
      // Taking them dropped nothing more.
      expect(ctx.droppedAsyncEvents).toBe(N - HIGH);
    } finally {
      ctx.close();
    }
  });
});

describe('Context.fatalError', () => {
  itSoft('is undefined until DEVICE_FATAL, then the DeviceFatalError every source errors with; a context opened later starts clean', async () => {
    const ctx = isolatedDevice();
    const name = ctx.deviceName;
    try {
      expect(ctx.fatalError).toBeUndefined();
      const channel = ctx.createCompChannel();
      const cq = ctx.createCq({ cqe: 16, channel });
      let asyncError: unknown;
      const sub = ctx.asyncEvents$.subscribe({ error: (e) => (asyncError = e) });
      ctx.faults.deviceFatal();
      expect(await waitFor(() => asyncError !== undefined)).toBe(true);
      sub.unsubscribe();
      const fatal = ctx.fatalError;
      expect(fatal).toMatchObject({ name: 'DeviceFatalError', code: 'ERR_DEVICE_FATAL', device: name });
      expect(asyncError).toBe(fatal);
      // A source used only now errors with the same error.
      let cqError: unknown;
      cq.completions$.subscribe({ error: (e) => (cqError = e) });
      expect(cqError).toBe(fatal);
    } finally {
      ctx.close();
    }
    const again = openDevice(name);
    try {
      expect(again.fatalError).toBeUndefined();
    } finally {
      again.close();
    }
  });
});

describe('WcBatch.allOk()', () => {
  it('is true for a batch of successful completions and false once one failed (real traffic)', async () => {
    const p = makePair();
    try {
      const src = region(p.pd, 64, undefined, 7);
      const dst = region(p.pd, 64);
      p.b.postRecv({ wrId: 1, sg: { mr: dst } });
      p.a.postSend({ wrId: 2, sg: { mr: src } });
      const ok = await pollN(p.cqA, 1);
      expect(ok.at(0)).toMatchObject({ wrId: 2n, status: 'SUCCESS' });
      expect(ok.allOk()).toBe(true);
      // An RDMA WRITE with a wrong rkey fails with a remote access error.
      p.a.postSend({ wrId: 3, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: dst.addr, rkey: (dst.rkey ^ 0x5a5a) >>> 0 } });
      const bad = await pollN(p.cqA, 1);
      expect(bad.at(0)).toMatchObject({ wrId: 3n, status: 'REM_ACCESS_ERR' });
      expect(bad.allOk()).toBe(false);
      expect(WcBatch.concat([ok, bad]).allOk()).toBe(false);
      expect(WcBatch.concat([ok, ok]).allOk()).toBe(true);
      expect(WcBatch.empty().allOk()).toBe(true); // nothing failed
    } finally {
      p.close();
    }
  });
});

describe('Qp.psn', () => {
  it('is a random 24-bit start PSN per QP, fixed for its life, and the one its endpoint hands the peer', () => {
    const p = makePair();
    try {
      const qps = [p.a, p.b, ...Array.from({ length: 6 }, () => p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA }))];
      for (const qp of qps) {
        expect(Number.isInteger(qp.psn)).toBe(true);
        expect(qp.psn).toBeGreaterThanOrEqual(0);
        expect(qp.psn).toBeLessThanOrEqual(0xffffff);
        expect(qp.endpoint().psn).toBe(qp.psn);
      }
      // Random, as rc_pingpong's: eight QPs do not all start alike.
      expect(new Set(qps.map((q) => q.psn)).size).toBeGreaterThan(1);
      const before = p.a.psn;
      p.a.toError();
      expect(p.a.psn).toBe(before);
    } finally {
      p.close();
    }
  });
});
