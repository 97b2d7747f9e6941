/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
/**
 * The offline inspector end to end, in headless Chromium: a program connected with connectInspector, the page
 * served by startInspectorServer. It checks what a person sees: leaf states with their full path on hover, only
 * the transitions taken marked, labels apart, the chart fitted and zoomable, stopped actors in no state, answered
 * approvals with who answered, cost and task states, a first paint with the chart, and hostile text kept as text.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectInspector, createAgent, defineTool, scriptedModel, startInspectorServer } from '../../src/index.js';
import { CHROMIUM, missing } from '../helpers/requires.js';
import { inspectorInBrowser } from './browser.js';
import { swarmFixture } from './swarm.js';

/** Boxes of the chart's edge labels, in chart coordinates, that overlap another. */
function overlappingLabels(page: Page) {
  return page.evaluate(() => {
    const boxes = [...document.querySelectorAll<SVGGraphicsElement>('[data-testid="transition-label"]')].map((t) => {
      const b = t.getBBox();
      return { x: b.x, y: b.y, w: b.width, h: b.height, text: t.textContent ?? '' };
    });
    const clash: string[] = [];
    for (const [i, a] of boxes.entries()) {
      for (const b of boxes.slice(i + 1)) {
        const dx = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
        const dy = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
        if (dx > 1 && dy > 1) clash.push(`${a.text} × ${b.text}`);
      }
    }
    return { count: boxes.length, clash };
  });
}

/** Whether the drawn chart lies inside its panel. */
function chartFits(page: Page) {
  return page.evaluate(() => {
    const panel = document.getElementById('chart')?.getBoundingClientRect();
    const drawn = [...document.querySelectorAll('#chart svg > g')].map((g) => g.getBoundingClientRect());
    if (!panel || drawn.length === 0) return false;
    return drawn.every(
      (r) =>
        r.left >= panel.left - 1 &&
        r.right <= panel.right + 1 &&
        r.top >= panel.top - 1 &&
        r.bottom <= panel.bottom + 1,
    );
  });
}

const zoomLevel = async (page: Page) =>
  Number((await page.locator('[data-testid="zoom-level"]').textContent())?.replace('%', ''));

describe.skipIf(missing('chromium', 'the inspector end-to-end tests'))('offline inspector in a browser', () => {
  it('shows a swarm so that it reads well, and approvals clicked on the page let the run continue', {
    timeout: 120_000,
  }, async () => {
    const inspector = await inspectorInBrowser('e2e');
    const { page, errors } = inspector;
    const { supervisor, lead, written } = swarmFixture(inspector.connection.inspect);
    try {
      // Approvals from the page go through the supervisor, which routes them by agent id.
      inspector.connection.attach(supervisor);
      await inspector.open();
      await page.locator('[data-testid="actor"][data-name="lead"]').waitFor();

      const result = lead.prompt('LEAD');

      // Both subagents wait for a person: their cards show up, the tree shows each call's status.
      const plan = page.locator('[data-testid="approval"][data-tool-call-id="call_plan_md"]');
      const secrets = page.locator('[data-testid="approval"][data-tool-call-id="call_secrets_txt"]');
      await plan.waitFor();
      await secrets.waitFor();
      // The tool's label, not its name, with the name on hover.
      await plan.locator('[data-testid="approval-tool"]:text-is("Write a file")').waitFor();
      expect(await plan.locator('[data-testid="approval-tool"]').getAttribute('title')).toBe('write_file');
      // By default the tree shows what a person supervises: agents and their tasks. The lead's two tasks sit under
      // it, each with its subagent; supervisors, batches and pools are plumbing, hidden.
      const rows = page.locator('[data-testid="actor"]');
      const kinds = () => rows.evaluateAll((all) => [...new Set(all.map((row) => row.getAttribute('data-kind')))]);
      expect((await kinds()).sort()).toEqual(['agent', 'task']);
      const underLead = page.locator('li:has(> [data-name="lead"]) [data-testid="actor"][data-kind="agent"]');
      expect(await underLead.count()).toBe(3);
      const tasks = page.locator('li:has(> [data-name="lead"]) [data-testid="actor"][data-kind="task"]');
      expect(await tasks.count()).toBe(2);
      const underTasks = page.locator('li:has(> [data-kind="task"]) [data-testid="actor"][data-kind="agent"]');
      expect(await underTasks.count()).toBe(2);
      expect(
        await page
          .locator('li:has(> [data-name="lead"]) [data-testid="tool-call"]')
          .evaluateAll((calls) =>
            calls.map((c) => `${c.getAttribute('data-tool-call-id')}:${c.getAttribute('data-status')}`),
          ),
      ).toEqual(expect.arrayContaining(['call_plan_md:awaiting', 'call_secrets_txt:awaiting']));
      expect(await page.locator('li:has(> [data-name="lead"]) [data-testid="actor"]').count()).toBe(await rows.count());

      // One click shows the plumbing: root → lead → lead's supervisor → batch → … → the two subagents.
      await page.locator('[data-testid="show-plumbing"]').check();
      await page.locator('[data-testid="actor"][data-name="supervisor of lead"]').waitFor();
      const all = await rows.evaluateAll((each) => each.map((row) => row.getAttribute('data-name')));
      expect(all).toEqual(expect.arrayContaining(['root', 'lead', 'supervisor of lead']));
      expect(await kinds()).toEqual(expect.arrayContaining(['supervisor', 'batch', 'task', 'agent']));
      expect(
        await page
          .locator('li:has(> [data-name="supervisor of lead"]) [data-testid="actor"][data-kind="agent"]')
          .count(),
      ).toBe(2);
      expect(await page.locator('li:has(> [data-name="root"]) [data-testid="actor"]').count()).toBe(await rows.count());
      await page.locator('[data-testid="show-plumbing"]').uncheck();
      await page.locator('[data-testid="actor"][data-name="supervisor of lead"]').waitFor({ state: 'detached' });

      // The actors column shows the leaf state; the full path is on hover.
      const subState = underTasks.first().locator('[data-testid="actor-state"]');
      expect(await subState.textContent()).toBe('awaitingApproval');
      expect(await subState.getAttribute('title')).toBe('running.turn.step.tools.awaitingApproval');
      expect(await underTasks.first().locator('[data-testid="actor-task"]').textContent()).toBe('task running');

      // The lead's statechart: its active state, and only the transition its last step took.
      await page.locator('[data-testid="state-node"][data-path="running.turn.step.tools.executing"].active').waitFor();
      const taken = page.locator('[data-testid="transition"].taken');
      await taken.first().waitFor();
      expect(
        await taken.evaluateAll((all) =>
          all.map(
            (e) =>
              `${e.getAttribute('data-event')} [${e.getAttribute('data-guard')}] ${e.getAttribute('data-source')} → ${e.getAttribute('data-target')}`,
          ),
        ),
      ).toEqual([
        'AUTHORIZED [isCurrentBatch] running.turn.step.tools.authorizing → running.turn.step.tools.executing',
      ]);
      // Edge labels are laid out apart, and the whole chart fits its panel; zoom and pan move it.
      const labels = await overlappingLabels(page);
      expect(labels.count).toBeGreaterThan(10);
      expect(labels.clash).toEqual([]);
      expect(await chartFits(page)).toBe(true);
      const fitted = await zoomLevel(page);
      await page.locator('[data-testid="zoom-in"]').click();
      expect(await zoomLevel(page)).toBeGreaterThan(fitted);
      const chart = page.locator('[data-testid="chart"]');
      const box = await chart.boundingBox();
      const viewBox = () => page.locator('[data-testid="chart-svg"]').getAttribute('viewBox');
      const before = await viewBox();
      await page.mouse.move((box?.x ?? 0) + 200, (box?.y ?? 0) + 200);
      await page.mouse.down();
      await page.mouse.move((box?.x ?? 0) + 120, (box?.y ?? 0) + 150, { steps: 4 });
      await page.mouse.up();
      expect(await viewBox()).not.toBe(before);
      await page.mouse.wheel(0, -400);
      expect(await zoomLevel(page)).toBeGreaterThan(fitted);
      expect(await chartFits(page)).toBe(false);
      await page.locator('[data-testid="zoom-fit"]').click();
      expect(await zoomLevel(page)).toBe(fitted);
      expect(await chartFits(page)).toBe(true);

      // Usage and the supervision layer: each subagent's task, and the batch it belongs to.
      await page.locator('[data-testid="usage-row"][data-agent="lead"] td:nth-child(4):text-is("100")').waitFor();
      await page.locator('[data-testid="batch"][data-open="true"]').waitFor();
      expect(await page.locator('[data-testid="batch"] [data-testid="task"][data-state="running"]').count()).toBe(2);
      await page.locator('[data-testid="log-entry"][data-type="MODEL_DONE"]').first().waitFor();

      // Approve one subagent's call and deny the other's, from the page.
      await plan.locator('button[data-action="approve"]').click();
      await secrets.locator('button[data-action="deny"]').click();

      const done = await result;
      expect(done.stopReason).toBe('completed');
      expect(written).toEqual(['plan.md']);
      expect(done.text).toContain('plan.md: wrote plan.md');
      expect(done.text).toContain('secrets.txt: The user denied this tool call');
      expect(
        inspector.connection.commands.map((c) => `${c.command.command}:${c.command.toolCallId}:${c.ok}`).sort(),
      ).toEqual(['APPROVE:call_plan_md:true', 'DENY:call_secrets_txt:true']);

      // The answered approvals stay on the page: what, for whom, how, and who answered.
      await page.locator('[data-testid="answered"]').nth(1).waitFor();
      const answered = await page
        .locator('[data-testid="answered"]')
        .evaluateAll((all) =>
          all.map((a) => `${a.getAttribute('data-decision')} ${a.getAttribute('data-tool-call-id')} ${a.textContent}`),
        );
      expect(answered).toEqual([
        expect.stringMatching(
          /^denied call_secrets_txt ✗ denied Write a file for \S+ by you, on this page · [\d:]+“denied from the inspector”$/,
        ),
        expect.stringMatching(/^approved call_plan_md ✓ approved Write a file for \S+ by you, on this page/),
      ]);

      // The page follows the run to its end: the last step marked once, through the states it passed.
      await page.locator('[data-testid="actor"][data-name="lead"][data-state="idle"]').waitFor();
      await page.locator('[data-testid="approvals"] .empty').waitFor();
      await page.locator('[data-testid="usage-row"][data-agent="lead"] td:nth-child(4):text-is("400")').waitFor();
      const budget = page.locator('[data-testid="usage-row"][data-agent="lead"] [data-testid="usage-budget"]');
      expect(await budget.textContent()).toMatch(/^[\d,]+\/1,000,000 tok$/);
      const modelDone = page.locator('[data-testid="transition"].taken[data-event="MODEL_DONE"]');
      await modelDone.waitFor();
      expect(await modelDone.count()).toBe(1);
      expect(await modelDone.getAttribute('data-target')).toBe('running.turn.step.answered');
      expect(await page.locator('[data-testid="transition"][data-event="MODEL_DONE"]').count()).toBeGreaterThan(1);
      await page.locator('[data-testid="transition"].taken[data-target="idle"]').waitFor();
      await page.locator('[data-testid="batch"][data-open="false"]').waitFor();
      expect(await page.locator('[data-testid="usage-task"]').allTextContents()).toEqual(
        expect.arrayContaining(['settled (completed)', 'settled (completed)']),
      );
      // Cost (the sixth column; the budget is last): none of these scripted answers carries a price, so it says so.
      expect(await page.locator('[data-testid="usage-total"] td:nth-child(6)').textContent()).toBe('—');
      // The log names the calls a TOOL_RESULTS event answered.
      const results = page.locator('[data-testid="log-entry"][data-type="TOOL_RESULTS"] .detail');
      await results.first().waitFor();
      expect(await results.allTextContents()).toEqual(expect.arrayContaining([expect.stringMatching(/^call_\S+/)]));

      // A stopped agent is in no state: the tree says stopped, and its chart marks nothing active.
      await supervisor.stop();
      await page.locator('[data-testid="actor"][data-name="lead"][data-status="stopped"]').waitFor();
      await page.locator('#chart-title', { hasText: '(stopped)' }).waitFor();
      expect(await page.locator('[data-testid="state-node"].active').count()).toBe(0);

      // Nothing but the inspector itself was asked for anything.
      expect(inspector.foreignRequests()).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await supervisor.stop();
      await inspector.close();
    }
  });

  it('paints the selected chart on first load, as a plain headless screenshot sees it', {
    timeout: 120_000,
  }, async () => {
    const server = await startInspectorServer();
    const connection = await connectInspector({ url: server.connectUrl, runId: 'first-paint' });
    const { supervisor, lead } = swarmFixture(connection.inspect);
    try {
      const result = lead.prompt('LEAD');
      await new Promise<void>((resolve) => supervisor.on('approval_requested', () => resolve()));
      // What `chromium --headless --screenshot --virtual-time-budget=4000` renders, as a DOM.
      const { stdout } = await promisify(execFile)(
        CHROMIUM,
        ['--headless', '--no-sandbox', '--disable-gpu', '--dump-dom', '--virtual-time-budget=4000', server.pageUrl],
        { maxBuffer: 64 * 1024 * 1024 },
      );
      expect(stdout).toContain('data-path="running.turn.step.tools.executing"');
      expect(stdout).toMatch(/class="node active"[^>]*data-path="running.turn.step.tools.executing"/);
      expect(stdout).toContain('data-testid="approval"');
      expect(stdout).not.toContain('Loading the run so far');
      supervisor.on('approval_requested', (event) => supervisor.approve(event));
      for (const id of ['call_plan_md', 'call_secrets_txt']) supervisor.approve(id);
      await result;
    } finally {
      await supervisor.stop();
      await connection.close();
      await server.close();
    }
  });

  it('keeps hostile text as text: script in agent text, tool names and arguments never runs', {
    timeout: 120_000,
  }, async () => {
    const inspector = await inspectorInBrowser('hostile');
    const { page, connection } = inspector;
    const payload = (n: number) => `<img src=x onerror="window.__pwned=${n}"><script>window.__pwned=${n}</script>`;
    const evil = defineTool({
      name: 'evil_tool',
      description: 'Anything',
      schema: z.object({ path: z.string() }),
      execute: () => payload(4),
    });
    const agent = createAgent({
      id: 'mallory',
      model: scriptedModel([
        {
          text: payload(1),
          toolCalls: [
            { name: 'evil_tool', args: { path: payload(2) }, id: 'call_evil' },
            { name: `<b onmouseover="window.__pwned=3">x</b>`, args: { q: payload(3) }, id: 'call_bad_name' },
          ],
        },
        { text: payload(5) },
      ]),
      tools: [evil],
      policy: () => 'ask',
      inspect: connection.inspect,
    });
    connection.attach(agent);
    try {
      await inspector.open();
      const result = agent.prompt(payload(0));
      const card = page.locator('[data-testid="approval"][data-tool-call-id="call_evil"]');
      await card.waitFor();
      expect(await card.textContent()).toContain('onerror');
      await page.locator('[data-testid="steer-text"]').fill(payload(6));
      await page.locator('button[data-action="steer"]').click();
      await page.locator('[data-testid="command-outcome"][data-state="applied"]').waitFor();
      await card.locator('button[data-action="approve"]').click();
      expect((await result).stopReason).toBe('completed');
      await page.locator('[data-testid="answered"]').first().waitFor();
      await page.locator('[data-testid="log-entry"][data-type="TOOL_RESULTS"]').waitFor();
      for (const selector of ['#tree', '#log', '#approvals', '#answered', '#controls', '#usage']) {
        expect(await page.locator(`${selector} img, ${selector} script, ${selector} b`).count(), selector).toBe(0);
      }
      expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(inspector.foreignRequests()).toEqual([]);
    } finally {
      await agent.stop();
      await inspector.close();
    }
  });
});
