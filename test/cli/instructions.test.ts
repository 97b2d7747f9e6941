/**
 * `troupe run` reads the project's AGENTS.md files into the system prompt by default, as other coding agents do:
 * checked on the request the OpenAI SDK really sends to a compatible server on loopback.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { chatReply } from '../wire/builders.js';
import { WireServer } from '../wire/server.js';
import { harness, runIn } from './harness.js';
import { keylessEnv, sampleCopy } from './helpers.js';

let server: WireServer;
let home: string;
let folder: string;

beforeAll(async () => {
  server = await WireServer.start();
});
afterAll(() => server.close());

beforeEach(async () => {
  // The folder sits inside a fake home, so the chain home → folder is short and no real ~/AGENTS.md leaks in.
  home = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'troupe-home-')));
  const sample = await sampleCopy();
  folder = path.join(home, 'work', 'project');
  await fs.mkdir(path.dirname(folder), { recursive: true });
  await fs.rename(sample, folder);
  await fs.writeFile(path.join(home, 'AGENTS.md'), 'Answer in British English.\n');
  await fs.writeFile(path.join(folder, 'AGENTS.md'), 'Run the tests with make check.\n');
});
afterEach(async () => {
  server.reset();
  await fs.rm(home, { recursive: true, force: true });
});

const env = () => keylessEnv({ OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'sk-test', HOME: home });

async function systemPromptOf(args: string[]): Promise<string> {
  server.reply('/v1/chat/completions', chatReply({ text: 'Done.' }));
  const h = harness(folder, { env: env() });
  const code = await runIn(h, args);
  expect(h.err).toEqual([]);
  expect(code).toBe(0);
  const [request] = server.requests;
  expect(request?.headers.authorization).toBe('Bearer sk-test');
  const [first] = request?.body.messages ?? [];
  expect(first?.role).toBe('system');
  return String(first?.content);
}

describe('troupe run and AGENTS.md', () => {
  it('sends the AGENTS.md files from the home down to the folder, outer first', async () => {
    const system = await systemPromptOf(['run', '--model', 'qwen3', 'Look around']);
    expect(system).toContain(`You work in the folder ${folder}`);
    const outer = system.indexOf('Answer in British English.');
    const inner = system.indexOf('Run the tests with make check.');
    expect(outer).toBeGreaterThan(0);
    expect(inner).toBeGreaterThan(outer);
    expect(system).toContain('<instructions file="AGENTS.md">');
  });

  it('--no-agents-md leaves them out, and a resume of that session leaves them out too', async () => {
    const system = await systemPromptOf(['run', '--model', 'qwen3', '--session=s1', '--no-agents-md', 'Look around']);
    expect(system).toContain(`You work in the folder ${folder}`);
    expect(system).not.toContain('make check');
    server.reset();
    const resumed = await systemPromptOf(['resume', '-C', folder, 's1', 'And now?']);
    expect(resumed).not.toContain('make check');
  });
});
