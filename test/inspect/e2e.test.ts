/**
 * The offline inspector end to end, in headless Chromium: a program connected with connectInspector, the page
 * served by startInspectorServer, an approval clicked on the page reaching the running agent.
 * Under CI=true a missing browser fails this test instead of skipping it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectInspector, startInspectorServer } from '../../src/index.js';
import { launchChromium, runBrowserTests } from './browser.js';
import { swarmFixture } from './swarm.js';

const SCREENSHOT = join(import.meta.dirname, '..', '..', 'docs', 'inspector.png');

describe.runIf(runBrowserTests)('offline inspector in a browser', () => {
  it('shows a swarm live, and approvals of subagents clicked on the page let the run continue', {
    timeout: 120_000,
  }, async () => {
    const server = await startInspectorServer();
    const connection = await connectInspector({ url: server.connectUrl, runId: 'e2e' });
    const browser = await launchChromium();
    try {
      const { supervisor, lead, written } = swarmFixture(connection.inspect);
      // Approvals from the page go through the supervisor, which routes them by agent id.
      connection.attach(supervisor);
      const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(server.pageUrl);
      await page.locator('[data-testid="actor"][data-name="lead"]').waitFor();

      const result = lead.prompt('LEAD');

      // Both subagents wait for a person: their cards show up, the tree shows each call's status.
      const plan = page.locator('[data-testid="approval"][data-tool-call-id="call_plan_md"]');
      const secrets = page.locator('[data-testid="approval"][data-tool-call-id="call_secrets_txt"]');
      await plan.waitFor();
      await secrets.waitFor();
      const rows = page.locator('[data-testid="actor"]');
      const names = await rows.evaluateAll((all) => all.map((row) => row.getAttribute('data-name')));
      expect(names).toEqual(
        expect.arrayContaining(['root', 'lead', 'supervisor of lead', 'worker.model', 'worker.tools']),
      );
      // The tree nests: root → lead → lead's supervisor → the two subagents, each with its workers.
      const underLead = page.locator('li:has(> [data-name="lead"]) [data-testid="actor"][data-kind="agent"]');
      expect(await underLead.count()).toBe(3);
      const underSupervisor = page.locator(
        'li:has(> [data-name="supervisor of lead"]) [data-testid="actor"][data-kind="agent"]',
      );
      expect(await underSupervisor.count()).toBe(2);
      expect(
        await page
          .locator('li:has(> [data-name="supervisor of lead"]) [data-testid="tool-call"]')
          .evaluateAll((calls) =>
            calls.map((c) => `${c.getAttribute('data-tool-call-id')}:${c.getAttribute('data-status')}`),
          ),
      ).toEqual(expect.arrayContaining(['call_plan_md:awaiting', 'call_secrets_txt:awaiting']));
      expect(await page.locator('li:has(> [data-name="root"]) [data-testid="actor"]').count()).toBe(await rows.count());
      // The lead's statechart, laid out, with its active state and last transition marked.
      await page.locator('[data-testid="state-node"][data-path="running.turn.step.tools.executing"].active').waitFor();
      await page.locator('[data-testid="transition"].last').first().waitFor();
      await page.locator('[data-testid="usage-row"][data-agent="lead"] td:nth-child(4):text-is("100")').waitFor();
      await page.locator('[data-testid="log-entry"][data-type="MODEL_DONE"]').first().waitFor();
      if (process.env.UPDATE_SCREENSHOTS) await page.screenshot({ path: SCREENSHOT });

      // Approve one subagent's call and deny the other's, from the page.
      await plan.locator('button[data-action="approve"]').click();
      await secrets.locator('button[data-action="deny"]').click();

      const done = await result;
      expect(done.stopReason).toBe('completed');
      expect(written).toEqual(['plan.md']);
      expect(done.text).toContain('plan.md: wrote plan.md');
      expect(done.text).toContain('secrets.txt: The user denied this tool call');
      expect(connection.commands.map((c) => `${c.command.command}:${c.command.toolCallId}:${c.ok}`).sort()).toEqual([
        'APPROVE:call_plan_md:true',
        'DENY:call_secrets_txt:true',
      ]);

      // The page follows the run to its end.
      await page.locator('[data-testid="actor"][data-name="lead"][data-state="idle"]').waitFor();
      await page.locator('[data-testid="approvals"] .empty').waitFor();
      await page.locator('[data-testid="usage-row"][data-agent="lead"] td:nth-child(4):text-is("400")').waitFor();
      // The log names the calls a TOOL_RESULTS event answered.
      const results = page.locator('[data-testid="log-entry"][data-type="TOOL_RESULTS"] .detail');
      await results.first().waitFor();
      expect(await results.allTextContents()).toEqual(expect.arrayContaining([expect.stringMatching(/^call_\S+/)]));
      await page.screenshot({ path: join(mkdtempSync(join(tmpdir(), 'troupe-inspector-')), 'end.png') });

      // Nothing but the inspector itself was asked for anything.
      const origin = new URL(server.pageUrl).origin;
      expect(
        requests.filter((url) => !url.startsWith(origin) && !url.startsWith(origin.replace('http', 'ws'))),
      ).toEqual([]);
      expect(errors).toEqual([]);
      await supervisor.stop();
    } finally {
      await browser.close();
      await connection.close();
      await server.close();
    }
  });
});
