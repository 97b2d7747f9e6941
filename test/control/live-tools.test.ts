import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type Agent,
  createAgent,
  defineTool,
  type ModelRequest,
  scriptedModel,
  ToolDefinitionError,
} from '../../src/index.js';
import { toolResults } from '../agent/helpers.js';

const textOf = (result: { content: Array<{ type: string; text?: string }> } | undefined) =>
  result?.content.map((part) => part.text ?? '').join('') ?? '';
const offered = (request: ModelRequest | undefined) => request?.tools?.map((tool) => tool.name) ?? [];

function echo(name: string, onRun?: () => void) {
  return defineTool({
    name,
    description: `the ${name} tool`,
    schema: z.object({}),
    execute: () => {
      onRun?.();
      return `${name} ran`;
    },
  });
}

describe('live tool sets', () => {
  it('changes made during a step apply at the next step boundary, and the model sees the new list', async () => {
    let agent: Agent | undefined;
    const model = scriptedModel([
      { toolCalls: [{ name: 'a', args: {} }] },
      { toolCalls: [{ name: 'b', args: {} }] },
      { toolCalls: [{ name: 'c', args: {} }] },
      { text: 'done' },
    ]);
    const a = echo('a', () => {
      // Mid-step: this step's own batch is unaffected; the next step sees the change.
      agent?.tools.disable('b').add(echo('c'));
      expect(agent?.tools.names).toEqual(['a', 'b', 'c']);
    });
    agent = createAgent({ model, tools: [a, echo('b')] });
    const result = await agent.prompt('go');
    expect(model.requests.map(offered)).toEqual([
      ['a', 'b'],
      ['a', 'c'],
      ['a', 'c'],
      ['a', 'c'],
    ]);
    const texts = toolResults(result.messages).map(textOf);
    expect(texts[0]).toBe('a ran');
    expect(texts[1]).toContain('Unknown tool "b"'); // a disabled tool is not callable
    expect(texts[2]).toBe('c ran');

    agent.tools.enable('b').remove('c');
    await agent.prompt('again');
    expect(offered(model.requests[4])).toEqual(['a', 'b']);
    await agent.stop();
  });

  it("disable('all') turns every tool off, those added later too, until enabled; a predicate is asked per step", async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'a', args: {} }] },
      { toolCalls: [{ name: 'a', args: {} }] },
      { text: 'done' },
      { text: 'off' },
      { text: 'on' },
    ]);
    const agent = createAgent({ model, tools: [echo('a'), echo('b')] });
    const steps: number[] = [];
    // From the third step of a turn on, the model is offered nothing: it has to answer.
    agent.tools.disable((_tool, { step }) => {
      steps.push(step);
      return step >= 3;
    });
    await agent.prompt('go');
    expect(model.requests.slice(0, 3).map(offered)).toEqual([['a', 'b'], ['a', 'b'], []]);
    expect(new Set(steps)).toEqual(new Set([1, 2, 3]));

    agent.tools.enable('all').disable('all').add(echo('c'));
    await agent.prompt('off');
    expect(offered(model.requests[3])).toEqual([]);
    agent.tools.enable('c');
    await agent.prompt('on');
    expect(offered(model.requests[4])).toEqual(['c']);
    await agent.stop();
  });

  it('a bad tool is refused when it is added, not at the next step', () => {
    const agent = createAgent({ model: scriptedModel([]), tools: [echo('a')] });
    expect(() => agent.tools.add(echo('a'))).toThrow(ToolDefinitionError);
    expect(agent.tools.names).toEqual(['a']);
  });
});
