import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/index.js';
import { until } from '../helpers/until.js';
import { expectValidHistory, notificationsOf } from '../restate/fixtures/histories.js';
import { HOSTS, type Host } from './hosts.js';
import { log, logged, openGate, resetLog, toolTexts, userTexts } from './script.js';

// Subagents in the foreground and the background, notifications, the task book's tools, resumes and the tree's
// limits: the same scenario and the same assertions on every host (hosts.ts). The hosts name tasks differently, so
// texts are compared with their ids taken out.

/** Texts with the task and agent ids taken out. */
const plain = (texts: string[]) =>
  texts.map((text) => text.replace(/(task_id|agent_id)="[^"]*"/g, '$1="…"').replace(/([Tt]ask) "[^"]*"/g, '$1 "…"'));

const said = (history: Message[]) =>
  history.flatMap((message) =>
    message.role === 'assistant' ? message.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])) : [],
  );

describe.each(HOSTS)('%s', (_name, start) => {
  let host: Host;
  beforeAll(async () => {
    host = await start();
  }, 90_000);
  afterAll(() => host?.close());
  beforeEach(resetLog);

  const results = async (root: string) => plain(toolTexts(await host.history(root)));
  /** The root's history once `done` holds for it. */
  const settled = (root: string, done: (history: Message[]) => boolean) => until(() => host.history(root), done);

  it('a foreground agent call returns its child’s final answer', async () => {
    expect(await host.prompt('fg-1', '#agents ["echo a"]')).toMatchObject({ stopReason: 'completed', text: 'joined' });
    expect(await results('fg-1')).toEqual(['echo a']);
  });

  it("a step's foreground calls run together and answer in call order", async () => {
    await host.prompt('fg-2', '#agents ["count x", "count y"]');
    expect(await results('fg-2')).toEqual(['did x', 'did y']);
    expect([...log].sort()).toEqual(['ran count x', 'ran count y']);
  });

  it('a background call answers with its task id at once; the result wakes the root later, once', async () => {
    await host.prompt('bg-1', '#background ["gated b"]');
    expect(await results('bg-1')).toEqual([
      'Started in the background: task_id="…". Each result will arrive as a <notification>; use task_status or ' +
        'task_cancel with these ids meanwhile.',
    ]);
    openGate('b');
    const history = await settled('bg-1', (h) => said(h).includes('noted'));
    expect(plain(notificationsOf(history))).toEqual([
      '<notification task_id="…" agent_id="…" status="completed">opened b</notification>',
    ]);
    expect(said(history)).toEqual(['started', 'noted']);
    expectValidHistory(history);
  });

  it('notifications come exactly once each, however many children finish', async () => {
    await host.prompt('bg-2', '#background ["echo p", "echo q", "echo r"]');
    const history = await settled('bg-2', (h) => notificationsOf(h).length >= 3 && h.at(-1)?.role === 'assistant');
    // A prompt after them: nothing more was on its way.
    await host.prompt('bg-2', 'anything else?');
    const all = notificationsOf(await host.history('bg-2'));
    expect(plain(all).sort()).toEqual(
      ['p', 'q', 'r'].map((x) => `<notification task_id="…" agent_id="…" status="completed">echo ${x}</notification>`),
    );
    expect(new Set(all).size).toBe(3);
    expectValidHistory(history);
  });

  it('a notification that comes during a turn joins it at the next step boundary', async () => {
    const turn = await host.send('bg-3', '#inturn n1');
    await logged('start gated root-n1');
    await host.notifiedDuringTurn('bg-3', () => openGate('n1'));
    openGate('root-n1');
    expect((await turn.outcome).text).toBe('noted');
    const history = await host.history('bg-3');
    expect(history.map((message) => message.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'user',
      'assistant',
    ]);
    expect(plain(notificationsOf(history))).toEqual([
      '<notification task_id="…" agent_id="…" status="completed">opened n1</notification>',
    ]);
  });

  it('wakeOnNotification false: a result waits for the next turn instead of waking the agent', async () => {
    await host.prompt('quiet-1', '#background ["gated w"]');
    openGate('w');
    await host.notified('quiet-1', 1);
    const next = await host.prompt('quiet-1', 'what came?');
    // The result joined the next turn, after its prompt, and was answered once.
    expect(next.text).toBe('noted');
    const history = await host.history('quiet-1');
    expect(said(history)).toEqual(['started', 'noted']);
    expect(plain(userTexts(history))).toEqual([
      '#background ["gated w"]',
      'what came?',
      '<notification task_id="…" agent_id="…" status="completed">opened w</notification>',
    ]);
  });

  it("a child's own background child reports to the child, which then reports to the root", async () => {
    await host.prompt('nest-1', '#background ["helped echo deep"]');
    const history = await settled('nest-1', (h) => said(h).includes('noted'));
    expect(plain(notificationsOf(history))).toEqual([
      '<notification task_id="…" agent_id="…" status="completed">waiting for my helper</notification>',
    ]);
  });

  it('task_status and task_cancel: running, cancelled, cancelled again, unknown', async () => {
    await host.prompt('tasks-1', '#tasks block t1');
    const history = await settled('tasks-1', (h) => toolTexts(h).length >= 7 && h.at(-1)?.role === 'assistant');
    expect(plain(toolTexts(history)).slice(1)).toEqual([
      'task_id="…" agent_id="…" status="running"',
      'started',
      expect.stringMatching(/cancel/i),
      expect.stringMatching(/status="cancelled"/),
      expect.stringMatching(/./),
      'No task "…" of yours is known.',
    ]);
    expect(log).toEqual(['start block t1', 'aborted block t1']);
    // The parent hears of the cancel once.
    expect(plain(notificationsOf(history))).toEqual([
      '<notification task_id="…" agent_id="…" status="cancelled">The task was cancelled before it finished.</notification>',
    ]);
  });

  it('a finished child resumed by its agent id continues its own history', async () => {
    await host.prompt('resume-1', '#resume');
    expect(await results('resume-1')).toEqual([
      '<result task_id="…" agent_id="…" status="completed">remembers: remember first</result>',
      'remembers: remember first | second',
    ]);
  });

  it('maxDepth: an agent at the deepest level cannot start another', async () => {
    const outcome = await host.prompt('depth1-1', '#deep');
    expect(outcome.text).toBe(
      'deep: level 1: Refused: subagents may nest at most 1 deep (maxDepth), and this one would be at depth 2. ' +
        'Do the work yourself.',
    );
  });

  it('maxAgents: a batch larger than the tree has room for is refused, and nothing of it runs', async () => {
    const tasks = ['count m1', 'count m2', 'count m3'].map((prompt) => ({ prompt }));
    await host.prompt('max2-1', `#swarm ${JSON.stringify({ tasks })}`);
    expect(await results('max2-1')).toEqual([
      'Refused: 3 more subagent(s) would exceed the limit of 2 running at once (maxAgents; 0 open now). ' +
        'Try fewer, or do the work yourself.',
    ]);
    expect(log).toEqual([]);
  });

  it('a resume of a child still running its task is refused as running, and the child goes on', async () => {
    await host.prompt('resume-2', '#busyresume r2');
    const history = await host.history('resume-2');
    expect(
      plain(toolTexts(history))
        .at(-1)
        ?.replace(/Agent \S+/, 'Agent …'),
    ).toBe('Agent … is still running a task; wait for its result');
    openGate('r2');
    const after = await settled('resume-2', (h) => said(h).includes('noted'));
    expect(plain(notificationsOf(after))).toEqual([
      '<notification task_id="…" agent_id="…" status="completed">opened r2</notification>',
    ]);
  });

  it('keepFinished + keepHistory: a finished child beyond both cannot be resumed, a later one can', async () => {
    await host.prompt('keep2-3', '#keepresume');
    const [refused, resumed] = (await results('keep2-3')).slice(4);
    expect(refused?.replace(/"[^"]*"/, '"…"')).toBe('No finished subagent "…" is known (it may be too old to resume)');
    expect(resumed).toBe('did k1');
  });

  it('keepHistory counts finished tasks per parent: the oldest beyond it is forgotten', async () => {
    await host.prompt('keep2-1', '#keep');
    const texts = await results('keep2-1');
    expect(texts.slice(3)).toEqual([
      'No task "…" of yours is known.',
      'task_id="…" agent_id="…" status="completed"\ndid k1',
      'task_id="…" agent_id="…" status="completed"\ndid k2',
    ]);
  });
});
