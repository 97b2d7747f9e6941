import { spawnSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createAgent, scriptedModel, textOf } from '../../src/index.js';
import { echo, nextEvent, resultText, toolResults } from './helpers.js';

const callEcho = { toolCalls: [{ name: 'echo', id: 'call_a', args: { text: 'hi' } }] };

describe('approve() and deny() say whether they answered an open approval', () => {
  it('true for a waiting call, false for an unknown id or one already answered', async () => {
    const agent = createAgent({
      model: scriptedModel([callEcho, { text: 'done' }]),
      tools: [echo],
      policy: () => 'ask',
    });
    expect(agent.approve('call_a')).toBe(false); // nothing waits yet
    const asked = nextEvent(agent, (e) => e.type === 'approval_requested');
    const running = agent.prompt('go');
    await asked;
    expect(agent.deny('nope')).toBe(false);
    expect(agent.approve({ agentId: agent.id, toolCallId: 'nope' })).toBe(false);
    expect(agent.approve('call_a')).toBe(true);
    expect(agent.approve('call_a')).toBe(false);
    expect(agent.deny('call_a')).toBe(false);
    const result = await running;
    expect(resultText(toolResults(result.messages)[0])).toBe('hi'); // the late deny changed nothing
    await agent.stop();
  });
});

describe('an approval nobody answers', () => {
  it('is denied after approvalTimeoutMs, with the reason the model sees', async () => {
    const model = scriptedModel([callEcho, { text: 'ok, not run' }]);
    const agent = createAgent({ model, tools: [echo], policy: () => 'ask', approvalTimeoutMs: 20 });
    const result = await agent.prompt('go');
    const [denied] = toolResults(result.messages);
    expect(denied?.isError).toBe(true);
    expect(resultText(denied)).toBe('The user denied this tool call: no answer within 20 ms');
    expect(result.text).toBe('ok, not run');
    expect(agent.deny('call_a')).toBe(false);
    await agent.stop();
  });

  it('is answered normally when the answer comes first, even from inside the approval_requested listener', async () => {
    const agent = createAgent({
      model: scriptedModel([callEcho, { text: 'done' }]),
      tools: [echo],
      policy: () => 'ask',
      approvalTimeoutMs: 60_000,
    });
    agent.on('approval_requested', (e) => agent.approve(e.toolCallId));
    const result = await agent.prompt('go');
    expect(resultText(toolResults(result.messages)[0])).toBe('hi');
    expect(agent.deny('call_a')).toBe(false); // answered: the timeout has nothing left to deny
    await agent.stop();
  });

  it('without a timeout, a process that exits while a call waits says so on stderr', () => {
    const script = `
      import { createAgent, defineTool, scriptedModel } from './src/index.ts';
      import { z } from 'zod';
      const echo = defineTool({ name: 'echo', description: 'e', schema: z.object({}), execute: () => 'x' });
      const agent = createAgent({
        model: scriptedModel([{ toolCalls: [{ name: 'echo', id: 'call_w', args: {} }] }]),
        tools: [echo],
        policy: () => 'ask',
      });
      await agent.prompt('go');
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(child.stderr).toMatch(
      /\[troupe\] the process is exiting while 1 tool call\(s\) wait for approval: call_w \(agent agent_[\w-]+\)/,
    );
    expect(child.status).toBe(13); // Node's code for a top-level await that never settled
  });
});

describe('steer()', () => {
  it('on an idle agent starts a turn with the message, which keeps its place before a prompt sent after it', async () => {
    const model = scriptedModel([{ text: 'answer to the steer' }, { text: 'answer to the prompt' }]);
    const agent = createAgent({ model });
    const ends = [] as string[];
    agent.on('turn_end', (e) => ends.push(e.stopReason));
    agent.steer('use metric units');
    const result = await agent.prompt('how far is Lisbon?');
    expect(agent.messages.map((m) => [m.role, textOf(m)])).toEqual([
      ['user', 'use metric units'],
      ['assistant', 'answer to the steer'],
      ['user', 'how far is Lisbon?'],
      ['assistant', 'answer to the prompt'],
    ]);
    expect(agent.messages[0]).toMatchObject({ source: 'steer' });
    expect(result.text).toBe('answer to the prompt');
    expect(ends).toEqual(['completed', 'completed']);
    await agent.stop();
  });
});

describe('prompt({ signal })', () => {
  it('removes its abort listener when the turn ends', async () => {
    const controller = new AbortController();
    const agent = createAgent({ model: scriptedModel([{ text: 'a' }, { text: 'b' }, { text: 'c' }]) });
    for (let i = 0; i < 3; i++) await agent.prompt('go', { signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    await agent.stop();
  });
});
