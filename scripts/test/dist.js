// Keeps dist/ built from the sources that are here now. Jest runs src/
// through swc, but what runs outside jest's module registry loads the built
// package: child-process fixtures (test/fixtures), the soak, the CLI tests and
// the rxe guest load dist/. A dist/ older than src/ would have those test
// other code than jest does, silently; so the runner and jest's global set-up
// (test/support/global-setup.js) both call ensureFreshDist() before any test.
//
// Fresh means: dist/.src-digest holds the digest of every input of
// `tsc -p tsconfig.build.json` (src/**/*.ts but tests, the two tsconfigs,
// the compiler's version). Then nothing runs (a few ms). Otherwise tsc runs,
// incrementally (tsconfig.build.json keeps its .tsbuildinfo inside dist/, so
// removing dist/ also forgets it), outputs whose source is gone are removed,
// and the digest taken before the build is written: a source edited during
// the build makes the next call build again. A failed build throws with
// tsc's output.
'use strict';
const { spawnSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..', '..');
const src = path.join(root, 'src');
const dist = path.join(root, 'dist');
const STAMP = path.join(dist, '.src-digest');

/** src/**\/*.ts that tsconfig.build.json compiles (tests excluded), relative, sorted. */
function sources() {
  const out = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) out.push(path.relative(src, p));
    }
  };
  walk(src);
  return out.sort();
}

/** The digest of everything the build's output depends on. */
function sourceDigest() {
  const h = crypto.createHash('sha256');
  const add = (name, file) => h.update(`${name}\0`).update(fs.readFileSync(file)).update('\0');
  for (const f of sources()) add(`src/${f}`, path.join(src, f));
  add('tsconfig.json', path.join(root, 'tsconfig.json'));
  add('tsconfig.build.json', path.join(root, 'tsconfig.build.json'));
  h.update(`typescript@${require(path.join(root, 'node_modules', 'typescript', 'package.json')).version}`);
  return h.digest('hex');
}

/** The source (relative to src/) an output in dist/ was built from, or undefined for other files. */
function sourceOf(outRel) {
  const m = /^(.*)\.(js|js\.map|d\.ts|d\.ts\.map)$/.exec(outRel);
  return m ? `${m[1]}.ts` : undefined;
}

/** Removes outputs whose source was deleted or renamed (tsc never does). */
function pruneOrphans() {
  const have = new Set(sources());
  const removed = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const from = sourceOf(path.relative(dist, p));
        if (from !== undefined && !have.has(from)) {
          fs.rmSync(p);
          removed.push(path.relative(root, p));
        }
      }
    }
  };
  if (fs.existsSync(dist)) walk(dist);
  return removed;
}

/**
 * Builds dist/ unless it was built from the current sources. Returns whether
 * it built; throws with tsc's output when the build fails.
 * @param {{ log?: (line: string) => void }} [options]
 */
function ensureFreshDist(options = {}) {
  const log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  const digest = sourceDigest();
  let stamped;
  try {
    stamped = fs.readFileSync(STAMP, 'utf8').trim();
  } catch {
    stamped = undefined;
  }
  if (stamped === digest && fs.existsSync(path.join(dist, 'index.js'))) return { built: false };
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) {
    const why = r.error ? r.error.message : r.signal ? `killed by ${r.signal}` : `exit status ${r.status}`;
    throw new Error(`dist/ is stale and \`tsc -p tsconfig.build.json\` failed (${why}); fixtures would test old code:\n${r.stdout}${r.stderr}`);
  }
  for (const f of pruneOrphans()) log(`removed ${f} (its source is gone)`);
  fs.writeFileSync(STAMP, `${digest}\n`);
  log(`dist/ rebuilt from the current sources (tsc, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  return { built: true };
}

module.exports = { ensureFreshDist, sources, sourceDigest };

// `node scripts/test/dist.js`: the same, for what runs fixtures outside jest (the soak).
if (require.main === module) {
  try {
    ensureFreshDist();
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
