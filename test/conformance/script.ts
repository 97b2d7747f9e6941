import { appendFileSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  type AgentConfig,
  defineTool,
  type JsonObject,
  type Message,
  type ModelRequest,
  type ScriptedAnswer,
  type SupervisionOptions,
  scriptedModel,
} from '../../src/index.js';
import type { ScriptedToolCall } from '../../src/providers/index.js';
import { toolTexts } from '../restate/fixtures/texts.js';

export { toolTexts };

/**
 * The agents of the conformance suite, one script for both hosts. A root's task starts with `#` and names its
 * scenario; a subagent's task is `<kind> <name>` and says what it does. Every answer depends only on the request
 * (and, for `flaky`, on how often it was asked), so a replay on Restate answers the same as the first play.
 */

/** What the tools did, in this process: `start block x`, `aborted block x`, `ran deploy x`… (see `resetLog`). */
export const log: string[] = [];
/** A worker process (crash-host.ts) also appends each line to this file, which outlives it. */
const LOG_FILE = process.env.TROUPE_CONFORMANCE_LOG;
const record = (line: string) => {
  log.push(line);
  if (LOG_FILE) appendFileSync(LOG_FILE, `${line}\n`);
};

/** Model calls per child task (a `flaky` child fails its first). */
const attempts = new Map<string, number>();
const gates = new Map<string, { open: () => void; opened: Promise<void> }>();

function gateOf(who: string) {
  let gate = gates.get(who);
  if (!gate) {
    let open = () => {};
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    gate = { open, opened };
    gates.set(who, gate);
  }
  return gate;
}

/** Lets the `gated` calls of `who` finish. */
export const openGate = (who: string) => gateOf(who).open();

/** Forgets what the previous scenario did. */
export function resetLog(): void {
  log.length = 0;
  attempts.clear();
  gates.clear();
}

/** How often `line` is in the log: a worker's file, which outlives the worker, else this process's. */
const seen = (line: string) =>
  (LOG_FILE ? readFileSync(LOG_FILE, 'utf8').split('\n') : log).filter((one) => one === line).length;

/** Resolves once `line` is in the log. */
export async function logged(line: string): Promise<void> {
  for (let i = 0; i < 2_000 && !log.includes(line); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!log.includes(line)) throw new Error(`never logged: ${line}`);
}

const text = (message: Message | undefined): string =>
  message && message.role !== 'assistant' && message.role !== 'tool'
    ? message.content.map((part) => ('text' in part ? part.text : '')).join('')
    : '';

/** The text of a request's first user message: a root's scenario, a child's task. */
const taskOf = (request: ModelRequest) => text(request.messages.find((message) => message.role === 'user'));

/** The texts of a history's user messages, in order. */
export const userTexts = (messages: readonly Message[]) =>
  messages.flatMap((message) => (message.role === 'user' ? [text(message)] : []));

const usage = { input: 10, output: 5 };
const call = (name: string, args: JsonObject, id: string): ScriptedToolCall => ({ name, args, id });
const calls = (...toolCalls: ScriptedToolCall[]): ScriptedAnswer => ({ toolCalls, usage });
const say = (answer: string): ScriptedAnswer => ({ text: answer, usage });

/** What the model answers: a root's scenario (`#…`) or a child's task. */
function answer(request: ModelRequest): ScriptedAnswer {
  const task = taskOf(request);
  const results = toolTexts(request.messages);
  const lastText = text(request.messages.at(-1));
  return task.startsWith('#')
    ? rootAnswer(task.slice(1), request, results, lastText)
    : childAnswer(task, request, results);
}

function rootAnswer(task: string, request: ModelRequest, results: string[], lastText: string): ScriptedAnswer {
  const [scenario = '', ...rest] = task.split(' ');
  const arg = rest.join(' ');
  const n = results.length;
  const noted = lastText.startsWith('<notification');
  switch (scenario) {
    case 'hello':
      return say('hello back');
    case 'count':
      return n < Number(arg) ? calls(call('count', { n }, `k${n}`)) : say(`saw ${n} results`);
    case 'batch':
      return n === 0 ? calls(...[1, 2, 3].map((i) => call('count', { n: i }, `b${i}`))) : say('batch done');
    case 'explode':
    case 'unknown':
      return n === 0 ? calls(call(scenario === 'explode' ? 'explode' : 'nope', {}, 'x')) : say(`saw: ${results[0]}`);
    // A count, a slow call, another count.
    case 'slowcount': {
      const steps = [call('count', { n: 0 }, 'c0'), call('slow', { who: arg }, 's1'), call('count', { n: 2 }, 'c2')];
      const step = steps[n];
      return step ? calls(step) : say(`saw ${n} results: ${results.join(', ')}`);
    }
    case 'loop':
      return calls(call('count', { n }, `l${n}`));
    case 'broken':
      return { error: { code: 'auth_error', message: 'The API key was refused' } };
    case 'echo':
      return say(`heard: ${userTexts(request.messages).join(' | ')}`);
    // Waits in `gated` (a steer or an interrupt comes meanwhile), then says what it heard.
    case 'work':
      if (n === 0) return calls(call('gated', { who: arg }, 'g'));
      return say(`heard: ${userTexts(request.messages).join(' | ')}`);
    case 'deploy':
      return n === 0 ? calls(call('deploy', { target: arg }, `d-${arg}`)) : say(`deploy answered: ${results[0]}`);
    // Foreground `agent` calls in one step (`background` ones: task ids now, notifications later).
    case 'agents':
    case 'background': {
      if (noted) return say('noted');
      if (n > 0) return say(scenario === 'agents' ? 'joined' : 'started');
      const prompts: string[] = JSON.parse(arg);
      const background = scenario === 'background';
      return calls(...prompts.map((prompt, i) => call('agent', { prompt, background }, `a${i}`)));
    }
    // A count, then a background child, then an answer: the child starts with 10 of a 40-token turn left.
    case 'bgafter':
      if (noted) return say('noted');
      if (n === 0) return calls(call('count', { n }, 'c0'));
      return n === 1 ? calls(call('agent', { prompt: arg, background: true }, 'a1')) : say('started');
    case 'swarm':
      return n === 0 ? calls(call('swarm', JSON.parse(arg), 'sw')) : say('joined');
    // A background task, then its book's tools: status, a wait for its block to start, cancel, status, cancel.
    case 'tasks': {
      const taskId = results[0]?.match(/task_id="([^"]+)"/)?.[1] ?? '';
      const steps = [
        call('agent', { prompt: arg, background: true }, 'a0'),
        call('task_status', { task_id: taskId }, 'st1'),
        call('until_started', { who: arg.split(' ')[1] ?? '' }, 'u'),
        call('task_cancel', { task_id: taskId }, 'tc1'),
        call('task_status', { task_id: taskId }, 'st2'),
        call('task_cancel', { task_id: taskId }, 'tc2'),
        call('task_status', { task_id: 'no-such-task' }, 'st3'),
      ];
      const step = steps[n];
      return step ? calls(step) : say(noted ? 'noted' : 'done');
    }
    // A background task whose result comes while the root waits in `gated`: it joins the same turn.
    case 'inturn':
      if (n === 0) return calls(call('agent', { prompt: `gated ${arg}`, background: true }, 'a0'));
      if (n === 1) return calls(call('gated', { who: `root-${arg}` }, 'g'));
      return say(noted ? 'noted' : 'went on');
    // A background task that fails once the root waits in `gated` (the test logs `go <arg>` then): its batch
    // escalates into the running turn.
    case 'escalinturn':
      if (n === 0) return calls(call('agent', { prompt: `trip ${arg} go_${arg}`, background: true }, 'a0'));
      if (n === 1) return calls(call('gated', { who: `root-${arg}` }, 'g'));
      return say(noted ? 'noted' : 'went on');
    // A foreground task, then the same agent resumed by its id with a second prompt.
    case 'resume': {
      const agentId = results[0]?.match(/agent_id="([^"]+)"/)?.[1] ?? '';
      const steps = [
        call('swarm', { tasks: [{ prompt: 'remember first' }] }, 'r0'),
        call('agent', { agent_id: agentId, prompt: 'second' }, 'r1'),
      ];
      const step = steps[n];
      return step ? calls(step) : say('resumed');
    }
    // A background task, its status once it waits at its gate, then a resume of its agent while it still runs.
    case 'busyresume': {
      const agentId = results[2]?.match(/agent_id="([^"]+)"/)?.[1] ?? '';
      const taskId = results[0]?.match(/task_id="([^"]+)"/)?.[1] ?? '';
      const steps = [
        call('agent', { prompt: `gated ${arg}`, background: true }, 'a0'),
        call('until_logged', { line: `start gated ${arg}` }, 'u'),
        call('task_status', { task_id: taskId }, 'st'),
        call('agent', { agent_id: agentId, prompt: 'again' }, 'a1'),
      ];
      const step = steps[n];
      return step ? calls(step) : say(noted ? 'noted' : 'refused');
    }
    // Three foreground tasks one after the other, then the status of each (a parent keeping 2 forgets the first).
    case 'keep': {
      const ids = results.slice(0, 3).map((result) => result.match(/task_id="([^"]+)"/)?.[1] ?? '');
      const step =
        n < 3
          ? call('swarm', { tasks: [{ prompt: `quick k${n}` }] }, `k${n}`)
          : call('task_status', { task_id: ids[n - 3] ?? '' }, `s${n}`);
      return n < 6 ? calls(step) : say('kept');
    }
    // Four foreground tasks one after the other, then a resume of the first and of the second: a parent keeping one
    // alive and two archived has forgotten the first.
    case 'keepresume': {
      const ids = results.slice(0, 4).map((result) => result.match(/agent_id="([^"]+)"/)?.[1] ?? '');
      const step =
        n < 4
          ? call('swarm', { tasks: [{ prompt: `quick k${n}` }] }, `k${n}`)
          : call('agent', { agent_id: ids[n - 4] ?? '', prompt: `remember again ${n - 4}` }, `r${n}`);
      return n < 6 ? calls(step) : say('kept');
    }
    // A task of the root's, then one of a child's that runs two of its own, then the status of the root's first:
    // the tree has finished four tasks, the root two.
    case 'keeptree': {
      const first = results[0]?.match(/task_id="([^"]+)"/)?.[1] ?? '';
      const steps = [
        call('swarm', { tasks: [{ prompt: 'quick a' }] }, 'k0'),
        call('swarm', { tasks: [{ prompt: 'twice b' }] }, 'k1'),
        call('task_status', { task_id: first }, 'k2'),
      ];
      const step = steps[n];
      return step ? calls(step) : say('kept');
    }
    // A deploy, then a child that deploys the same, then what both said.
    case 'deploytree': {
      const steps = [call('deploy', { target: arg }, 'd0'), call('agent', { prompt: `deploy ${arg}` }, 'a1')];
      const step = steps[n];
      return step ? calls(step) : say(results.join(' | '));
    }
    // A child that deploys, then the root deploys the same (a call asked below the root, answered there).
    case 'deployup': {
      const steps = [call('agent', { prompt: `deploy ${arg}` }, 'a0'), call('deploy', { target: arg }, 'd1')];
      const step = steps[n];
      return step ? calls(step) : say(results.join(' | '));
    }
    // A child whose own child is the tree's deepest possible.
    case 'deep':
      return n === 0 ? calls(call('agent', { prompt: 'deep 1' }, 'd')) : say(`deep: ${results[0]}`);
    default:
      return say(`unknown scenario ${scenario}`);
  }
}

function childAnswer(task: string, request: ModelRequest, results: string[]): ScriptedAnswer {
  const [kind = '', what = ''] = task.split(' ');
  const n = results.length;
  switch (kind) {
    case 'block':
      return n === 0 ? calls(call('block', { who: what }, 'b')) : say(`unblocked ${what}`);
    case 'fail':
      record(`asked fail ${what}`);
      return { error: { code: 'auth_error', message: `The key for ${what} was refused` } };
    case 'flaky': {
      const attempt = attempts.get(task) ?? 0;
      attempts.set(task, attempt + 1);
      if (attempt === 0) return { error: { code: 'auth_error', message: 'The key was refused once' } };
      return say(`recovered ${what} on attempt ${attempt + 1}`);
    }
    case 'count':
      return n === 0 ? calls(call('count', { n: 1, who: what }, 'c')) : say(`did ${what}`);
    case 'deploy':
      return n === 0 ? calls(call('deploy', { target: what }, `d-${what}`)) : say(`child: ${results[0]}`);
    case 'gated':
      return n === 0 ? calls(call('gated', { who: what }, 'g')) : say(`opened ${what}`);
    case 'slow':
      return n === 0 ? calls(call('slow', { who: what }, 's')) : say(`did ${what} slowly`);
    case 'echo':
      return say(`echo ${what}`);
    // Counts until something stops it (a budget).
    case 'loop':
      return calls(call('count', { n, who: `${what}${n}` }, `l${n}`));
    case 'twice': {
      const step = [0, 1].map((i) => call('swarm', { tasks: [{ prompt: `quick ${what}${i}` }] }, `t${i}`))[n];
      return step ? calls(step) : say(`did ${what} twice`);
    }
    case 'remember':
      return say(`remembers: ${userTexts(request.messages).join(' | ')}`);
    // `helped <task>`: a background child of its own on <task>, and an answer once its notification came.
    case 'helped':
      if (n === 0) return calls(call('agent', { prompt: task.slice(7), background: true }, 'h'));
      return say('waiting for my helper');
    case 'deep':
      return n === 0
        ? calls(call('agent', { prompt: `deep ${Number(what) + 1}` }, 'd'))
        : say(`level ${what}: ${results[0]}`);
    // Its first run blocks until aborted; a run after a restart answers at once.
    case 'hold':
      if (n > 0) return say(`unblocked ${what}`);
      if (seen(`start block ${what}`) === 0) return calls(call('block', { who: what }, 'b'));
      record(`rerun ${what}`);
      return say(`did ${what} again`);
    // `trip <name> <lines>`: its first run waits for each of the log's `<lines>` (`_` for spaces, comma-separated),
    // then its model fails; a restarted run recovers, a resumed one (asked again with its history) too.
    case 'trip': {
      if (userTexts(request.messages).length > 1) return say(`resumed ${what}`);
      if (n === 0 && seen(`asked trip ${what}`) > 0) {
        record(`rerun ${what}`);
        return say(`recovered ${what}`);
      }
      const waits = (task.split(' ')[2] ?? '').split(',').filter(Boolean);
      const wait = waits[n];
      if (wait) return calls(call('until_logged', { line: wait.replaceAll('_', ' ') }, `w${n}`));
      record(`asked trip ${what}`);
      return { error: { code: 'auth_error', message: `The key for ${what} was refused` } };
    }
    // Runs a swarm of its own (`nest <name> <tasks>`, tasks `|`-separated) and says how it ended.
    case 'nest':
      return n === 0
        ? calls(
            call(
              'swarm',
              {
                tasks: task
                  .split(' ')
                  .slice(2)
                  .join(' ')
                  .split('|')
                  .map((prompt) => ({ prompt })),
              },
              'n',
            ),
          )
        : say(`nested ${what}: ${results[0]}`);
    default:
      return say(`did ${what}`);
  }
}

/** Appends to the log; ignores its signal, as a call that only an interrupt (or its gate) ends. */
const gated = defineTool({
  name: 'gated',
  description: 'Waits for its gate',
  schema: z.object({ who: z.string() }),
  execute: async ({ who }) => {
    record(`start gated ${who}`);
    await gateOf(who).opened;
    record(`ran gated ${who}`);
    return 'the gate opened';
  },
});

const tools = [
  defineTool({
    name: 'count',
    description: 'Counts',
    schema: z.object({ n: z.number(), who: z.string().optional() }),
    execute: ({ n, who }) => {
      record(`ran count ${who ?? n}`);
      return `counted ${n}`;
    },
  }),
  defineTool({
    name: 'explode',
    description: 'Fails',
    schema: z.object({}),
    execute: () => {
      throw new Error('the fuse was short');
    },
  }),
  defineTool({
    name: 'block',
    description: 'Blocks until aborted',
    schema: z.object({ who: z.string() }),
    execute: ({ who }, ctx) => {
      record(`start block ${who}`);
      return new Promise<string>((_resolve, reject) =>
        ctx.signal.addEventListener('abort', () => {
          record(`aborted block ${who}`);
          reject(new Error('aborted'));
        }),
      );
    },
  }),
  gated,
  defineTool({
    name: 'deploy',
    description: 'Deploys',
    schema: z.object({ target: z.string() }),
    execute: ({ target }) => {
      record(`ran deploy ${target}`);
      return `deployed ${target}`;
    },
  }),
  // Takes its time (a worker is killed meanwhile), and may run again after a restart.
  defineTool({
    name: 'slow',
    description: 'Takes its time',
    schema: z.object({ who: z.string() }),
    safeToRepeat: true,
    execute: async ({ who }) => {
      record(`start slow ${who}`);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      record(`ran slow ${who}`);
      return `slow ${who} done`;
    },
  }),
  defineTool({
    name: 'until_started',
    description: 'Waits for a block call to start',
    schema: z.object({ who: z.string() }),
    execute: async ({ who }) => {
      await logged(`start block ${who}`);
      return 'started';
    },
  }),
  defineTool({
    name: 'until_logged',
    description: 'Waits for a line of the log',
    schema: z.object({ line: z.string() }),
    execute: async ({ line }) => {
      await logged(line);
      return 'logged';
    },
  }),
];

/**
 * The flavours of agent a root's id asks for, by its first segment (`keep2-…`): the supervision the tree runs
 * under, and the agent's own settings.
 */
export const FLAVOURS = [
  'plain',
  'keep2',
  'max2',
  'depth1',
  'conc1',
  'quiet',
  'steps',
  'budget',
  'asks',
  'intense',
  'resumes',
  'escal',
  'slowre',
  'lifetime',
] as const;
export type Flavour = (typeof FLAVOURS)[number];

export const flavourOf = (agentId: string): Flavour => {
  const first = agentId.split('-')[0] as Flavour;
  return FLAVOURS.includes(first) ? first : 'plain';
};

export function supervisionOf(flavour: Flavour): SupervisionOptions {
  const base: SupervisionOptions = { restartDelayMs: 20, maxRestarts: 2 };
  if (flavour === 'keep2') return { ...base, keepHistory: 2, keepFinished: 1 };
  if (flavour === 'max2') return { ...base, maxAgents: 2 };
  if (flavour === 'depth1') return { ...base, maxDepth: 1 };
  if (flavour === 'conc1') return { ...base, concurrency: 1 };
  // Supervision strategies: one restart per batch within a long window; model failures resumed, or escalated;
  // a backoff long enough to kill a worker in.
  if (flavour === 'intense') return { ...base, intensity: { maxRestarts: 1, withinMs: 600_000 } };
  if (flavour === 'resumes') return { ...base, onFailure: { model: 'resume' } };
  if (flavour === 'escal') return { ...base, onFailure: { model: 'escalate' } };
  if (flavour === 'slowre') return { ...base, restartDelayMs: 3_000 };
  return base;
}

/** The agent of a root (and, hosted, of each agent below it: its id starts with the root's). */
export function configOf(agentId: string): Omit<AgentConfig, 'id'> {
  const flavour = flavourOf(agentId);
  return {
    model: scriptedModel(answer),
    tools,
    // `asks`: the permission mode asks for `deploy`, so an approval remembered in the tree lets it run unasked.
    ...(flavour === 'asks'
      ? { permissions: { mode: 'default' }, policy: (toolCall) => (toolCall.name === 'deploy' ? undefined : 'allow') }
      : { policy: (toolCall) => (toolCall.name === 'deploy' ? 'ask' : 'allow') }),
    ...(flavour === 'quiet' ? { wakeOnNotification: false } : {}),
    ...(flavour === 'steps' ? { maxSteps: 3 } : {}),
    ...(flavour === 'budget' ? { budget: { tokens: 40 } } : {}),
    ...(flavour === 'lifetime' ? { totalBudget: { tokens: 50 } } : {}),
  };
}
