// A durable session: the agent runs in a child process that kills itself (SIGKILL) in the middle of a tool batch;
// this process then opens the session and resumes. Tools whose results were journaled do not run again; the one
// that was running gets an "interrupted by a restart" result; the model's next step is asked as if nothing happened.
//   npm run example:session   (or: npx tsx examples/session.ts)
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel, sessions } from '../src/index.js';

const dir = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'troupe-example-'));
const child = process.argv[3] === 'child';

const step = defineTool({
  name: 'step',
  description: 'does one step of the job',
  schema: z.object({ n: z.number() }),
  executionMode: 'sequential',
  execute: async ({ n }) => {
    // Half way through the job, the process dies: no cleanup, no flush, like a kill -9 or a power cut of the VM.
    if (child && n === 3) process.kill(process.pid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 20));
    return `step ${n} done`;
  },
});
// The model decides from the history, as a real one would: the resumed process asks it only for the next step.
const model = scriptedModel((request) =>
  request.messages.at(-1)?.role === 'tool'
    ? { text: 'All three steps are accounted for.' }
    : { toolCalls: [1, 2, 3].map((n) => ({ name: 'step', args: { n }, id: `call_${n}` })) },
);
const manager = sessions({ dir });

if (child) {
  const session = manager.create({ title: 'three steps' });
  const agent = createAgent({ model, tools: [step], session });
  agent.on('tool_execution_end', (e) =>
    console.log(`  [child] ${e.toolCallId}: ${e.result.content[0]?.type === 'text' ? e.result.content[0].text : ''}`),
  );
  await agent.prompt('Do the three steps.');
} else {
  console.log(`Running the agent in a child process (sessions in ${dir})…`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', import.meta.filename, dir, 'child'], {
    stdio: 'inherit',
  });
  console.log(
    `The child died: ${run.signal}. Sessions now:`,
    manager.list().map((s) => `${s.id} (${s.status})`),
  );
  const session = manager.latest();
  if (!session) throw new Error('no session');
  const agent = createAgent({ model, tools: [step], session });
  agent.on('tool_execution_end', (e) =>
    console.log(`  [resumed] ${e.toolCallId}: ${e.result.content[0]?.type === 'text' ? e.result.content[0].text : ''}`),
  );
  await session.idle();
  console.log('Final answer:', agent.messages.at(-1)?.content);
  session.close();
  await agent.stop();
}
