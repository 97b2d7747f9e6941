import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAgent, scriptedModel, sessions } from '../../src/index.js';
import { CorruptJournalError, JournalError, type JournalRecord } from '../../src/session/index.js';
import { cleanTempDirs, tempDir } from './helpers.js';
import { journalLines, recordSession } from './journal-fixture.js';

cleanTempDirs();

type Loose = Record<string, unknown> & JournalRecord;

/** Rewrites the first line `which` accepts with `change`; returns its index. */
function damage(dir: string, id: string, which: (record: Loose) => boolean, change: (record: Loose) => void): number {
  const lines = journalLines(dir, id);
  const at = lines.findIndex((line) => which(JSON.parse(line)));
  expect(at).toBeGreaterThan(0);
  const record = JSON.parse(lines[at] as string);
  change(record);
  lines[at] = JSON.stringify(record);
  writeFileSync(join(dir, `${id}.jsonl`), `${lines.join('\n')}\n`);
  return at;
}

const msg = (role: string) => (r: Loose) => r.k === 'msg' && (r.m as { role?: string }).role === role;

// Records of the right kind whose fields have the wrong type: each once threw a raw TypeError from deep in a
// restore, or (a message index as a string) opened the session with none of its 12 messages.
const cases: Array<[string, (record: Loose) => boolean, (record: Loose) => void, RegExp]> = [
  ['a message index that is a string', (r) => r.k === 'msg' && r.i === 3, (r) => Object.assign(r, { i: '3' }), /i/],
  ['a tool message whose content is a string', msg('tool'), (r) => Object.assign(r.m as object, { content: 'x' }), /m/],
  ['an answer whose content is a number', msg('assistant'), (r) => Object.assign(r.m as object, { content: 5 }), /m/],
  ['a message that is a string', msg('assistant'), (r) => Object.assign(r, { m: 'hello' }), /m/],
  [
    "an input whose message's content is a string",
    (r) => r.k === 'input',
    (r) => Object.assign(r, { messages: [{ role: 'user', content: 'task' }] }),
    /messages/,
  ],
  ['a tool result that is a string', (r) => r.k === 'tool_end', (r) => Object.assign(r, { result: 'x' }), /result/],
  [
    'a snapshot whose queue is a string',
    (r) => r.k === 'snapshot',
    (r) => Object.assign((r.snapshot as { context: object }).context, { queue: 'q' }),
    /snapshot\.context\.queue/,
  ],
  ['a turn end whose usage is a string', (r) => r.k === 'turn_end', (r) => Object.assign(r, { usage: 'u' }), /usage/],
  ['a run flag that is a number', (r) => r.k === 'run', (r) => Object.assign(r, { running: 1 }), /running/],
];

describe('a journal with a record of the wrong shape', () => {
  it.each(cases)(
    '%s: opening, replaying and listing name its line with the typed error',
    async (_, which, change, field) => {
      const dir = tempDir();
      const manager = sessions({ dir, onWarning: () => {} });
      await recordSession(dir, 's', manager);
      const at = damage(dir, 's', which, change);
      const refused = (run: () => unknown) => {
        try {
          run();
        } catch (error) {
          return error;
        }
        return undefined;
      };
      for (const error of [refused(() => manager.open('s')), refused(() => manager.fork('s', { atSeq: 99 }))]) {
        expect(error).toBeInstanceOf(CorruptJournalError);
        expect((error as CorruptJournalError).index).toBe(at);
        expect((error as Error).message).toContain(`record ${at + 1} is corrupt`);
        expect((error as Error).message).toMatch(field);
      }
      await expect(manager.replay('s', { tools: [] })).rejects.toBeInstanceOf(CorruptJournalError);
    },
  );

  it('refuses a history with a hole (a message record missing) instead of opening it shorter', async () => {
    const dir = tempDir();
    const manager = sessions({ dir, onWarning: () => {} });
    await recordSession(dir, 's', manager);
    const lines = journalLines(dir, 's').filter((line) => !/"k":"msg".*"i":5,/.test(line));
    writeFileSync(join(dir, 's.jsonl'), `${lines.join('\n')}\n`);
    expect(() => manager.open('s')).toThrow(JournalError);
    expect(() => manager.open('s')).toThrow('holds message 11 but not 5');
  });

  it('opens the undamaged journal whole, and resumes it', async () => {
    const dir = tempDir();
    const manager = sessions({ dir });
    const { agentMessages } = await recordSession(dir, 's', manager);
    const session = manager.open('s');
    const agent = createAgent({ id: 'root', model: scriptedModel([{ text: 'again' }]), session });
    expect(agent.messages).toHaveLength(agentMessages);
    await agent.stop();
    session.close();
  });
});
