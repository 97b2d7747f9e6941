/**
 * The recorded sessions' routes of the inspector server, behind its existing checks: the token on every request,
 * the Host header, and for a fork (the one request that writes) the page's own Origin. A damaged journal answers
 * with its typed error, a bad fork request with why, and neither writes anything.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, type SessionManager, scriptedModel, sessions, startInspectorServer } from '../../src/index.js';
import type { InspectorServer } from '../../src/inspect/server.js';
import { encodeRecord } from '../../src/session/index.js';

let dir: string;
let manager: SessionManager;
let server: InspectorServer;
const ran: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-sessions-api-'));
  manager = sessions({ dir });
  const session = manager.create({ id: 'one', agentId: 'root' });
  const agent = createAgent({ model: scriptedModel([{ text: 'hi' }]), session });
  await agent.prompt('hello');
  await session.idle();
  session.close();
  await agent.stop();
  const writer = manager.store.acquire('broken');
  await writer.append([encodeRecord({ k: 'session', v: 1, id: 'broken', agentId: 'r', t: 0 }), '{"k":"msg"}', '{}']);
  writer.release();
  server = await startInspectorServer({
    sessions: {
      manager,
      run: async (id) => {
        ran.push(id);
      },
    },
  });
});

afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

function call(
  path: string,
  options: { token?: string | null; method?: string; origin?: string; host?: string; body?: string } = {},
): Promise<{ status: number; body: string }> {
  const token = options.token === undefined ? server.token : options.token;
  const query = token === null ? '' : `${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.port,
        path: `${path}${query}`,
        method: options.method ?? 'GET',
        headers: {
          host: options.host ?? `127.0.0.1:${server.port}`,
          ...(options.origin ? { origin: options.origin } : {}),
          ...(options.body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const own = () => `http://127.0.0.1:${server.port}`;

describe('the recorded sessions routes', () => {
  it('list, open and read a moment with the token; refuse without it, or from another host', async () => {
    const listed = await call('/api/sessions');
    expect(listed.status).toBe(200);
    expect(
      JSON.parse(listed.body)
        .sessions.map((s: { id: string }) => s.id)
        .sort(),
    ).toEqual(['broken', 'one']);
    const timeline = JSON.parse((await call('/api/timeline?id=one')).body);
    expect(timeline.lanes).toEqual([{ agent: 'root', depth: 0 }]);
    expect(JSON.parse(timeline.definition).id).toBe('agent');
    const last = timeline.seqs.at(-1);
    const moment = JSON.parse((await call(`/api/moment?id=one&seq=${last}`)).body);
    expect(moment.agents[0]).toMatchObject({ id: 'root', state: 'idle', messageCount: 2 });
    expect(moment.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect((await call('/api/sessions', { token: null })).status).toBe(403);
    expect((await call('/api/sessions', { token: 'wrong' })).status).toBe(403);
    expect((await call('/api/sessions', { host: 'evil.example:80' })).status).toBe(421);
  });

  it('a damaged journal answers its typed error; an unknown one is not found', async () => {
    const damaged = await call('/api/timeline?id=broken');
    expect(damaged.status).toBe(422);
    expect(JSON.parse(damaged.body)).toMatchObject({
      kind: 'CorruptJournalError',
      error: expect.stringMatching(/corrupt/),
    });
    expect((await call('/api/timeline?id=nope')).status).toBe(404);
    expect((await call('/api/moment?id=one&seq=x')).status).toBe(400);
  });

  it('forks only for its own page, and only a request it understands; the source is left as it was', async () => {
    const before = manager.store.read('one');
    const body = JSON.stringify({ id: 'one', atSeq: 0, edit: { system: 'Be brief.' } });
    expect((await call('/api/fork', { method: 'POST', body })).status).toBe(403); // no Origin: not our page
    expect((await call('/api/fork', { method: 'POST', body, origin: 'http://evil.example' })).status).toBe(403);
    const bad = await call('/api/fork', { method: 'POST', origin: own(), body: JSON.stringify({ id: 'one' }) });
    expect(bad.status).toBe(400);
    const noCall = JSON.stringify({ id: 'one', atSeq: 0, edit: { toolResult: { id: 'nope', text: 'x' } } });
    const refused = await call('/api/fork', { method: 'POST', origin: own(), body: noCall });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).error).toMatch(/no tool call "nope"/);
    expect(ran).toEqual([]);
    const made = await call('/api/fork', { method: 'POST', origin: own(), body });
    expect(made.status).toBe(200);
    const { id } = JSON.parse(made.body);
    expect(ran).toEqual([id]);
    expect(manager.list().find((info) => info.id === id)?.forkOf).toEqual({
      id: 'one',
      atSeq: 0,
      edit: { system: 'Be brief.' },
    });
    expect(manager.store.read('one')).toEqual(before);
  });
});
