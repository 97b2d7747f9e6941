/**
 * Replays every recorded streaming fixture of ../shared/fixtures (MANIFEST.md) through the loopback server, so
 * the official SDK parses the recorded bytes (raw SSE where the source kept it) and the adapter turns them into
 * a message. Each fixture has a hand-written expectation, read off the recording, not off the adapter.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AssistantMessage, Model, ModelErrorCode, ModelEvent, ModelRequest, Usage } from '../../src/index.js';
import type { ModelStopReason } from '../../src/protocol/index.js';
import { anthropic, openai } from '../../src/providers/index.js';
import { frameOf, type WirePath, WireServer } from '../wire/server.js';

const FIXTURES = fileURLToPath(new URL('../../../shared/fixtures', import.meta.url));
const present = existsSync(FIXTURES);
const inCI = process.env.CI === 'true';
if (!present) {
  console.warn(
    `[troupe] ${FIXTURES} is absent: the provider fixture replay tests are SKIPPED${inCI ? ' (and fail under CI)' : ''}`,
  );
}

type Family = 'openai-chat' | 'openai-responses' | 'anthropic-messages';

interface Text {
  start: string;
  end: string;
  /** In code points. */
  length: number;
}

interface Expectation {
  text?: string | Text;
  reasoning?: string | Text;
  calls?: [id: string, name: string, args: Record<string, unknown> | { invalid: string }][];
  stop?: ModelStopReason;
  usage?: Usage;
  /** Kinds of the message's parts, in order (`opaque:<kind>` for opaque parts). */
  parts?: string[];
  error?: { code: ModelErrorCode; providerType?: string; message?: RegExp };
  check?: (message: AssistantMessage, events: ModelEvent[]) => void;
}

const u = (input: number, output: number, cacheRead = 0, cacheWrite = 0, reasoning = 0): Usage => ({
  input,
  output,
  cacheRead,
  cacheWrite,
  reasoning,
});
const t = (start: string, end: string, length: number): Text => ({ start, end, length });

const CHAT: Record<string, Expectation> = {
  'azure-prompt-filter-results-first': { text: 'Capital of Denmark.', stop: 'stop', usage: u(15, 78, 0, 0, 64) },
  'compat-deepseek-reasoning-content': {
    reasoning: t('We need to count the number of the letter "r" in the word "s', '', 606),
    text: 'The word "strawberry" contains three "r"s.',
    stop: 'stop',
    usage: u(18, 219, 0, 0, 205),
    parts: ['reasoning', 'text'],
  },
  'compat-deepseek-reasoning-then-tool-call': {
    reasoning: t('The user is asking for the weather in San Francisco. I need ', '', 191),
    calls: [['call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', 'weather', { location: 'San Francisco' }]],
    stop: 'tool_calls',
    usage: u(19, 83, 320, 0, 39),
  },
  'compat-groq-midstream-error': {
    error: { code: 'invalid_request', providerType: 'invalid_request_error', message: /Tool call validation failed/ },
  },
  'compat-openrouter-parallel-tools': {
    calls: [
      ['call_8I6muAnyFaBjKyotk1gPRTwU', 'add', { a: 2, b: 3 }],
      ['call_pKAAv6bKX2qLYJ85RW4Hxqfp', 'multiply', { a: 2, b: 3 }],
    ],
    stop: 'tool_calls',
    usage: u(109, 54),
  },
  // xAI counts reasoning outside completion_tokens (total_tokens is not prompt + completion): kept as reported.
  'compat-xai-parallel-tools-whole-args': {
    calls: [
      ['call_55070233', 'add', { a: 2, b: 3 }],
      ['call_12016531', 'multiply', { a: 2, b: 3 }],
    ],
    stop: 'tool_calls',
    usage: u(279, 68, 153, 0, 136),
  },
  'finish-length-max-tokens-1-gpt-4o': { text: '{"', stop: 'length', usage: u(79, 1) },
  'logprobs-content-gpt-4o': { text: 'Foo!', stop: 'stop', usage: u(9, 2) },
  'multiple-choices-n3-gpt-4o': {
    text: '{"city":"San Francisco","temperature":65,"units":"f"}',
    stop: 'stop',
    usage: u(79, 42),
  },
  'refusal-gpt-4o': { text: "I'm sorry, I can't assist with that request.", stop: 'refusal', usage: u(79, 11) },
  'text-gpt-4.1-nano-long': {
    text: t('**Holiday Name:** Harmony Day\n\n**Date:** Celebrated annually', 'xperiences and mutual respect.', 1724),
    stop: 'stop',
    usage: u(16, 300),
  },
  'text-gpt-4o-usage': { text: 'Olá!', stop: 'stop', usage: u(20, 2), parts: ['text'] },
  'text-gpt-5-hidden-reasoning-tokens': { text: 'Olá!', stop: 'stop', usage: u(19, 75, 0, 0, 64), parts: ['text'] },
  'tool-call-single-gpt-4o': {
    calls: [['call_7kE4IjtnwXcGbX6hDM7xFu8T', 'weather', { location: 'Florence, Italy' }]],
    stop: 'tool_calls',
    usage: u(61, 16),
    parts: ['tool_call'],
  },
  'tool-call-single-non-strict-gpt-4o': {
    calls: [['call_4XzlGBLtUe9dy3GVNV4jhq7h', 'get_weather', { city: 'New York City' }]],
    stop: 'tool_calls',
    usage: u(44, 16),
  },
  'tool-calls-parallel-2-gpt-4o': {
    calls: [
      ['call_ehIWdjL1abZk1h8FWGLQ0Hie', 'add', { a: 2, b: 3 }],
      ['call_fBSgA47J5VeONggizTIvl7AH', 'multiply', { a: 2, b: 3 }],
    ],
    stop: 'tool_calls',
    usage: u(106, 50),
  },
  'tool-calls-parallel-2-split-args-gpt-4o': {
    calls: [
      ['call_JMW1whyEaYG438VE1OIflxA2', 'GetWeatherArgs', { city: 'Edinburgh', country: 'GB', units: 'c' }],
      ['call_DNYTawLBoN8fj3KN6qU9N1Ou', 'get_stock_price', { ticker: 'AAPL', exchange: 'NASDAQ' }],
    ],
    stop: 'tool_calls',
    usage: u(149, 60),
  },
  'tool-result-followup-text-gpt-4o': {
    text: 'The sum of 2 and 3 is 5, and the product is 6.',
    stop: 'stop',
    usage: u(172, 20),
  },
};

const encryptedFrom = (prefix: string, id: string) => (message: AssistantMessage) => {
  const reasoning = message.content[0];
  expect(reasoning?.type).toBe('reasoning');
  if (reasoning?.type !== 'reasoning') return;
  expect(reasoning.opaque?.provider).toBe('openai');
  const data = reasoning.opaque?.data as { id: string; encrypted_content?: string };
  expect(data.id).toBe(id);
  // Taken from output_item.done: the copy on output_item.added is a placeholder.
  expect(data.encrypted_content?.startsWith(prefix)).toBe(true);
};

const RESPONSES: Record<string, Expectation> = {
  'codex-max-agent-loop-turn1': {
    reasoning: t('**Calculating step-by-step using calculator**', '', 163),
    calls: [['call_AB6AaRZ1FYZB2RwS6A5vbdqn', 'calculator', { a: 12, b: 7, op: 'add' }]],
    stop: 'tool_calls',
    usage: u(134, 28),
    parts: ['reasoning', 'tool_call'],
    check: encryptedFrom('gAAAAABpPDIVOKrs', 'rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9'),
  },
  'codex-max-agent-loop-turn2': {
    calls: [['call_Q6pW65MUgW9vF59BmItYGos3', 'calculator', { a: 19, b: 3, op: 'multiply' }]],
    stop: 'tool_calls',
    usage: u(221, 26),
  },
  'codex-max-agent-loop-turn3': {
    calls: [['call_Zl5vIMnD7dVAjgU6FkhmiCZh', 'calculator', { a: 57, b: 10, op: 'multiply' }]],
    stop: 'tool_calls',
    usage: u(260, 26),
  },
  'codex-max-agent-loop-turn4': { text: 'The final result is **570**.', stop: 'stop', usage: u(299, 12) },
  'docs-example-error-event': {
    error: { code: 'unknown', providerType: 'ERR_SOMETHING', message: /Something went wrong/ },
  },
  'docs-example-response-failed': { error: { code: 'server_error', message: /failed to generate a response/ } },
  // The docs example says reason "max_tokens", outside the schema's enum: still an output limit.
  'docs-example-response-incomplete': { stop: 'length', parts: [] },
  'error-event-insufficient-quota-then-failed': {
    error: { code: 'rate_limit', providerType: 'insufficient_quota', message: /exceeded your current quota/ },
  },
  'function-call-output-followup-text-gpt-4o': {
    text: 'The sum of 2 and 3 is 5, and their product is 6.',
    stop: 'stop',
    usage: u(150, 21),
  },
  'function-call-single-gpt-4o': {
    calls: [['call_PRiJm2RVAvt7IoRvjxIXxFVF', 'weather', { location: 'Florence, Italy' }]],
    stop: 'tool_calls',
    usage: u(58, 17),
  },
  'function-calls-parallel-2-after-reasoning-gpt-5': {
    calls: [
      ['call_inViAUr9eV0GDtyOywkCxp59', 'add', { a: 2, b: 3 }],
      ['call_Op66UUnzuOoKmgGeFJQJFTUY', 'multiply', { a: 2, b: 3 }],
    ],
    stop: 'tool_calls',
    usage: u(109, 223, 0, 0, 128),
    parts: ['reasoning', 'tool_call', 'tool_call'],
  },
  'function-calls-parallel-2-gpt-4o': {
    calls: [
      ['call_NnEvpiwdL8XrZ6F3T9VJyVw7', 'add', { a: 2, b: 3 }],
      ['call_TQ8336oa6YnuT2leYzRDBBLz', 'multiply', { a: 2, b: 3 }],
    ],
    stop: 'tool_calls',
    usage: u(104, 51),
  },
  'reasoning-summary-encrypted-then-function-call-gpt-5': {
    reasoning: t('**Getting weather info**\n\nI need to respond to the', '', 424),
    calls: [['call_zgUaIBRPTwxxOusyyKw5NVMH', 'weather', { location: 'Florence, Italy' }]],
    stop: 'tool_calls',
    usage: u(63, 121, 0, 0, 64),
    check: encryptedFrom('gAAAAABqPBJWAIvE', 'rs_017e85da2ae23b69016a3c1251dcec819daf72930a854fd4d1'),
  },
  'reasoning-summary-encrypted-then-text-gpt-5': {
    reasoning: t('**Finalizing the response**\n\nI can mention the tim', '', 417),
    text: t('Right now in Florence, Italy, it’s about 40°C (104°F).', 'etails like wind and humidity?', 115),
    stop: 'stop',
    usage: u(92, 456, 0, 0, 384),
    parts: ['reasoning', 'text'],
  },
  'reasoning-summary-o4-mini': {
    reasoning: t("**Summarizing Florence's weather**\n\nThe user asked", '', 468),
    text: t(
      'The current temperature in Florence, Italy is 40 °C — it’s very hot.',
      'd areas  \n\nStay cool and safe!',
      297,
    ),
    stop: 'stop',
    usage: u(89, 196, 0, 0, 64),
  },
  'text-gpt-4o': { text: 'Olá!', stop: 'stop', usage: u(20, 3), parts: ['text'] },
  'text-gpt-5-reasoning-item-no-summary': {
    text: 'Oi!',
    reasoning: '',
    stop: 'stop',
    usage: u(19, 118, 0, 0, 64),
    parts: ['reasoning', 'text'],
  },
};

const ANTHROPIC: Record<string, Expectation> = {
  // 2024 wire format: message_delta carries only output_tokens; input and cache counts come from message_start.
  'cache-read-sonnet-3.5': {
    text: t('Here are concise summaries of the three articles:\n\n1. OpenLL', 'off in the long run.', 1016),
    stop: 'stop',
    usage: u(4, 221, 1165, 0),
  },
  'cache-write-sonnet-3.5': {
    text: t('Here are concise summaries of the three articles:\n\n1. OpenLL', 'h long-term payoffs.', 913),
    stop: 'stop',
    usage: u(4, 201, 0, 1165),
  },
  // Cumulative message_delta usage wins over message_start's, cache write and read both non-zero.
  'cache-write-and-read-server-tools': {
    text: 'The sum of the squares of the numbers 1 through 12 is **650**.',
    stop: 'stop',
    usage: u(6, 198, 6289, 3337),
    parts: [
      'opaque:server_tool_use',
      'opaque:bash_code_execution_tool_result',
      'opaque:server_tool_use',
      'opaque:bash_code_execution_tool_result',
      'text',
    ],
    check: (message) => {
      const first = message.content[0];
      if (first?.type !== 'opaque') throw new Error('expected an opaque part');
      const input = (first.data as { input: { command: string } }).input;
      expect(input.command.startsWith('for n in $(seq 1 12); do echo')).toBe(true);
    },
  },
  'hand-written-error-overloaded': {
    error: { code: 'overloaded', providerType: 'overloaded_error', message: /Overloaded/ },
  },
  'hand-written-refusal': { stop: 'refusal', usage: u(18, 5), parts: [] },
  'max-tokens-mid-tool-input-sonnet-3.7': {
    text: t("I'll create a comprehensive tax guide for someone with multi", 'do that for you now.', 135),
    stop: 'length',
    usage: u(450, 124),
    check: (message, events) => {
      const call = message.content[1];
      expect(call).toMatchObject({
        type: 'tool_call',
        id: 'toolu_01EKqbqmZrGRXy18eN7m9kvY',
        name: 'make_file',
        arguments: {},
      });
      if (call?.type !== 'tool_call') return;
      expect(call.invalidArguments?.text.startsWith('{"filename": "taxes.txt", "lines_of_text": [')).toBe(true);
      // The block never got content_block_stop, yet its tool_call_end is emitted once.
      expect(events.filter((e) => e.type === 'tool_call_end')).toHaveLength(1);
    },
  },
  'max-tokens-text-haiku-3': {
    text: t(
      'イルカとクジラの違いは以下のようなものがあります:\n\n1. 体型:',
      '。\n- クジラは主に微小なプランクトンを',
      217,
    ),
    stop: 'length',
    usage: u(19, 200),
  },
  'redacted-thinking-sonnet-3.7': {
    text: t("I notice that you've sent what appears to be some kind of te", 'te task or question?', 359),
    stop: 'stop',
    usage: u(92, 189),
    parts: ['opaque:redacted_thinking', 'opaque:redacted_thinking', 'text'],
    check: (message) => {
      const first = message.content[0];
      if (first?.type !== 'opaque') throw new Error('expected an opaque part');
      const data = first.data as { type: string; data: string };
      expect(data.type).toBe('redacted_thinking');
      expect(data.data.startsWith('EqkECkYIBxgCKkA8')).toBe(true);
      expect(data.data).toHaveLength(744);
    },
  },
  'stop-sequence-prefill': {
    text: '\ndef pelican():\n    return "A large waterbird with a long bill and a throat pouch for catching fish."\n',
    stop: 'stop',
    usage: u(16, 28),
  },
  'structured-output-after-429-retries-sonnet-4.5': { text: '[12345,67890]', stop: 'stop', usage: u(135, 10) },
  'text-sonnet-4': {
    text: 'Olá! (That\'s "hi" in Portuguese)\n\nYou could also say "Oi!" which is a more casual way to say hi in Portuguese.',
    stop: 'stop',
    usage: u(16, 38),
    parts: ['text'],
  },
  'text-then-tool-use-parallel-2-sonnet-4': {
    text: "I'll add and multiply the numbers 2 and 3 for you.",
    calls: [
      ['toolu_01UYxUYC2zRPY8wiutnF48eP', 'add', { a: 2, b: 3 }],
      ['toolu_01VaRx1jpWCvPhi7L4kywAcd', 'multiply', { a: 2, b: 3 }],
    ],
    stop: 'tool_calls',
    usage: u(502, 137),
    parts: ['text', 'tool_call', 'tool_call'],
  },
  'text-then-tool-use-sonnet-4': {
    text: "I'll get the weather information for Florence, Italy for you.",
    calls: [['toolu_01N2eM4V43kGCDkq2Lw7ChWQ', 'weather', { location: 'Florence,Italy' }]],
    stop: 'tool_calls',
    usage: u(394, 67),
  },
  'thinking-replayed-followup-text-sonnet-4': {
    text: t('The current weather in Florence, Italy is 40°C (104°F). That', 'oning when possible.', 202),
    stop: 'stop',
    usage: u(558, 51),
  },
  'thinking-signature-then-text-sonnet-4': {
    reasoning: t('This is a straightforward question about', '', 202),
    text: t('Here are the basic steps for safely crossing the street:\n\n**', 'en crossing streets.', 1021),
    stop: 'stop',
    usage: u(43, 282),
    parts: ['reasoning', 'text'],
  },
  'thinking-signature-then-tool-use-sonnet-4': {
    reasoning: t('The user is asking for weather informati', '', 301),
    calls: [['toolu_01Js4AMfx5qpTLhwTusnvT68', 'weather', { location: 'Florence, Italy' }]],
    stop: 'tool_calls',
    usage: u(424, 119),
    check: (message) => {
      const thinking = message.content[0];
      if (thinking?.type !== 'reasoning') throw new Error('expected reasoning');
      const signature = String((thinking.opaque?.data as { signature?: string } | undefined)?.signature);
      expect(signature.startsWith('EtYDCkYICxgC')).toBe(true);
      expect(signature).toHaveLength(636);
      expect(thinking.opaque).toMatchObject({ provider: 'anthropic', model: 'claude-fixture' });
    },
  },
  'tool-result-followup-text-sonnet-4': {
    text: 'The results are:\n- 2 + 3 = 5\n- 2 × 3 = 6',
    stop: 'stop',
    usage: u(700, 31),
  },
  'tool-use-parallel-2-empty-input-haiku-4.5': {
    calls: [
      ['toolu_01LtHJmixrs9NcWQkK8hu8hj', 'pelican_name_generator', {}],
      ['toolu_01N8a4jWyf116qKTMqKKmjyt', 'pelican_name_generator', {}],
    ],
    stop: 'tool_calls',
    usage: u(542, 62),
  },
  // Replayed alone with no continuation allowed; the recorded pair (with its continuation) is tested below.
  'pause-turn-server-web-search': {
    reasoning: t('The user wants me to run a series of web', '', 1051),
    text: t("I'll run these searches one at a time as requested. Let me s", 'the remaining searches:', 166),
    stop: 'pause_turn',
    usage: u(404500, 943, 0, 0, 261),
  },
  'pause-turn-continuation-end-turn': {
    text: t('Let me continue with the remaining searches as requested:', 'n completed as requested.', 3064),
    stop: 'stop',
    usage: u(482529, 1310),
  },
};

const FAMILIES: Record<Family, { path: WirePath; expectations: Record<string, Expectation> }> = {
  'openai-chat': { path: '/v1/chat/completions', expectations: CHAT },
  'openai-responses': { path: '/v1/responses', expectations: RESPONSES },
  'anthropic-messages': { path: '/v1/messages', expectations: ANTHROPIC },
};

/** The HTTP body of a fixture: the recorded SSE bytes when kept, else SSE framed from the recorded payloads. */
function bodyOf(family: Family, name: string): string {
  const raw = join(FIXTURES, 'raw-sse', `${family}--${name}.sse`);
  if (existsSync(raw)) {
    // Two recordings (a pytest string literal, a test-data .txt) lost the blank line that ends the last event;
    // a server always sends it, and an SSE parser rightly drops an unterminated event.
    const body = readFileSync(raw, 'utf8');
    return body.endsWith('\n\n') ? body : `${body.replace(/\n?$/, '')}\n\n`;
  }
  const lines = readFileSync(join(FIXTURES, family, `${name}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean);
  let body = '';
  for (const line of lines) {
    if (family === 'openai-chat') {
      const data = JSON.parse(line) as { error?: unknown };
      body += frameOf({ ...(data.error ? { event: 'error' } : {}), data: line });
    } else {
      const row = JSON.parse(line) as { event: string; data: unknown };
      body += frameOf({ event: row.event, data: JSON.stringify(row.data) });
    }
  }
  return family === 'openai-chat' ? `${body}data: [DONE]\n\n` : body;
}

function modelFor(family: Family, server: WireServer, extra: { maxPauseContinuations?: number } = {}): Model {
  if (family === 'anthropic-messages') {
    return anthropic({ model: 'claude-fixture', apiKey: 'sk-ant-test', baseURL: server.url, ...extra });
  }
  return openai({
    model: 'fixture-model',
    apiKey: 'sk-test',
    baseURL: server.baseURL,
    api: family === 'openai-chat' ? 'chat' : 'responses',
  });
}

const request: ModelRequest = { messages: [{ role: 'user', content: [{ type: 'text', text: 'replay' }] }], tools: [] };

async function replay(model: Model): Promise<{ events: ModelEvent[]; error?: unknown }> {
  const events: ModelEvent[] = [];
  try {
    for await (const event of model.stream(request, new AbortController().signal)) events.push(event);
    return { events };
  } catch (error) {
    return { events, error };
  }
}

function expectText(actual: string, expected: string | Text): void {
  if (typeof expected === 'string') {
    expect(actual).toBe(expected);
    return;
  }
  expect(actual.startsWith(expected.start)).toBe(true);
  expect(actual.endsWith(expected.end)).toBe(true);
  expect([...actual].length).toBe(expected.length);
}

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server?.close());

it.runIf(inCI)('the shared fixtures are present (required under CI=true)', () => {
  expect(present, `${FIXTURES} must exist in CI`).toBe(true);
});

describe.skipIf(!present)('replay of every recorded streaming fixture', () => {
  for (const family of Object.keys(FAMILIES) as Family[]) {
    const { path, expectations } = FAMILIES[family];

    it(`${family}: every fixture in the folder has an expectation`, () => {
      const names = readdirSync(join(FIXTURES, family))
        .filter((file) => file.endsWith('.jsonl'))
        .map((file) => file.slice(0, -'.jsonl'.length))
        .sort();
      expect(names).toEqual(Object.keys(expectations).sort());
    });

    for (const [name, expected] of Object.entries(expectations)) {
      it(`${family}/${name}`, async () => {
        server.reset();
        server.reply(path, { kind: 'raw', body: bodyOf(family, name) });
        const { events, error } = await replay(modelFor(family, server, { maxPauseContinuations: 0 }));
        expect(server.requests).toHaveLength(1);

        if (expected.error) {
          expect(error).toMatchObject({ name: 'ModelError', code: expected.error.code });
          const thrown = error as { providerType?: string; message: string };
          if (expected.error.providerType) expect(thrown.providerType).toBe(expected.error.providerType);
          if (expected.error.message) expect(thrown.message).toMatch(expected.error.message);
          expect(events.some((e) => e.type === 'done')).toBe(false);
          return;
        }
        if (error) throw error;
        const done = events.at(-1);
        if (done?.type !== 'done') throw new Error(`${name}: the stream did not end in done`);
        const message = done.message;

        const text = message.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
        const reasoning = message.content.flatMap((p) => (p.type === 'reasoning' ? [p.text] : [])).join('');
        expectText(text, expected.text ?? '');
        if (expected.reasoning !== undefined) expectText(reasoning, expected.reasoning);
        // The deltas say the same as the message.
        const deltas = (type: 'text_delta' | 'reasoning_delta') =>
          events.flatMap((e) => (e.type === type ? [e.delta] : [])).join('');
        expect(deltas('text_delta')).toBe(text);
        expect(deltas('reasoning_delta')).toBe(reasoning);

        const calls = message.content.flatMap((p) =>
          p.type === 'tool_call'
            ? [[p.id, p.name, p.invalidArguments ? { invalid: p.invalidArguments.text } : p.arguments]]
            : [],
        );
        if (expected.calls) expect(calls).toEqual(expected.calls);
        else if (!expected.check) expect(calls).toEqual([]);
        expect(
          events.filter((e) => e.type === 'tool_call_start').map((e) => (e.type === 'tool_call_start' ? e.id : '')),
        ).toEqual(calls.map((c) => c[0]));

        if (expected.stop) {
          expect(done.stopReason).toBe(expected.stop);
          expect(message.stopReason).toBe(expected.stop);
        }
        if (expected.usage) expect(message.usage).toEqual(expected.usage);
        if (expected.parts) {
          expect(message.content.map((p) => (p.type === 'opaque' ? `opaque:${p.kind}` : p.type))).toEqual(
            expected.parts,
          );
        }
        expected.check?.(message, events);
      });
    }
  }

  it('anthropic-messages: the recorded pause_turn pair is continued into one message, the paused turn replayed', async () => {
    server.reset();
    server.reply(
      '/v1/messages',
      { kind: 'raw', body: bodyOf('anthropic-messages', 'pause-turn-server-web-search') },
      { kind: 'raw', body: bodyOf('anthropic-messages', 'pause-turn-continuation-end-turn') },
    );
    const { events, error } = await replay(modelFor('anthropic-messages', server));
    if (error) throw error;
    const done = events.at(-1);
    if (done?.type !== 'done') throw new Error('no done');
    expect(done.stopReason).toBe('stop');
    expect(done.message.usage).toEqual(u(404500 + 482529, 943 + 1310, 0, 0, 261));
    expect(done.message.content).toHaveLength(25 + 44);
    expect(server.requests).toHaveLength(2);

    // The continuation sends the paused content back as the assistant turn: thinking with its exact signature,
    // server tool blocks with their inputs, the last one unanswered.
    const sent = server.requests[1]?.body.messages;
    expect(sent).toHaveLength(2);
    const paused = sent[1];
    expect(paused.role).toBe('assistant');
    expect(paused.content).toHaveLength(25);
    expect(paused.content[0]).toMatchObject({ type: 'thinking' });
    expect(paused.content[0].signature.startsWith('EuwJCm4IDxgC')).toBe(true);
    expect(paused.content[0].signature).toHaveLength(1688);
    expect(paused.content[2]).toEqual({
      type: 'server_tool_use',
      id: 'srvtoolu_01FGPZ2P6yPXWdiD1Cxjpix3',
      name: 'web_search',
      input: { query: 'San Francisco weather today' },
    });
    expect(paused.content.at(-1)).toMatchObject({ type: 'server_tool_use', id: 'srvtoolu_01NKrV3hGbcHeBVtaTKBHRuA' });
  });
});
