/**
 * `troupe inspect <session>`: the inspector opens a recorded session by its id in the sessions folder or by its
 * journal file, lists the store's other sessions, and can fork (a JSONL folder's sessions resume as `troupe
 * resume` does); a session that is not there is a usage error, and no server is left running.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { createAgent, scriptedModel, sessions } from '../../src/index.js';
import { harness } from './harness.js';

let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-inspect-session-'));
  const manager = sessions({ dir: join(dir, 'sessions') });
  const session = manager.create({ id: 'day', agentId: 'root' });
  const agent = createAgent({ model: scriptedModel([{ text: 'hi' }]), session });
  await agent.prompt('hello');
  await session.idle();
  session.close();
  await agent.stop();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function inspect(args: string[]) {
  const h = harness(dir);
  const lines: string[] = [];
  const saved = process.exitCode;
  try {
    const server = await main(['inspect', ...args], (line) => lines.push(line), h.io);
    return { server, lines, err: h.err, code: process.exitCode };
  } finally {
    process.exitCode = saved;
  }
}

describe('troupe inspect <session>', () => {
  it.each([
    ['its id in the sessions folder', ['day', '--sessions-dir', 'sessions']],
    ['its journal file', [join('sessions', 'day.jsonl')]],
  ])('opens a session by %s, with its store listed and forks possible', async (_how, args) => {
    const { server, lines } = await inspect(args);
    if (!server) throw new Error(`no server: ${lines.join('\n')}`);
    try {
      const page = lines.find((line) => line.startsWith('Troupe inspector: open '));
      expect(page).toContain('&session=day');
      const listed = await fetch(`http://127.0.0.1:${server.port}/api/sessions?token=${server.token}`);
      const body = (await listed.json()) as { sessions: Array<{ id: string }>; open: string; canFork: boolean };
      expect(body).toMatchObject({ open: 'day', canFork: true });
      expect(body.sessions.map((s) => s.id)).toEqual(['day']);
    } finally {
      await server.close();
    }
  });

  it('a session that is not there is a usage error, and serves nothing', async () => {
    const { server, err, code } = await inspect(['nope', '--sessions-dir', 'sessions']);
    expect(server).toBeUndefined();
    expect(code).toBe(2);
    expect(err.join('\n')).toMatch(/no session "nope" in .*sessions/);
  });
});
