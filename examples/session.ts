// A durable session with a subagent: the agent hands a three-step job to a subagent, in a child process that kills
// itself (SIGKILL) half way through the subagent's steps; this process then opens the session and resumes the whole
// tree. Steps whose results were journaled do not run again; the one that was running gets an "interrupted by a
// restart" result; the subagent and then the agent are asked only for what comes next.
//   npm run example:session   (or: npx tsx examples/session.ts)
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import {
  type AgentEvent,
  type AgentEventOf,
  createAgent,
  defineTool,
  type ModelRequest,
  scriptedModel,
  sessions,
  textOf,
} from '../src/index.js';

const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'troupe-example-'));
const child = process.argv[3] === 'child';

const step = defineTool({
  name: 'step',
  description: 'does one step of the job',
  schema: z.object({ n: z.number() }),
  executionMode: 'sequential',
  execute: async ({ n }) => {
    console.log(`  step ${n} runs (${child ? 'child' : 'resumed'} process)`);
    // Half way through the job, the process dies: no cleanup, no flush, like a kill -9 or a power cut of the VM.
    if (child && n === 3) process.kill(process.pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 20));
    return `step ${n} done`;
  },
});

// The model decides from the history, as a real one would. The agent (asked "Get the job done.") delegates to a
// subagent with the `agent` tool; the subagent (asked "Do the three steps.") runs them and reports.
const model = scriptedModel((request: ModelRequest) => {
  const asker = textOf(request.messages.find((m) => m.role === 'user') ?? { role: 'user', content: [] });
  const last = request.messages.at(-1);
  if (asker.startsWith('Do the three steps')) {
    return last?.role === 'tool'
      ? {
          text: `Steps: ${last.content.map((part) => (part.type === 'tool_result' ? resultText(part) : '')).join('; ')}`,
        }
      : { toolCalls: [1, 2, 3].map((n) => ({ name: 'step', args: { n }, id: `call_${n}` })) };
  }
  return last?.role === 'tool'
    ? { text: 'The subagent accounted for all three steps.' }
    : { toolCalls: [{ name: 'agent', args: { prompt: 'Do the three steps.' }, id: 'delegate' }] };
});
type ToolResultPart = AgentEventOf<'tool_execution_end'>['result'];
const resultText = (part: ToolResultPart) => (part.content[0]?.type === 'text' ? part.content[0].text : '');
const manager = sessions({ dir });
const config = { model, tools: [step], subagents: {} };

/** Prints each tool result of the tree, with who ran it. */
function show(label: string) {
  return (e: AgentEvent) => {
    if (e.type !== 'tool_execution_end') return;
    // A resumed tree replays the journal: results it holds are published again, without running the tool.
    const text = resultText(e.result).split('\n')[0];
    console.log(`  [${label}] ${e.parentId ? 'subagent' : 'agent'} ${e.toolCallId}: ${text}`);
  };
}

if (child) {
  const session = manager.create({ title: 'three steps, delegated' });
  const agent = createAgent({ ...config, session });
  agent.on('tool_execution_end', show('child'), { subtree: true });
  await agent.prompt('Get the job done.');
} else {
  console.log(`Running the agent and its subagent in a child process (sessions in ${dir})…`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', import.meta.filename, dir, 'child'], {
    stdio: 'inherit',
  });
  console.log(
    `The child died: ${run.signal}. Sessions now:`,
    manager.list().map((s) => `${s.id} (${s.status})`),
  );
  const session = manager.latest();
  if (!session) throw new Error('no session');
  const agent = createAgent({ ...config, session });
  agent.on('tool_execution_end', show('resumed'), { subtree: true });
  await session.idle();
  const tasks = session.tasks();
  console.log(`Subagent tasks: ${tasks.map((task) => `${task.taskId} ${task.status}`).join(', ')}`);
  console.log('Final answer:', textOf(agent.messages.at(-1) ?? { role: 'user', content: [] }));
  session.close();
  await agent.stop();
}
