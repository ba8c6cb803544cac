// Reads one jest --json report and judges it: how many tests passed, failed
// and were skipped (with the id of each skipped test), and whether the
// report can be trusted at all. A report that is missing, unreadable, not
// jest's shape, inconsistent with itself, or that ran no test at all is
// "malformed": the suite it stands for counts as failed, never as green.
'use strict';
const fs = require('fs');
const path = require('path');

const SKIPPED = new Set(['pending', 'skipped', 'todo', 'disabled']);
const COUNTS = ['numPassedTests', 'numFailedTests', 'numPendingTests', 'numTotalTests', 'numRuntimeErrorTestSuites'];

/**
 * The id of a test in skip lists: "<file> > <describe> > ... > <title>", the
 * file relative to the project root. The rxe VM runs test/native as ONE jest
 * file (test/rxe/native-suite.ts) with a describe per file named
 * "native/<file>": that test gets the id it has on the host, so one id names
 * one test in every configuration.
 */
function testId(root, suiteFile, a) {
  let file = path.relative(root, suiteFile);
  let titles = [...(a.ancestorTitles || []), a.title];
  if (file === path.join('test', 'rxe', 'native-suite.ts') && /^native\/.+\.test\.ts$/.test(titles[0])) {
    file = path.join('test', titles[0]);
    titles = titles.slice(1);
  }
  return [file, ...titles].join(' > ');
}

/** { passed, failed, skipped: [ids], problems: [strings] } — problems mean "do not trust this report". */
function readJestReport(file, root) {
  const out = { passed: 0, failed: 0, skipped: [], problems: [] };
  let r;
  try {
    r = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    out.problems.push(err.code === 'ENOENT' ? 'no report (the suite crashed or never ran)' : `unreadable report: ${err.message}`);
    return out;
  }
  if (!r || typeof r !== 'object' || !Array.isArray(r.testResults) || typeof r.success !== 'boolean' ||
      COUNTS.some((k) => !Number.isInteger(r[k]))) {
    out.problems.push(`not a jest --json report (needs success, testResults and ${COUNTS.join(', ')})`);
    return out;
  }
  let brokenSuites = 0;
  for (const suite of r.testResults) {
    const tests = Array.isArray(suite.assertionResults) ? suite.assertionResults : [];
    // A file that failed to run (syntax error, crash, failing hook) has no failed test of its own.
    if (suite.status === 'failed' && !tests.some((a) => a.status === 'failed')) brokenSuites++;
    for (const a of tests) {
      if (a.status === 'passed') out.passed++;
      else if (a.status === 'failed') out.failed++;
      else if (SKIPPED.has(a.status)) out.skipped.push(testId(root, suite.name, a));
      else out.problems.push(`unknown test status "${a.status}" in ${suite.name}`);
    }
  }
  out.failed += Math.max(brokenSuites, r.numRuntimeErrorTestSuites);
  const todo = Number.isInteger(r.numTodoTests) ? r.numTodoTests : 0;
  const expect = { passed: r.numPassedTests, failed: r.numFailedTests, skipped: r.numPendingTests + todo };
  const seen = { passed: out.passed, failed: out.failed - Math.max(brokenSuites, r.numRuntimeErrorTestSuites), skipped: out.skipped.length };
  if (JSON.stringify(expect) !== JSON.stringify(seen) || r.numTotalTests !== expect.passed + expect.failed + expect.skipped) {
    out.problems.push(`inconsistent counts: totals say ${JSON.stringify({ ...expect, total: r.numTotalTests })}, the tests listed ${JSON.stringify(seen)}`);
  }
  if (r.numTotalTests === 0) out.problems.push('the report holds no test');
  // jest says it failed but no test or file did (e.g. an open-handle or coverage failure): still a failure.
  if (!r.success && out.failed === 0) out.failed = 1;
  return out;
}

module.exports = { readJestReport, testId };
