/**
 * A recorded session for the timeline tests: a tree three levels deep (root → mid → leaf), a background swarm
 * beside it, an approval (the leaf's file write asks), and a compaction of the root's context, all on a scripted
 * model. `runFork` is what the inspector runs for a fork made on its page: the same agent, opened on the fork.
 */
import { z } from 'zod';
import {
  type AgentConfig,
  createAgent,
  defineTool,
  type ModelRequest,
  type ScriptedAnswer,
  type SessionManager,
  scriptedModel,
  textOf,
} from '../../src/index.js';

const big = 'word '.repeat(900);
const isSummary = (request: ModelRequest) => request.system?.startsWith('You are compacting') === true;

function script(request: ModelRequest): ScriptedAnswer {
  if (isSummary(request)) return { text: 'Summary: the team planned, researched and wrote out.md.' };
  const first = textOf(request.messages.find((m) => m.role === 'user') ?? { role: 'user', content: [] });
  const last = request.messages.at(-1);
  const seen =
    last?.role === 'tool'
      ? last.content.map((r) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')).join(' | ')
      : '';
  const usage = { input: 40 + request.messages.length, output: 7 };
  if (first === 'leaf') {
    if (last?.role === 'user')
      return { toolCalls: [{ id: 'call_write', name: 'write_file', args: { path: 'out.md' } }] };
    return { text: `leaf saw: ${seen}`, usage };
  }
  if (first === 'mid') {
    if (last?.role === 'user') return { toolCalls: [{ id: 'call_leaf', name: 'agent', args: { prompt: 'leaf' } }] };
    return { text: `mid got: ${seen}`, usage };
  }
  if (first === 'note it') return { text: 'noted', usage };
  // The root: its first prompt starts the background swarm and the foreground chain; the rest are long talks.
  if (last?.role === 'user' && textOf(last).startsWith('go')) {
    return {
      toolCalls: [
        { id: 'call_bg', name: 'swarm', args: { tasks: [{ prompt: 'note it' }], background: true } },
        { id: 'call_mid', name: 'agent', args: { prompt: 'mid' } },
      ],
      usage,
    };
  }
  if (last?.role === 'tool') return { text: `root got: ${seen}`, usage };
  return { text: `root answers at length: ${big}` };
}

const write = defineTool({
  name: 'write_file',
  description: 'Writes a file',
  schema: z.object({ path: z.string() }),
  execute: ({ path }) => `wrote ${path}`,
});

/** The root's config, the same for the recording and for a fork's run. */
function rootConfig(): AgentConfig {
  return {
    id: 'root',
    model: scriptedModel(script),
    tools: [write],
    subagents: { maxDepth: 3 },
    policy: (call) => (call.name === 'write_file' ? 'ask' : 'allow'),
    context: { contextWindow: 4_000 },
  };
}

/** Records the session `id`; resolves once the whole tree is idle and the journal closed. */
export async function recordTree(manager: SessionManager, id: string): Promise<void> {
  const session = manager.create({ id, agentId: 'root', title: 'plan, research, write' });
  const agent = createAgent({ ...rootConfig(), session });
  agent.on('approval_requested', (e) => agent.approve(e), { subtree: true });
  await agent.prompt('go');
  for (let i = 0; i < 10 && agent.getState().context.compactions === 0; i++) {
    await agent.prompt(`tell me more ${i} ${big}`);
  }
  await session.idle();
  session.close();
  await agent.stop();
}

/** Runs a fork the way `troupe inspect` resumes one: the same agent, opened on the fork, until it is idle. */
export async function runFork(manager: SessionManager, forkId: string): Promise<void> {
  const session = manager.open(forkId);
  const agent = createAgent({ ...rootConfig(), session });
  agent.on('approval_requested', (e) => agent.approve(e), { subtree: true });
  try {
    await session.idle();
  } finally {
    session.close();
    await agent.stop();
  }
}
