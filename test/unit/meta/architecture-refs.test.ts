/**
 * Comments cite docs/ARCHITECTURE.md by section heading ("docs/ARCHITECTURE.md,
 * Lifetimes"): each citation must name a heading the document has, and nothing
 * may cite a design file a clone does not contain.
 */
import * as fs from 'fs';
import * as path from 'path';

const ROOT = path.join(__dirname, '..', '..', '..');
const DOC = 'docs/ARCHITECTURE.md';

/** Project files that may cite the document (sources, tests, scripts, benchmarks, examples, configuration). */
function files(): string[] {
  const out: string[] = [];
  const visit = (rel: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!['node_modules', 'build', 'dist', 'results', '.cache', '.git', 'docs'].includes(e.name)) visit(child);
      } else if (/\.(ts|js|cc|h|gyp|md|sh)$/.test(e.name)) out.push(child);
    }
  };
  for (const dir of ['src', 'test', 'scripts', 'bench', 'examples', '.ci']) if (fs.existsSync(path.join(ROOT, dir))) visit(dir);
  return [...out, '.dependency-cruiser.js', 'README.md'];
}

describe(`citations of ${DOC}`, () => {
  const headings = fs
    .readFileSync(path.join(ROOT, DOC), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('## '))
    .map((l) => l.slice(3).trim());

  it('name a section the document has', () => {
    const bad: string[] = [];
    let cited = 0;
    for (const file of files()) {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      for (const m of text.matchAll(/docs\/ARCHITECTURE\.md, ([^\n]*)/g)) {
        cited++;
        if (!headings.some((h) => m[1].startsWith(h))) bad.push(`${file}: ${m[0]}`);
      }
    }
    expect(bad).toEqual([]);
    expect(cited).toBeGreaterThan(0);
  });

  it('replace every citation of a design file outside the repository', () => {
    const stale = files().filter((file) => /DESIGN(\.md)? *(§|sec\.)/.test(fs.readFileSync(path.join(ROOT, file), 'utf8')));
    expect(stale).toEqual([]);
  });
});
