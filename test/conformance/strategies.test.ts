import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { expectValidHistory, notificationsOf } from '../restate/fixtures/histories.js';
import { HOSTS, type Host } from './hosts.js';
import { log, logged, openGate, resetLog, toolTexts } from './script.js';

// Supervision strategies: who restarts with a failed task, what the intensity and the per-class actions decide, and
// how an escalation ends the owner's turn, up to the grandparent. The same scenarios and texts on every host.

/** Ids taken out: a result's, and the task an escalation names. */
const plain = (text: string) =>
  text
    .replace(/(task_id|agent_id)="[^"]*"/g, '$1="…"')
    .replace(/task [^\s"]+ \(agent [^\s"]+\)/g, 'task … (agent …)')
    .replace(/of task [^\s"]+ \(/g, 'of task … (');
const result = (status: string, text: string) => `<result task_id="…" agent_id="…" status="${status}">${text}</result>`;
const notification = (status: string, text: string) =>
  `<notification task_id="…" agent_id="…" status="${status}">${text}</notification>`;
const ESCALATED_INTENSITY =
  'The task was stopped: its batch escalated the failure of task … (too many restarts within the intensity window).';
const ESCALATED_MODEL = 'The task was stopped: its batch escalated the failure of task … (model failure).';
const reruns = () => log.filter((line) => line.startsWith('rerun ')).sort();

describe.each(HOSTS)('%s', (_name, start) => {
  let host: Host;
  beforeAll(async () => {
    host = await start();
  }, 90_000);
  afterAll(() => host?.close());
  beforeEach(resetLog);

  /** Starts a swarm from a root of its own; resolves with the turn's outcome and its tool result, ids taken out. */
  const swarm = async (root: string, args: object, meanwhile?: () => Promise<void>) => {
    const turn = await host.send(root, `#swarm ${JSON.stringify(args)}`);
    await meanwhile?.();
    const outcome = await turn.outcome;
    const history = await host.history(root);
    expectValidHistory(history);
    return { outcome, text: plain(toolTexts(history)[0] ?? '') };
  };
  const tasks = (...prompts: string[]) => prompts.map((prompt) => ({ prompt }));

  it('oneForOne: only the failed task restarts; a sibling running meanwhile keeps its run', async () => {
    const { outcome, text } = await swarm(
      'plain-s1',
      { strategy: 'oneForOne', tasks: tasks('gated a1', 'trip b1 start_gated_a1', 'count c1') },
      async () => {
        await logged('rerun b1');
        openGate('a1');
      },
    );
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
    expect(text).toBe(
      [result('completed', 'opened a1'), result('completed', 'recovered b1'), result('completed', 'did c1')].join('\n'),
    );
    expect(reruns()).toEqual(['rerun b1']);
    expect(log.filter((line) => line === 'start gated a1')).toHaveLength(1);
  });

  it('oneForAll: every task still running restarts with the failed one', async () => {
    const { outcome, text } = await swarm('plain-s2', {
      strategy: 'oneForAll',
      tasks: tasks('hold a2', 'trip b2 start_block_a2,start_block_c2', 'hold c2'),
    });
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
    expect(text).toBe(
      [
        result('completed', 'did a2 again'),
        result('completed', 'recovered b2'),
        result('completed', 'did c2 again'),
      ].join('\n'),
    );
    expect(reruns()).toEqual(['rerun a2', 'rerun b2', 'rerun c2']);
  });

  it('restForOne: the failed task and those started after it restart; an earlier one keeps its run', async () => {
    const { outcome, text } = await swarm(
      'plain-s3',
      { strategy: 'restForOne', tasks: tasks('gated a3', 'trip b3 start_gated_a3,start_block_c3', 'hold c3') },
      async () => {
        await logged('rerun c3');
        openGate('a3');
      },
    );
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
    expect(text).toBe(
      [result('completed', 'opened a3'), result('completed', 'recovered b3'), result('completed', 'did c3 again')].join(
        '\n',
      ),
    );
    expect(reruns()).toEqual(['rerun b3', 'rerun c3']);
  });

  it('intensity: one restart more than the window allows escalates, and the owner’s turn fails naming it', async () => {
    const { outcome, text } = await swarm('intense-s4', { tasks: tasks('fail y4', 'hold h4') });
    expect(outcome.stopReason).toBe('error');
    expect(text).toBe(
      [
        result('failed', 'The subagent failed: The key for y4 was refused'),
        result('cancelled', ESCALATED_INTENSITY),
      ].join('\n'),
    );
    // Two runs: the batch's one restart in the window, then the escalation (its own maxRestarts would allow two).
    expect(log.filter((line) => line === 'asked fail y4')).toHaveLength(2);
  });

  it('intensity: restarts are counted across the batch, not per task', async () => {
    const { outcome, text } = await swarm('intense-s5', {
      tasks: tasks('trip a5', 'trip b5 rerun_a5', 'hold c5'),
    });
    expect(outcome.stopReason).toBe('error');
    expect(text.split('\n').slice(1)).toEqual([
      result('failed', 'The subagent failed: The key for b5 was refused'),
      result('cancelled', ESCALATED_INTENSITY),
    ]);
    expect(reruns()).toEqual(['rerun a5']);
  });

  it('per class: a model failure set to resume asks the task again with its history', async () => {
    const { outcome, text } = await swarm('resumes-s6', { tasks: tasks('trip r6') });
    expect(outcome).toMatchObject({ stopReason: 'completed', text: 'joined' });
    expect(text).toBe(result('completed', 'resumed r6'));
  });

  it('per class: a model failure set to escalate ends the batch at once and fails the owner’s turn', async () => {
    const { outcome, text } = await swarm('escal-s7', { tasks: tasks('trip e7 start_block_h7', 'hold h7') });
    expect(outcome.stopReason).toBe('error');
    expect(text).toBe(
      [result('failed', 'The subagent failed: The key for e7 was refused'), result('cancelled', ESCALATED_MODEL)].join(
        '\n',
      ),
    );
    expect(reruns()).toEqual([]);
  });

  it("nested: a subagent's escalated batch is its parent task's failure, which escalates to the grandparent", async () => {
    const { outcome, text } = await swarm('escal-s8', { tasks: tasks('nest m8 trip x8') });
    expect(outcome.stopReason).toBe('error');
    expect(text).toBe(
      result(
        'failed',
        'The subagent failed: Subagent task … (agent …) failed and its batch escalated (model failure): ' +
          'The subagent failed: The key for x8 was refused',
      ),
    );
  });

  /** Starts a background swarm from a root of its own; resolves once `count` results have reached it, ids out. */
  const background = async (root: string, args: object, count: number, meanwhile?: () => Promise<void>) => {
    await host.prompt(root, `#swarm ${JSON.stringify({ ...args, background: true })}`);
    await meanwhile?.();
    const history = await until(
      () => host.history(root),
      (h) => notificationsOf(h).length >= count && h.at(-1)?.role === 'assistant',
    );
    expectValidHistory(history);
    return notificationsOf(history).map(plain).sort();
  };

  it('background oneForAll: every task still running restarts with the failed one', async () => {
    const texts = await background(
      'plain-s9',
      { strategy: 'oneForAll', tasks: tasks('hold a9', 'trip b9 start_block_a9,start_block_c9', 'hold c9') },
      3,
    );
    expect(texts).toEqual([
      notification('completed', 'did a9 again'),
      notification('completed', 'did c9 again'),
      notification('completed', 'recovered b9'),
    ]);
    expect(reruns()).toEqual(['rerun a9', 'rerun b9', 'rerun c9']);
  });

  it('background restForOne: the failed task and those started after it restart; an earlier one keeps its run', async () => {
    const texts = await background(
      'plain-s10',
      { strategy: 'restForOne', tasks: tasks('gated a10', 'trip b10 start_gated_a10,start_block_c10', 'hold c10') },
      3,
      async () => {
        await logged('rerun c10');
        openGate('a10');
      },
    );
    expect(texts).toEqual([
      notification('completed', 'did c10 again'),
      notification('completed', 'opened a10'),
      notification('completed', 'recovered b10'),
    ]);
    expect(reruns()).toEqual(['rerun b10', 'rerun c10']);
  });

  it('background intensity: the escalation fails the turn its result wakes, and only that one', async () => {
    const root = 'intense-s11';
    await host.prompt(root, `#swarm ${JSON.stringify({ tasks: tasks('fail y11'), background: true })}`);
    await host.notified(root, 1);
    expect(await host.prompt(root, 'anything else?')).toMatchObject({ stopReason: 'completed', text: 'joined' });
    const history = await host.history(root);
    expectValidHistory(history);
    expect(notificationsOf(history).map(plain)).toEqual([
      notification('failed', 'The subagent failed: The key for y11 was refused'),
    ]);
    // The turn the result woke failed before asking the model: the first turn's answer and the last one's only.
    const answers = history.filter((message) => message.role === 'assistant' && message.stopReason === 'stop');
    expect(answers).toHaveLength(2);
    // The batch's one restart in the window, then the escalation.
    expect(log.filter((line) => line === 'asked fail y11')).toHaveLength(2);
  });

  it('background agent: a model failure set to escalate restarts nothing and fails the turn its result wakes', async () => {
    const root = 'escal-s12';
    // The child fails once the root's turn is over (a failure during it would end that turn).
    const started = await host.prompt(root, `#background ${JSON.stringify(['trip e12 go_e12'])}`);
    expect(started).toMatchObject({ stopReason: 'completed', text: 'started' });
    log.push('go e12');
    await host.notified(root, 1);
    expect(await host.prompt(root, 'anything else?')).toMatchObject({ stopReason: 'completed', text: 'started' });
    const history = await host.history(root);
    expectValidHistory(history);
    expect(notificationsOf(history).map(plain)).toEqual([
      notification('failed', 'The subagent failed: The key for e12 was refused'),
    ]);
    // The turn the result woke failed before asking the model.
    const answers = history.filter((message) => message.role === 'assistant' && message.stopReason === 'stop');
    expect(answers).toHaveLength(2);
    // The tree's `onFailure` decided: no restart (its `maxRestarts` alone would allow two).
    expect(log.filter((line) => line === 'asked trip e12')).toHaveLength(1);
  });

  it('background escalation into a running turn: the owner’s turn fails at its next step boundary', async () => {
    const root = 'escal-s13';
    const turn = await host.send(root, '#escalinturn e13');
    await logged('start gated root-e13');
    // The child fails while the root waits in `gated`: its batch escalates, and the result joins the running turn.
    await host.notifiedDuringTurn(root, () => log.push('go e13'));
    openGate('root-e13');
    // Two model calls: the step boundary after `gated` fails the turn instead of asking a third.
    expect(await turn.outcome).toMatchObject({ stopReason: 'error', text: '', usage: { input: 20, output: 10 } });
    const history = await host.history(root);
    expectValidHistory(history);
    expect(history.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'user']);
    expect(notificationsOf(history).map(plain)).toEqual([
      notification('failed', 'The subagent failed: The key for e13 was refused'),
    ]);
    // Delivered once: the next turn does not fail with it again.
    expect(await host.prompt(root, 'anything else?')).toMatchObject({ stopReason: 'completed', text: 'went on' });
  });
});
