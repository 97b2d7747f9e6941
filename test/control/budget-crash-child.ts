// A process the budget crash test kills with SIGKILL: an agent on a session with a per-turn token budget and a
// lifetime budget runs a turn whose third step's tool never ends; it says `ready` once that tool runs.
// Run (bundled by the test): node budget-crash-child.mjs <dir> <id>
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { createAgent, defineTool, type ModelRequest, scriptedModel, sessions } from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';

const [dir, id] = process.argv.slice(2) as [string, string];
const TEN = { input: 8, output: 2 };

/** Decides from the history (call ids too), so the resumed agent in the test is answered the same way. */
export function script(request: ModelRequest): ScriptedAnswer {
  const n = request.messages.filter((m) => m.role === 'tool').length;
  const name = ['work', 'work', 'hang', 'work', 'work'][n];
  return name ? { toolCalls: [{ id: `call_${n}`, name, args: {} }], usage: TEN } : { text: 'done', usage: TEN };
}

const work = defineTool({ name: 'work', description: 'w', schema: z.object({}), execute: () => 'worked' });
const hang = defineTool({
  name: 'hang',
  description: 'h',
  schema: z.object({}),
  execute: () => {
    process.stdout.write('ready\n');
    return new Promise<string>(() => {});
  },
});

// Only when run as a program: the test imports `script` from here.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const session = sessions({ dir }).create({ id, agentId: 'root' });
  const agent = createAgent({
    model: scriptedModel(script),
    tools: [work, hang],
    session,
    budget: { tokens: 45 },
    totalBudget: { tokens: 1000 },
  });
  void agent.prompt('go');
}
