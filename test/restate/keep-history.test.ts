import { afterAll, beforeAll, expect, it } from 'vitest';
import { embeddedBoss, toolResults, withoutIds } from './fixtures/embedded.js';
import { type Harness, startHarness } from './fixtures/harness.js';

// `supervision.keepHistory` counts finished tasks per parent on Restate (each parent's task book keeps its own
// most recent ones) and per tree embedded (one book for the whole tree). So a parent's finished task that other
// agents' later tasks pushed out of the embedded tree's book is still known hosted: `task_status` answers with its
// result where embedded says it does not know the task. Why it is kept so:
// docs/architecture/decisions/0006-keep-history-per-parent.md.

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness('keep-history', { supervision: { keepHistory: 2 } });
}, 90_000);

afterAll(() => harness?.close());

it("keepHistory 2: the root's first task is still known hosted (2 of its own finished), forgotten embedded (3 in the tree)", async () => {
  const root = 'boss-keep-1';
  expect((await harness.client.prompt(root, 'paths keep')).text).toBe('kept');
  const hosted = toolResults(await harness.client.history(root));
  const embedded = toolResults(await embeddedBoss('paths keep', { keepHistory: 2 }));
  // The two tasks ran the same way on both hosts.
  expect(withoutIds(hosted.slice(0, 2))).toEqual(withoutIds(embedded.slice(0, 2)));
  expect(hosted[2]).toBe(`task_id="t0.k0" agent_id="${root}/t0.k0" status="completed"\ndid a`);
  expect(withoutIds(embedded.slice(2))).toEqual(withoutIds(['No task "t0.k0" of yours is known.']));
}, 60_000);
