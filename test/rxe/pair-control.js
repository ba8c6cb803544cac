// Runs INSIDE the guests of the pair part: the control channel over the
// control link. Guest a serves its Host's methods (JSON lines over TCP);
// guest b gets a proxy whose methods return promises.
'use strict';
const net = require('net');

const CONTROL_PORT = 18700;
const CTRL_SELF = process.env.RXE_CTRL_SELF;
const CTRL_PEER = process.env.RXE_CTRL_PEER;
const CALL_TIMEOUT_MS = 120_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- guest a: the agent ------------------------------------------------------
async function serve(host, log) {
  await host.setupControl();
  await host.setupDevice();
  let leaving = false;
  // Nobody came: end rather than keep the VM up until the host stops it.
  const idle = setTimeout(() => { log('no driver within 300 s'); process.exit(1); }, 300_000);
  const server = net.createServer((sock) => {
    clearTimeout(idle);
    let buf = '';
    sock.on('data', async (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const { id, op, args } = JSON.parse(line);
        if (op === 'bye') {
          leaving = true;
          sock.end(`${JSON.stringify({ id, result: true })}\n`);
          await host.killAll();
          log('the driver is done');
          process.exit(0);
        }
        Promise.resolve()
          .then(() => host[op](...args))
          .then((result) => sock.write(`${JSON.stringify({ id, result })}\n`),
            (e) => sock.write(`${JSON.stringify({ id, error: e.message })}\n`));
      }
    });
    sock.on('close', () => {
      if (leaving) return;
      log('the driver went away');
      process.exit(1);
    });
  });
  server.listen(CONTROL_PORT, CTRL_SELF, () => log(`agent listening on ${CTRL_SELF}:${CONTROL_PORT}`));
}

/** The agent on the peer, with the Host methods as promises. */
async function connectAgent() {
  const deadline = Date.now() + 240_000;
  let sock;
  for (;;) {
    try {
      sock = await new Promise((resolve, reject) => {
        const s = net.connect(CONTROL_PORT, CTRL_PEER, () => resolve(s));
        s.once('error', reject);
      });
      break;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`the agent on ${CTRL_PEER}:${CONTROL_PORT} did not answer within 240 s (${e.message})`);
      await sleep(1000);
    }
  }
  const waiting = new Map();
  let next = 0;
  let buf = '';
  sock.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const { id, result, error } = JSON.parse(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      const w = waiting.get(id);
      if (!w) continue; // it timed out
      waiting.delete(id);
      clearTimeout(w.timer);
      if (error !== undefined) w.reject(new Error(`peer: ${error}`));
      else w.resolve(result);
    }
  });
  sock.on('close', () => { for (const w of waiting.values()) w.reject(new Error('the agent connection closed')); });
  const call = (op, ...args) => new Promise((resolve, reject) => {
    const id = next++;
    const timer = setTimeout(() => {
      waiting.delete(id);
      reject(new Error(`the agent did not answer ${op} within ${CALL_TIMEOUT_MS / 1000} s`));
    }, CALL_TIMEOUT_MS);
    waiting.set(id, { resolve, reject, timer });
    sock.write(`${JSON.stringify({ id, op, args })}\n`);
  });
  // (not thenable: an async function returns it)
  return new Proxy({}, { get: (_, op) => (op === 'then' ? undefined : (...args) => call(op, ...args)) });
}

module.exports = { serve, connectAgent };
