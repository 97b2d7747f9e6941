import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createAgent,
  defineTool,
  ModelError,
  OutputValidationError,
  scriptedModel,
  ToolDefinitionError,
  textOf,
} from '../../src/index.js';
import { echo, expectValidHistory, record, resultText, toolResults } from './helpers.js';

const fastRetry = { initialDelayMs: 1, maxDelayMs: 2 };

describe('model failures', () => {
  it('end the turn with a classified error, keep every completed message, and the next prompt runs', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'echo', args: { text: 'kept' } }] },
      { text: 'half an ans', error: { code: 'auth_error', message: 'invalid x-api-key', status: 401 } },
      { text: 'recovered' },
    ]);
    const agent = createAgent({ model, tools: [echo], retry: fastRetry });
    const events = record(agent);
    const failed = await agent.prompt('go');

    expect(failed.stopReason).toBe('error');
    expect(failed.error).toBeInstanceOf(ModelError);
    expect(failed.error).toMatchObject({ code: 'auth_error', status: 401, message: 'invalid x-api-key' });
    // The completed step stays; the half-streamed answer is announced as discarded and is not in the history.
    expect(failed.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(events.find((e) => e.type === 'message_end' && e.discarded === 'error')).toBeDefined();
    expect(events.filter((e) => e.type === 'model_retry')).toEqual([]);
    const turnEnd = events.find((e) => e.type === 'turn_end');
    expect(turnEnd).toMatchObject({ stopReason: 'error', error: { code: 'auth_error', status: 401 } });
    expect(agent.actor.getSnapshot().value).toBe('idle');

    const next = await agent.prompt('try again');
    expect(next.stopReason).toBe('completed');
    expect(next.text).toBe('recovered');
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('retries rate limits and overload with model_retry events, discarding the failed attempt', async () => {
    const model = scriptedModel([
      { text: 'partial', error: { code: 'rate_limit', message: 'slow down', status: 429, retryAfterMs: 3 } },
      { error: { code: 'overloaded', message: 'overloaded', status: 529 } },
      { text: 'third time lucky' },
    ]);
    const agent = createAgent({ model, retry: fastRetry });
    const events = record(agent);
    const result = await agent.prompt('hi');

    expect(result.text).toBe('third time lucky');
    expect(result.messages.map((m) => textOf(m))).toEqual(['hi', 'third time lucky']);
    const retries = events.filter((e) => e.type === 'model_retry');
    expect(retries.map((e) => [e.attempt, e.error.code])).toEqual([
      [1, 'rate_limit'],
      [2, 'overloaded'],
    ]);
    // retry-after wins over our own backoff.
    expect(retries[0]).toMatchObject({ delayMs: 3 });
    const discardedBeforeRetry = events.findIndex((e) => e.type === 'message_end' && e.discarded === 'retry');
    expect(discardedBeforeRetry).toBeGreaterThanOrEqual(0);
    expect(discardedBeforeRetry).toBeLessThan(events.findIndex((e) => e.type === 'model_retry'));
    await agent.stop();
  });

  it('gives up after maxRetries, and never retries invalid requests or context overflow', async () => {
    const always = scriptedModel(() => ({ error: { code: 'server_error', message: 'boom', status: 500 } }));
    const agent = createAgent({ model: always, retry: { ...fastRetry, maxRetries: 2 } });
    const result = await agent.prompt('hi');
    expect(result.error).toMatchObject({ code: 'server_error' });
    expect(always.calls).toBe(3);

    const overflow = scriptedModel(() => ({ error: { code: 'context_overflow', message: 'too long', status: 400 } }));
    const other = createAgent({ model: overflow, retry: fastRetry });
    expect((await other.prompt('hi')).error).toMatchObject({ code: 'context_overflow' });
    expect(overflow.calls).toBe(1);
    await agent.stop();
    await other.stop();
  });

  it('an answer cut off by its output limit does not run its tool calls', async () => {
    let ran = 0;
    const counted = defineTool({
      ...echo,
      execute: ({ text }: { text: string }) => {
        ran++;
        return text;
      },
    });
    const model = scriptedModel([
      { toolCalls: [{ name: 'echo', args: { text: 'cut' } }], stopReason: 'length' },
      { toolCalls: [{ name: 'echo', args: { text: 'whole' } }] },
      { text: 'done' },
    ]);
    const agent = createAgent({ model, tools: [counted] });
    const result = await agent.prompt('go');
    expect(ran).toBe(1);
    const [cut, whole] = toolResults(result.messages);
    expect(cut?.isError).toBe(true);
    expect(resultText(cut)).toContain('output token limit');
    expect(resultText(whole)).toBe('whole');
    expect(result.text).toBe('done');
    expectValidHistory(agent.messages);
    await agent.stop();
  });

  it('a scripted model that runs out says so clearly', async () => {
    const agent = createAgent({ model: scriptedModel([]), retry: false });
    const result = await agent.prompt('hello');
    expect(result.stopReason).toBe('error');
    expect(result.error?.message).toBe(
      'scriptedModel: the script has 0 answer(s) and this is request 1 (last user message: "hello")',
    );
    await agent.stop();
  });
});

describe('structured output', () => {
  const Verdict = z.object({ verdict: z.enum(['ship', 'hold']), reasons: z.array(z.string()).min(1) });

  it('parses and validates the final answer into a typed output', async () => {
    const model = scriptedModel([{ text: '```json\n{"verdict":"ship","reasons":["tests pass"]}\n```' }]);
    const agent = createAgent({ model, outputSchema: Verdict });
    const result = await agent.prompt('Ship it?');
    expect(result.output).toEqual({ verdict: 'ship', reasons: ['tests pass'] });
    const verdict: 'ship' | 'hold' | undefined = result.output?.verdict;
    expect(verdict).toBe('ship');
    // The model was told the schema, and adapters get it for native structured output.
    expect(model.requests[0]?.system).toContain('"verdict"');
    expect(model.requests[0]?.outputSchema?.schema).toMatchObject({ type: 'object', required: ['verdict', 'reasons'] });
    await agent.stop();
  });

  it('sends an invalid answer back with the failing paths, and takes the corrected one', async () => {
    const model = scriptedModel([
      { text: 'I think we should ship.' },
      { text: '{"verdict":"maybe","reasons":[]}' },
      { text: '{"verdict":"hold","reasons":["flaky test"]}' },
    ]);
    const agent = createAgent({ model });
    const result = await agent.prompt('Ship it?', { outputSchema: Verdict });
    expect(result.stopReason).toBe('completed');
    expect(result.output).toEqual({ verdict: 'hold', reasons: ['flaky test'] });
    const feedback = result.messages.filter((m) => m.role === 'user' && m.source === 'feedback').map((m) => textOf(m));
    expect(feedback).toHaveLength(2);
    expect(feedback[0]).toContain('not valid JSON');
    expect(feedback[1]).toContain('- verdict:');
    expect(feedback[1]).toContain('- reasons:');
    await agent.stop();
  });

  it('refuses an outputSchema JSON Schema cannot express when the agent or the prompt is made', async () => {
    const Dated = z.object({ at: z.date() });
    expect(() => createAgent({ model: scriptedModel([]), outputSchema: Dated })).toThrow(
      'outputSchema cannot be expressed as JSON Schema',
    );
    const model = scriptedModel([{ text: 'never asked' }]);
    const agent = createAgent({ model });
    await expect(agent.prompt('when?', { outputSchema: Dated })).rejects.toThrow(ToolDefinitionError);
    expect(model.calls).toBe(0);
    await agent.stop();
  });

  it('fails the turn with OutputValidationError when the attempts run out', async () => {
    const model = scriptedModel(() => ({ text: 'no json here' }));
    const agent = createAgent({ model, outputSchema: Verdict, maxOutputAttempts: 2 });
    const result = await agent.prompt('Ship it?');
    expect(result.stopReason).toBe('error');
    expect(result.error).toBeInstanceOf(OutputValidationError);
    expect(result.output).toBeUndefined();
    expect(model.calls).toBe(2);
    await agent.stop();
  });
});
