/**
 * test/README.md's covers map stays true: every file under src/ has a row,
 * every row's file and tests exist, and a TypeScript file's tests reach it.
 * A new source file fails here until its row is written
 * (`node scripts/test/covers.js --write`, then name its tests).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const covers = require('../../../scripts/test/covers.js') as {
  problems(given?: { rows?: Map<string, string[]>; sources?: string[]; tests?: string[] }): string[];
  readMap(): { rows: Map<string, string[]> };
  sourceFiles(): string[];
  testFiles(): string[];
};

describe('the covers map of test/README.md', () => {
  it('has a row for every source file, and every row is true', () => {
    expect(covers.problems()).toEqual([]);
  });

  it('fails for a source file without a row, a row without a file, and a test that does not exist', () => {
    const rows = new Map(covers.readMap().rows);
    rows.set('src/core/gone.ts', ['test/unit/core/errors.test.ts']);
    rows.set('src/core/errors.ts', ['test/unit/core/no-such.test.ts']);
    const found = covers.problems({ rows, sources: [...covers.sourceFiles(), 'src/native/new_object.cc'] });
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^src\/native\/new_object\.cc: no row/),
        expect.stringMatching(/^src\/core\/gone\.ts: a row for a file that does not exist/),
        expect.stringMatching(/^src\/core\/errors\.ts: names test\/unit\/core\/no-such\.test\.ts, which is not a test file/),
      ]),
    );
  });

  it('fails for a TypeScript file whose tests never import it', () => {
    const rows = new Map(covers.readMap().rows);
    rows.set('src/core/grh.ts', ['test/unit/operators/steer.test.ts']);
    expect(covers.problems({ rows })).toContainEqual(expect.stringMatching(/^src\/core\/grh\.ts: none of its tests imports it/));
  });
});
