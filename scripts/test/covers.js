#!/usr/bin/env node
/**
 * The "covers" map of test/README.md: one row per file under src/, naming
 * the tests to read (and run) when that file changes.
 *
 *   node scripts/test/covers.js          check the map (exit 1, saying what is wrong)
 *   node scripts/test/covers.js --write  add rows for new files, drop rows of files
 *                                        that are gone; rows already there are kept
 *
 * The map is written by hand and checked by machine
 * (test/unit/meta/covers-map.test.ts runs `problems()`): every source file has a
 * row, every row's file exists, every test it names exists, and a TypeScript
 * file's row names at least one test that really reaches it through its
 * imports (for the CLI: or runs the built command, dist/cli/main.js). A new row is filled from the import graph where it can be (the tests
 * nearest to the file, barrels not counted); C++ and other files get an empty
 * row, which fails the check until someone names the tests that drive them.
 * Suggestions are a start, not a verdict: check them by hand.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const MAP_FILE = 'test/README.md';
const BEGIN = '<!-- covers:begin (rows: scripts/test/covers.js) -->';
const END = '<!-- covers:end -->';
/** Tests a TS row is filled with at most. */
const SUGGEST = 4;

/** Files under `dir` (project-relative, sorted), skipping build output. */
function walk(dir, keep) {
  const out = [];
  const visit = (rel) => {
    for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (e.name !== 'build' && e.name !== 'node_modules') visit(child);
      } else if (keep(child)) out.push(child);
    }
  };
  visit(dir);
  return out.sort();
}

/** Every source file the map must cover. */
const sourceFiles = () => walk('src', () => true);

/** Every test jest runs, plus the VM suite's scripts (test/rxe). */
const testFiles = () => [...walk('test', (f) => /\.test\.[jt]s$/.test(f) || /^test\/rxe\/.*\.[jt]s$/.test(f)), ...walk('examples', (f) => /\.test\.js$/.test(f))];

/** The relative imports (and the package by name) of one file, resolved to project paths. */
function importsOf(file) {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const specs = new Set();
  const re = /(?:from\s+|import\s*\(\s*|require\s*\(\s*|^import\s+)['"]([^'"]+)['"]/gm;
  for (let m; (m = re.exec(text)); ) specs.add(m[1]);
  const out = [];
  for (const spec of specs) {
    let base;
    if (spec === 'rx-verbs') base = 'src/index';
    else if (spec === 'rx-verbs/testing') base = 'src/testing/index';
    else if (spec.startsWith('.')) base = path.posix.join(path.posix.dirname(file), spec);
    else continue;
    const hit = ['', '.ts', '.js', '/index.ts', '/index.js'].map((x) => base + x).find((c) => fs.existsSync(path.join(ROOT, c)) && fs.statSync(path.join(ROOT, c)).isFile());
    if (hit) out.push(hit);
  }
  return out;
}

/**
 * For each test, the distance to every TS file it reaches through imports;
 * a hop out of a barrel (`index.ts`) costs nothing, so a test importing
 * `src/verbs` is as near to `src/verbs/qp.ts` as one importing it directly.
 */
function reach(tests) {
  const cache = new Map();
  const edges = (f) => {
    if (!cache.has(f)) cache.set(f, /\.[jt]s$/.test(f) ? importsOf(f) : []);
    return cache.get(f);
  };
  const all = new Map();
  for (const t of tests) {
    const dist = new Map([[t, 0]]);
    const queue = [t];
    while (queue.length) {
      const f = queue.shift();
      const d = dist.get(f);
      const step = f === t || /\/index\.[jt]s$/.test(f) ? 0 : 1;
      for (const g of edges(f)) {
        if (g.startsWith('node_modules')) continue;
        if (!dist.has(g) || dist.get(g) > d + step) {
          dist.set(g, d + step);
          if (step === 0) queue.unshift(g);
          else queue.push(g);
        }
      }
    }
    all.set(t, dist);
  }
  return all;
}

/** The rows of the map: source file -> tests, in the order written. */
function readMap(text = fs.readFileSync(path.join(ROOT, MAP_FILE), 'utf8')) {
  const b = text.indexOf(BEGIN);
  const e = text.indexOf(END);
  if (b < 0 || e < b) throw new Error(`${MAP_FILE} has no covers table (${BEGIN} ... ${END})`);
  const rows = new Map();
  for (const line of text.slice(b + BEGIN.length, e).split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|(.*)\|\s*$/.exec(line);
    if (!m) continue;
    const tests = [...m[2].matchAll(/`([^`]+)`/g)].map((x) => x[1]);
    rows.set(m[1], tests);
  }
  return { text, begin: b, end: e, rows };
}

/**
 * What is wrong with the map; empty when it is right. The map, the source
 * files and the tests are the repository's unless given (the check's own
 * test gives them).
 */
function problems({ rows = readMap().rows, sources = sourceFiles(), tests: testList = testFiles() } = {}) {
  const tests = new Set(testList);
  const out = [];
  const srcSet = new Set(sources);
  for (const s of sources) if (!rows.has(s)) out.push(`${s}: no row (run node scripts/test/covers.js --write, then name its tests)`);
  for (const [s, ts] of rows) {
    if (!srcSet.has(s)) out.push(`${s}: a row for a file that does not exist (run --write to drop it)`);
    if (ts.length === 0) out.push(`${s}: names no test`);
    for (const t of ts) if (!tests.has(t)) out.push(`${s}: names ${t}, which is not a test file`);
  }
  const reached = reach([...tests]);
  // The CLI is tested as users run it, the built command in a child process.
  const runsCli = (t) => /cli\/main\.js|'cli', 'main\.js'|\['start'\]/.test(fs.readFileSync(path.join(ROOT, t), 'utf8'));
  for (const [s, ts] of rows) {
    if (!srcSet.has(s) || !s.endsWith('.ts') || ts.length === 0) continue;
    if (ts.some((t) => reached.get(t)?.has(s) || (s.startsWith('src/cli/') && runsCli(t)))) continue;
    out.push(`${s}: none of its tests imports it${s.startsWith('src/cli/') ? ' or runs the built CLI' : ''}`);
  }
  return out;
}

/** Tests of a TS source file that reach it: those named like it first, then its own layer's, then the nearest. */
function suggest(file, reached) {
  const stem = path.basename(file).replace(/\.[^.]+$/, '');
  const layer = file.split('/')[1];
  const cands = [];
  for (const [t, dist] of reached) {
    if (!dist.has(file)) continue;
    const name = path.basename(t).replace(/\.test\.[jt]s$/, '');
    const named = name === stem || name.startsWith(stem) || stem.startsWith(name) ? 0 : 1;
    const own = t.startsWith(`test/unit/${layer}/`) || t.startsWith(`test/${layer}/`) ? 0 : 1;
    cands.push({ t, key: [named, own, dist.get(file), t] });
  }
  cands.sort((a, b) => {
    for (let i = 0; i < 3; i++) if (a.key[i] !== b.key[i]) return a.key[i] - b.key[i];
    return a.key[3] < b.key[3] ? -1 : 1;
  });
  return cands.slice(0, SUGGEST).map((c) => c.t);
}

/** Rewrites the table: rows kept, new files added (TS ones filled from the import graph), gone ones dropped. */
function write() {
  const { text, begin, end, rows } = readMap();
  const reached = reach(testFiles());
  const lines = ['', '| Source | Tests |', '| --- | --- |'];
  const sources = sourceFiles();
  // A file that moved (a row whose file is gone, one name alike) keeps its tests.
  const moved = new Map();
  for (const [old, ts] of rows) if (!sources.includes(old)) moved.set(path.basename(old), ts);
  for (const s of sources) {
    const ts = rows.get(s) ?? moved.get(path.basename(s)) ?? (s.endsWith('.ts') ? suggest(s, reached) : []);
    lines.push(`| \`${s}\` | ${ts.map((t) => `\`${t}\``).join(', ')} |`);
  }
  lines.push('');
  fs.writeFileSync(path.join(ROOT, MAP_FILE), text.slice(0, begin + BEGIN.length) + lines.join('\n') + text.slice(end));
}

module.exports = { problems, readMap, sourceFiles, testFiles, MAP_FILE };

if (require.main === module) {
  if (process.argv.includes('--write')) write();
  const p = problems();
  for (const line of p) process.stderr.write(`covers: ${line}\n`);
  process.exitCode = p.length ? 1 : 0;
}
