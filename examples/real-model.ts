/**
 * An agent on a real model, with one tool, streaming its answer.
 *
 *   OPENAI_API_KEY=…    npx tsx examples/real-model.ts        # OpenAI, Responses API (TROUPE_MODEL, default gpt-5-mini)
 *   ANTHROPIC_API_KEY=… npx tsx examples/real-model.ts        # Anthropic Messages (TROUPE_MODEL, default claude-sonnet-4-5)
 *   TROUPE_PROVIDER=anthropic …                               # choose when both keys are set
 *   OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=ollama TROUPE_MODEL=qwen3 npx tsx examples/real-model.ts
 *                                                             # any OpenAI-compatible server (Chat Completions)
 *   TROUPE_REASONING=low …                                    # reasoning effort (thinking budget on Anthropic)
 *
 * With no key it runs offline on the scripted model and says so.
 */
import { z } from 'zod';
import { createAgent, defineTool } from '../src/index.js';
import { modelFromEnv } from './model-from-env.js';
import { dim } from './style.js';

const clock = defineTool({
  name: 'current_time',
  description: 'The current date and time in a given IANA time zone',
  schema: z.object({ timeZone: z.string().describe('e.g. Europe/Lisbon') }),
  execute: ({ timeZone }) => {
    try {
      return new Date().toLocaleString('en-GB', { timeZone, dateStyle: 'full', timeStyle: 'long' });
    } catch {
      return { content: `Unknown time zone: ${timeZone}`, isError: true };
    }
  },
});

const { model, note } = modelFromEnv([
  { toolCalls: [{ name: 'current_time', args: { timeZone: 'Europe/Lisbon' } }] },
  {
    text: 'It is evening in Lisbon (this answer came from the offline scripted model).',
    deltaDelayMs: 20,
    chunkSize: 4,
  },
]);
console.log(dim(`[${note}]`));
const effort = process.env.TROUPE_REASONING;
const agent = createAgent({
  model,
  tools: [clock],
  system: 'You answer briefly. Use the tools when they help.',
  maxTokens: 2048,
  ...(effort === 'minimal' || effort === 'low' || effort === 'medium' || effort === 'high'
    ? { reasoning: effort }
    : {}),
});

const stream = agent.stream(process.argv[2] ?? 'What time is it in Lisbon right now?');
for await (const event of stream) {
  if (event.type === 'message_update' && event.delta.type === 'text') process.stdout.write(event.delta.delta);
  if (event.type === 'message_update' && event.delta.type === 'reasoning') {
    process.stdout.write(dim(event.delta.delta));
  }
  if (event.type === 'tool_execution_start')
    process.stdout.write(`\n→ ${event.toolName}(${JSON.stringify(event.args)})\n`);
  if (event.type === 'model_retry')
    console.log(`\n[retry ${event.attempt} in ${event.delayMs} ms: ${event.error.code}]`);
}
const result = await stream.result;
if (result.error) {
  console.error(`\n\nFailed: ${result.error.message}`);
  process.exitCode = 1;
} else {
  const u = result.usage;
  console.log(`\n${dim(`[${result.stopReason}; tokens: ${u.input} in, ${u.cacheRead} cached, ${u.output} out]`)}`);
}
await agent.stop();
