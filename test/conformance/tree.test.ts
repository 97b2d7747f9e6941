import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { expectValidHistory, notificationsOf } from '../restate/fixtures/histories.js';
import { HOSTS, type Host } from './hosts.js';
import { log, resetLog, toolTexts } from './script.js';

// Budgets across the tree: a `budget-…` root may spend 40 tokens a turn (10 + 5 an answer), and what its subagents
// spend counts against it. The same scenario and the same assertions on every host (hosts.ts).

const RAN_OUT = 'The budget for this turn ran out before this tool call finished; it has no result.';

describe.each(HOSTS)('%s', (_name, start) => {
  let host: Host;
  beforeAll(async () => {
    host = await start();
  }, 90_000);
  afterAll(() => host?.close());
  beforeEach(resetLog);

  it("a subagent's spending counts against its parent's turn: the parent stops budget_exhausted", async () => {
    // 15 for the root's answer, 30 for the child's two: 45 of 40, spent while the root's call is open.
    const outcome = await host.prompt('budget-2', '#agents ["count x"]');
    expect(outcome).toMatchObject({ stopReason: 'budget_exhausted', usage: { input: 10, output: 5 } });
    expect(await host.usage('budget-2')).toMatchObject({ input: 10, output: 5 });
    const history = await host.history('budget-2');
    expectValidHistory(history);
    expect(toolTexts(history)).toEqual([RAN_OUT]);
    expect(log).toEqual(['ran count x']);
  });

  it('a subagent may spend no more than its parent has left', async () => {
    // The child would count forever: the root's 25 tokens left stop it after two answers.
    const outcome = await host.prompt('budget-3', '#agents ["loop z"]');
    expect(outcome).toMatchObject({ stopReason: 'budget_exhausted', usage: { input: 10, output: 5 } });
    expect(log).toEqual(['ran count z0']);
  });

  it("a background subagent may spend no more than its parent's turn has left", async () => {
    // 30 of the root's 40 spent when it starts the child: the child's first answer (15) is over, and its call never
    // runs. The root's last answer, over too, still ends its turn: it has nothing more to do.
    const outcome = await host.prompt('budget-5', '#bgafter loop y');
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'started' });
    const history = await until(
      () => host.history('budget-5'),
      (messages) => notificationsOf(messages).length > 0,
    );
    // It ran out of the root's turn's account, which its message names as embedded: its limit, and all it counted.
    expect(notificationsOf(history).map((text) => text.replace(/(task_id|agent_id)="[^"]*"/g, '$1="…"'))).toEqual([
      '<notification task_id="…" agent_id="…" status="interrupted">The subagent stopped: ' +
        'The token budget of budget-5 (40 tokens) is spent: 45 tokens used</notification>',
    ]);
    expect(log).toEqual(['ran count 0']);
  });

  it("a subagent's background child spends from the root's turn too: the root stops budget_exhausted", async () => {
    // 15 for the root's answer, 30 for the child's two, 15 for its helper's first: over 40 before the child is done.
    const outcome = await host.prompt('budget-6', '#agents ["helped loop h"]');
    expect(outcome).toMatchObject({ stopReason: 'budget_exhausted', usage: { input: 10, output: 5 } });
    expect(toolTexts(await host.history('budget-6'))).toEqual([RAN_OUT]);
    expect(log).toEqual([]);
  });

  it("a root's lifetime budget counts every turn and its background children: a turn past it stops", async () => {
    // 50 tokens over the root's life: its first turn's two answers (30), then its child's one (15), then the turn the
    // child's result wakes (15): 60, past it. A turn after that asks the model nothing.
    expect(await host.prompt('lifetime-1', '#background ["echo l"]')).toMatchObject({ stopReason: 'completed' });
    await host.notified('lifetime-1', 1);
    const next = await host.prompt('lifetime-1', '#hello');
    expect(next).toMatchObject({ stopReason: 'budget_exhausted', usage: { input: 0, output: 0 } });
    expect(await host.usage('lifetime-1')).toMatchObject({ input: 30, output: 15 });
  });

  it("a subagent within its parent's budget leaves the parent's turn to go on", async () => {
    const outcome = await host.prompt('budget-4', '#agents ["echo e"]');
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'joined', usage: { input: 20, output: 10 } });
    expect(toolTexts(await host.history('budget-4'))).toEqual(['echo e']);
  });
});
