import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropic, createAgent, type Model, openai } from '../../src/index.js';
import { summarize } from '../../src/inspect/sanitize.js';
import { WireServer } from '../wire/server.js';

// A key no pattern recognises (no sk- prefix, not in any *_API_KEY variable): only knowing it can cut it out.
const KEY = 'tenant7-Zq9xV2mLp4Rt8Wc';

let server: WireServer;
beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());

function everywhere(error: unknown, events: unknown[]): string {
  return [inspect(error, { depth: 8 }), JSON.stringify(events), inspect(events, { depth: 8 })].join('\n');
}

describe("an adapter's own API key never travels in an error", () => {
  const echoed = {
    status: 401,
    headers: { 'x-echo-auth': `Bearer ${KEY}` },
    body: { error: { message: `Invalid token ${KEY}`, type: 'authentication_error', code: 'invalid_api_key' } },
  };
  const models: Array<[string, () => Model, '/v1/chat/completions' | '/v1/messages']> = [
    [
      'openai chat',
      () => openai({ model: 'gpt-test', apiKey: KEY, baseURL: server.baseURL, api: 'chat' }),
      '/v1/chat/completions',
    ],
    ['anthropic', () => anthropic({ model: 'claude-test', apiKey: KEY, baseURL: server.url }), '/v1/messages'],
  ];
  for (const [name, make, path] of models) {
    it(`${name}: not in the message, the cause, the headers, turn_end or util.inspect(error)`, async () => {
      server.reset();
      server.reply(path, { kind: 'json', ...echoed });
      const agent = createAgent({ model: make(), retry: false });
      const events: unknown[] = [];
      agent.on('turn_end', (e) => events.push(e));
      const result = await agent.prompt('hi');
      expect(result.error?.code).toBe('auth_error');
      expect(result.error?.message).toContain('Invalid token [redacted]');
      expect(everywhere(result.error, events)).not.toContain(KEY);
      expect(inspect((result.error as Error).cause, { depth: 8 })).toContain('[redacted]');
      await agent.stop();
    });
  }

  it("the inspector's sanitiser knows every key the process's models hold", () => {
    openai({ model: 'gpt-test', apiKey: KEY, baseURL: server.baseURL });
    expect(summarize({ note: `the server said ${KEY}` }, { secrets: [] })).toEqual({
      note: 'the server said [redacted]',
    });
  });
});
