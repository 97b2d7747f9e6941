import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { type Host, restateHost } from '../conformance/hosts.js';
import { log, resetLog, toolTexts } from '../conformance/script.js';
import { expectValidHistory } from './fixtures/histories.js';

// A foreground batch on Restate runs under any strategy (test/conformance/strategies.test.ts). A background one
// restarts a failed task alone (its task book's rule): one that asks for another strategy is refused with a reason
// and starts nothing, rather than run under a rule it did not ask for.

let host: Host;
beforeAll(async () => {
  host = await restateHost();
}, 90_000);
afterAll(() => host?.close());
beforeEach(resetLog);

const swarm = async (root: string, args: object) => {
  const outcome = await host.prompt(root, `#swarm ${JSON.stringify(args)}`);
  expect(outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
  const history = await host.history(root);
  expectValidHistory(history);
  return toolTexts(history)[0] ?? '';
};
const tasks = [{ prompt: 'count a' }, { prompt: 'count b' }];

it('refuses a background swarm under oneForAll and starts none of its tasks', async () => {
  expect(await swarm('strategy-1', { tasks, background: true, strategy: 'oneForAll' })).toBe(
    'Refused: strategy oneForAll is not supported by agents hosted on Restate yet, which restart a failed task ' +
      'alone (oneForOne) in the background. Start the tasks in the foreground, or without it.',
  );
  expect(log).toEqual([]);
});

it('runs a foreground swarm under oneForAll', async () => {
  const text = await swarm('strategy-2', { tasks, strategy: 'oneForAll' });
  expect(text).toContain('status="completed"');
  expect(text).not.toContain('Refused');
  expect([...log].sort()).toEqual(['ran count a', 'ran count b']);
});
