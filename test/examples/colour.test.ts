import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples print colour only on a terminal', () => {
  it('npm run demo, piped, prints the answer without escape codes', async () => {
    // Keys are removed so the demo takes its offline path whatever the machine has set.
    const { OPENAI_API_KEY: _o, ANTHROPIC_API_KEY: _a, ...env } = process.env;
    const { stdout } = await run('npx', ['tsx', 'examples/demo.ts'], { cwd: root, env, timeout: 60_000 });
    expect(stdout).toContain('Go to Lisbon');
    expect(stdout.includes('\u001b[')).toBe(false); // no ANSI escape
    // Without colour, the reasoning is still told apart from the answer: marked, and on a line of its own.
    expect(stdout).toContain('\nthinking: Compare the weather in the three cities first.\nLet me check the weather.\n');
  });
});
