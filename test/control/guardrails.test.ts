import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, GuardrailTripped, guardrails, scriptedModel } from '../../src/index.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

describe('guardrails', () => {
  it('an input check that trips means no model call and zero tool effects; output checks see only final answers', async () => {
    const ran: string[] = [];
    const tool = defineTool({
      name: 'act',
      description: 'acts',
      schema: z.object({ what: z.string() }),
      execute: ({ what }) => {
        ran.push(what);
        return `did ${what}`;
      },
    });
    const outputChecked: string[] = [];
    const model = scriptedModel([
      { toolCalls: [{ name: 'act', args: { what: 'secret stuff' } }] },
      { text: 'the secret is 42' },
    ]);
    const agent = createAgent({
      model,
      tools: [tool],
      hooks: guardrails({
        input: [async (text) => (text.includes('jailbreak') ? 'jailbreak attempt' : undefined)],
        output: [
          (text) => {
            outputChecked.push(text);
            return text.includes('secret') ? 'leaks the secret' : undefined;
          },
        ],
      }),
    });
    const refused = await agent.prompt('a jailbreak: act now');
    expect(refused.stopReason).toBe('guardrail_tripped');
    expect(refused.error).toBeInstanceOf(GuardrailTripped);
    expect(refused.error?.message).toBe('jailbreak attempt');
    expect(model.requests).toHaveLength(0);
    expect(ran).toEqual([]);

    const leaked = await agent.prompt('act');
    expect(ran).toEqual(['secret stuff']); // the tool-call answer passed the output check untouched
    expect(outputChecked).toEqual(['the secret is 42']);
    expect(leaked.stopReason).toBe('guardrail_tripped');
    expect(leaked.error?.message).toBe('leaks the secret');
    await agent.stop();
  });

  it('examples/guardrails.ts runs offline and shows both guardrails and both tool hooks', async () => {
    const { OPENAI_API_KEY: _o, ANTHROPIC_API_KEY: _a, ...env } = process.env;
    const { stdout } = await run('npx', ['tsx', 'examples/guardrails.ts'], { cwd: root, env, timeout: 60_000 });
    expect(stdout).toContain('refused: prompt injection suspected');
    expect(stdout).toContain('refused: the answer leaks an internal discount code');
    expect(stdout).toContain('Refunded 200 EUR on order A-17 to card **** **** **** 1111.');
    expect(stdout).toContain('refunds made: [200]');
  });
});
