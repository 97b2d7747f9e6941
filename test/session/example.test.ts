import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const example = fileURLToPath(new URL('../../examples/session.ts', import.meta.url));

describe('examples/session.ts', () => {
  it('kills itself half way through a subagent’s steps, then resumes the tree without running a step twice', () => {
    const output = execFileSync(process.execPath, ['--import', 'tsx', example, tempDir()], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(output).toContain('The child died: SIGKILL');
    expect(output).toMatch(/\(interrupted\)/);
    // Each step ran once, all in the child: the resumed tree took 1 and 2 from the journal and closed 3.
    expect(output.match(/step \d runs/g)).toEqual(['step 1 runs', 'step 2 runs', 'step 3 runs']);
    expect(output).not.toContain('resumed process');
    expect(output).toMatch(/\[resumed\] subagent call_3: Tool step was interrupted by a restart/);
    expect(output).toMatch(/Subagent tasks: \S+ completed\n/);
    expect(output).toContain('Final answer: The subagent accounted for all three steps.');
  }, 60_000);
});
