import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentSettings } from '../../src/runtime/agent/config.js';
import { scriptedModel } from '../../src/testing/index.js';

// One key order for every config gives every agent's settings one hidden class: the one the kept specimen agent's
// settings hold, so a collection with no agent alive does not free it (src/runtime/agent/specimens.ts).
describe('agent settings', () => {
  it('have the same keys in the same order whatever options a config sets', () => {
    const model = scriptedModel([]);
    const plain = agentSettings({ model });
    const full = agentSettings({
      model,
      approvalTimeoutMs: 1000,
      hooks: { afterToolCall: () => undefined },
      outputSchema: z.object({ answer: z.string() }),
      context: { contextWindow: 1000 },
      toolResults: { maxChars: 100 },
      budget: { tokens: 10 },
      maxTokens: 10,
    });
    expect(Object.keys(full)).toEqual(Object.keys(plain));
    expect(full.budget).toEqual({ tokens: 10 });
    expect(plain.budget).toBeUndefined();
  });
});
