import { afterAll, beforeAll, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { embeddedBoss, toolResults, withoutIds } from './fixtures/embedded.js';
import { type Harness, startHarness } from './fixtures/harness.js';
import { expectValidHistory, notificationsOf } from './fixtures/histories.js';

// The supervision options of an embedded tree, hosted: `maxAgents` counted per tree root by Restate, subagent
// profiles; the same refusals and texts as embedded.

const PROFILES = {
  terse: { description: 'answers in one word', system: 'Answer in one word.', tools: ['count'] },
};

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('limits', { supervision: { maxAgents: 2, profiles: PROFILES } });
}, 90_000);

afterAll(() => harness?.close());

/** The `limits` script on a root: refusals and runs with the open counts of that root's tree alone. */
async function expectLimits(root: string): Promise<string[]> {
  expect((await harness.client.prompt(root, 'limits')).text).toBe('done');
  const history = await until(
    () => harness.client.history(root),
    (h) => notificationsOf(h).length > 0,
  );
  expectValidHistory(history);
  const refusal = (n: number, open: number) =>
    `Refused: ${n} more subagent(s) would exceed the limit of 2 running at once (maxAgents; ${open} open now). ` +
    'Try fewer, or do the work yourself.';
  const results = toolResults(history);
  expect(results).toEqual([
    refusal(3, 0),
    'Started in the background: task_id="t0.a1". Each result will arrive as a <notification>; use task_status ' +
      'or task_cancel with these ids meanwhile.',
    refusal(2, 1),
    'Task "t0.a1" is cancelled.',
    `<result task_id="t0.sw4.0" agent_id="${root}/t0.sw4.0" status="completed">did a</result>\n` +
      `<result task_id="t0.sw4.1" agent_id="${root}/t0.sw4.1" status="completed">did b</result>`,
    `<result task_id="t0.sw5.0" agent_id="${root}/t0.sw5.0" status="completed">did c</result>\n` +
      `<result task_id="t0.sw5.1" agent_id="${root}/t0.sw5.1" status="completed">did d</result>`,
  ]);
  return results;
}

it('maxAgents on Restate: a batch past the tree-wide limit is refused with the embedded words; a settled task frees its slot', async () => {
  const results = await expectLimits('boss-limits-1');
  // The same texts embedded, ids aside.
  const embedded = await embeddedBoss('limits', { maxAgents: 2 }, { notified: true });
  expect(withoutIds(toolResults(embedded))).toEqual(withoutIds(results));
}, 120_000);

it('a root whose id contains "/" has a tree of its own: its slots and its depth are counted from it', async () => {
  // Another tree whose root's id starts the same way holds a slot of its own (its child blocks).
  expect((await harness.client.prompt('boss-team/holder', 'background ["block h"]')).text).toBe('joined');
  await until(
    async () => harness.executions().includes('start boss-team/holder/t0.a0 b'),
    (started) => started,
  );
  // Three segments deep already, and nothing of the holder's counted: the same answers as any root's.
  await expectLimits('boss-team/a/b/c');
}, 120_000);

it('subagent profiles on Restate: a child runs with its profile (system prompt, tools), an unknown one is refused, as embedded', async () => {
  const root = 'boss-profiles-1';
  const outcome = await harness.client.prompt(root, 'profiles');
  const history = await harness.client.history(root);
  expectValidHistory(history);
  const results = toolResults(history);
  expect(results).toEqual([
    'system: Answer in one word.; tools: count',
    'Unknown profile "nope". Profiles: default, terse.',
    'system: none',
  ]);
  // The model is told of the profile by name and description.
  expect(outcome.text).toContain('one of \\"terse\\" (answers in one word)');
  const embedded = await embeddedBoss('profiles', { maxAgents: 2, profiles: PROFILES });
  expect(toolResults(embedded)).toEqual(results);
  const last = embedded.at(-1);
  expect(last?.role === 'assistant' ? last.content.map((part) => ('text' in part ? part.text : '')).join('') : '').toBe(
    outcome.text,
  );
}, 120_000);
