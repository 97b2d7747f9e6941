/** The swarm the inspector tests watch: a root supervisor, a lead agent, and two subagents whose tool calls ask. */
import type { InspectionEvent, Observer } from 'xstate';
import { z } from 'zod';
import { createSupervisor, defineTool, type ModelRequest, scriptedModel, textOf } from '../../src/index.js';

function conversation(request: ModelRequest) {
  const users = request.messages.filter((m) => m.role === 'user');
  const tools = request.messages.filter((m) => m.role === 'tool');
  const last = tools[tools.length - 1];
  return {
    prompt: textOf(users[0]),
    answers: request.messages.filter((m) => m.role === 'assistant').length,
    lastTool:
      last?.role === 'tool'
        ? last.content.map((r) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')).join('\n')
        : '',
  };
}

export const FILES = ['plan.md', 'secrets.txt'];

export function swarmFixture(inspect: Observer<InspectionEvent>) {
  const written: string[] = [];
  const write = defineTool({
    name: 'write_file',
    label: 'Write a file',
    description: 'Writes a file',
    schema: z.object({ path: z.string() }),
    execute: ({ path }) => {
      written.push(path);
      return `wrote ${path}`;
    },
  });
  const model = scriptedModel(
    (request) => {
      const { prompt, answers, lastTool } = conversation(request);
      if (prompt === 'LEAD') {
        if (answers === 0) {
          return {
            text: 'Splitting the work.',
            toolCalls: [{ name: 'swarm', args: { tasks: FILES.map((file) => ({ prompt: `write ${file}` })) } }],
            usage: { input: 100, output: 20 },
          };
        }
        return { text: `lead done:\n${lastTool}`, usage: { input: 300, output: 30 } };
      }
      const file = prompt.replace(/^write /, '');
      if (answers === 0) {
        return {
          toolCalls: [{ name: 'write_file', args: { path: file }, id: `call_${file.replace(/\W/g, '_')}` }],
          usage: { input: 50, output: 10 },
        };
      }
      return { text: `${file}: ${lastTool}`, usage: { input: 60, output: 5 } };
    },
    { record: false },
  );
  const supervisor = createSupervisor({
    id: 'root',
    model,
    tools: [write],
    policy: (call) => (call.name === 'write_file' ? 'ask' : 'allow'),
    inspect,
  });
  // A budget its turn never reaches: the usage table shows it beside what the lead's subtree spent.
  const lead = supervisor.agent({ id: 'lead', tools: [write], budget: { tokens: 1_000_000 } });
  return { supervisor, lead, written };
}

/**
 * A live swarm to drive from the page: agents prompted `hold <name>` call a `hold` tool that waits until the test
 * releases it (or the call is aborted); `quick <name>` answers at once. Every later answer repeats the last user
 * message, so a steer or a follow-up shows in the answer as well as in the history.
 */
export function controlFixture(inspect: Observer<InspectionEvent>) {
  const gates = new Map<string, () => void>();
  const held = new Map<string, ReturnType<typeof deferred>>();
  const heldOf = (name: string) => {
    let d = held.get(name);
    if (!d) {
      d = deferred();
      held.set(name, d);
    }
    return d;
  };
  const hold = defineTool({
    name: 'hold',
    description: 'Waits until released',
    schema: z.object({ name: z.string() }),
    execute: ({ name }, ctx) =>
      new Promise<string>((resolve) => {
        gates.set(name, () => resolve(`${name} released`));
        ctx.signal.addEventListener('abort', () => resolve(`${name} aborted`), { once: true });
        heldOf(name).resolve();
      }),
  });
  const script = (request: ModelRequest) => {
    const { prompt, answers } = conversation(request);
    const [mode, name = '?'] = prompt.split(' ');
    const users = request.messages.filter((m) => m.role === 'user');
    const lastUser = textOf(users[users.length - 1]);
    if (mode === 'hold' && answers === 0)
      return { toolCalls: [{ name: 'hold', args: { name } }], usage: { input: 40, output: 8 } };
    if (answers === 0) return { text: `${name} done`, usage: { input: 3_000, output: 400 } };
    return { text: `${name} answers: ${lastUser}`, usage: { input: 6_000, output: 900 } };
  };
  // Named as a model the context's table prices ($1 / $5 per million tokens in and out), so the agents it runs
  // show a cost; `unpriced` plays the same script under a name the table does not know.
  const model = scriptedModel(script, { id: 'claude-haiku-4-5' });
  const unpriced = scriptedModel(script);
  const supervisor = createSupervisor({ id: 'root', model, tools: [hold], inspect });
  return {
    supervisor,
    model,
    unpriced,
    hold,
    /** Resolves when the named agent's hold call is waiting. */
    held: (name: string) => heldOf(name).promise,
    release: (name: string) => gates.get(name)?.(),
  };
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
