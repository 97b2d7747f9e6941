import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentEventOf, createAgent, defineTool, scriptedModel } from '../../src/index.js';

function readFile() {
  const seen: unknown[] = [];
  const tool = defineTool({
    name: 'read_file',
    label: 'Read file',
    description: 'Reads a file',
    // Strict: an `_intent` that reached the schema would fail validation.
    schema: z.strictObject({ path: z.string() }),
    execute: (args) => {
      seen.push(args);
      return 'contents';
    },
  });
  return { tool, seen };
}

describe('tool labels and the opt-in `_intent` argument', () => {
  it('adds `_intent` to every tool, strips it before the schema and execute, and carries it on the events', async () => {
    const { tool, seen } = readFile();
    const model = scriptedModel([
      { toolCalls: [{ name: 'read_file', args: { _intent: 'See the config first.', path: 'a.json' } }] },
      { text: 'ok' },
    ]);
    const agent = createAgent({ model, tools: [tool], toolIntent: true });
    const starts: AgentEventOf<'tool_execution_start'>[] = [];
    agent.on('tool_execution_start', (event) => starts.push(event));
    const result = await agent.prompt('go');

    const schema = model.requests[0]?.tools[0]?.inputSchema as { properties: object; required: string[] };
    expect(Object.keys(schema.properties)).toEqual(['_intent', 'path']);
    expect(schema.required).toEqual(['_intent', 'path']);
    expect(seen).toEqual([{ path: 'a.json' }]);
    expect(starts).toMatchObject([{ toolName: 'read_file', label: 'Read file', intent: 'See the config first.' }]);
    // The history keeps what the model said.
    expect(result.messages[1]).toMatchObject({
      content: [{ type: 'tool_call', arguments: { _intent: 'See the config first.', path: 'a.json' } }],
    });
    await agent.stop();
  });

  it('runs a call whose model left `_intent` out, and says so by giving no intent', async () => {
    const { tool, seen } = readFile();
    const model = scriptedModel([{ toolCalls: [{ name: 'read_file', args: { path: 'b' } }] }, { text: 'ok' }]);
    const agent = createAgent({ model, tools: [tool], toolIntent: true });
    const starts: AgentEventOf<'tool_execution_start'>[] = [];
    agent.on('tool_execution_start', (event) => starts.push(event));
    await agent.prompt('go');

    expect(seen).toEqual([{ path: 'b' }]);
    expect(starts[0]?.intent).toBeUndefined();
    await agent.stop();
  });

  it('tells an approver why the call is made', async () => {
    const { tool } = readFile();
    const model = scriptedModel([
      { toolCalls: [{ name: 'read_file', args: { _intent: 'Check the key.', path: '.env' }, id: 'c1' }] },
      { text: 'ok' },
    ]);
    const agent = createAgent({ model, tools: [tool], toolIntent: true, policy: () => 'ask' });
    agent.on('approval_requested', (event) => {
      expect(event).toMatchObject({ label: 'Read file', intent: 'Check the key.', args: { path: '.env' } });
      agent.deny(event, 'not that file');
    });
    const result = await agent.prompt('go');
    expect(result.stopReason).toBe('completed');
    await agent.stop();
  });

  it('leaves schemas and events alone without `toolIntent`, and a strict schema refuses an `_intent`', async () => {
    const { tool, seen } = readFile();
    const model = scriptedModel([
      { toolCalls: [{ name: 'read_file', args: { _intent: 'x', path: 'c' } }] },
      { text: 'ok' },
    ]);
    const agent = createAgent({ model, tools: [tool] });
    const starts: AgentEventOf<'tool_execution_start'>[] = [];
    agent.on('tool_execution_start', (event) => starts.push(event));
    const result = await agent.prompt('go');

    const schema = model.requests[0]?.tools[0]?.inputSchema as { properties: object };
    expect(Object.keys(schema.properties)).toEqual(['path']);
    expect(seen).toEqual([]);
    expect(JSON.stringify(result.messages[2])).toContain('Invalid arguments for read_file');
    expect(starts).toEqual([]);
    await agent.stop();
  });
});
