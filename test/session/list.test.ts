import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgent, defineTool, scriptedModel, sessions } from '../../src/index.js';
import { JsonlStore, type Store } from '../../src/session/index.js';
import { latch } from '../agent/helpers.js';
import { byHistory, cleanTempDirs, crashCopy, tempDir } from './helpers.js';

cleanTempDirs();

/** The store as it is, counting whole reads of a journal; `indexed: false` hides its indexes (the old listing). */
function counting(store: Store, indexed: boolean): Store & { reads: number } {
  const wrapped = {
    reads: 0,
    list: () => store.list(),
    read: (id: string) => {
      wrapped.reads++;
      return store.read(id);
    },
    acquire: (id: string) => store.acquire(id),
    isLocked: (id: string) => store.isLocked(id),
    remove: (id: string) => store.remove(id),
    ...(indexed && store.readIndexed ? { readIndexed: (id: string) => store.readIndexed?.(id) } : {}),
  };
  return wrapped;
}

describe('sessions: list() from indexes', () => {
  it('lists a crashed long session from its index and the records after it, as reading it whole would', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const last = latch();
    const hang = latch();
    // Each result is ~6 KB: the journal passes the index's 64 KB mark twice during the turn.
    const fetch = defineTool({
      name: 'fetch',
      description: 'f',
      schema: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        if (n === 30) {
          last.resolve();
          await hang.promise;
        }
        return `page ${n}: ${'x'.repeat(6000)}`;
      },
    });
    const steps = Array.from({ length: 30 }, (_, i) => ({
      toolCalls: [{ name: 'fetch', args: { n: i + 1 } }],
      usage: { input: 100, output: 10 },
    }));
    const agent = createAgent({
      model: scriptedModel(byHistory([...steps, { text: 'done' }])),
      tools: [fetch],
      session,
      maxSteps: 40,
    });
    void agent.prompt('Read thirty pages and sum them up');
    await last.promise;
    const crashed = crashCopy(dir); // killed during the 30th call, long after the last index was saved
    session.close();
    await agent.stop();
    expect(readdirSync(crashed).some((name) => name.endsWith('.index'))).toBe(true);

    const store = new JsonlStore(crashed);
    const fromIndex = counting(store, true);
    const whole = counting(store, false);
    const listed = sessions({ store: fromIndex }).list();
    expect(fromIndex.reads).toBe(0); // nothing read whole
    expect(listed).toEqual(sessions({ store: whole }).list());
    expect(whole.reads).toBe(1);
    expect(listed).toMatchObject([
      {
        id: session.id,
        title: 'Read thirty pages and sum them up',
        status: 'interrupted',
        messages: 60, // the prompt, 29 answers with their results, the 30th answer
      },
    ]);
    expect(listed[0]?.usage).toMatchObject({ input: 3000, output: 300 }); // the 30 answers journaled

    // Reopened, finished and closed: the index saved on closing says idle, with the whole history.
    const reopened = sessions({ dir: crashed }).open(session.id);
    const resumed = createAgent({
      model: scriptedModel(byHistory([...steps, { text: 'done' }])),
      tools: [fetch],
      session: reopened,
      maxSteps: 40,
    });
    hang.resolve();
    await reopened.idle();
    reopened.close();
    await resumed.stop();
    const after = counting(new JsonlStore(crashed), true);
    expect(sessions({ store: after }).list()).toMatchObject([
      { status: 'idle', messages: 62, usage: { input: 3000, output: 300 } },
    ]);
    expect(after.reads).toBe(0);
    expect(after.readIndexed?.(session.id)?.tail).toEqual([]);
  });
});
