import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as ts from 'typescript';
import { scaled } from '../support/slow';

/** The README's TypeScript blocks, each with the heading it sits under. */
function readmeBlocks(): { heading: string; code: string }[] {
  const text = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
  const out: { heading: string; code: string }[] = [];
  let heading = '';
  const re = /^(#+ .*)$|^```ts\n([\s\S]*?)^```$/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[1]) heading = m[1];
    else out.push({ heading, code: m[2] });
  }
  return out;
}

/** Runs TypeScript source as a CommonJS program inside the package (so `rx-verbs` resolves to it). */
function runTs(code: string, extraHeader = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const js = ts.transpileModule(extraHeader + code, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  }).outputText;
  const dir = fs.mkdtempSync(path.join(path.join(__dirname, '..', '..'), '.readme-'));
  const file = path.join(dir, 'block.js');
  fs.writeFileSync(file, js);
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [file], { timeout: scaled(20000) }, (_err, stdout, stderr) => {
      fs.rmSync(dir, { recursive: true, force: true });
      resolve({ code: child.exitCode, stdout, stderr });
    });
  });
}

describe('README', () => {
  const blocks = readmeBlocks();

  it('has the two commands', () => {
    const text = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
    expect(text).toContain('npm install && npm start');
    expect(text).toContain('npm test');
  });

  it('runs the complete pipeline as written, and it delivers the receive', async () => {
    const block = blocks.find((b) => b.heading === '## A complete pipeline');
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^RECV SUCCESS 1n 12$/m);
  });

  it("runs the sockets example as written: Node's http server and client over RDMA sockets", async () => {
    const block = blocks.find((b) => b.heading === '## Sockets over RDMA');
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('200 hello over RDMA, /index');
  });

  it('runs the tryTake polling loop as written', async () => {
    const block = blocks.find((b) => b.code.includes('completions.tryTake()'));
    expect(block).toBeDefined();
    // Give the loop a CQ with three completions waiting. They are put there
    // synchronously (the soft device's injection), so they are in the CQ when
    // the loop runs: posted work would complete on the device thread, some time later.
    const setup = `
      import { openDevice } from 'rx-verbs';
      const ctx = openDevice('soft0');
      const ch = ctx.createCompChannel();
      const cq = ctx.createCq({ cqe: 16, channel: ch });
      for (let i = 0; i < 3; i++) ctx.faults.errorCompletion(cq, { wrId: i, status: 'SUCCESS', opcode: 'RDMA_WRITE' });
    `;
    const r = await runTs(block!.code + '\nctx.close();\n', setup);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n').map((l) => Number(l.split(' ')[0])).reduce((x, y) => x + y, 0)).toBe(3);
  });

  it('runs the UD example as written: the datagram arrives after its 40-byte GRH, naming its sender (srcQp, slid)', async () => {
    const block = blocks.find((b) => b.heading === '## Datagrams (UD) and address handles');
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('SUCCESS 45 true true true hello');
  });

  it('runs the UD answering example as written: the server replies with an address handle made from the completion and its GRH', async () => {
    const block = blocks.find((b) => b.heading === '## Datagrams (UD) and address handles' && b.code.includes('createAhFromWc'));
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(['from true QP true', 'client got pong']);
  });

  it('runs the queue pair example as written: query() reads back what connect() set', async () => {
    const block = blocks.find((b) => b.heading === '## Queue pairs');
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('RTS 4096 true 6 7 LOCAL_WRITE,REMOTE_WRITE,REMOTE_READ');
  });

  it('runs the atomics example as written: fetch-and-add, then a compare-and-swap that matches', async () => {
    const block = blocks.find((b) => b.heading === '## Atomics');
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(['FETCH_ADD SUCCESS', 'COMP_SWAP SUCCESS', 'counter 100, the swap saw 42']);
  });

  it('runs the allocMemory example as written', async () => {
    const block = blocks.find((b) => b.heading === '## Registered memory');
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('1048576 true');
  });

  it('runs the marble-testing example as written', () => {
    const block = blocks.find((b) => b.heading === '## Marble testing');
    expect(block).toBeDefined();
    const js = ts.transpileModule(block!.code, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    const mod = { exports: {} };
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    new Function('require', 'module', 'exports', 'expect', js)(require, mod, mod.exports, expect);
  });

  it('runs the message-layer marble example as written, on the virtual CM', () => {
    const block = blocks.find((b) => b.heading === '## Marble testing' && b.code.includes('connectMessages$'));
    expect(block).toBeDefined();
    const js = ts.transpileModule(block!.code, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    const mod = { exports: {} };
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    new Function('require', 'module', 'exports', 'expect', js)(require, mod, mod.exports, expect);
  });

  it('runs the connections example as written, on soft0 over the soft CM', async () => {
    const block = blocks.find((b) => b.heading === '## Connections (rdma_cm)' && b.code.includes('listen('));
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toEqual([
      'rejected: who are you?',
      'client got: welcome',
      'server got: hello from alice',
      'client got back: HELLO FROM ALICE',
    ]);
  });

  it('runs the message layer example as written: negotiation refused, request/serve, typed errors, rendezvous through the registration cache', async () => {
    const block = blocks.find((b) => b.heading === '## Messages over connections');
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toEqual([
      'refused: maxEager is 1024 here, 4096 there',
      'reply: HELLO',
      'true empty request',
      'true',
      'server got 5 bytes by SEND',
      'server got 1048576 bytes by rendezvous',
      'server got 1048576 bytes by rendezvous',
      '{ sent: 6, rendezvousSent: 2, registrations: 1, cacheHits: 1 }',
    ]);
  });

  it('runs the virtual CM marble example as written', () => {
    const block = blocks.find((b) => b.heading === '## Connections (rdma_cm)' && b.code.includes('virtualCm'));
    expect(block).toBeDefined();
    const js = ts.transpileModule(block!.code, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    const mod = { exports: {} };
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    new Function('require', 'module', 'exports', 'expect', js)(require, mod, mod.exports, expect);
  });

  it('runs the shared receive queue example as written: three QPs, one pool', async () => {
    const block = blocks.find((b) => b.heading === '## Shared receive queues (SRQ)');
    expect(block).toBeDefined();
    const r = await runTs(block!.code);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(line).toMatch(/^QP \d+ got "hello"$/);
    expect(new Set(lines).size).toBe(3);
  });
});
