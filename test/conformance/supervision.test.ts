import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { expectValidHistory } from '../restate/fixtures/histories.js';
import { HOSTS, type Host } from './hosts.js';
import { log, logged, resetLog, toolTexts } from './script.js';

// Join policies, restarts, cancels of queued and running work, interrupts that reach subagents, approvals asked
// below the root, and what a tree keeps: the same scenario and the same assertions on every host (hosts.ts).

const plain = (text: string) =>
  text.replace(/(task_id|agent_id)="[^"]*"/g, '$1="…"').replace(/([Tt]ask) "[^"]*"/g, '$1 "…"');

const CANCELLED = "The task was cancelled: its batch's join policy was decided without it.";
const result = (status: string, text: string) => `<result task_id="…" agent_id="…" status="${status}">${text}</result>`;
const join = (policy: string, outcome: string, completed: number) =>
  `<join policy="${policy}" outcome="${outcome}" completed="${completed}"/>`;

describe.each(HOSTS)('%s', (_name, start) => {
  let host: Host;
  beforeAll(async () => {
    host = await start();
  }, 90_000);
  afterAll(() => host?.close());
  beforeEach(resetLog);

  /** Runs a swarm from a root of its own and returns its tool result, ids taken out. */
  const swarm = async (root: string, args: object) => {
    const outcome = await host.prompt(root, `#swarm ${JSON.stringify(args)}`);
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
    const history = await host.history(root);
    expectValidHistory(history);
    return plain(toolTexts(history)[0] ?? '');
  };
  const tasks = (...prompts: string[]) => prompts.map((prompt) => ({ prompt }));
  /** Every block that started sees its abort (perhaps after the join has answered). */
  const blocksAborted = async () => {
    const lines = (prefix: string) =>
      log
        .filter((line) => line.startsWith(prefix))
        .map((line) => line.slice(prefix.length))
        .sort();
    await until(
      async () => lines('aborted block'),
      (aborted) => aborted.length >= lines('start block').length,
    );
    expect(lines('aborted block')).toEqual(lines('start block'));
  };

  it('join all: every task completes, results in task order', async () => {
    expect(await swarm('join-1', { tasks: tasks('quick a', 'count b') })).toBe(
      [result('completed', 'did a'), result('completed', 'did b')].join('\n'),
    );
    expect(log).toEqual(['ran count b']);
  });

  it('join all: waits for every task, a failed one included, and gives each its own result', async () => {
    const text = await swarm('join-2', { tasks: tasks('fail a', 'count b') });
    expect(text).toBe(
      [result('failed', 'The subagent failed: The key for a was refused'), result('completed', 'did b')].join('\n'),
    );
  });

  it('join first(1) (any): the first completion wins, the running losers are cancelled', async () => {
    const text = await swarm('join-3', { join: 'any', tasks: tasks('quick a', 'block b', 'block c') });
    expect(text).toBe(
      [
        join('first(1)', 'met', 1),
        result('completed', 'did a'),
        result('cancelled', CANCELLED),
        result('cancelled', CANCELLED),
      ].join('\n'),
    );
    await blocksAborted();
  });

  it('join first(2): two completions win', async () => {
    const text = await swarm('join-4', { join: 'first', k: 2, tasks: tasks('quick a', 'block b', 'quick c') });
    expect(text).toBe(
      [
        join('first(2)', 'met', 2),
        result('completed', 'did a'),
        result('cancelled', CANCELLED),
        result('completed', 'did c'),
      ].join('\n'),
    );
    await blocksAborted();
  });

  it('join quorum(2): met by two completions, the rest cancelled', async () => {
    const text = await swarm('join-5', { join: 'quorum', k: 2, tasks: tasks('quick a', 'block b', 'quick c') });
    expect(text).toBe(
      [
        join('quorum(2)', 'met', 2),
        result('completed', 'did a'),
        result('cancelled', CANCELLED),
        result('completed', 'did c'),
      ].join('\n'),
    );
    await blocksAborted();
  });

  it('join quorum(2): failed as soon as two completions cannot be reached', async () => {
    const text = await swarm('join-6', { join: 'quorum', k: 2, tasks: tasks('fail a', 'fail b', 'block c') });
    expect(text).toBe(
      [
        join('quorum(2)', 'failed', 0),
        result('failed', 'The subagent failed: The key for a was refused'),
        result('failed', 'The subagent failed: The key for b was refused'),
        result('cancelled', CANCELLED),
      ].join('\n'),
    );
    await blocksAborted();
  });

  it('join allSettled: every task settles, failures included', async () => {
    const text = await swarm('join-7', { join: 'allSettled', tasks: tasks('quick a', 'fail b') });
    expect(text).toBe(
      [
        join('allSettled', 'met', 1),
        result('completed', 'did a'),
        result('failed', 'The subagent failed: The key for b was refused'),
      ].join('\n'),
    );
  });

  it('restarts: a failed task starts again from its prompt and may recover', async () => {
    const text = await swarm('restart-1', { tasks: tasks('flaky x') });
    expect(text).toBe(result('completed', 'recovered x on attempt 2'));
  });

  it('restarts: a task that keeps failing is tried maxRestarts + 1 times, then fails', async () => {
    await swarm('restart-2', { join: 'allSettled', tasks: tasks('fail y') });
    expect(log).toEqual(['asked fail y', 'asked fail y', 'asked fail y']);
  });

  it('cancel of queued work: tasks a join cancels before they start never run', async () => {
    // One running at a time: the first completes before the others start (running together, they would count).
    const text = await swarm('conc1-1', { join: 'any', tasks: tasks('count a', 'count b', 'count c') });
    expect(text).toBe(
      [
        join('first(1)', 'met', 1),
        result('completed', 'did a'),
        result('cancelled', CANCELLED),
        result('cancelled', CANCELLED),
      ].join('\n'),
    );
    expect(log).toEqual(['ran count a']);
  });

  it("an interrupt of the root's turn cancels its foreground subagent's running call", async () => {
    const turn = await host.send('cascade-1', '#agents ["block ic"]');
    await logged('start block ic');
    await host.interrupt('cascade-1');
    expect((await turn.outcome).stopReason).toBe('interrupted');
    await logged('aborted block ic');
    expectValidHistory(await host.history('cascade-1'));
  });

  it("a subagent's call that asks for approval is answered from the root, and runs once", async () => {
    const turn = await host.send('nested-1', '#agents ["deploy n1"]');
    expect(await (await host.approval('nested-1', 'deploy')).answer(true)).toBe(true);
    expect((await turn.outcome).text).toBe('joined');
    expect(toolTexts(await host.history('nested-1'))).toEqual(['child: deployed n1']);
    expect(log).toEqual(['ran deploy n1']);
  });

  it("a subagent's call denied from the root does not run; the child hears why", async () => {
    const turn = await host.send('nested-2', '#agents ["deploy n2"]');
    await (await host.approval('nested-2', 'deploy')).answer(false, 'frozen');
    await turn.outcome;
    expect(toolTexts(await host.history('nested-2'))[0]).toMatch(/^child: .*frozen/);
    expect(log).toEqual([]);
  });

  it('an approval remembered at the root lets the same call run unasked later, in a subagent too', async () => {
    const turn = await host.send('asks-1', '#deploytree r1');
    expect(await (await host.approval('asks-1', 'deploy')).answer(true, undefined, true)).toBe(true);
    const outcome = await turn.outcome;
    expect(outcome).toMatchObject({ stopReason: 'completed' });
    expect(outcome.text).toBe('deployed r1 | child: deployed r1');
    expect(log).toEqual(['ran deploy r1', 'ran deploy r1']);
  });

  it("an approval remembered for a subagent's call lets the same call run unasked at the root", async () => {
    const turn = await host.send('asks-2', '#deployup r2');
    expect(await (await host.approval('asks-2', 'deploy')).answer(true, undefined, true)).toBe(true);
    const outcome = await turn.outcome;
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'child: deployed r2 | deployed r2' });
    expect(log).toEqual(['ran deploy r2', 'ran deploy r2']);
  });

  it("keepHistory counts a parent's own finished tasks: other agents' tasks do not push them out", async () => {
    // The root's first task, then a child's task in which the child finished two of its own: four in the tree.
    await host.prompt('keep2-2', '#keeptree');
    const texts = toolTexts(await host.history('keep2-2')).map(plain);
    expect(texts[2]).toBe('task_id="…" agent_id="…" status="completed"\ndid a');
  });
});
