// Builds cm-loop (bench/cm/cm-loop.c), the native rdma_cm baseline, with
// the system compiler against librdmacm, into bench/build/ (outside build/,
// which the rxe guests cover with their packed copy). The pair guests run
// the host's binary. Rebuilt only when the source is newer.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const SOURCE = path.join(__dirname, 'cm-loop.c');
/** Where the binary goes (the pair cases run it from the project root). */
const BINARY = path.join(__dirname, '..', 'build', 'cm-loop');

/** Builds cm-loop when needed; false (after logging why) when it cannot be built. */
function buildCmLoop({ log = (s) => process.stderr.write(`${s}\n`) } = {}) {
  if (fs.existsSync(BINARY) && fs.statSync(BINARY).mtimeMs >= fs.statSync(SOURCE).mtimeMs) return true;
  fs.mkdirSync(path.dirname(BINARY), { recursive: true });
  const cc = process.env.CC || 'cc';
  const r = spawnSync(cc, ['-O2', '-Wall', '-o', BINARY, SOURCE, '-lrdmacm', '-libverbs'], { encoding: 'utf8' });
  if (r.status === 0) return true;
  log(`building ${path.relative(process.cwd(), BINARY)} failed (${cc}; it needs librdmacm-dev): ${(r.stderr || r.error?.message || '').trim()}`);
  return false;
}

module.exports = { buildCmLoop, BINARY };
