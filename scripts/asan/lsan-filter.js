#!/usr/bin/env node
// Reads the sanitizer logs of `npm run test:asan` (one file per process) and
// exits 1 if any report counts:
// - every AddressSanitizer error (use-after-free, overflow, double free, ...)
//   and every UndefinedBehaviorSanitizer "runtime error";
// - a LeakSanitizer leak only when its allocation was made by our code
//   (rx_verbs.node, rx_verbs_bench.node,
//   src/native or bench/native): node and V8 keep allocations alive until
//   exit on purpose, and those are not ours to fix; nor is the V8-owned
//   tracker of a napi_create_external that was not collected before exit.
//   "Made by our code": walking the stack out from the allocator, a frame
//   of ours comes before any frame of V8 or node proper. Our frames further
//   out do not make a V8 allocation ours: every JS callback we deliver runs
//   under our frames, and what V8 allocates there (compiled code, slot sets)
//   is V8's. N-API's own frames and other libraries (libc, libstdc++,
//   libibverbs) are passed through: they allocate on behalf of their caller.
// Prints each counted report, and a one-line summary.
'use strict';
const fs = require('fs');
const path = require('path');

const dir = process.argv[2];
if (!dir || !fs.existsSync(dir)) {
  console.log('[test:asan] no sanitizer logs');
  process.exit(0);
}
const OURS = /rx_verbs(_bench)?\.node|src\/native\/|bench\/native\//;
const NAPI = /\bin (napi_|node_api_|v8impl::)/;
const V8_OR_NODE = /\bin (v8::|node::|Builtins_|uv_)|<unknown module>/;

/** Whether the allocation of a leak block was made by our code (see the top). */
function madeByUs(block) {
  const frames = block.split('\n').filter((l) => /^\s*#\d+ /.test(l));
  for (const frame of frames.slice(1)) { // #0 is the sanitizer's allocator
    if (OURS.test(frame)) return true;
    if (NAPI.test(frame)) continue;
    if (V8_OR_NODE.test(frame)) return false;
  }
  return false;
}
let counted = 0;
let foreignLeaks = 0;
let files = 0;
for (const name of fs.readdirSync(dir).sort()) {
  const file = path.join(dir, name);
  const text = fs.readFileSync(file, 'utf8');
  if (!text.trim()) continue;
  files++;
  const reports = [];
  // Leak blocks: "Direct leak of ..." / "Indirect leak of ..." up to a blank line.
  const leakBlocks = text.match(/^(?:Direct|Indirect) leak of [^\n]*\n(?:[^\n]+\n?)*/gm) ?? [];
  for (const block of leakBlocks) {
    // napi_create_external's tracker is owned by the V8 heap: it is freed
    // when the External is collected, and V8 does not collect at exit. The
    // Externals our *Wrap::New pass to constructors are such garbage.
    // (A V8 heap page's remembered set, MemoryChunk::AllocateSlotSet, made
    // in a write barrier of a JS callback we delivered, is V8's by madeByUs.)
    const v8Owned = /#1 [^\n]* in napi_create_external\b/.test(block);
    if (madeByUs(block) && !v8Owned) reports.push(`${name}: ${block.trim()}`);
    else foreignLeaks++;
  }
  // Any other sanitizer error: ERROR: AddressSanitizer ..., runtime error: ...
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const asan = /ERROR: AddressSanitizer/.test(line);
    const ubsan = /runtime error:/.test(line);
    if (!asan && !ubsan) continue;
    // The report: this line up to the next blank line after the stack.
    let end = i + 1;
    while (end < lines.length && end < i + 80 && !/^SUMMARY:/.test(lines[end])) end++;
    reports.push(`${name}: ${lines.slice(i, end + 1).join('\n')}`);
    i = end;
  }
  for (const r of reports) {
    counted++;
    console.log(`\n----- sanitizer report ${counted} (${file})\n${r}`);
  }
}
console.log(
  `[test:asan] ${files} sanitizer log file(s); ${counted} report(s) that count; ` +
    `${foreignLeaks} leak(s) from node/V8 alone (not counted)`,
);
process.exit(counted > 0 ? 1 : 0);
