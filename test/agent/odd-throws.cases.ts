import assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import {
  type AgentEvent,
  createAgent,
  defineTool,
  type Model,
  type ModelEvent,
  type Policy,
  scriptedModel,
} from '../../src/index.js';
import { expectValidHistory, resultText, toolResults } from './helpers.js';

/**
 * Callers that throw what cannot be described, and models that hand back what cannot be held. Each case asserts
 * its own outcome (a defined answer: an error result, or a turn that ends with `error`), so the same list runs as
 * vitest tests (odd-throws.test.ts) and, in a child process, under `node --unhandled-rejections=strict`, where any
 * promise the runtime leaves rejected kills the process.
 */

/** Values whose conversion to text throws: no prototype, a throwing toString, a revoked proxy. */
function unprintable(): Record<string, () => unknown> {
  return {
    'Object.create(null)': () => Object.create(null),
    'an object whose toString throws': () => ({
      toString() {
        throw new Error('toString refused');
      },
      toJSON() {
        throw new Error('toJSON refused');
      },
    }),
    'a revoked proxy': () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    },
  };
}

const call = (name: string) => ({ toolCalls: [{ name, args: {} }] });

async function toolThrowing(value: () => unknown, how: 'throw' | 'reject' | 'reject-after-timeout'): Promise<void> {
  const bad = defineTool({
    name: 'bad',
    description: 'fails oddly',
    schema: z.object({}),
    ...(how === 'reject-after-timeout' ? { timeoutMs: 5 } : {}),
    execute: () => {
      if (how === 'throw') throw value();
      // After its deadline too: the rejection races the timeout and must be swallowed, not left unhandled.
      const delay = how === 'reject' ? 0 : 30;
      return new Promise<string>((_, reject) => setTimeout(() => reject(value()), delay));
    },
  });
  const agent = createAgent({ model: scriptedModel([call('bad'), { text: 'noted' }]), tools: [bad] });
  const result = await agent.prompt('go');
  const [failed] = toolResults(result.messages);
  assert.equal(failed?.isError, true);
  assert.match(resultText(failed), how === 'reject-after-timeout' ? /timed out after 5 ms/ : /^Tool bad failed: /);
  // Answered where tool failures are answered, not by the runtime's last resort for its own bugs.
  assert.doesNotMatch(resultText(failed), /the runtime failed/);
  assert.equal(result.text, 'noted');
  expectValidHistory(agent.messages);
  if (how === 'reject-after-timeout') await new Promise((resolve) => setTimeout(resolve, 40));
  await agent.stop();
}

async function policyThrowing(value: () => unknown): Promise<void> {
  const policy: Policy = () => {
    throw value();
  };
  const echo = defineTool({ name: 'echo', description: 'echo', schema: z.object({}), execute: () => 'ran' });
  const agent = createAgent({ model: scriptedModel([call('echo'), { text: 'ok' }]), tools: [echo], policy });
  const result = await agent.prompt('go');
  const [denied] = toolResults(result.messages);
  assert.equal(denied?.isError, true);
  assert.match(resultText(denied), /^Permission denied: the policy failed: /);
  await agent.stop();
}

/** A model whose stream throws `value` after one delta. */
function throwingModel(value: () => unknown): Model {
  return {
    id: 'odd',
    provider: 'custom',
    async *stream(): AsyncIterable<ModelEvent> {
      yield { type: 'text_delta', delta: 'partial' };
      throw value();
    },
  };
}

async function modelThrowing(value: () => unknown): Promise<void> {
  const agent = createAgent({ model: throwingModel(value), retry: false });
  const result = await agent.prompt('go');
  assert.equal(result.stopReason, 'error');
  assert.equal(result.error?.code, 'unknown');
  assert.equal(typeof result.error?.message, 'string');
  assert.doesNotMatch(result.error?.message ?? '', /^The model call failed/, 'not the last resort for our own bugs');
  await agent.stop();
}

/** A custom model that answers with `message` as its `done`, then, on the next call, with a proper answer. */
function modelAnswering(message: unknown): Model & { calls: number } {
  const model = {
    id: 'custom-model',
    provider: 'custom',
    calls: 0,
    async *stream(): AsyncIterable<ModelEvent> {
      model.calls++;
      if (model.calls === 1) {
        yield { type: 'done', message, stopReason: 'stop' } as unknown as ModelEvent;
        return;
      }
      yield {
        type: 'done',
        stopReason: 'stop',
        message: { role: 'assistant', content: [{ type: 'text', text: 'fine now' }] },
      } as unknown as ModelEvent;
    },
  };
  return model;
}

const MALFORMED_ANSWERS: Record<string, [unknown, RegExp]> = {
  'no content array': [{ role: 'assistant' }, /content is undefined, not an array/],
  'content that is not an array': [{ role: 'assistant', content: 'hi' }, /content is a string, not an array/],
  'the wrong role': [{ role: 'user', content: [] }, /role "user"/],
  'no message at all': [undefined, /final message is undefined/],
  'an unknown part type': [{ role: 'assistant', content: [{ type: 'video' }] }, /unknown type "video"/],
  'a part that is not an object': [{ role: 'assistant', content: [42] }, /content\[0\] is a part that is a number/],
  'a text part without text': [{ role: 'assistant', content: [{ type: 'text' }] }, /text is not a string/],
  'a tool call without an id': [
    { role: 'assistant', content: [{ type: 'tool_call', name: 'echo', arguments: {} }] },
    /a tool call without an id/,
  ],
  'a tool call without a name': [
    { role: 'assistant', content: [{ type: 'tool_call', id: 'c1', arguments: {} }] },
    /tool call c1 without a name/,
  ],
  'a tool call whose arguments are not an object': [
    { role: 'assistant', content: [{ type: 'tool_call', id: 'c1', name: 'echo', arguments: [1] }] },
    /arguments are an array/,
  ],
  'an unknown stop reason': [{ role: 'assistant', content: [], stopReason: 'tired' }, /stopReason "tired"/],
};

async function malformedAnswer(message: unknown, why: RegExp): Promise<void> {
  const model = modelAnswering(message);
  const agent = createAgent({ model });
  const events: AgentEvent[] = [];
  agent.on('turn_end', (event) => events.push(event));
  const result = await agent.prompt('go');
  assert.equal(result.stopReason, 'error');
  assert.equal(result.error?.code, 'bad_response');
  assert.match(result.error?.message ?? '', why);
  assert.equal(model.calls, 1, 'a bad response is not retried: the same request gets the same answer');
  // The agent stays usable: the next prompt runs normally.
  const next = await agent.prompt('again');
  assert.equal(next.stopReason, 'completed');
  assert.equal(next.text, 'fine now');
  assert.deepEqual(
    events.map((e) => e.type === 'turn_end' && e.stopReason),
    ['error', 'completed'],
  );
  await agent.stop();
}

export interface OddThrowCase {
  name: string;
  run(): Promise<void>;
}

export const oddThrowCases: OddThrowCase[] = [
  ...Object.entries(unprintable()).flatMap(([what, value]) => [
    { name: `a tool that throws ${what}`, run: () => toolThrowing(value, 'throw') },
    { name: `a tool that rejects with ${what}`, run: () => toolThrowing(value, 'reject') },
    {
      name: `a tool that rejects with ${what} after its timeoutMs`,
      run: () => toolThrowing(value, 'reject-after-timeout'),
    },
    { name: `a policy that throws ${what}`, run: () => policyThrowing(value) },
    { name: `a model stream that throws ${what}`, run: () => modelThrowing(value) },
  ]),
  ...Object.entries(MALFORMED_ANSWERS).map(([what, [message, why]]) => ({
    name: `a custom model whose done message has ${what}`,
    run: () => malformedAnswer(message, why),
  })),
];

/** Runs every case in this process, one after another; used by the child process under strict rejections. */
async function runAll(): Promise<void> {
  for (const { name, run } of oddThrowCases) {
    try {
      await run();
    } catch (error) {
      console.error(`FAILED: ${name}`);
      throw error;
    }
  }
  console.log(`${oddThrowCases.length} odd-throw cases passed`);
}

// Run as a program (`node --import tsx test/agent/odd-throws.cases.ts`): every case, in this process.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await runAll();
