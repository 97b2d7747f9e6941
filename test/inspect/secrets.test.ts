/**
 * The inspector uses the one definition of a secret: a value of any secret class in the environment never reaches
 * a frame, whether a tool printed it or it sits in an object under an innocent key.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel } from '../../src/index.js';
import { sanitizeInspection, summarize } from '../../src/inspect/sanitize.js';
import { leaks, PLANTED, plantInEnvironment } from '../helpers/secrets.js';

const unplant = plantInEnvironment();

afterAll(unplant);

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
