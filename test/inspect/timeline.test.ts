/// <reference lib="dom" />
/**
 * A recorded session in the inspector, in headless Chromium: a tree three levels deep with a background swarm, an
 * approval and a compaction, opened as a timeline. Scrubbed to five moments, the page shows what `momentAt` reads
 * from the journal: the agents that existed, each in its state, the selected agent's active states on its chart and
 * its messages as they stood. A fork made on the page with an edited tool result runs to its end as a new session
 * of the list. `TROUPE_SCREENSHOTS=1` also writes the timeline's pictures into docs/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SessionManager, sessions, startInspectorServer } from '../../src/index.js';
import type { InspectorServer } from '../../src/inspect/server.js';
import type { JsonValue } from '../../src/protocol/index.js';
import {
  decodeRecord,
  encodeRecord,
  type JournalRecord,
  momentAt,
  type SnapshotRecord,
} from '../../src/session/index.js';
import { missing } from '../helpers/requires.js';
import { launchChromium } from './browser.js';
import { recordTree, runFork } from './recorded.js';

const docs = join(import.meta.dirname, '..', '..', 'docs');
const recordsOf = (manager: SessionManager, id: string): JournalRecord[] =>
  manager.store.read(id).flatMap((line) => decodeRecord(line) ?? []);

/** `running.turn.step`, as the page writes a state (parallel regions joined by commas). */
function statePath(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return Object.entries(value as Record<string, unknown>)
    .map(([key, sub]) => (statePath(sub) ? `${key}.${statePath(sub)}` : key))
    .join(', ');
}

function activePaths(value: unknown, prefix: string[] = [], out = new Set<string>()): Set<string> {
  if (typeof value === 'string') return out.add([...prefix, value].join('.'));
  if (value === null || typeof value !== 'object') return out;
  for (const [key, sub] of Object.entries(value)) {
    out.add([...prefix, key].join('.'));
    activePaths(sub, [...prefix, key], out);
  }
  return out;
}

/** Moves the scrubber as a person drags it: its positions are the session's seqs in order. */
async function scrubTo(page: Page, records: JournalRecord[], seq: number) {
  const index = seqsOf(records).indexOf(seq);
  expect(index, `#${seq} is a moment`).toBeGreaterThanOrEqual(0);
  await page.locator('[data-testid="scrubber"]').evaluate((scrubber: HTMLInputElement, i) => {
    scrubber.value = String(i);
    scrubber.dispatchEvent(new Event('input'));
  }, index);
  await untilAt(page, seq);
}

const seqsOf = (records: JournalRecord[]) =>
  [...new Set(records.flatMap((r) => ('s' in r ? [r.s] : [])))].sort((a, b) => a - b);

async function untilAt(page: Page, seq: number) {
  await page.waitForFunction(
    (wanted) => document.querySelector<HTMLElement>('[data-testid="moment-label"]')?.dataset.seq === String(wanted),
    seq,
  );
}

async function selectAgent(page: Page, agent: string, seq: number) {
  await page.locator(`[data-testid="actor"][data-name="${agent}"]`).click();
  await page.waitForFunction(
    (title) => document.getElementById('messages-title')?.textContent === title,
    `Messages — ${agent} at #${seq}`,
  );
}

describe.skipIf(missing('chromium', 'the timeline tests'))('the inspector opens a recorded session', () => {
  let dir: string;
  let manager: SessionManager;
  let records: JournalRecord[];
  let server: InspectorServer;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'troupe-timeline-'));
    manager = sessions({ dir });
    await recordTree(manager, 'tree');
    records = recordsOf(manager, 'tree');
    server = await startInspectorServer({ sessions: { manager, open: 'tree', run: (id) => runFork(manager, id) } });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
    page.setDefaultTimeout(15_000);
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(server.pageUrl);
    await page.locator('[data-testid="lane"]').first().waitFor({ state: 'attached' });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const find = (wanted: (r: JournalRecord) => boolean, what: string) => {
    const found = records.find(wanted);
    if (!found || !('s' in found)) throw new Error(`the recording has no ${what}`);
    return found;
  };

  it('records the tree the test needs: three levels, a background swarm, an approval, a compaction', () => {
    const batches = records.filter((r) => r.k === 'batch');
    expect(batches.some((b) => b.k === 'batch' && b.background)).toBe(true);
    expect(records.some((r) => r.k === 'approval')).toBe(true);
    expect(records.some((r) => r.k === 'compaction')).toBe(true);
    const depths = new Set(momentAt(records, Number.MAX_SAFE_INTEGER).agents.map((a) => a.owner ?? ''));
    expect(depths.size).toBe(3); // the root (no owner), the root's children, mid's child
  });

  it('shows every agent as a lane and its facts as marks', async () => {
    const last = momentAt(records, Number.MAX_SAFE_INTEGER);
    const lanes = await page.locator('[data-testid="lane"]').evaluateAll((nodes) => nodes.map((n) => n.dataset.agent));
    expect(lanes.sort()).toEqual(last.agents.map((a) => a.id).sort());
    for (const kind of ['tool', 'asked', 'approval', 'batch', 'compaction', 'notice']) {
      expect(await page.locator(`[data-testid="mark"][data-kind="${kind}"]`).count(), kind).toBeGreaterThan(0);
    }
  });

  it('scrubbed to five moments, shows the tree, the active states and the messages as the journal has them', {
    timeout: 120_000,
  }, async () => {
    const asked = find((r) => r.k === 'asked', 'approval');
    const leaf = 'a' in asked ? asked.a : '';
    const mid = records.find((r) => r.k === 'batch' && r.tasks.some((t) => t.agentId === leaf));
    const midId = mid && 'a' in mid ? mid.a : '';
    const compaction = find((r) => r.k === 'compaction', 'compaction');
    const notice = records.findIndex((r) => r.k === 'notice');
    const noticeSeq = Math.max(...records.slice(0, notice).flatMap((r) => ('s' in r ? [r.s] : [])));
    const firstTool = find((r) => r.k === 'tool_start' && r.a === 'root', "root's tool call");
    const midTool = find((r) => r.k === 'tool_start' && r.a === midId, "mid's tool call");
    const lastSeq = Math.max(...records.flatMap((r) => ('s' in r ? [r.s] : [])));
    const moments: Array<[number, string]> = [
      [firstTool.s, 'root'],
      [midTool.s, midId],
      [asked.s, leaf],
      [noticeSeq, 'root'],
      [compaction.s, 'root'],
      [lastSeq, leaf],
    ];
    for (const [seq, agent] of moments) {
      await scrubTo(page, records, seq);
      await selectAgent(page, agent, seq);
      const expected = momentAt(records, seq);
      const tree = await page
        .locator('[data-testid="actor"]')
        .evaluateAll((rows) => rows.map((r) => [r.dataset.name, r.dataset.state]));
      expect(tree.sort(), `tree at #${seq}`).toEqual(
        expected.agents.map((a) => [a.id, statePath(a.state ?? 'idle')]).sort(),
      );
      const selected = expected.agents.find((a) => a.id === agent);
      const active = [...activePaths(selected?.state ?? 'idle')].sort();
      await page.waitForFunction(
        (n) => document.querySelectorAll('#chart [data-testid="state-node"].active').length === n,
        active.length,
      );
      const highlighted = await page
        .locator('#chart [data-testid="state-node"].active')
        .evaluateAll((nodes) => nodes.map((n) => n.dataset.path));
      expect(highlighted.sort(), `states of ${agent} at #${seq}`).toEqual(active);
      expect(await page.locator('[data-testid="message"]').count(), `messages of ${agent} at #${seq}`).toBe(
        selected?.messages.length,
      );
      if (seq === asked.s && process.env.TROUPE_SCREENSHOTS) {
        await page.screenshot({ path: join(docs, 'inspector-timeline.png') });
      }
    }
    // The leaf waited for its approval at the third moment: its state says where it was read.
    await scrubTo(page, records, asked.s);
    await selectAgent(page, leaf, asked.s);
    await expect
      .poll(() => page.locator('[data-testid="state-source"]').textContent())
      .toMatch(/awaitingApproval — read from the journal's fact at #\d+/);
    expect(errors).toEqual([]);
  });

  it('steps with the arrow keys and to the next event of the selected agent', { timeout: 60_000 }, async () => {
    const seqs = seqsOf(records);
    const start = seqs[3] as number;
    await scrubTo(page, records, start);
    await page.locator('[data-testid="lanes"]').hover();
    await page.keyboard.press('ArrowRight');
    await untilAt(page, seqs[4] as number);
    await page.keyboard.press('ArrowLeft');
    await untilAt(page, start);
    await selectAgent(page, 'root', start);
    await page.locator('[data-testid="next-agent-event"]').click();
    const next = records.find((r) => 's' in r && r.s > start && r.a === 'root');
    expect(next && 's' in next).toBe(true);
    if (next && 's' in next) await untilAt(page, next.s);
  });

  it('renders a hostile session safely: scripts stay text, huge strings are cut, deep nesting is bounded', {
    timeout: 60_000,
  }, async () => {
    const snapshot = records.find((r) => r.k === 'snapshot');
    if (snapshot?.k !== 'snapshot') throw new Error('the recording has snapshots');
    await writeHostile(manager, 'hostile', snapshot);
    await page.reload();
    await page.locator('[data-testid="session-list"]').selectOption('hostile');
    await page.waitForFunction(() => document.getElementById('messages-title')?.textContent?.includes('hostile-root'));
    const texts = await page.locator('[data-testid="message"]').allTextContents();
    expect(texts.some((t) => t.includes('<script>window.__pwned = 1</script>'))).toBe(true);
    expect(Math.max(...texts.map((t) => t.length))).toBeLessThan(5_000);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('#messages script, #messages img').count()).toBe(0);
    expect(await page.locator('[data-testid="lane"]').count()).toBe(2);
    expect(errors).toEqual([]);
    // A damaged journal: the page says why it cannot open it, and keeps what it showed.
    const writer = manager.store.acquire('damaged');
    await writer.append([encodeRecord({ k: 'session', v: 1, id: 'damaged', agentId: 'r', t: 0 }), '{"k":"msg"}', '{}']);
    writer.release();
    await page.reload();
    await page.locator('[data-testid="session-list"]').selectOption('damaged');
    await expect
      .poll(() => page.locator('[data-testid="session-info"]').textContent())
      .toMatch(/Cannot open damaged: .*corrupt/);
    await page.locator('[data-testid="session-list"]').selectOption('tree');
    await page.waitForFunction(() => document.getElementById('messages-title')?.textContent?.includes('root'));
  });

  it('forks at a moment with an edited tool result: the fork runs to its end and joins the list', {
    timeout: 120_000,
  }, async () => {
    const end = find((r) => r.k === 'tool_end' && r.a === 'root' && r.id === 'call_mid', "the root's agent call");
    await scrubTo(page, records, end.s);
    await selectAgent(page, 'root', end.s);
    await page.locator('[data-testid="fork-edit-kind"]').selectOption('toolResult');
    await page.locator('[data-testid="fork-call"]').selectOption('call_mid');
    await page.locator('[data-testid="fork-text"]').fill('mid found nothing');
    await page.locator('[data-testid="fork-button"]').click();
    await page.locator('[data-testid="fork-outcome"][data-state="done"]').waitFor();
    const fork = manager.list().find((info) => info.forkOf?.id === 'tree');
    expect(fork?.forkOf).toMatchObject({ atSeq: end.s, edit: { toolResult: { id: 'call_mid' } } });
    expect(fork?.status).toBe('idle');
    const option = page.locator(`[data-testid="session-list"] option[data-id="${fork?.id}"]`);
    expect(await option.getAttribute('data-fork-of')).toBe('tree');
    // The fork went on live from the edit: its root's history holds the edited result, then answers it went on to.
    const forked = recordsOf(manager, fork?.id ?? '');
    const kept = momentAt(records, end.s).agents[0]?.messages.length ?? 0;
    const root = momentAt(forked, Number.MAX_SAFE_INTEGER).agents[0];
    const results = (root?.messages ?? []).filter((m) => m.role === 'tool').flatMap((m) => m.content);
    const edited = results.find((r) => r.toolCallId === 'call_mid');
    expect(edited?.content).toEqual([{ type: 'text', text: 'mid found nothing' }]);
    expect(root?.messages.length).toBeGreaterThan(kept);
    expect(root?.messages.at(-1)?.role).toBe('assistant');
    expect(root?.lastStop).toBe('completed');
    await page.locator('[data-testid="open-fork"]').click();
    await page.waitForFunction(
      (id) => document.querySelector<HTMLSelectElement>('[data-testid="session-list"]')?.value === id,
      fork?.id,
    );
    await expect.poll(() => page.locator('[data-testid="session-info"]').textContent()).toContain('fork of tree');
    if (process.env.TROUPE_SCREENSHOTS) await page.screenshot({ path: join(docs, 'inspector-fork.png') });
    expect(errors).toEqual([]);
  });
});

/** A journal a hostile program could have written: markup in messages, a 2 MB string, values nested 1 500 deep. */
async function writeHostile(manager: SessionManager, id: string, real: SnapshotRecord): Promise<void> {
  let deep: JsonValue = 'bottom';
  for (let i = 0; i < 1_500; i++) deep = { value: deep };
  const script = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 1">';
  const records: JournalRecord[] = [
    { k: 'session', v: 1, id, agentId: 'hostile-root', t: 0, title: script },
    { k: 'run', s: 1, a: 'hostile-root', running: true, t: 0 },
    { ...real, a: 'hostile-root', snapshot: { ...(real.snapshot as object), value: deep } },
    {
      k: 'msg',
      s: 2,
      a: 'hostile-root',
      i: 0,
      turn: 1,
      step: 1,
      m: { role: 'user', content: [{ type: 'text', text: script }] },
    },
    {
      k: 'msg',
      s: 3,
      a: 'hostile-root',
      i: 1,
      turn: 1,
      step: 1,
      m: {
        role: 'assistant',
        provider: script,
        model: script,
        stopReason: 'tool_calls',
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
        content: [
          { type: 'text', text: 'x'.repeat(2_000_000) },
          { type: 'tool_call', id: 'c', name: script, arguments: { deep } },
        ],
      },
    },
    { k: 'tool_start', s: 4, a: script, id: 'c', name: script },
  ];
  const writer = manager.store.acquire(id);
  await writer.append(records.map(encodeRecord));
  writer.release();
}
