/**
 * Child-process fixtures load the built package (dist/) while jest runs
 * src/ through swc; jest's global set-up rebuilds dist/ when src/ changed
 * (scripts/test/dist.js). These check the result, not the mechanism: every
 * file a fixture loads was compiled from the source that is in src/ now.
 * The proof is the source text tsc embedded in each output's source map
 * (tsconfig.build.json: inlineSources), compared with the file on disk.
 */
import * as fs from 'fs';
import * as path from 'path';
import { lastJson, runFixture } from '../support/fixture-child';
import { CHILD_HANG_MS } from '../support/device';

const root = path.join(__dirname, '..', '..');
const dist = path.join(root, 'dist');

/** The source an output in dist/ was built from, and whether its text then is its text now. */
function builtFrom(outRel: string): { source: string; current: boolean } {
  const mapFile = path.join(dist, `${outRel}.map`);
  const map = JSON.parse(fs.readFileSync(mapFile, 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
  expect(map.sources).toHaveLength(1);
  const source = path.resolve(path.dirname(mapFile), map.sources[0]);
  const then = map.sourcesContent?.[0];
  const now = fs.existsSync(source) ? fs.readFileSync(source, 'utf8') : undefined;
  return { source: path.relative(root, source), current: then !== undefined && then !== null && then === now };
}

/** Every file under `dir` (relative), recursively. */
function files(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile());
}

describe('fixtures test the current sources', () => {
  it('every file of the package a fixture child loads was built from the source in src/ now', async () => {
    const r = await runFixture<{ loaded: string[] }>('loaded-modules.js', [], { nodeArgs: [], timeoutMs: CHILD_HANG_MS });
    const { loaded } = lastJson<{ loaded: string[] }>(r);
    expect(loaded).toContain('index.js');
    expect(loaded).toContain(path.join('native', 'binding.js'));
    const stale = loaded.map(builtFrom).filter((b) => !b.current);
    expect(stale).toEqual([]);
  });

  it('every source in src/ has its output in dist/, and every output still has its source', () => {
    const sources = files(path.join(root, 'src'))
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => f.replace(/\.ts$/, '.js'))
      .sort();
    const outputs = files(dist)
      .filter((f) => f.endsWith('.js'))
      .sort();
    expect(outputs).toEqual(sources);
    const stale = outputs.map(builtFrom).filter((b) => !b.current);
    expect(stale).toEqual([]);
  });
});
