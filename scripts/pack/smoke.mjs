// The ESM side of the installed package's smoke suite: named imports from
// both entry points resolve through package.json's exports.
import assert from 'node:assert';
import { openDevice, listDevices } from 'rx-verbs';
import { virtualCq } from 'rx-verbs/testing';

assert.strictEqual(typeof virtualCq, 'function');
const ctx = openDevice('soft0');
assert.strictEqual(ctx.deviceName, 'soft0');
ctx.close();
console.log(`smoke (ESM): passed (${listDevices().length} device(s))`);
