import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createAgent, scriptedModel } from '../../src/index.js';
import { oddThrowCases } from './odd-throws.cases.js';

describe('odd throws and malformed answers get a defined answer', () => {
  for (const { name, run } of oddThrowCases) it(name, run);
});

describe('under --unhandled-rejections=strict', () => {
  // Vitest reports an unhandled rejection as an error but lets the run go on; a plain Node process with this flag
  // dies of it. So the same cases run in a child process, where one rejection the runtime leaves unhandled fails
  // this test with its stack trace.
  it('every odd-throw case passes in a Node process that dies of any unhandled rejection', () => {
    const child = spawnSync(
      process.execPath,
      ['--unhandled-rejections=strict', '--import', 'tsx', 'test/agent/odd-throws.cases.ts'],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(child.stderr).not.toMatch(/FAILED|Unhandled|ERR_UNHANDLED_REJECTION/);
    expect(child.stdout).toContain(`${oddThrowCases.length} odd-throw cases passed`);
    expect(child.status).toBe(0);
  }, 150_000);

  it('the whole suite runs that way too (vitest.config.ts gives every test process the flag)', () => {
    expect(process.execArgv).toContain('--unhandled-rejections=strict');
  });
});

describe('an actor that stops on an error', () => {
  it('settles every pending prompt() and stream() at once, with the error, and refuses later prompts', async () => {
    // A model that never answers: the turn stays in `model` until the actor fails.
    const agent = createAgent({ model: scriptedModel([{ text: 'never', latencyMs: 60_000 }]) });
    const first = agent.prompt('one');
    const queued = agent.prompt('two');
    const stream = agent.stream('three');
    const streamed: string[] = [];
    const reading = (async () => {
      for await (const event of stream) streamed.push(event.type);
    })();
    // A reply the machine cannot take (sent straight to the actor, past the model worker's checks) fails it.
    agent.actor.send({ type: 'MODEL_DONE', turn: 1, step: 1, message: { content: null } } as never);
    expect(agent.actor.getSnapshot().status).toBe('error');
    const [a, b, c] = await Promise.all([first, queued, stream.result]);
    for (const result of [a, b, c]) {
      expect(result.stopReason).toBe('error');
      expect(result.error?.code).toBe('agent_failed');
    }
    expect(a.messages.map((m) => m.role)).toEqual(['user']);
    await reading; // the iteration ends too
    await expect(agent.prompt('four')).rejects.toThrow(/takes no prompts: its actor is failed/);
    await agent.stop();
  });
});
