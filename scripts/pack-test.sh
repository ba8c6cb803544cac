#!/usr/bin/env bash
# Packs rx-verbs with `npm pack`, installs the tarball into an empty project
# (which builds the addon there), and runs the demo and both entry points
# from it, as a user of the published package would.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
tarball="$(npm pack --silent --pack-destination "$work" | tail -1)"
echo "packed $tarball ($(du -h "$work/$tarball" | cut -f1))"
mkdir "$work/app" && cd "$work/app"
npm init -y >/dev/null
npm install --no-audit --no-fund "$work/$tarball" >/dev/null
node -e "
const rx = require('rx-verbs');
const testing = require('rx-verbs/testing');
if (typeof rx.openDevice !== 'function' || typeof testing.virtualCq !== 'function') process.exit(1);
console.log('entry points ok; devices:', rx.listDevices().map((d) => d.name).join(', '));
"
npx --no-install rx-verbs demo --messages 2000 --quiet
# The benchmarks stay in the repository: the command says how to get them.
if npx --no-install rx-verbs bench >/dev/null 2>"$work/bench.err"; then
  echo "rx-verbs bench ran from the installed package (the benchmarks must not ship)"; exit 1
fi
grep -q "not part of the installed package" "$work/bench.err"
echo "pack test passed"
