import { execFile } from 'child_process';
import * as path from 'path';

const root = path.join(__dirname, '..', '..');

function node(args: string[], cwd = root): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, args, { cwd, timeout: 20000 }, (_e, stdout, stderr) =>
      resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

describe('package entry points', () => {
  it('loads with require()', async () => {
    const r = await node(['-e', "const rx = require('rx-verbs'); const t = require('rx-verbs/testing'); console.log(typeof rx.openDevice, typeof rx.rearm, typeof t.virtualCq)"]);
    expect(r.stdout.trim()).toBe('function function function');
  });

  it('loads with import (ESM, named exports)', async () => {
    const r = await node([
      '--input-type=module',
      '-e',
      "import { openDevice, rearm, credits } from 'rx-verbs'; import { virtualCq } from 'rx-verbs/testing'; const c = openDevice('soft0'); console.log(c.deviceName, typeof rearm, typeof credits, typeof virtualCq); c.close();",
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('soft0 function function function');
  });

  it('the rx-verbs command answers --help and rejects bad input with one line and a non-zero status', async () => {
    const cli = path.join(root, 'dist', 'cli', 'main.js');
    const help = await node([cli, '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Commands:/);
    for (const cmd of ['devices', 'demo']) {
      const h = await node([cli, cmd, '--help']);
      expect(h.code).toBe(0);
      expect(h.stdout).toMatch(new RegExp(`Usage: rx-verbs ${cmd}`));
    }
    const bad = await node([cli, 'demo', '--messages', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    const unknown = await node([cli, 'frobnicate']);
    expect(unknown.code).toBe(2);
    const noDevice = await node([cli, 'demo', '--device', 'nope0', '-n', '10']);
    expect(noDevice.code).toBe(1);
    expect(noDevice.stderr).toMatch(/ENODEV/);
  });

  it('rx-verbs devices --json describes soft0 like ibv_devinfo', async () => {
    const r = await node([path.join(root, 'dist', 'cli', 'main.js'), 'devices', '--json']);
    const list = JSON.parse(r.stdout);
    const soft = list.find((d: { name: string }) => d.name === 'soft0');
    expect(soft).toMatchObject({ provider: 'soft', ports: [expect.objectContaining({ port: 1, state: 'ACTIVE', activeMtu: 4096 })] });
    expect(soft.ports[0].gids[0]).toMatchObject({ index: 0, gid: expect.stringMatching(/^fe80:/) });
  });
});
