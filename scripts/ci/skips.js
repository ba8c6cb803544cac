// The skip allowlist (test/skips.txt): which tests may skip in which CI
// configuration, and why. Format, one entry a line:
//   <config>[,<config>...] | <test id> | <reason>
// config: a jest suite of .ci/run (jest = host, rxe = the VM, asan); test id:
// "<file> > <describe> > ... > <title>" (see jest-report.js testId); blank
// lines and lines starting with # are ignored.
'use strict';
const fs = require('fs');

/** Map config -> Map(test id -> reason); problems for lines that do not parse. */
function readAllowlist(file) {
  const byConfig = new Map();
  const problems = [];
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    return { byConfig, problems: [`cannot read the skip allowlist ${file}: ${err.message}`] };
  }
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const fields = line.split(' | ');
    const [configs, id, reason] = fields.map((f) => f.trim());
    if (fields.length !== 3 || !configs || !id || !reason) {
      problems.push(`${file}:${i + 1}: expected "<config> | <test id> | <reason>"`);
      return;
    }
    for (const config of configs.split(',').map((c) => c.trim())) {
      if (!byConfig.has(config)) byConfig.set(config, new Map());
      if (byConfig.get(config).has(id)) problems.push(`${file}:${i + 1}: ${config} | ${id} is listed twice`);
      byConfig.get(config).set(id, reason);
    }
  });
  return { byConfig, problems };
}

/**
 * Compares what skipped in one configuration with what may skip there:
 * unexpected (skipped, not listed) and stale (listed, but ran) entries.
 */
function judgeSkips(allowed, skipped) {
  const listed = allowed || new Map();
  const did = new Set(skipped);
  return {
    unexpected: [...did].filter((id) => !listed.has(id)),
    stale: [...listed.keys()].filter((id) => !did.has(id)),
  };
}

module.exports = { readAllowlist, judgeSkips };
