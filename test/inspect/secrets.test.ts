/**
 * The inspector uses the one definition of a secret: a value of any secret class in the environment never reaches
 * a frame, whether a tool printed it or it sits in an object under an innocent key.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import { createAgent, defineTool, sanitizeInspection, scriptedModel } from '../../src/index.js';
import { summarize } from '../../src/inspect/sanitize.js';

const tag = () => randomBytes(6).toString('hex');
const PLANTED: Record<string, string> = {
  GITHUB_TOKEN: `ghp_planted${tag()}`,
  AWS_SECRET_ACCESS_KEY: `planted/aws+${tag()}`,
  ANTHROPIC_AUTH_TOKEN: `planted-auth-${tag()}`,
  DB_PASSWORD: `planted-pw-${tag()}`,
  MY_SERVICE_API_KEY: `planted-key-${tag()}`,
  DATABASE_URL: `postgres://app:planted${tag()}@db.internal/app`,
};
// Before anything reads the environment's secrets (they are read at their first use).
Object.assign(process.env, PLANTED);

afterAll(() => {
  for (const name of Object.keys(PLANTED)) delete process.env[name];
});

function leaks(text: string): string[] {
  return Object.entries(PLANTED).flatMap(([name, value]) => (text.includes(value) ? [name] : []));
}

describe('inspector frames', () => {
  it('carry no value of a secret variable, under any key', () => {
    const frame = JSON.stringify(summarize({ note: Object.values(PLANTED).join(' and '), list: [PLANTED] }));
    expect(leaks(frame)).toEqual([]);
    expect(frame).toContain('[redacted] and [redacted]');
  });

  it('redact by key name with the same definition as the environment', () => {
    const frame = summarize({
      githubToken: 'x',
      'x-api-key': 'x',
      dbPassword: 'x',
      maxTokens: 4096,
      tokens: 12,
      author: 'ada',
      cacheKey: 'k',
    });
    expect(frame).toEqual({
      githubToken: '[redacted]',
      'x-api-key': '[redacted]',
      dbPassword: '[redacted]',
      maxTokens: 4096,
      tokens: 12,
      author: 'ada',
      cacheKey: 'k',
    });
  });

  it('of an agent whose tool prints the environment carry none of its secrets', async () => {
    const frames: InspectionEvent[] = [];
    const printEnv = defineTool({
      name: 'print_env',
      description: 'Prints the environment',
      schema: z.object({}),
      execute: () =>
        Object.entries(PLANTED)
          .map(([name, value]) => `${name}=${value}`)
          .join('\n'),
    });
    let step = 0;
    const agent = createAgent({
      tools: [printEnv],
      inspect: sanitizeInspection((event) => frames.push(event)),
      model: scriptedModel(() => (step++ === 0 ? { toolCalls: [{ name: 'print_env', args: {} }] } : { text: 'ok' })),
    });
    const result = await agent.prompt('print it');
    const text = JSON.stringify(frames.map((f) => ('snapshot' in f ? f.snapshot : 'event' in f ? f.event : f.type)));
    expect(text).toContain('GITHUB_TOKEN=[redacted]');
    expect(leaks(text)).toEqual([]);
    // What the model read, and so what every event and journal carries, is redacted too.
    expect(leaks(JSON.stringify(result.messages))).toEqual([]);
  });
});
