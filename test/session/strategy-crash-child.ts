// A process the strategy crash tests kill with SIGKILL while its batch's restarts are pending: it opens (or
// creates) a session whose root runs one foreground swarm under the scenario's supervision, with failures injected
// by the scripted model, and exits when the session is idle. Every real model call of a task is counted in the side
// file (a replayed answer is not a call), and every live `subagent_start` goes to `<side>.starts`.
// Run (bundled by the test): node strategy-crash-child.mjs <dir> <id> <side> <scenario> [kill]
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { createAgent, defineTool, type ModelRequest, scriptedModel, sessions, textOf } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';

const [dir, id, side, scenario, kill] = process.argv.slice(2) as [string, string, string, string, string?];

type Subagents = NonNullable<Parameters<typeof createAgent>[0]['subagents']>;

/** Each scenario: the swarm's prompts, the tree's supervision and how the nth real run of a prompt answers. */
const scenarios: Record<
  string,
  { tasks: string[]; subagents: Subagents; run(prompt: string, n: number): ScriptedAnswer | 'hang' }
> = {
  // One task that always fails: two restarts are allowed within the window, the third failure escalates.
  intensity: {
    tasks: ['leaf'],
    subagents: { maxRestarts: 5, restartDelayMs: 1000, intensity: { maxRestarts: 2, withinMs: 600_000 } },
    run: () => ({ text: '', error: { code: 'invalid_request', message: 'the leaf keeps failing' } }),
  },
  // A writer and its critic: the critic's first run fails while the writer's first is still working.
  oneForAll: {
    tasks: ['writer', 'critic'],
    subagents: { strategy: 'oneForAll', restartDelayMs: 1500 },
    run: (prompt, n) => {
      if (n > 1) return { text: `${prompt} done on run ${n}` };
      if (prompt === 'critic') return { text: '', error: { code: 'invalid_request', message: 'critic lost the plan' } };
      return 'hang';
    },
  },
  // A model failure escalates at once: its sibling is cancelled naming it, and the root's turn ends with the cause.
  escalate: {
    tasks: ['a', 'b'],
    subagents: { onFailure: { model: 'escalate' } },
    run: (prompt, n) => {
      if (prompt === 'a') return { text: '', error: { code: 'invalid_request', message: 'a broke' } };
      return n > 1 ? { text: `b done on run ${n}` } : 'hang';
    },
  },
  // A nested escalation: mid's own batch runs out of restarts on its leaf and escalates into mid, whose failure
  // (an `escalation`) escalates the root's batch in turn.
  nested: {
    tasks: ['mid'],
    subagents: { restartDelayMs: 10, intensity: { maxRestarts: 1, withinMs: 600_000 } },
    run: (prompt, n) => {
      if (prompt === 'leaf') return { text: '', error: { code: 'invalid_request', message: 'the leaf broke' } };
      if (n > 1) return { text: 'mid went on' };
      return { toolCalls: [{ id: 'mid_swarm', name: 'swarm', args: { tasks: [{ prompt: 'leaf' }] } }] };
    },
  },
  // A model failure restarts the task after a long backoff, which a crash must not cut short.
  backoff: {
    tasks: ['leaf'],
    subagents: { restartDelayMs: 3000 },
    run: (prompt, n) =>
      n === 1
        ? { text: '', error: { code: 'invalid_request', message: `${prompt} broke` } }
        : { text: `${prompt} done` },
  },
  // A model failure resumes the task with its history: the resumed run calls a tool, then answers (`kill hang`:
  // hangs on that step), or waits out a long backoff first (`resumeBackoff`).
  resume: {
    tasks: ['leaf'],
    subagents: { onFailure: { model: 'resume' }, restartDelayMs: 10 },
    run: resumed,
  },
  resumeBackoff: {
    tasks: ['leaf'],
    subagents: { onFailure: { model: 'resume' }, restartDelayMs: 1500 },
    run: resumed,
  },
};

function resumed(prompt: string, n: number): ScriptedAnswer | 'hang' {
  if (n === 1) return { text: '', error: { code: 'invalid_request', message: `${prompt} lost its place` } };
  if (n === 2) return { toolCalls: [{ id: `${prompt}_note`, name: 'note', args: {} }] };
  if (n !== 3 || kill !== 'hang') return { text: `${prompt} done on call ${n}` };
  // Nothing else keeps the process alive until the test kills it.
  setInterval(() => {}, 60_000);
  return 'hang';
}
const plan = scenarios[scenario];
if (!plan) throw new Error(`unknown scenario ${scenario}`);

const runsOf = (prompt: string) =>
  existsSync(side)
    ? readFileSync(side, 'utf8')
        .split('\n')
        .filter((line) => line === prompt).length
    : 0;

function script(request: ModelRequest): ScriptedAnswer | Promise<ScriptedAnswer> {
  const users = request.messages.filter((m) => m.role === 'user');
  const who = users[0] ? textOf(users[0]) : '';
  if (who === 'go') {
    const tools = request.messages.filter((m) => m.role === 'tool').length;
    if (tools > 0) return { text: 'root went on' };
    return {
      toolCalls: [
        { id: 'root_swarm', name: 'swarm', args: { tasks: (plan?.tasks ?? []).map((prompt) => ({ prompt })) } },
      ],
    };
  }
  appendFileSync(side, `${who}\n`);
  // What each real call of a task was sent: the roles and texts of its history.
  const sent = request.messages.map((m) => `${m.role}:${textOf(m)}`);
  appendFileSync(`${side}.requests`, `${JSON.stringify({ who, sent })}\n`);
  const answer = plan?.run(who, runsOf(who)) ?? { text: 'unknown' };
  return answer === 'hang' ? new Promise<ScriptedAnswer>(() => {}) : answer;
}

const manager = sessions({ dir, onWarning: () => {} });
const exists = manager.list().some((info) => info.id === id);
const session = exists ? manager.open(id) : manager.create({ id, agentId: 'root' });
const note = defineTool({
  name: 'note',
  description: 'Takes a note',
  schema: z.object({}),
  execute: () => {
    appendFileSync(`${side}.notes`, 'noted\n');
    return 'noted';
  },
});
const agent = createAgent({ model: scriptedModel(script), tools: [note], subagents: plan.subagents, session });
agent.on(
  'subagent_start',
  (event) => {
    const { taskId, attempt, restartedBy } = event;
    appendFileSync(`${side}.starts`, `${JSON.stringify({ taskId, attempt: attempt ?? 0, restartedBy })}\n`);
  },
  { subtree: true },
);
// `kill cancelled`: the process dies the moment a sibling is cancelled by an escalation (its settle is stored
// before a listener hears of it), before the root's turn has heard of the escalation.
// `kill leaf-failed`: at the nested batch's escalation (its leaf's failed end is stored, mid has not heard of it);
// `kill mid-turn-end`: when mid's turn has ended with it; `kill mid-ended`: when the root's batch has escalated.
if (kill === 'leaf-failed' || kill === 'mid-ended') {
  agent.on(
    'subagent_end',
    (event) => {
      if (event.status !== 'failed') return;
      if ((event.agentId === agent.id) === (kill === 'mid-ended')) process.kill(process.pid, 'SIGKILL');
    },
    { subtree: true },
  );
}
if (kill === 'mid-turn-end') {
  agent.on(
    'turn_end',
    (event) => {
      if (event.agentId !== agent.id && event.error?.code === 'escalated') process.kill(process.pid, 'SIGKILL');
    },
    { subtree: true },
  );
}
if (kill === 'cancelled') {
  agent.on('subagent_end', (event) => {
    if (event.status === 'cancelled') process.kill(process.pid, 'SIGKILL');
  });
}
if (![...session.journal.inputs.values()].length) void agent.prompt('go');
process.stdout.write('ready\n');
await session.idle();
session.close();
await agent.stop();
process.stdout.write('done\n');
