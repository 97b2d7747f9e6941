/**
 * A fork at a moment with an edit, on both stores: the edit is the fork's first fact (its header), the fork goes on
 * live from the edited moment, the source's records stay byte for byte what they were, and the list shows the fork
 * with its parent and point. An edit with nothing to change at the moment is refused with a typed error.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createAgent,
  defineTool,
  ForkEditError,
  type ModelRequest,
  type ScriptedAnswer,
  scriptedModel,
  sessions,
  textOf,
} from '../../src/index.js';
import { decodeRecord, encodeRecord, type JournalRecord, SqliteStore } from '../../src/session/index.js';
import { cleanTempDirs, tempDir } from './helpers.js';

cleanTempDirs();

const stores = [
  ['JSONL', (dir: string) => sessions({ dir })],
  ['SQLite', (dir: string) => sessions({ store: new SqliteStore(join(dir, 'sessions.db')) })],
] as const;

const weather = defineTool({
  name: 'weather',
  description: 'the weather',
  schema: z.object({}),
  execute: () => 'sunny',
});

/** Calls `weather` once a turn, then says what it saw: the answer tells which result the model was given. */
function script(request: ModelRequest): ScriptedAnswer {
  const last = request.messages.at(-1);
  if (last?.role === 'user')
    return { toolCalls: [{ id: `call_${request.messages.length}`, name: 'weather', args: {} }] };
  const seen = last?.role === 'tool' ? textOf({ role: 'user', content: last.content[0]?.content ?? [] }) : '';
  return { text: `it is ${seen}` };
}

const recordsOf = (sessionsOf: ReturnType<typeof sessions>, id: string): JournalRecord[] =>
  sessionsOf.store.read(id).flatMap((line) => decodeRecord(line) ?? []);

describe.each(stores)('sessions: fork at a moment with an edit (%s)', (_name, manager) => {
  async function record(dir: string) {
    const store = manager(dir);
    const session = store.create({ id: 'src', agentId: 'root' });
    const agent = createAgent({ model: scriptedModel(script), tools: [weather], session });
    const first = await agent.prompt('weather?');
    await session.idle();
    session.close();
    await agent.stop();
    expect(first.text).toBe('it is sunny');
    return store;
  }

  it('an edited tool result: the fork goes on live with it; the source is untouched', async () => {
    const dir = tempDir();
    const store = await record(dir);
    const before = store.store.read('src');
    const end = recordsOf(store, 'src').find((r) => r.k === 'tool_end');
    if (end?.k !== 'tool_end') throw new Error('the recording ran the tool');
    const edit = { toolResult: { id: end.id, text: 'raining' } };
    const fork = store.fork('src', { atSeq: end.s, id: 'what-if', edit });
    const agent = createAgent({ model: scriptedModel(script), tools: [weather], session: fork });
    await fork.idle();
    const answer = agent.messages.at(-1);
    expect(answer?.role === 'assistant' && textOf(answer)).toBe('it is raining');
    fork.close();
    await agent.stop();
    expect(store.store.read('src')).toEqual(before);
    expect(store.store.read('what-if')[0]).toContain('"edit"');
    expect(store.list().find((info) => info.id === 'what-if')?.forkOf).toEqual({ id: 'src', atSeq: end.s, edit });
  });

  it('an edited result of a call still running at the moment: seqs stay in order, the fork runs with it', async () => {
    const dir = tempDir();
    const store = await record(dir);
    const source = recordsOf(store, 'src');
    const start = source.find((r) => r.k === 'tool_start');
    if (start?.k !== 'tool_start') throw new Error('the recording ran the tool');
    const edit = { toolResult: { id: start.id, text: 'raining' } };
    // A journal where another agent wrote a later seq while the call ran: the edit's result must not go back.
    const cut = source.indexOf(start);
    const writer = store.store.acquire('mid');
    await writer.append(
      [...source.slice(0, cut + 1), { k: 'run', s: start.s + 1, a: 'sub', running: true, t: 0 } as const].map(
        encodeRecord,
      ),
    );
    writer.release();
    store.fork('mid', { atSeq: start.s + 1, id: 'mid-fork', edit }).close();
    const forked = recordsOf(store, 'mid-fork');
    expect(forked.at(-1)).toMatchObject({ k: 'tool_end', a: 'root', id: start.id });
    const seqs = forked.flatMap((r) => ('s' in r ? [r.s] : []));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    // Forked while the call runs, its edited result is what the fork goes on with.
    const fork = store.fork('src', { atSeq: start.s, id: 'running', edit });
    const agent = createAgent({ model: scriptedModel(script), tools: [weather], session: fork });
    await fork.idle();
    const answer = agent.messages.at(-1);
    expect(answer?.role === 'assistant' && textOf(answer)).toBe('it is raining');
    fork.close();
    await agent.stop();
  });

  it('an edited prompt that waited at the moment: the fork runs it instead', async () => {
    const dir = tempDir();
    const store = await record(dir);
    const before = store.store.read('src');
    const input = recordsOf(store, 'src').findIndex((r) => r.k === 'input');
    const run = recordsOf(store, 'src')[input + 1];
    if (run?.k !== 'run') throw new Error('the recording starts its run right after its input');
    const fork = store.fork('src', { atSeq: run.s - 1, id: 'asked-else', edit: { input: 'temperature?' } });
    const agent = createAgent({ model: scriptedModel(script), tools: [weather], session: fork });
    await fork.idle();
    expect(agent.messages[0] && textOf(agent.messages[0])).toBe('temperature?');
    expect(agent.messages.at(-1)?.role).toBe('assistant');
    fork.close();
    await agent.stop();
    expect(store.store.read('src')).toEqual(before);
  });

  it("an edited system prompt: the fork's agent is sent it, from the fork's first call on", async () => {
    const dir = tempDir();
    const store = await record(dir);
    const before = store.store.read('src');
    const input = recordsOf(store, 'src').findIndex((r) => r.k === 'input');
    const run = recordsOf(store, 'src')[input + 1];
    if (run?.k !== 'run') throw new Error('the recording starts its run right after its input');
    const edit = { system: 'You answer in French.' };
    const fork = store.fork('src', { atSeq: run.s - 1, id: 'french', edit });
    const systems: string[] = [];
    const model = scriptedModel((request) => {
      systems.push(request.system ?? '');
      return script(request);
    });
    const agent = createAgent({ model, system: 'You answer in English.', tools: [weather], session: fork });
    await fork.idle();
    fork.close();
    await agent.stop();
    expect(systems.length).toBeGreaterThan(0);
    expect(systems.every((system) => system.includes('French') && !system.includes('English'))).toBe(true);
    expect(store.store.read('src')).toEqual(before);
    expect(store.list().find((info) => info.id === 'french')?.forkOf).toEqual({ id: 'src', atSeq: run.s - 1, edit });
  });

  it("edits a subagent's call that shares its id with the root's; without agentId the edit is refused", async () => {
    const dir = tempDir();
    const store = await record(dir);
    const source = recordsOf(store, 'src');
    const end = source.find((r) => r.k === 'tool_end');
    if (end?.k !== 'tool_end') throw new Error('the recording ran the tool');
    const last = Math.max(...source.map((r) => ('s' in r ? r.s : 0)));
    // A subagent whose own call has the root's call id: ids are unique only within one agent.
    const sub: JournalRecord[] = [
      { k: 'tool_start', s: last + 1, a: 'sub', id: end.id, name: 'weather' },
      { k: 'tool_end', s: last + 2, a: 'sub', id: end.id, result: { ...end.result, content: [] } },
    ];
    const writer = store.store.acquire('two');
    await writer.append([...store.store.read('src'), ...sub.map(encodeRecord)]);
    writer.release();
    const edit = { toolResult: { id: end.id, agentId: 'sub', text: 'snow' } };
    const fork = store.fork('two', { atSeq: last + 2, id: 'sub-edit', edit });
    fork.close();
    const ends = recordsOf(store, 'sub-edit').filter((r) => r.k === 'tool_end');
    const textOfEnd = (a: string) => ends.find((r) => r.k === 'tool_end' && r.a === a);
    expect(textOfEnd('sub')).toMatchObject({
      result: { content: [{ type: 'text', text: 'snow' }] },
    });
    expect(textOfEnd('root')).toEqual(end);
    const unnamed = { toolResult: { id: end.id, text: 'snow' } };
    expect(() => store.fork('two', { atSeq: last + 2, id: 'unnamed', edit: unnamed })).toThrow(ForkEditError);
  });

  it('refuses an edit with nothing to change at the moment, writing no fork', async () => {
    const dir = tempDir();
    const store = await record(dir);
    const last = Math.max(...recordsOf(store, 'src').map((r) => ('s' in r ? r.s : 0)));
    expect(() => store.fork('src', { atSeq: last, id: 'x', edit: { input: 'again?' } })).toThrow(ForkEditError);
    expect(() => store.fork('src', { atSeq: last, id: 'y', edit: { toolResult: { id: 'nope', text: '' } } })).toThrow(
      /no tool call "nope"/,
    );
    expect(store.list().map((info) => info.id)).toEqual(['src']);
  });
});
