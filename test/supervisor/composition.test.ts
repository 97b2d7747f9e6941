/**
 * The agent and supervisor machines are joined in one place (src/runtime/agent/wiring.ts). Whatever a user imports
 * first, a tree must work all the way down: each public entry point is imported afresh (a new module graph) and
 * builds a tree three levels deep, root → child → grandchild, with real actors at every level.
 */
import { describe, expect, it, vi } from 'vitest';
import type { AnyActorRef } from 'xstate';
import type { ModelRequest } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';

type Index = typeof import('../../src/index.js');

/** Each level asks the `agent` tool for the next; the last one answers. */
function script(request: ModelRequest): ScriptedAnswer {
  const first = request.messages.find((m) => m.role === 'user');
  const prompt = first?.content[0]?.type === 'text' ? first.content[0].text : '';
  const answered = request.messages.some((m) => m.role === 'tool');
  const level = Number(prompt.replace('level ', ''));
  if (level === 2) return { text: 'leaf reached' };
  if (answered) {
    const tool = request.messages.filter((m) => m.role === 'tool').at(-1);
    const text =
      tool?.role === 'tool' && tool.content[0]?.content[0]?.type === 'text' ? tool.content[0].content[0].text : '';
    return { text: `level ${level} got: ${text}` };
  }
  return { toolCalls: [{ name: 'agent', args: { prompt: `level ${level + 1}` } }] };
}

/** The agent ids along the XState parent chain: agent → supervisor → batch → pool → pool → task → subagent.<id> → … */
function chain(actor: AnyActorRef): string[] {
  const ids: string[] = [];
  let agent: AnyActorRef | undefined = actor;
  while (agent) {
    ids.push(agent.id);
    agent = firstAgentUnder(agent.getSnapshot().children.supervisor as AnyActorRef | undefined);
  }
  return ids;
}

function firstAgentUnder(actor: AnyActorRef | undefined): AnyActorRef | undefined {
  for (const [key, child] of Object.entries(actor?.getSnapshot().children ?? {})) {
    if (key.startsWith('subagent.')) return child as AnyActorRef;
    if (/^(batch|pool|task)\./.test(key)) {
      const found = firstAgentUnder(child as AnyActorRef);
      if (found) return found;
    }
  }
  return undefined;
}

async function threeLevels(createAgent: Index['createAgent'], scriptedModel: Index['scriptedModel']) {
  let seenAtLeaf: string[] = [];
  let root: ReturnType<Index['createAgent']> | undefined;
  const model = scriptedModel((request) => {
    const answer = script(request);
    if (answer.text === 'leaf reached' && root) seenAtLeaf = chain(root.actor as AnyActorRef);
    return answer;
  });
  root = createAgent({ id: 'root', model, subagents: { maxDepth: 2 } });
  const result = await root.prompt('level 0');
  await root.stop();
  return { result, seenAtLeaf };
}

describe('one composition: any entry point gives the whole tree', () => {
  it.each([
    ['troupe (src/index.ts)', '../../src/index.js'],
    ['the agent runtime alone (src/runtime/agent/agent.ts)', '../../src/runtime/agent/agent.js'],
  ])('%s, imported afresh, builds root → child → grandchild', async (_name, path) => {
    vi.resetModules();
    const entry = (await import(path)) as Pick<Index, 'createAgent'>;
    const { scriptedModel } = (await import('../../src/providers/index.js')) as Pick<Index, 'scriptedModel'>;
    const { result, seenAtLeaf } = await threeLevels(entry.createAgent, scriptedModel);
    expect(seenAtLeaf).toHaveLength(3);
    expect(seenAtLeaf[0]).toBe('root');
    expect(result.text).toBe('level 0 got: level 1 got: leaf reached');
  });

  it('createSupervisor from the supervisor runtime alone, imported afresh, runs a task that nests twice', async () => {
    vi.resetModules();
    const { createSupervisor } = (await import('../../src/runtime/supervisor.js')) as Pick<Index, 'createSupervisor'>;
    const { scriptedModel } = (await import('../../src/providers/index.js')) as Pick<Index, 'scriptedModel'>;
    const supervisor = createSupervisor({ model: scriptedModel(script), maxDepth: 3 });
    const started: string[] = [];
    supervisor.on('subagent_start', (event) => started.push(event.agentId));
    const result = await supervisor.run('level 0');
    expect(result.status).toBe('completed');
    expect(result.text).toBe('level 0 got: level 1 got: leaf reached');
    // The root starts the first agent, which starts the second, which starts the third.
    expect(started).toHaveLength(3);
    expect(started[0]).toBe(supervisor.id);
    expect(new Set(started).size).toBe(3);
    await supervisor.stop();
  });
});
