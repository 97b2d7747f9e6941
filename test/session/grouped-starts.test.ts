import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createSupervisor, defineTool, type ModelRequest, scriptedModel, sessions } from '../../src/index.js';
import { expectValidHistory, taskOf } from '../agent/helpers.js';
import { cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

describe('sessions: tool starts of a tree at work are written together', () => {
  it('each tool runs only once its start is in the journal file, and one tick of starts is one write', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const journal = () => {
      const [file] = readdirSync(dir).filter((name) => name.endsWith('.jsonl'));
      return readFileSync(join(dir, file as string), 'utf8');
    };
    /** Per call: was its start in the file when it ran, and how many writes the session had made by then. */
    const seen = new Map<string, { stored: boolean; writes: number }>();
    const probe = defineTool({
      name: 'probe',
      description: 'p',
      schema: z.object({}),
      execute: (_args, ctx) => {
        const stored = journal()
          .trimEnd()
          .split('\n')
          .some((line) => {
            const record = JSON.parse(line) as { k: string; id?: string };
            return record.k === 'tool_start' && record.id === ctx.toolCallId;
          });
        seen.set(ctx.toolCallId, { stored, writes: session.stats?.writes ?? -1 });
        return 'probed';
      },
    });
    const model = scriptedModel((request: ModelRequest) =>
      request.messages.some((m) => m.role === 'tool')
        ? { text: `${taskOf(request)} done` }
        : { toolCalls: [{ id: `${taskOf(request)}_probe`, name: 'probe', args: {} }] },
    );
    const supervisor = createSupervisor({ model, tools: [probe], session });
    const results = await supervisor.swarm(['a', 'b', 'c', 'd']);
    expect(results.map((result) => result.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect([...seen.keys()].sort()).toEqual(['a_probe', 'b_probe', 'c_probe', 'd_probe']);
    for (const [id, { stored }] of seen) expect(stored, `${id}'s start was in the journal when it ran`).toBe(true);
    // Written one at a time, each start would be its own write and each tool would see a new count.
    const writes = new Set([...seen.values()].map((probe) => probe.writes));
    expect(writes.size).toBeLessThan(seen.size);
    for (const result of results) expectValidHistory(supervisor.messagesOf(result.agentId) ?? []);
    session.close();
    await supervisor.stop();
  });
});
