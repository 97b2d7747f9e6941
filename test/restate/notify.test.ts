import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  type AgentConfig,
  createAgent,
  type Message,
  type ModelRequest,
  type ScriptedAnswer,
  type SubagentProfile,
  scriptedModel,
} from '../../src/index.js';
import {
  type AgentClient,
  type AgentWorker,
  agentClient,
  agentObject,
  type RestateDevServer,
  serveAgents,
  startRestateDevServer,
} from '../../src/restate/index.js';
import { taskOf } from './fixtures/agents.js';
import { withoutIds } from './fixtures/embedded.js';
import { until } from './fixtures/harness.js';
import { expectValidHistory } from './fixtures/histories.js';

// A child's result reaches a hosted agent as it reaches an embedded one: the same `<notification>` message, stored
// as `source: 'notification'`; and an agent that does not wake for notifications (`wakeOnNotification: false`) runs
// no turn for it, its next turn's first model call sees it. The same agents run embedded and hosted, compared.

/** The text of a message's parts. */
const textOf = (message: Message | undefined) =>
  message && message.role !== 'assistant' && message.role !== 'tool'
    ? message.content.map((part) => ('text' in part ? part.text : '')).join('')
    : '';

/** What a history's user messages are, source and text, ids aside (hosts name tasks differently). */
const userMessages = (history: readonly Message[]) =>
  history.flatMap((message) =>
    message.role === 'user' ? [{ source: message.source, text: withoutIds([textOf(message)])[0] }] : [],
  );

/**
 * The script, played embedded and hosted alike: an agent acts on its task (its first user message). `start <task>`
 * starts a background child on <task> and says `started`; `lead <task>` runs a foreground child of profile
 * `sleepy` on <task>; `spawn <task>` starts one in the background; `quick x` answers `did x`. A turn that sees a
 * notification last answers `noted`.
 */
function script(request: ModelRequest): ScriptedAnswer {
  const usage = { input: 1, output: 1 };
  const task = taskOf(request);
  const results = request.messages.filter((message) => message.role === 'tool').length;
  if (textOf(request.messages.at(-1)).startsWith('<notification')) return { text: 'noted', usage };
  const [kind = '', ...rest] = task.split(' ');
  const prompt = rest.join(' ');
  if (results === 0 && kind === 'start') {
    return { toolCalls: [{ name: 'agent', args: { prompt, background: true }, id: 'b' }], usage };
  }
  if (results === 0 && (kind === 'lead' || kind === 'spawn')) {
    const args = { prompt, profile: 'sleepy', ...(kind === 'spawn' ? { background: true } : {}) };
    return { toolCalls: [{ name: 'agent', args, id: 'f' }], usage };
  }
  if (kind === 'quick') return { text: `did ${prompt}`, usage };
  return { text: kind === 'start' ? 'started' : 'led', usage };
}

/** Every model request, by where it ran (`embedded` or `hosted`), in order. */
const requests: Record<'embedded' | 'hosted', ModelRequest[]> = { embedded: [], hosted: [] };
const modelOf = (where: 'embedded' | 'hosted') =>
  scriptedModel((request) => {
    requests[where].push(request);
    return script(request);
  });
const profiles: Record<string, SubagentProfile> = { sleepy: { description: 'Sleeps', wakeOnNotification: false } };

let server: RestateDevServer;
let worker: AgentWorker;
let client: AgentClient;

beforeAll(async () => {
  server = await startRestateDevServer();
  // Roots named `sleepy…` do not wake for notifications, as the `sleepy` profile's children do not.
  const agents = agentObject({
    subagents: true,
    supervision: { profiles },
    agent: (agentId) => ({
      model: modelOf('hosted'),
      ...(agentId.startsWith('sleepy') ? { wakeOnNotification: false } : {}),
    }),
  });
  worker = await serveAgents([agents]);
  await server.register(worker.url);
  client = agentClient(server.ingressUrl);
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

/** The same root embedded: prompted, then, once `settled` holds of its history, its history. */
async function embedded(
  prompt: string,
  config: Partial<AgentConfig>,
  settled: (history: Message[]) => boolean,
): Promise<{ history: Message[]; agent: ReturnType<typeof createAgent> }> {
  const agent = createAgent({ model: modelOf('embedded'), subagents: { profiles }, ...config });
  await agent.prompt(prompt);
  for (let i = 0; i < 600 && !settled(agent.messages); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return { history: agent.messages, agent };
}

const hasNotification = (history: Message[]) =>
  history.some((message) => message.role === 'user' && message.source === 'notification');

it('a hosted notification turn opens with the same message as embedded: source notification, same envelope', async () => {
  const root = 'waker-1';
  expect((await client.prompt(root, 'start quick a')).text).toBe('started');
  const hosted = await until(
    () => client.history(root),
    (history) => history.at(-1)?.role === 'assistant' && textOf(history.at(-2)).startsWith('<notification'),
  );
  expectValidHistory(hosted);
  const twin = await embedded('start quick a', {}, (history) => hasNotification(history) && history.length === 6);
  await twin.agent.stop();
  // The notification is a user message of source `notification`, with the same envelope text (ids aside).
  expect(userMessages(hosted)).toEqual(userMessages(twin.history));
  expect(userMessages(hosted)).toEqual([
    { source: 'prompt', text: 'start quick a' },
    { source: 'notification', text: '<notification task_id="…" agent_id="…" status="completed">did a</notification>' },
  ]);
  // The turn it opened answered it, hosted and embedded.
  expect(hosted.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'noted' }] });
  expect(twin.history.at(-1)).toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'noted' }] });
}, 120_000);
