/**
 * The worker processes the crash tests start (test/restate/fixtures/worker.ts, test/conformance/worker.ts) load the
 * agents' scripts and nothing of the test framework: vitest outside its runner is dead weight at best, and its
 * state is not there to be found.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';

const run = promisify(execFile);
const REPO = process.cwd();
const dir = mkdtempSync(join(tmpdir(), 'troupe-worker-modules-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

it.each(['test/restate/fixtures/agents.ts', 'test/conformance/objects.ts'])(
  '%s, as a worker loads it, resolves no vitest',
  async (module) => {
    const log = join(dir, `${module.replace(/\W/g, '-')}.log`);
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        join(REPO, 'test/peers/fixtures/hooks.mjs'),
        '--input-type=module',
        '-e',
        `const loaded = await import(${JSON.stringify(join(REPO, module))}); console.log(Object.keys(loaded).length > 0);`,
      ],
      { cwd: REPO, env: { ...process.env, PEERS_LOG: log } },
    );
    expect(stdout.trim()).toBe('true');
    const resolved = readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.slice(line.indexOf(' ') + 1));
    // The log saw the script's imports (so it would have seen vitest's), and none of vitest's among them.
    expect(resolved).toContain('zod');
    expect(resolved.filter((specifier) => /^(vitest|@vitest\/)/.test(specifier))).toEqual([]);
  },
  60_000,
);
