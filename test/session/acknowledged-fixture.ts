// What the acknowledged-means-durable child and its test share: the tools, the model's script and how a session
// is opened, so that the test reopens a session the child left exactly as a restarted program would.
import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import {
  type AnyTool,
  defineTool,
  type Model,
  type ModelRequest,
  type Policy,
  type SessionManager,
  SqliteStore,
  scriptedModel,
  sessions,
  textOf,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';

export type StoreKind = 'jsonl' | 'sqlite';

/** The session manager of a JSONL folder or an SQLite file, and how to let go of it. */
export function openStore(kind: StoreKind, where: string): { manager: SessionManager; close(): void } {
  if (kind === 'jsonl') return { manager: sessions({ dir: where, onWarning: () => {} }), close: () => {} };
  const store = new SqliteStore(where);
  return { manager: sessions({ store, onWarning: () => {} }), close: () => store.close() };
}

/** Tools that append `<agent>/<call>` to `side` each time they run: a second line for a call is a second run. */
function tools(side: string) {
  const work = defineTool({
    name: 'work',
    description: 'does work that must not be done twice',
    schema: z.object({ n: z.number() }),
    execute: ({ n }, ctx) => {
      appendFileSync(side, `${ctx.agentId}/${ctx.toolCallId}\n`);
      return `worked ${n}`;
    },
  });
  const risky = defineTool({
    name: 'risky',
    description: 'needs approval',
    schema: z.object({}),
    execute: (_args, ctx) => {
      appendFileSync(side, `${ctx.agentId}/${ctx.toolCallId}\n`);
      return 'risky done';
    },
  });
  return [work, risky];
}

/**
 * Decides from the history, as a model that starts over in each process would: a prompt's first answer calls
 * `work` twice (or `risky`, for a prompt that says so; or starts three subagents in the background, for one that
 * says `background`), then a final text; a notification is answered with a text. Ids are numbered per answer.
 */
function script(request: ModelRequest): ScriptedAnswer {
  const last = request.messages.at(-1);
  if (last?.role !== 'user' || last.source === 'notification') return { text: 'done' };
  if (textOf(last).includes('risky')) return { toolCalls: [{ id: 'call_1', name: 'risky' }] };
  if (textOf(last).includes('background')) {
    const tasks = [{ prompt: 'one' }, { prompt: 'two' }, { prompt: 'three' }];
    return { toolCalls: [{ id: 'call_1', name: 'swarm', args: { tasks, background: true } }] };
  }
  return {
    toolCalls: [
      { id: 'call_1', name: 'work', args: { n: 1 } },
      { id: 'call_2', name: 'work', args: { n: 2 } },
    ],
  };
}

/** The config of every agent of the test (a supervisor takes its model and tools; a root agent may start subagents). */
export function agentConfig(side: string): {
  model: Model;
  tools: AnyTool[];
  policy: Policy;
  subagents: { concurrency: number };
} {
  return {
    model: scriptedModel(script),
    tools: tools(side),
    policy: (call) => (call.name === 'risky' ? 'ask' : 'allow'),
    subagents: { concurrency: 4 },
  };
}
