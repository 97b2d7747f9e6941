import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAgent, type ModelRequest, scriptedModel, sessions, textOf } from '../../src/index.js';
import { cleanTempDirs, tempDir } from '../session/helpers.js';

afterAll(cleanTempDirs);

const big = 'word '.repeat(500);
const isSummary = (request: ModelRequest) => request.system?.startsWith('You are compacting') === true;

describe('a compaction is journaled', () => {
  it('a resumed session sends what the projection made, not the uncompacted history', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const model = scriptedModel((request) =>
      isSummary(request) ? { text: 'I answered questions 0 to 6 about words.' } : { text: `answer ${big}` },
    );
    const context = { contextWindow: 4_000 };
    const agent = createAgent({ model, session, context });
    for (let i = 0; i < 7; i++) await agent.prompt(`question ${i} ${big}`);
    expect(agent.getState().context.compactions).toBeGreaterThan(0);
    const live = model.requests.filter((r) => !isSummary(r)).at(-1) as ModelRequest;
    session.close();
    await agent.stop();

    const lines = readFileSync(join(dir, `${session.id}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const records = lines.filter((r) => r.k === 'compaction');
    expect(records.length).toBe(agent.getState().context.compactions);
    expect(records.at(-1)).toMatchObject({ first: 0, note: { role: 'user', source: 'compaction' } });
    expect(textOf(records.at(-1).note)).toContain('I answered questions 0 to 6');

    const reopened = sessions({ dir }).open(session.id);
    const next = scriptedModel((request) => (isSummary(request) ? { text: 'unused' } : { text: 'short answer' }));
    const resumed = createAgent({ model: next, session: reopened, context });
    expect(resumed.messages.length).toBe(14);
    await resumed.prompt('question 7');
    const sent = next.requests[0] as ModelRequest;
    // The same view as before the restart, plus the new prompt: the note, not the 14 stored messages.
    expect(sent.messages.slice(0, live.messages.length)).toEqual(live.messages);
    expect(sent.messages.length).toBe(live.messages.length + 2);
    expect(sent.messages.length).toBeLessThan(14);
    expect(sent.messages.some((m) => m.role === 'user' && m.source === 'compaction')).toBe(true);
    expect(textOf(sent.messages[0] as never)).toContain('question 0');
    reopened.close();
    await resumed.stop();
  });
});
