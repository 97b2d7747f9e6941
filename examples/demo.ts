/**
 * The main job: an agent that plans a small trip with three tools. Offline on the scripted model by default;
 * on a real model when OPENAI_API_KEY or ANTHROPIC_API_KEY is set (see model-from-env.ts).
 */
import { z } from 'zod';
import { createAgent, defineTool } from '../src/index.js';
import { modelFromEnv } from './model-from-env.js';
import { dim } from './style.js';

const weather = defineTool({
  name: 'get_weather',
  description: 'Current weather for a city',
  schema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    const table: Record<string, string> = { Lisbon: '24°C, sunny', Oslo: '3°C, sleet', Kyoto: '17°C, clear' };
    return table[city] ?? 'unknown';
  },
});

const convert = defineTool({
  name: 'convert_currency',
  description: 'Converts an amount between currencies at today’s rate',
  schema: z.object({ amount: z.number(), from: z.string().length(3), to: z.string().length(3) }),
  execute: ({ amount, from, to }) => {
    const eur: Record<string, number> = { EUR: 1, NOK: 11.6, JPY: 162 };
    const rate = (eur[to] ?? Number.NaN) / (eur[from] ?? Number.NaN);
    return { content: `${amount} ${from} = ${(amount * rate).toFixed(2)} ${to}`, details: { rate } };
  },
});

const saveNote = defineTool({
  name: 'save_note',
  description: 'Saves a note for the traveller',
  schema: z.object({ text: z.string() }),
  executionMode: 'sequential',
  execute: ({ text }) => `saved (${text.length} characters)`,
});

const { model, note } = modelFromEnv([
  {
    reasoning: 'Compare the weather in the three cities first.',
    text: 'Let me check the weather.',
    toolCalls: [
      { name: 'get_weather', args: { city: 'Lisbon' } },
      { name: 'get_weather', args: { city: 'Oslo' } },
      { name: 'get_weather', args: { city: 'Kyoto' } },
    ],
    deltaDelayMs: 15,
  },
  {
    text: 'Lisbon is warmest. Budget check:',
    toolCalls: [{ name: 'convert_currency', args: { amount: 800, from: 'EUR', to: 'JPY' } }],
    deltaDelayMs: 15,
  },
  { toolCalls: [{ name: 'save_note', args: { text: 'Lisbon, 24°C, sunny. Budget 800 EUR.' } }] },
  {
    text: 'Go to Lisbon: 24°C and sunny, against sleet in Oslo. I saved a note with the plan.',
    deltaDelayMs: 15,
    usage: { input: 420, output: 38 },
  },
]);

const agent = createAgent({
  model,
  tools: [weather, convert, saveNote],
  system: 'You are a travel planner. Use the tools, then answer in two sentences.',
});

console.log(dim(`[${note}]`));
// Reasoning goes on lines of its own, marked, so that piped output (where dim is plain text) keeps it apart.
let streaming: 'text' | 'reasoning' | undefined;
for await (const event of agent.stream('Where should I go this weekend: Lisbon, Oslo or Kyoto?')) {
  switch (event.type) {
    case 'step_start':
      streaming = undefined;
      process.stdout.write(dim(`\n── step ${event.step} ──\n`));
      break;
    case 'message_update':
      if (event.delta.type === 'reasoning') {
        if (streaming !== 'reasoning') process.stdout.write(dim('thinking: '));
        process.stdout.write(dim(event.delta.delta));
        streaming = 'reasoning';
      }
      if (event.delta.type === 'text') {
        if (streaming === 'reasoning') process.stdout.write('\n');
        process.stdout.write(event.delta.delta);
        streaming = 'text';
      }
      break;
    case 'tool_execution_start':
      process.stdout.write(`\n  → ${event.toolName}(${JSON.stringify(event.args)})`);
      break;
    case 'tool_execution_end':
      process.stdout.write(
        `\n  ← ${event.result.content.map((c) => (c.type === 'text' ? c.text : '[image]')).join('')}`,
      );
      break;
    case 'model_retry':
      process.stdout.write(dim(`\n[retry ${event.attempt} in ${event.delayMs} ms: ${event.error.code}]`));
      break;
    case 'turn_end':
      process.stdout.write(
        dim(`\n\nturn ended: ${event.stopReason}, ${event.usage.input} in / ${event.usage.output} out tokens\n`),
      );
      if (event.error) console.error(`error: ${event.error.code}: ${event.error.message}`);
      break;
  }
}
await agent.stop();
