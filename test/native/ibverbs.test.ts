import * as fs from 'fs';
import { hasIbverbs, listDevices, openDevice, defaultDeviceName } from '../../src';
import { binding } from '../../src/native/binding';
import { expectThrow, IS_SOFT } from '../support/device';
import { expectFreshPairWorks } from '../support/verbs-checks';

// Whether the addon under test was built with rdma-core's headers: they are
// here, and the headerless run (scripts/test/headerless.js) did not hide them.
const HEADERS = fs.existsSync('/usr/include/infiniband/verbs.h') && process.env.RX_VERBS_BUILT_WITHOUT_HEADERS !== '1';
/** Whether this machine has RDMA devices through the kernel (the rxe VM does). */
const HAS_KERNEL_RDMA = fs.existsSync('/sys/class/infiniband') && fs.readdirSync('/sys/class/infiniband').length > 0;
const itNoRdma = HAS_KERNEL_RDMA || !IS_SOFT ? it.skip : it;

describe('ibverbs provider', () => {
  it('is built in where rdma-core headers exist (hasIbverbs)', () => {
    expect(typeof binding().hasIbverbs()).toBe('boolean');
    expect(hasIbverbs()).toBe(binding().hasIbverbs());
    if (HEADERS) expect(hasIbverbs()).toBe(true);
  });

  itNoRdma('lists zero devices here: listDevices() has only soft devices, soft0 among them', () => {
    const devices = listDevices();
    expect(devices.filter((d) => d.provider !== 'soft')).toEqual([]);
    expect(devices.map((d) => d.name)).toContain('soft0');
    for (const d of devices) {
      expect(d).toMatchObject({ name: expect.any(String), provider: 'soft', transport: expect.any(String), nodeGuid: expect.any(String) });
    }
    const saved = process.env.RX_VERBS_DEVICE;
    delete process.env.RX_VERBS_DEVICE;
    try {
      expect(defaultDeviceName()).toBe('soft0');
    } finally {
      if (saved !== undefined) process.env.RX_VERBS_DEVICE = saved;
    }
  });

  itNoRdma('opening a missing device (mlx5_0) fails with ENODEV and a message naming what is missing', async () => {
    const err = expectThrow(() => openDevice('mlx5_0'), 'Error', { code: 'ENODEV', syscall: 'ibv_open_device' });
    expect(err.message).toContain("'mlx5_0'");
    // It says why: no uverbs in the kernel, no RDMA devices, or no libibverbs.
    expect(err.message).toMatch(/uverbs|no RDMA devices|libibverbs|rdma-core/i);
    expect(err.errno).toBe(-19);
    // Nothing is left half-open: the soft device still works.
    await expectFreshPairWorks();
  });

  it('opening a missing device fails the same way whatever the provider (rxe9 never exists)', () => {
    const err = expectThrow(() => openDevice('rxe9_missing'), 'Error', { code: 'ENODEV' });
    expect(err.message).toContain('rxe9_missing');
  });
});
