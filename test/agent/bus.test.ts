import { describe, expect, it } from 'vitest';
import { createAgent, scriptedModel } from '../../src/index.js';
import { record } from './helpers.js';

describe('the event bus', () => {
  it('publishes a streamed delta with the same fields, in the same order, as every other event', async () => {
    const agent = createAgent({ model: scriptedModel([{ text: 'abcdef', chunkSize: 3 }]) });
    const events = record(agent);
    await agent.prompt('go');
    const updates = events.filter((e) => e.type === 'message_update');
    expect(updates.map((e) => e.delta)).toEqual([
      { type: 'text', delta: 'abc' },
      { type: 'text', delta: 'def' },
    ]);
    const stepStart = events.find((e) => e.type === 'step_start');
    const head = ['seq', 'time', 'agentId', 'turn', 'step', 'type'];
    expect(Object.keys(stepStart ?? {})).toEqual(head);
    for (const update of updates) {
      expect(Object.keys(update)).toEqual([...head, 'delta']);
      expect(update).toMatchObject({ agentId: agent.id, turn: 1, step: 1 });
    }
    // seq increases across every kind of event, deltas included.
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    await agent.stop();
  });
});
