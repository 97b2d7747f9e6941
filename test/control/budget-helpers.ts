/** The vocabulary of the budget tests: answers that each bill 10 tokens, and a tool that counts who ran it. */
import { z } from 'zod';
import { defineTool, type JsonObject } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';

/** Every answer of these scripts bills 10 tokens. */
export const TEN = { input: 8, output: 2 };
export const call = (name: string, args: JsonObject = {}): ScriptedAnswer => ({
  toolCalls: [{ name, args }],
  usage: TEN,
});
export const say = (text: string): ScriptedAnswer => ({ text, usage: TEN });

/** The `work` tool, with the ids of the agents that ran it, in order. */
export function counter() {
  const runs: string[] = [];
  const tool = defineTool({
    name: 'work',
    description: 'does a piece of work',
    schema: z.object({}),
    execute: (_args, ctx) => {
      runs.push(ctx.agentId);
      return 'worked';
    },
  });
  return { tool, runs };
}
