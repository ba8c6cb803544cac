/**
 * The layering of docs/ARCHITECTURE.md, Layers, checked by `npm run lint:deps`:
 *
 *   core <- observables <- verbs (<- native) <- cm <- messages <- streams, workers <- cli / examples
 *   operators: beside verbs, on core and observables only
 *   completion, testing: core, observables and RxJS only
 *
 * Each folder under src/ names the folders it may import; anything else is an
 * error, so a wrong import fails the build rather than a review. Type-only
 * imports count too: a type that crosses a layer drags its module's meaning
 * with it. A folder listed before it exists (streams, workers) holds its
 * place in the order for the code that comes.
 */

/** The folders each layer may import from (its own folder is always allowed). */
const MAY_IMPORT = {
  core: [],
  observables: ['core'],
  completion: ['core', 'observables'],
  testing: ['core', 'observables'],
  operators: ['core', 'observables'],
  native: [],
  verbs: ['core', 'observables', 'native'],
  cm: ['core', 'observables', 'native', 'verbs'],
  messages: ['core', 'observables', 'verbs', 'cm'],
  streams: ['core', 'observables', 'verbs', 'cm', 'messages'],
  workers: ['core', 'observables', 'verbs', 'cm', 'messages'],
};

const layerRules = Object.entries(MAY_IMPORT).map(([layer, allowed]) => ({
  name: `${layer}-layering`,
  severity: 'error',
  comment: `src/${layer} may import ${allowed.length ? allowed.map((a) => `src/${a}`).join(', ') : 'nothing else from src'} (docs/ARCHITECTURE.md, Layers)`,
  from: { path: `^src/${layer}/` },
  to: { path: '^src/', pathNot: [layer, ...allowed].map((a) => `^src/${a}/`) },
}));

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'cli-uses-public-entry-points',
      severity: 'error',
      comment: "the CLI is a user of the package: it imports src/index.ts or src/testing/index.ts, never a module behind them",
      from: { path: '^src/cli/' },
      to: { path: '^src/', pathNot: ['^src/cli/', '^src/index\\.ts$', '^src/testing/index\\.ts$'] },
    },
    {
      name: 'examples-use-the-package',
      severity: 'error',
      comment: "examples import 'rx-verbs' by name, as a user would",
      from: { path: '^examples/' },
      // By name resolves through tsconfig's paths to src/index.ts: allowed;
      // a relative path into src/ or dist/ is not.
      to: { path: '^(src|dist)/', dependencyTypesNot: ['aliased-tsconfig-paths'] },
    },
    {
      name: 'no-rxjs-internals',
      severity: 'error',
      comment: 'rxjs/internal/* is not a public API and moves between releases',
      from: { path: '^src/' },
      to: { path: 'node_modules/rxjs/.*/internal/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'modules that import each other cannot be read, tested or loaded alone',
      from: { path: '^src/' },
      // Type-only cycles (a Cq names the Context that made it) vanish at
      // compile time and are how a child refers to its parent.
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'an import that does not resolve fails at run time',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|build)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['require', 'node', 'default', 'types'] },
  },
};
