/**
 * `npm run faults [-- options]`: the fault scenarios of docs/RELIABILITY.md, each run N times per
 * variant at report size; prints the figures and PASS/FAIL per check and, with --write, puts the
 * tables into docs/RELIABILITY.md between its markers. Exit code 1 when a check failed, 2 on bad
 * options. Uses the shared MariaDB (a database of its own per run, behind a proxy where MySQL is
 * the fault) and, unless Redis is the fault, the shared Redis (a key prefix of its own); Redis
 * faults start their own redis-server processes.
 */
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { FaultRun } from './harness/index.js';
import { renderMarkdown, writeReliabilityDoc } from './report.js';
import { SCENARIOS } from './scenarios.js';

const USAGE = `npm run faults -- [--runs N] [--scenario NAME ...] [--variant V ...] [--size test|report] [--write] [--json]

  --runs N        runs of every scenario variant (default 1)
  --scenario NAME only these scenarios (default all): ${SCENARIOS.map((s) => s.name).join(', ')}
  --variant V     only these variants (e.g. SECKILL_REPLICA_ACKS=1)
  --size S        report (default: the size docs/RELIABILITY.md quotes) or test (the system tests' short runs; never with --write)
  --write         write the figures into docs/RELIABILITY.md
  --json          print the runs as JSON instead of Markdown`;

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        runs: { type: 'string', default: '1' },
        scenario: { type: 'string', multiple: true },
        variant: { type: 'string', multiple: true },
        size: { type: 'string', default: 'report' },
        write: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    console.error(`faults: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const runs = Number(values.runs);
  const unknown = (values.scenario ?? []).filter((name) => !SCENARIOS.some((s) => s.name === name));
  if (!Number.isInteger(runs) || runs < 1 || unknown.length > 0) {
    console.error(`faults: ${unknown.length > 0 ? `unknown scenario ${unknown.join(', ')}` : '--runs must be a positive integer'}\n\n${USAGE}`);
    return 2;
  }
  const size = values.size;
  if ((size !== 'report' && size !== 'test') || (size === 'test' && values.write)) {
    console.error(`faults: --size must be report or test, and only report sizes are written\n\n${USAGE}`);
    return 2;
  }
  const scenarios = SCENARIOS.filter((s) => !values.scenario || values.scenario.includes(s.name));
  const results: FaultRun[] = [];
  try {
    for (const [index, scenario] of scenarios.entries()) {
      for (const variant of scenario.variants.filter((v) => !values.variant || values.variant.includes(v))) {
        for (let run = 1; run <= runs; run++) {
          console.error(`faults: ${scenario.name} ${variant} run ${run}/${runs}`);
          const result = await scenario.run(variant, size);
          for (const check of result.checks) console.error(`  ${check.pass ? 'PASS' : 'FAIL'} ${check.name}: ${check.detail}`);
          results.push(result);
        }
      }
      // What the scenario kept for the next (the RabbitMQ cluster) stops once the next does not share it.
      if (scenarios[index + 1]?.close !== scenario.close) await scenario.close?.();
    }
  } finally {
    for (const scenario of scenarios) await scenario.close?.();
  }
  const commandLine = `npm run faults -- ${process.argv.slice(2).join(' ')}`.trim();
  if (values.json) console.log(JSON.stringify(results, null, 2));
  else console.log(renderMarkdown(results, commandLine));
  if (values.write) console.error(`faults: wrote ${await writeReliabilityDoc(results, commandLine)}`);
  const pass = results.every((result) => result.checks.every((check) => check.pass));
  if (!pass) console.error('faults: a check FAILED (see above)');
  return pass ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main();
  // Clients of killed servers may keep reconnect timers; the run is over.
  process.exit();
}
