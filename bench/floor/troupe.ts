import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import * as troupe from '../../src/index.js';
import { echo, type Script, type Turn } from './script.js';

/**
 * Troupe as the peer harness drives it (its src/troupe.ts): a `Model` whose stream plays the script, `echo` as a
 * `defineTool` with a zod schema, `createAgent(...).prompt()` for W1 and the supervisor's own fan-out for W3.
 * Compiled (`npm run build -- --bench`, then `node dist/bench/…`) this is the production build, as the peer harness
 * loads it; under tsx it is the sources.
 */
export const troupeSource = import.meta.url.includes('/dist/bench/') ? 'dist/' : 'src/ (under tsx)';

const usage = () => ({ input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 });

function played(turn: Turn) {
  const tools = turn.type === 'tools';
  const content = tools
    ? turn.calls.map((c) => ({ type: 'tool_call' as const, id: c.id, name: c.name, arguments: c.args }))
    : [{ type: 'text' as const, text: turn.text }];
  const stopReason = tools ? ('tool_calls' as const) : ('stop' as const);
  const message = {
    role: 'assistant' as const,
    content,
    provider: 'bench',
    model: 'scripted',
    stopReason,
    usage: usage(),
  };
  return { type: 'done' as const, message, stopReason };
}

function scriptModel(script: Script) {
  return {
    id: 'scripted',
    provider: 'bench',
    async *stream() {
      yield played(await script.next());
    },
  };
}

const echoTool = troupe.defineTool({
  name: 'echo',
  description: 'echo',
  schema: z.object({ i: z.number() }),
  execute: async (args: { i: number }) => JSON.stringify(echo(args)),
});

type Inspect = (event: InspectionEvent) => void;

/** W1: one agent, one prompt; its final text. */
export async function troupeRun(script: Script, maxSteps: number, inspect?: Inspect): Promise<string> {
  const agent = troupe.createAgent({
    model: scriptModel(script),
    tools: [echoTool],
    system: 'bench',
    maxSteps,
    toolConcurrency: 64,
    retry: false,
    ...(inspect ? { inspect } : {}),
  });
  const result = await agent.prompt('go');
  await agent.stop();
  return result.text;
}

/** W3: `runs` subagents through a supervisor, each task's prompt picking its own script; their final texts. */
export async function troupeSwarm(
  runs: number,
  concurrency: number,
  mkScript: () => Script,
  inspect?: Inspect,
): Promise<string[]> {
  const scripts = new Map<string, Script>();
  const model = {
    id: 'scripted',
    provider: 'bench',
    stream(request: { messages: Array<{ content: Array<{ text?: string }> }> }) {
      const key = request.messages[0]?.content[0]?.text as string;
      let script = scripts.get(key);
      if (!script) {
        script = mkScript();
        scripts.set(key, script);
      }
      return scriptModel(script).stream();
    },
  };
  const supervisor = troupe.createSupervisor({
    model: model as never,
    tools: [echoTool],
    concurrency,
    maxRestarts: 0,
    retry: false,
    ...(inspect ? { inspect } : {}),
  });
  const results = await supervisor.swarm(Array.from({ length: runs }, (_, n) => `task ${n}`));
  await supervisor.stop();
  return results.map((result) => (result.status === 'completed' ? result.text : result.status));
}
