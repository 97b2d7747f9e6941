/**
 * The same broken histories, replayed through the official SDKs against the loopback server acting as a strict
 * provider: it checks each request the way the real APIs do and answers with their recorded errors
 * (../shared/fixtures) when the history is broken, or a recorded stream when it is sound. Sent as stored, the
 * history is refused; sent by an agent (through the projection), it is accepted.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type AgentEvent,
  anthropic,
  createAgent,
  type Message,
  type Model,
  ModelError,
  openai,
} from '../../src/index.js';
import { type WireReply, type WireRequest, WireServer } from '../wire/server.js';
import { assistant, call, image, result, text, tool, user } from './history.js';

const FIXTURES = fileURLToPath(new URL('../../../shared/fixtures', import.meta.url));
const present = existsSync(FIXTURES);
if (!present) console.warn(`[troupe] ${FIXTURES} is absent: the context wire tests are SKIPPED`);
if (!present && process.env.CI === 'true') throw new Error(`${FIXTURES} is required under CI`);

type Reply = Exclude<WireReply, { kind: 'check' }>;

function recordedStream(name: string): Reply {
  const body = readFileSync(join(FIXTURES, 'raw-sse', `${name}.sse`), 'utf8');
  return { kind: 'raw', body: body.endsWith('\n\n') ? body : `${body.replace(/\n?$/, '')}\n\n` };
}

function recordedError(file: string, message?: string): Reply {
  const recorded = JSON.parse(readFileSync(join(FIXTURES, file), 'utf8')) as {
    status: number | null;
    body: { error: { message: string } };
  };
  const body = structuredClone(recorded.body);
  if (message) body.error.message = message;
  return { kind: 'json', status: recorded.status ?? 400, body, headers: { 'x-should-retry': 'false' } };
}

// ---- what each API refuses, as it says it (Anthropic's messages are the recorded ones, ids substituted)

// biome-ignore lint/suspicious/noExplicitAny: wire bodies are read freely.
type Body = any;

function anthropicProblem(body: Body): Reply | undefined {
  const messages: Body[] = body.messages;
  for (let i = 0; i < messages.length; i++) {
    const blocks: Body[] = Array.isArray(messages[i].content) ? messages[i].content : [];
    if (i > 0 && messages[i].role === messages[i - 1].role) {
      return recordedError('anthropic-http/error-400-invalid-request-effort.json', 'messages: roles must alternate');
    }
    if (blocks.some((b) => b.type === 'text' && b.text === '')) {
      return recordedError(
        'anthropic-http/error-400-invalid-request-effort.json',
        `messages.${i}: text content blocks must be non-empty`,
      );
    }
    const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id as string);
    const answered = new Set<string>(
      (messages[i + 1]?.content ?? []).filter((b: Body) => b.type === 'tool_result').map((b: Body) => b.tool_use_id),
    );
    const unanswered = uses.filter((id) => !answered.has(id));
    if (unanswered.length > 0) {
      return recordedError(
        'anthropic-http/error-400-tool-use-without-tool-result.json',
        `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      );
    }
    const called = new Set<string>(
      (messages[i - 1]?.content ?? []).filter((b: Body) => b.type === 'tool_use').map((b: Body) => b.id),
    );
    const orphan = blocks.find((b) => b.type === 'tool_result' && !called.has(b.tool_use_id));
    if (orphan) {
      return recordedError(
        'anthropic-http/error-400-tool-result-without-tool-use.json',
        `messages.${i}.content.0: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${orphan.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
      );
    }
  }
  return undefined;
}

// OpenAI's own wording for these 400s (no recording of them exists in the fixtures; the envelope is the recorded one).
function chatProblem(body: Body): Reply | undefined {
  const messages: Body[] = body.messages;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (message.role === 'assistant' && message.tool_calls) {
      const answered = new Set<string>();
      for (let j = i + 1; j < messages.length && messages[j].role === 'tool'; j++)
        answered.add(messages[j].tool_call_id);
      const missing = message.tool_calls.map((c: Body) => c.id).filter((id: string) => !answered.has(id));
      if (missing.length > 0) {
        return recordedError(
          'openai-http/error-400-unsupported-value-developer-role.json',
          `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${missing.join(', ')}`,
        );
      }
    }
    if (message.role === 'tool') {
      let j = i - 1;
      while (j >= 0 && messages[j].role === 'tool') j--;
      const calls = messages[j]?.tool_calls?.map((c: Body) => c.id) ?? [];
      if (!calls.includes(message.tool_call_id)) {
        return recordedError(
          'openai-http/error-400-unsupported-value-developer-role.json',
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        );
      }
    }
  }
  return undefined;
}

function responsesProblem(body: Body): Reply | undefined {
  const items: Body[] = body.input;
  const calls = new Set<string>();
  const outputs = new Set<string>();
  for (const item of items) {
    if (item.type === 'function_call') calls.add(item.call_id);
    if (item.type === 'function_call_output') {
      if (!calls.has(item.call_id)) {
        return recordedError(
          'openai-http/error-400-model-not-found-responses.json',
          `No tool call found for function call output with call_id ${item.call_id}.`,
        );
      }
      outputs.add(item.call_id);
    }
  }
  const missing = [...calls].find((id) => !outputs.has(id));
  if (missing) {
    return recordedError(
      'openai-http/error-400-model-not-found-responses.json',
      `No tool output found for function call ${missing}.`,
    );
  }
  return undefined;
}

interface Api {
  name: string;
  path: '/v1/messages' | '/v1/chat/completions' | '/v1/responses';
  model(server: WireServer): Model;
  problem(body: Body): Reply | undefined;
  ok: string;
  /** Repairs besides the three every API needs: Anthropic also wants the steer and the prompt as one user turn. */
  merges: boolean;
}

const APIS: Api[] = [
  {
    name: 'Anthropic Messages',
    path: '/v1/messages',
    model: (server) => anthropic({ model: 'claude-fixture', apiKey: 'sk-ant-test', baseURL: server.url }),
    problem: anthropicProblem,
    ok: 'anthropic-messages--text-sonnet-4',
    merges: true,
  },
  {
    name: 'OpenAI Chat Completions',
    path: '/v1/chat/completions',
    model: (server) => openai({ model: 'gpt-4o', apiKey: 'sk-test', baseURL: server.baseURL, api: 'chat' }),
    problem: chatProblem,
    ok: 'openai-chat--text-gpt-4o-usage',
    merges: false,
  },
  {
    name: 'OpenAI Responses',
    path: '/v1/responses',
    model: (server) => openai({ model: 'gpt-4o', apiKey: 'sk-test', baseURL: server.baseURL, api: 'responses' }),
    problem: responsesProblem,
    ok: 'openai-responses--text-gpt-4o',
    merges: false,
  },
];

/** A call whose result was stored late (after a steer), a call with no result, and an orphan result. */
function brokenHistory(): Message[] {
  return [
    user('What is the weather in Paris and in Rome?'),
    assistant(
      text('Checking both.'),
      call('call_paris', 'weather', { city: 'Paris' }),
      call('call_rome', 'weather', { city: 'Rome' }),
    ),
    user('And Oslo too, please.', 'steer'),
    tool(result('call_paris', 'Paris: 21°C', 'weather')),
    tool(result('call_ghost', 'Nobody asked for this', 'weather')),
  ];
}

const strict = (api: Api): WireReply => ({
  kind: 'check',
  reply: (request: WireRequest) => api.problem(request.body) ?? recordedStream(api.ok),
});

describe.skipIf(!present)('broken histories against strict providers, through the real SDKs', () => {
  let server: WireServer;
  beforeAll(async () => {
    server = await WireServer.start();
  });
  afterAll(() => server.close());
  beforeEach(() => server.reset());

  for (const api of APIS) {
    it(`${api.name}: refused as stored, accepted as projected`, async () => {
      const model = api.model(server);
      server.reply(api.path, strict(api));
      const refusal = await (async () => {
        try {
          for await (const _ of model.stream({ messages: brokenHistory(), tools: [] }, new AbortController().signal)) {
            // drain
          }
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(refusal).toBeInstanceOf(ModelError);
      expect(refusal).toMatchObject({ code: 'invalid_request', status: 400 });

      server.reply(api.path, strict(api));
      const stored = brokenHistory();
      const agent = createAgent({ model, messages: stored, retry: false });
      const repairs: AgentEvent[] = [];
      agent.on('context_repair', (e) => repairs.push(e));
      const answer = await agent.prompt('Go on.');
      expect(answer.error).toBeUndefined();
      expect(answer.stopReason).toBe('completed');
      expect(answer.text.length).toBeGreaterThan(0);
      expect(repairs.map((e) => e.type === 'context_repair' && e.repair.kind).sort()).toEqual([
        'late_result_moved',
        'missing_result',
        'orphan_result_dropped',
        ...(api.merges ? ['user_messages_merged'] : []),
      ]);
      // The stored facts are unchanged: the agent's history starts with the broken one as it was.
      expect(agent.messages.slice(0, stored.length)).toEqual(brokenHistory());
      await agent.stop();
    });
  }

  it('Anthropic: a history the API still refuses (a thinking signature) is sent once more, strictly projected', async () => {
    const model = anthropic({ model: 'claude-fixture', apiKey: 'sk-ant-test', baseURL: server.url });
    const signed: Message = {
      ...assistant(
        {
          type: 'reasoning',
          text: 'Let me think.',
          opaque: { provider: 'anthropic', model: 'claude-fixture', data: { signature: 'EqQBCgIYAhIM' } },
        },
        text('Hello.'),
      ),
      provider: 'anthropic',
      model: 'claude-fixture',
    };
    const refuseThinking: WireReply = {
      kind: 'check',
      reply: (request) =>
        JSON.stringify(request.body.messages).includes('"thinking"')
          ? recordedError(
              'anthropic-http/error-400-invalid-request-effort.json',
              'messages.1.content.0: Invalid `signature` in `thinking` block',
            )
          : recordedStream('anthropic-messages--text-sonnet-4'),
    };
    server.reply('/v1/messages', refuseThinking, refuseThinking);
    const agent = createAgent({ model, messages: [user('Hi'), signed], retry: false });
    const events: AgentEvent[] = [];
    agent.on('*', (e) => events.push(e));
    const answer = await agent.prompt('Again?');
    expect(answer.stopReason).toBe('completed');
    expect(server.requests).toHaveLength(2);
    expect(JSON.stringify(server.requests[1]?.body.messages)).not.toContain('thinking');
    expect(events.find((e) => e.type === 'context_retry')).toMatchObject({ reason: 'history' });
    expect(events.find((e) => e.type === 'context_repair')).toMatchObject({
      strict: true,
      repair: { kind: 'opaque_dropped' },
    });
    await agent.stop();
  });

  it('Anthropic: a 413 for a request with images is sent once more with the images replaced by a note', async () => {
    const model = anthropic({ model: 'claude-fixture', apiKey: 'sk-ant-test', baseURL: server.url });
    const tooLarge: WireReply = {
      kind: 'check',
      reply: (request) =>
        JSON.stringify(request.body.messages).includes('"image"')
          ? {
              kind: 'json',
              status: 413,
              body: {
                type: 'error',
                error: { type: 'request_too_large', message: 'Request exceeds the maximum allowed number of bytes.' },
              },
            }
          : recordedStream('anthropic-messages--text-sonnet-4'),
    };
    server.reply('/v1/messages', tooLarge, tooLarge);
    const agent = createAgent({ model, retry: false });
    const events: AgentEvent[] = [];
    agent.on('*', (e) => events.push(e));
    const answer = await agent.prompt([text('What is in this picture?'), image]);
    expect(answer.stopReason).toBe('completed');
    expect(server.requests).toHaveLength(2);
    expect(JSON.stringify(server.requests[1]?.body.messages)).toContain('left out because the request was too large');
    expect(events.find((e) => e.type === 'context_retry')).toMatchObject({ reason: 'media', error: { status: 413 } });
    // The stored prompt keeps its image.
    expect(agent.messages[0]?.content[1]).toEqual(image);
    await agent.stop();
  });
});
