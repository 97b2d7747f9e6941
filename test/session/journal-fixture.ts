import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { createAgent, defineTool, type SessionManager, scriptedModel, sessions } from '../../src/index.js';

/** A `look` tool: each call's `n` goes to `runs`, and it answers `saw <n>`. */
export function lookTool(runs: number[] = []) {
  return defineTool({
    name: 'look',
    description: 'looks',
    schema: z.object({ n: z.number() }),
    execute: async ({ n }) => {
      runs.push(n);
      return `saw ${n}`;
    },
  });
}

/**
 * A real session's journal to damage: one agent, three prompts, a tool call in each (so the history holds user,
 * assistant and tool messages, results stored by reference, snapshots and turn records). Returns its lines.
 */
export async function recordSession(dir: string, id: string, manager: SessionManager = sessions({ dir })) {
  const session = manager.create({ id, agentId: 'root' });
  const look = lookTool();
  // Each prompt: one call of `look`, then an answer.
  const model = scriptedModel((request) => {
    const n = request.messages.filter((m) => m.role === 'user').length;
    return request.messages.at(-1)?.role === 'tool'
      ? { text: `done ${n}`, usage: { input: 12, output: 3 } }
      : { toolCalls: [{ name: 'look', args: { n }, id: `look_${n}` }], usage: { input: 10, output: 2 } };
  });
  const agent = createAgent({ id: 'root', model, tools: [look], session });
  for (const n of [1, 2, 3]) await agent.prompt(`task ${n}`);
  await agent.stop();
  session.close();
  return { session, agentMessages: 12 };
}

/** The lines of a JSONL session's journal. */
export function journalLines(dir: string, id: string): string[] {
  return readFileSync(join(dir, `${id}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean);
}
