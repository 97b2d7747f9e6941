import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { statechartDocs } from '../../src/inspect/docs.js';

const root = join(import.meta.dirname, '..', '..');

describe('generated statechart docs', () => {
  for (const [path, content] of statechartDocs()) {
    it(`${path} is up to date (run \`npm run docs\` after changing a machine)`, () => {
      let checkedIn: string;
      try {
        checkedIn = readFileSync(join(root, path), 'utf8');
      } catch {
        throw new Error(`${path} is missing: run \`npm run docs\``);
      }
      expect(checkedIn, `${path} is stale: run \`npm run docs\``).toBe(content);
    });
  }
});

describe('what docs/statecharts.md tells a reader of supervision', () => {
  const markdown = statechartDocs().get('docs/statecharts.md') ?? '';
  const line = (start: string) => markdown.split('\n').find((l) => l.startsWith(start)) ?? '';

  it('draws each join policy decision as a named guard into joined, and a cancelled batch as its own state', () => {
    for (const guard of ['firstCompleted', 'quorumReached', 'quorumOutOfReach', 'cancelPutsQuorumOutOfReach']) {
      expect(markdown).toMatch(new RegExp(`batch_running --> batch_joined: [A-Z_.]+ \\[${guard}\\]`));
    }
    expect(markdown).toContain('batch_running --> batch_cancelled: CANCEL_BATCH');
  });

  it('draws the failure verdict: the task waits in `failed`, the batch decides with a guard per outcome', () => {
    expect(markdown).toContain('task_running --> task_failed: CHILD.DONE [isCurrentFailure] / recordFailure');
    expect(markdown).toContain('task_failed --> task_restarting: RESTART / recordRestart, stopAgent');
    expect(markdown).toContain('task_running --> task_restarting: RESTART / recordRestart, stopAgent');
    expect(markdown).toMatch(/task_restarting --> task_running: xstate\.after\.backoff\./);
    expect(markdown).toContain('batch_running --> batch_running: TASK.FAILED [restartsAll] / restartAll');
    expect(markdown).toContain('batch_running --> batch_running: TASK.FAILED [restartsRest] / restartRest');
    expect(markdown).toContain('batch_running --> batch_running: TASK.FAILED / restartOne');
    expect(markdown).toContain('batch_running --> batch_escalated: TASK.FAILED [exceedsIntensity] / recordEscalation');
    expect(line('- `batch.escalated`:')).toMatch(/On entry: `cancelRunning`, `dropQueued`, `reportEscalation`\.$/);
  });

  it("says what happens to a decided batch's queued and running tasks, in the state it enters", () => {
    const joined = line('- `batch.joined`:');
    expect(joined).toContain('`first(1)`');
    expect(joined).toMatch(/Queued tasks are settled `cancelled` at once and never start/);
    expect(joined).toMatch(/On entry: `cancelRunning`, `dropQueued`\.$/);
    expect(line('- `batch.cancelled`:')).toMatch(/queued tasks are settled `interrupted`/);
  });
});
