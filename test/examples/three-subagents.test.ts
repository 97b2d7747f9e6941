import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

describe('examples/three-subagents.ts', () => {
  it('runs three subagents at once on the function form of the scripted model, and the lead answers from theirs', async () => {
    const { stdout } = await run('npx', ['tsx', 'examples/three-subagents.ts'], { cwd: root, timeout: 60_000 });
    const lines = stdout.trimEnd().split('\n');
    expect(lines.slice(0, 3)).toEqual([
      expect.stringMatching(/^default_\S+ completed$/),
      expect.stringMatching(/^default_\S+ completed$/),
      expect.stringMatching(/^default_\S+ completed$/),
    ]);
    expect(lines.slice(3)).toEqual([
      'lead: The weather this weekend: Lisbon: 24°C, sunny; Oslo: 3°C, sleet; Kyoto: 17°C, clear.',
      'subagents running at once, at most: 3',
    ]);
  }, 60_000);
});
