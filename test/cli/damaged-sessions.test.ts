/** One damaged journal beside good ones: every session command goes on working for the others. */
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, runIn } from './harness.js';
import { sampleCopy } from './helpers.js';

let dir: string;
const troupe = (argv: string[], input?: string) => {
  const h = harness(dir, input === undefined ? {} : { input });
  return runIn(h, argv).then((code) => ({ code, out: h.out(), err: h.err.join('\n') }));
};
const journal = (id: string) => path.join(dir, '.troupe', 'sessions', `${id}.jsonl`);

beforeEach(async () => {
  dir = await sampleCopy();
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('a damaged journal beside good ones', () => {
  it('is listed as damaged with its line, and never blocks sessions, resume, replay or a new run', async () => {
    for (const id of ['good', 'bad']) {
      expect(
        (await troupe(['run', '--offline', '--mode', 'bypass', `--session=${id}`, `Run \`echo ${id}\``])).code,
      ).toBe(0);
    }
    const lines = (await fs.readFile(journal('bad'), 'utf8')).split('\n');
    lines[2] = '{"k":"run","s":1,"a":"main","running":"yes","t":1}';
    await fs.writeFile(journal('bad'), lines.join('\n'));

    const list = await troupe(['sessions']);
    expect(list.code).toBe(0);
    expect(list.out).toMatch(/^good +idle +/m);
    expect(list.out).toMatch(/^bad +damaged +/m);
    expect(list.out).toMatch(
      /^bad is damaged: Session "bad": record 3 is corrupt \(a "run" record whose running is wrong/m,
    );
    const json = (await troupe(['sessions', '--json'])).out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(json.find((info) => info.id === 'bad')).toMatchObject({
      status: 'damaged',
      damage: expect.stringContaining('record 3'),
    });
    expect(json.find((info) => info.id === 'good')).toMatchObject({ status: 'idle', messages: 4 });

    expect((await troupe(['resume', 'good', 'Run `echo again`'])).code).toBe(0);
    expect((await troupe(['replay', 'good'])).code).toBe(0);
    expect((await troupe(['run', '--offline', '--mode', 'bypass', '--session=new', 'Run `echo new`'])).code).toBe(0);
    const after = await troupe(['sessions', '--json']);
    expect(
      after.out
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).status)
        .sort(),
    ).toEqual(['damaged', 'idle', 'idle']);

    // The damaged one itself is refused with the typed error's words, in one line.
    const resumed = await troupe(['resume', 'bad']);
    expect(resumed.code).toBe(2);
    expect(resumed.err).toContain('record 3 is corrupt');
  });
});
