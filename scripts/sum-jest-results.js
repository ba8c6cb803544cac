#!/usr/bin/env node
// Sums test reports into the one line CI reads: "N passed, N failed".
// jest --json reports (*.json) count their tests; a *.status file holding
// "passed" or "failed" counts as one test (a script-level check such as the
// pack test). A report that is missing or unreadable counts as one failure.
// Exits 1 if anything failed.
const fs = require('fs');
let passed = 0;
let failed = 0;
let pending = 0;
const files = process.argv.slice(2).filter((f) => !f.includes('*'));
if (files.length === 0) failed++;
for (const file of files) {
  if (file.endsWith('.status')) {
    const word = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : '';
    if (word === 'passed') passed++;
    else failed++;
    continue;
  }
  try {
    const r = JSON.parse(fs.readFileSync(file, 'utf8'));
    passed += r.numPassedTests;
    failed += r.numFailedTests;
    pending += r.numPendingTests + (r.numTodoTests || 0);
    // A suite that failed to run (syntax error, crash) has no failed tests.
    failed += r.testResults.filter((s) => s.status === 'failed' && s.assertionResults.every((a) => a.status !== 'failed')).length;
  } catch (err) {
    console.error(`could not read ${file}: ${err.message}`);
    failed++;
  }
}
console.log(`${passed} passed, ${failed} failed${pending ? `, ${pending} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);
