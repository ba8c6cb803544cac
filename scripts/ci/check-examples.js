#!/usr/bin/env node
// Type-checks every example that says `// @ts-check`, under `strict`, against
// the package's own types (the paths of tsconfig.json: `rx-verbs` is
// src/index.ts), as a user's editor would check it. An example that claims
// the check must pass it; one that does not claim it is not checked.
//
// usage: check-examples.js [DIR]   (default: examples/)
// Prints each diagnostic, then one line; exits 1 on any error.
'use strict';
const fs = require('fs');
const path = require('path');
const ts = require('typescript');

const root = path.resolve(__dirname, '..', '..');
const dir = path.resolve(process.argv[2] ?? path.join(root, 'examples'));

/** The .js/.mjs/.cjs files under `d` whose first lines say `// @ts-check`. */
function claimed(d) {
  return fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => {
    const file = path.join(d, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : claimed(file);
    if (!/\.[cm]?js$/.test(e.name)) return [];
    return /^(?:#!.*\n)?\s*\/\/\s*@ts-check\b/.test(fs.readFileSync(file, 'utf8')) ? [file] : [];
  });
}

const files = claimed(dir);
const config = ts.getParsedCommandLineOfConfigFile(path.join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
if (!config) throw new Error('tsconfig.json could not be read');
const options = { ...config.options, allowJs: true, checkJs: false, strict: true, noEmit: true, declaration: false, sourceMap: false };
const program = ts.createProgram(files, options);
// The examples' own errors: the package's sources are checked by `tsc -p tsconfig.json`.
const checked = new Set(files.map((f) => path.normalize(f)));
const diagnostics = ts.getPreEmitDiagnostics(program).filter((d) => !d.file || checked.has(path.normalize(d.file.fileName)));
const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
if (diagnostics.length) process.stdout.write(ts.formatDiagnostics(diagnostics, host));
console.log(`check-examples: ${files.length} examples with @ts-check under strict, ${diagnostics.length} error(s)`);
process.exit(diagnostics.length || files.length === 0 ? 1 : 0);
