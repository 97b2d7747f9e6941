// Runs the conformance suite (test/conformance) once per deliberately broken host (test/conformance/mutants.ts)
// and prints, for each scenario, the mutants it failed on. Exits 1 when a scenario failed on none: it would pass on a
// host that does not do what it states. `-- <name>…` runs only those mutants.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MUTANTS } from '../test/conformance/mutants.js';

interface Report {
  testResults: {
    name: string;
    status: string;
    message?: string;
    assertionResults: { title: string; status: string }[];
  }[];
}

const chosen = process.argv.slice(2);
const names = chosen.length > 0 ? chosen : Object.keys(MUTANTS);
const unknown = names.filter((name) => !(name in MUTANTS));
if (unknown.length > 0) throw new Error(`no mutant named ${unknown.join(', ')}`);

const dir = mkdtempSync(join(tmpdir(), 'troupe-mutants-'));
/** Scenario (`file > title`) → the mutants it failed on. */
const caught = new Map<string, Set<string>>();
try {
  for (const name of names) {
    const output = join(dir, `${name}.json`);
    // A broken host may leave a scenario waiting forever: 8 s is its failure, not its pass.
    spawnSync(
      'npx',
      [
        'vitest',
        'run',
        'test/conformance',
        // Not a scenario: where the decisions live, which no host changes.
        '--exclude=test/conformance/decisions.test.ts',
        '--testTimeout=8000',
        '--reporter=json',
        `--outputFile=${output}`,
      ],
      { stdio: 'ignore', env: { ...process.env, TROUPE_CONFORMANCE_MUTANT: name } },
    );
    const report = JSON.parse(readFileSync(output, 'utf8')) as Report;
    let failed = 0;
    for (const file of report.testResults) {
      // A suite that did not load shows no scenario as failed: that is no finding, but a broken run.
      if (file.assertionResults.length === 0) throw new Error(`${name}: ${file.name} did not run: ${file.message}`);
      for (const test of file.assertionResults) {
        const scenario = `${file.name.replace(/^.*test\/conformance\//, '')} > ${test.title}`;
        const by = caught.get(scenario) ?? new Set();
        caught.set(scenario, by);
        if (test.status !== 'passed') {
          by.add(name);
          failed++;
        }
      }
    }
    console.log(`${name} (${MUTANTS[name]?.host}: ${MUTANTS[name]?.breaks}): ${failed} scenario(s) failed`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.log('');
const missed: string[] = [];
for (const [scenario, by] of [...caught].sort(([a], [b]) => a.localeCompare(b))) {
  if (by.size === 0) missed.push(scenario);
  console.log(
    `${by.size === 0 ? 'NONE' : String(by.size).padStart(4)}  ${scenario}${by.size ? `: ${[...by].join(', ')}` : ''}`,
  );
}
console.log(`\n${caught.size - missed.length} of ${caught.size} scenarios failed on at least one broken host`);
if (missed.length > 0) process.exitCode = 1;
