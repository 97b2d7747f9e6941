import { cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentEvent,
  createAgent,
  defineTool,
  type ModelRequest,
  scriptedModel,
  sessions,
  textOf,
} from '../../src/index.js';
import type { ScriptedAnswer } from '../../src/providers/index.js';
import { latch, resultText, toolResults } from '../agent/helpers.js';
import { cleanTempDirs, tempDir } from '../session/helpers.js';

cleanTempDirs();

/**
 * What a `kill -9` now would leave, files of the sessions' folders included (results saved to files), without the
 * locks of the process that is gone.
 */
function crashCopyAll(dir: string): string {
  const copy = tempDir();
  cpSync(dir, copy, { recursive: true, filter: (path) => !path.endsWith('.lock') });
  return copy;
}

const isSummary = (request: ModelRequest) => request.system?.startsWith('You are compacting') === true;
const toolCount = (request: ModelRequest) => request.messages.filter((m) => m.role === 'tool').length;
const numbered = (lines: number) => Array.from({ length: lines }, (_, i) => `line ${i + 1} of the log`).join('\n');

describe('after a resume', () => {
  it("a result saved to a file is in the session's folder, and read_result reads it in the resumed process", async () => {
    const dir = tempDir();
    const dump = defineTool({
      name: 'dump',
      description: 'dumps the log',
      schema: z.object({}),
      execute: () => numbered(3_000),
    });
    const config = { tools: [dump], toolResults: { maxChars: 2_000 } };
    const session = sessions({ dir }).create({ id: 's1', agentId: 'main' });
    const first = scriptedModel([{ toolCalls: [{ id: 'dump_1', name: 'dump' }] }, { text: 'saved' }]);
    const agent = createAgent({ ...config, model: first, session });
    await agent.prompt('dump the log');
    // Not a temporary folder: the session's own, per agent.
    const saved = join(dir, 's1', 'tool-results', 'main', 'dump_1.txt');
    expect(existsSync(saved)).toBe(true);
    session.close();
    await agent.stop();

    const copy = crashCopyAll(dir);
    const reopened = sessions({ dir: copy }).open('s1');
    const next = scriptedModel([
      { toolCalls: [{ id: 'read_1', name: 'read_result', args: { id: 'dump_1', pattern: '^line 2999 ' } }] },
      { text: 'found it' },
    ]);
    const resumed = createAgent({ ...config, model: next, session: reopened });
    const result = await resumed.prompt('find line 2999');
    // The resumed agent has read_result from its first request, and it reads the copy in the session's folder.
    expect(next.requests[0]?.tools?.map((t) => t.name)).toContain('read_result');
    const [read] = toolResults(result.messages);
    expect(read?.isError).toBe(false);
    expect(resultText(read)).toBe('2999: line 2999 of the log');
    reopened.close();
    await resumed.stop();

    // A fork holds its own copy; deleting a session deletes its folder.
    const manager = sessions({ dir: copy });
    manager.fork('s1', { atSeq: Number.MAX_SAFE_INTEGER, id: 'f1' }).close();
    expect(existsSync(join(copy, 'f1', 'tool-results', 'main', 'dump_1.txt'))).toBe(true);
    manager.delete('s1');
    expect(readdirSync(copy).filter((name) => name.startsWith('s1'))).toEqual([]);
  });

  it('the repetition ladder counts the calls the turn made before the restart', async () => {
    const dir = tempDir();
    let runs = 0;
    let steer = () => {};
    const read = defineTool({
      name: 'read',
      description: 'reads',
      schema: z.object({ path: z.string() }),
      execute: () => {
        // A steer after the second call: the journal snapshots the next step, so a resume starts there with two
        // calls in its stored history and replays the third and fourth from the journal.
        if (++runs === 2) steer();
        return 'the same content';
      },
    });
    const config = { tools: [read], maxSteps: 50 };
    const stuck = (request: ModelRequest): ScriptedAnswer => ({
      toolCalls: [{ id: `read_${toolCount(request) + 1}`, name: 'read', args: { path: 'a.txt' } }],
    });
    const hang = latch<ScriptedAnswer>();
    const reachedFifth = latch();
    // Four identical calls ran (a note at the third); the process dies while the model is asked for the fifth.
    const first = scriptedModel((request) => {
      if (toolCount(request) < 4) return stuck(request);
      reachedFifth.resolve();
      return hang.promise;
    });
    const session = sessions({ dir }).create({ id: 'r1', agentId: 'main' });
    const agent = createAgent({ ...config, model: first, session });
    steer = () => agent.steer('keep going');
    const before: AgentEvent[] = [];
    agent.on('tool_repetition', (event) => before.push(event));
    void agent.prompt('read a.txt');
    await reachedFifth.promise;
    expect(before.map((e) => (e.type === 'tool_repetition' ? e.count : 0))).toEqual([3]);
    const copy = crashCopyAll(dir);
    session.close();
    await agent.stop();

    const reopened = sessions({ dir: copy }).open('r1');
    expect(reopened.status).toBe('interrupted');
    const next = scriptedModel(stuck);
    const resumed = createAgent({ ...config, model: next, session: reopened });
    const after: AgentEvent[] = [];
    resumed.on('tool_repetition', (event) => after.push(event));
    const ended = new Promise<AgentEvent>((resolve) => resumed.on('turn_end', resolve));
    await reopened.idle();
    const end = await ended;
    // The stored calls count, the replayed ones count (the third's note is heard again), and the fifth call is the
    // fifth of the turn: warned at 5, told to finish at 8, stopped at 12, as without a restart.
    expect(after.map((e) => (e.type === 'tool_repetition' ? `${e.level}@${e.count}` : ''))).toEqual([
      'note@3',
      'warn@5',
      'finish@8',
      'stop@12',
    ]);
    expect(end.type === 'turn_end' && end.stopReason).toBe('repetition');
    expect(next.calls).toBe(8);
    reopened.close();
    await resumed.stop();
  });

  it("a subagent's replay sends the view its compaction made before the restart, with no new summary", async () => {
    const dir = tempDir();
    const big = defineTool({
      name: 'big',
      description: 'a large read',
      schema: z.object({}),
      safeToRepeat: true,
      execute: () => 'word '.repeat(500),
    });
    const isChild = (request: ModelRequest) =>
      request.messages.some((m) => m.role === 'user' && textOf(m).includes('read the big files'));
    const compacted = (request: ModelRequest) =>
      request.messages.some((m) => m.role === 'user' && m.source === 'compaction');
    const root = (request: ModelRequest): ScriptedAnswer =>
      toolCount(request) === 0
        ? { toolCalls: [{ id: 'spawn', name: 'agent', args: { prompt: 'read the big files' } }] }
        : { text: 'root done' };
    const hang = latch<ScriptedAnswer>();
    let hung: ModelRequest | undefined;
    const reachedHang = latch();
    // The child reads until its window compacts, reads once more, and the process dies at its next request.
    const first = scriptedModel((request) => {
      if (isSummary(request)) return { text: 'I read the big files; nothing in them yet.' };
      if (!isChild(request)) return root(request);
      const readAfter = request.messages.some((m) => m.role === 'tool' && m.content[0]?.toolCallId === 'big_after');
      if (readAfter) {
        hung = request;
        reachedHang.resolve();
        return hang.promise;
      }
      return { toolCalls: [{ id: compacted(request) ? 'big_after' : `big_${request.messages.length}`, name: 'big' }] };
    });
    const config = { tools: [big], context: { contextWindow: 4_000 }, subagents: {} };
    const session = sessions({ dir }).create({ id: 't1', agentId: 'main' });
    const agent = createAgent({ ...config, model: first, session });
    void agent.prompt('go');
    await reachedHang.promise;
    expect(first.requests.filter(isSummary)).toHaveLength(1);
    const copy = crashCopyAll(dir);
    session.close();
    await agent.stop();

    const reopened = sessions({ dir: copy }).open('t1');
    const next = scriptedModel((request) => {
      if (isSummary(request)) return { text: 'a new summary' };
      return isChild(request) ? { text: 'child done' } : root(request);
    });
    const resumed = createAgent({ ...config, model: next, session: reopened });
    const compactions: AgentEvent[] = [];
    resumed.on('compaction_start', (event) => compactions.push(event), { subtree: true });
    await reopened.idle();
    const childRequests = next.requests.filter(isChild);
    // The child's first live request is the one the restart cut off: the note and the tail, not its whole history.
    expect(childRequests[0]?.messages).toEqual(hung?.messages);
    expect(next.requests.filter(isSummary)).toHaveLength(0);
    expect(compactions).toHaveLength(0);
    expect(resumed.messages.at(-1)).toMatchObject({
      role: 'assistant',
      content: [{ type: 'text', text: 'root done' }],
    });
    reopened.close();
    await resumed.stop();
  });
});
