/** The offline inspector's doors: loopback only, the token everywhere, the page's own origin for pages. */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { z } from 'zod';
import { runDemo } from '../../src/cli/demo.js';
import { main } from '../../src/cli/main.js';
import { connectInspector, createAgent, defineTool, scriptedModel, startInspectorServer } from '../../src/index.js';
import type { InspectorServer } from '../../src/inspect/server.js';
import { latch } from '../agent/helpers.js';

function get(port: number, path: string, host = `127.0.0.1:${port}`) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a socket; resolves with the first message, or with the HTTP status that refused it. */
function socket(url: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; ws?: WebSocket; first?: string }>((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.once('unexpected-response', (_req, res) => resolve({ status: res.statusCode ?? 0 }));
    ws.once('message', (data) => resolve({ status: 101, ws, first: data.toString() }));
    ws.once('error', () => resolve({ status: 0 }));
  });
}

describe('inspector server', () => {
  let server: InspectorServer;
  let base: string;
  let origin: string;
  beforeAll(async () => {
    server = await startInspectorServer({ token: 'test-token' });
    base = `ws://127.0.0.1:${server.port}`;
    origin = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => server.close());

  it('serves the page only with the token, with a self-only content policy', async () => {
    expect((await get(server.port, '/')).status).toBe(403);
    expect((await get(server.port, '/?token=wrong')).status).toBe(403);
    const page = await get(server.port, '/?token=test-token');
    expect(page.status).toBe(200);
    expect(page.body).toContain('/vendor/elk.bundled.js');
    expect(page.headers['content-security-policy']).toContain("default-src 'none'; script-src 'self'");
    expect(page.body).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/);
    const elk = await get(server.port, '/vendor/elk.bundled.js');
    expect(elk.status).toBe(200);
    expect(elk.body.length).toBeGreaterThan(100_000);
    expect((await get(server.port, '/app.js')).status).toBe(200);
    expect((await get(server.port, '/nothing')).status).toBe(404);
    expect((await get(server.port, '/favicon.ico')).status).toBe(204);
  });

  it('refuses a request addressed to another host name (DNS rebinding)', async () => {
    expect((await get(server.port, '/?token=test-token', `evil.example:${server.port}`)).status).toBe(421);
  });

  it('lets a page in from its own origin only, and programs only without a browser origin', async () => {
    expect((await socket(`${base}/ui?token=test-token`)).status).toBe(403);
    expect((await socket(`${base}/ui?token=test-token`, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await socket(`${base}/ui?token=nope`, { origin })).status).toBe(403);
    const page = await socket(`${base}/ui?token=test-token`, { origin });
    expect(page.status).toBe(101);
    expect(JSON.parse(page.first ?? '{}').type).toBe('hello');
    page.ws?.close();
    expect((await socket(`${base}/control?token=test-token&run=r1`, { origin })).status).toBe(403);
    expect((await socket(`${base}/inspect?token=nope&run=r1`)).status).toBe(403);
    expect((await socket(`${base}/control?token=test-token`)).status).toBe(400);
    expect((await socket(`${base}/elsewhere?token=test-token`)).status).toBe(404);
  });

  it('listens on loopback only', async () => {
    await expect(startInspectorServer({ host: '0.0.0.0' })).rejects.toThrow(/loopback/);
    await expect(connectInspector({ url: 'ws://192.0.2.1:9/?token=x' })).rejects.toThrow(/loopback/);
    await expect(connectInspector({ url: `ws://127.0.0.1:${server.port}/?token=wrong` })).rejects.toThrow(/refused/);
  });

  it('routes a page command to the right run, applies it to the awaiting agent, and acks it', async () => {
    const connection = await connectInspector({ url: server.connectUrl, runId: 'routed' });
    const page = await socket(`${base}/ui?token=test-token`, { origin });
    const ws = page.ws as WebSocket;
    const messages: Array<Record<string, unknown>> = [];
    const acks = new Map<string, ReturnType<typeof latch<Record<string, unknown>>>>();
    const ackFor = (id: string) => {
      let l = acks.get(id);
      if (!l) {
        l = latch<Record<string, unknown>>();
        acks.set(id, l);
      }
      return l;
    };
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Record<string, unknown>;
      messages.push(message);
      if (message.type === 'ack') ackFor(String(message.id)).resolve(message);
    });
    const send = (id: string, run: string, sessionId: string, command: string, toolCallId: string) =>
      ws.send(JSON.stringify({ type: 'command', id, run, sessionId, command, toolCallId }));

    const tool = defineTool({ name: 'rm', description: 'removes', schema: z.object({}), execute: () => 'gone' });
    const agent = createAgent({
      id: 'cleaner',
      model: scriptedModel([{ toolCalls: [{ name: 'rm', id: 'call_rm' }] }, { text: 'done' }]),
      tools: [tool],
      policy: () => 'ask',
      inspect: connection.inspect,
    });
    const asked = latch();
    agent.on('approval_requested', () => asked.resolve());
    const result = agent.prompt('clean up');
    await asked.promise;
    const sessionId = agent.actor.sessionId;

    send('a1', 'nobody', sessionId, 'APPROVE', 'call_rm');
    expect(await ackFor('a1').promise).toMatchObject({ ok: false, error: 'run not connected' });
    send('a2', 'routed', 'x:999', 'APPROVE', 'call_rm');
    expect(await ackFor('a2').promise).toMatchObject({ ok: false, error: 'no such actor in this run' });
    send('a3', 'routed', sessionId, 'APPROVE', 'call_other');
    expect(await ackFor('a3').promise).toMatchObject({ ok: false, error: 'that call is not awaiting approval' });
    ws.send('not json');
    ws.send(JSON.stringify({ type: 'command', id: 'a4', run: 'routed', sessionId, command: 'STOP', toolCallId: 'x' }));
    send('a5', 'routed', sessionId, 'APPROVE', 'call_rm');
    expect(await ackFor('a5').promise).toMatchObject({ ok: true, run: 'routed' });
    expect((await result).text).toBe('done');
    expect(acks.has('a4')).toBe(false);
    expect(messages.some((m) => m.type === 'frame' && m.run === 'routed')).toBe(true);
    expect(JSON.parse(page.first ?? '{}').runs).toContainEqual({ run: 'routed', connected: true });
    await agent.stop();
    ws.close();
    await connection.close();
  });

  it('`troupe inspect --demo` runs an offline swarm against the inspector', async () => {
    const lines: string[] = [];
    const text = await runDemo({ url: server.connectUrl, autoApprove: true, log: (line) => lines.push(line) });
    expect(text).toContain('All three documents are settled');
    expect(lines.at(-1)).toMatch(/^lead: /);
  });

  it('`troupe inspect` prints the page and the connect url, and `troupe` alone prints its usage', async () => {
    const lines: string[] = [];
    const started = await main(['inspect', '--port', '0'], (line) => lines.push(line));
    expect(lines[0]).toMatch(/^Troupe inspector: open http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    expect(lines[1]).toMatch(/^Connect a program with: TROUPE_INSPECT='ws:\/\/127\.0\.0\.1:\d+\/\?token=/);
    await started?.close();
    const usage: string[] = [];
    expect(await main([], (line) => usage.push(line))).toBeUndefined();
    expect(usage[0]).toMatch(/^Usage: troupe <command>/);
    expect(await main(['inspect', '--help'], (line) => usage.push(line))).toBeUndefined();
    const saved = process.exitCode;
    await main(['frobnicate'], () => {});
    expect(process.exitCode).toBe(2);
    process.exitCode = saved;
  });
});
