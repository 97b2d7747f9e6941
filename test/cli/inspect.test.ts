/**
 * `troupe run --inspect`: the run served to the offline inspector, and a question answered from its page (here a
 * socket speaking the page's protocol) instead of the terminal, which then stops asking.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startInspectorServer } from '../../src/inspect/server.js';
import { harness as harnessIn, runIn } from './harness.js';
import { sampleCopy } from './helpers.js';

let dir: string;
const harness = (options: Parameters<typeof harnessIn>[1] = {}) => harnessIn(dir, options);

beforeEach(async () => {
  dir = await sampleCopy();
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

interface Frame {
  type: string;
  run?: string;
  frame?: { sessionId?: string; snapshot?: { context?: { agentId?: string } } };
}

/** What a page does: read the frames so far, find the agent, send a command and wait for its ack. */
async function approveFromPage(pageUrl: string, agentId: string, toolCallId: string): Promise<Record<string, unknown>> {
  const page = new URL(pageUrl);
  const token = page.searchParams.get('token') ?? '';
  const { messages } = (await (await fetch(`${page.origin}/frames?token=${token}`)).json()) as { messages: Frame[] };
  const frame = messages.findLast((m) => m.type === 'frame' && m.frame?.snapshot?.context?.agentId === agentId);
  const ws = new WebSocket(`ws://${page.host}/ui?token=${token}`, { headers: { origin: page.origin } });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const ack = new Promise<Record<string, unknown>>((resolve) =>
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Record<string, unknown>;
      if (message.type === 'ack' && message.id === 'c1') resolve(message);
    }),
  );
  ws.send(
    JSON.stringify({
      type: 'command',
      id: 'c1',
      run: frame?.run,
      sessionId: frame?.frame?.sessionId,
      command: 'APPROVE',
      toolCallId,
    }),
  );
  try {
    return await ack;
  } finally {
    ws.close();
  }
}

describe('troupe run --inspect', () => {
  it('serves the inspector, prints its page first, and takes an approval from the page', async () => {
    const stdin = new PassThrough(); // a person who never types
    const h = harness({ stdin });
    const running = runIn(h, ['run', '--offline', '--inspect', 'Tell me about this project']);
    while (!h.out().includes('wants to run write_file')) await new Promise((r) => setTimeout(r, 20));
    const pageUrl = /^inspector: open (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)$/m.exec(h.out())?.[1] ?? '';
    expect(h.out().split('\n')[0]).toBe(`inspector: open ${pageUrl}`);
    expect(await approveFromPage(pageUrl, 'main', 'call_3')).toMatchObject({ ok: true });
    expect(await running).toBe(0);
    expect(h.out()).toContain(
      '? main wants to run write_file TROUPE_NOTES.md — [y]es / [n]o / [a]lways: answered elsewhere',
    );
    expect(await fs.readFile(path.join(dir, 'TROUPE_NOTES.md'), 'utf8')).toContain('# Notes on this folder');
    // The served inspector closes with the run.
    await expect(fetch(pageUrl)).rejects.toThrow();
    stdin.end();
  }, 60_000);

  it('joins an inspector already running (TROUPE_INSPECT, or --inspect=<url>), which keeps the run', async () => {
    const server = await startInspectorServer();
    try {
      const h = harness({ env: { TROUPE_INSPECT: server.connectUrl } });
      expect(await runIn(h, ['run', '--offline', '--mode', 'bypass', '--inspect', 'Run `true`'])).toBe(0);
      expect(h.out().split('\n')[0]).toBe(`inspector: streaming to 127.0.0.1:${server.port}`);
      const other = harness();
      expect(
        await runIn(other, ['run', '--offline', '--mode', 'bypass', `--inspect=${server.connectUrl}`, 'Run `true`']),
      ).toBe(0);
      const frames = await (await fetch(`http://127.0.0.1:${server.port}/frames?token=${server.token}`)).json();
      const runs = new Set((frames as { messages: Frame[] }).messages.flatMap((m) => (m.run ? [m.run] : [])));
      expect(runs.size).toBe(2);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('says in one line when the inspector cannot be reached', async () => {
    const h = harness();
    expect(await runIn(h, ['run', '--offline', '--inspect=ws://127.0.0.1:9/', 'Run `true`'])).toBe(2);
    expect(h.err).toHaveLength(1);
    expect(h.err[0]).toMatch(/^troupe run: --inspect: Cannot reach the inspector at 127\.0\.0\.1:9/);
  });
});
