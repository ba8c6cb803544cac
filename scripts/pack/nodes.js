// Node binaries from the npm registry (the node-linux-<arch> packages carry
// the official builds), cached under node_modules/.cache, so the pack test
// can run the installed package on each Node version it claims without any
// network but the registry.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.join(__dirname, '..', '..');
const CACHE = path.join(root, 'node_modules', '.cache', 'rx-verbs-node');

/** The versions the package is tested on (package.json's engines says the same majors). */
const VERSIONS = ['20.20.2', '22.23.5', '24.22.3'];

/** The path of bin/node of Node `version` for `arch` ('x64' | 'arm64'), fetched once. */
function nodeBinary(version, arch = 'x64') {
  const dir = path.join(CACHE, `${arch}-${version}`);
  const bin = path.join(dir, 'bin', 'node');
  if (fs.existsSync(bin)) return bin;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rx-verbs-node-'));
  try {
    const spec = `node-linux-${arch}@${version}`;
    const out = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', tmp], { encoding: 'utf8' });
    const tarball = path.join(tmp, out.trim().split('\n').pop());
    execFileSync('tar', ['xzf', tarball, '-C', tmp, 'package/bin/node']);
    fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
    fs.renameSync(path.join(tmp, 'package', 'bin', 'node'), bin);
    return bin;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

module.exports = { VERSIONS, nodeBinary };
