/**
 * The offline inspector end to end, in headless Chromium: a program connected with connectInspector, the page
 * served by startInspectorServer, an approval clicked on the page reaching the running agent.
 * Under CI=true a missing browser fails this test instead of skipping it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectInspector, createAgent, defineTool, scriptedModel, startInspectorServer } from '../../src/index.js';
import { launchChromium, runBrowserTests } from './browser.js';

const SCREENSHOT = join(import.meta.dirname, '..', '..', 'docs', 'inspector.png');

describe.runIf(runBrowserTests)('offline inspector in a browser', () => {
  it('shows the tree, the statechart and the approvals, and an approval clicked on the page lets the run continue', {
    timeout: 120_000,
  }, async () => {
    const server = await startInspectorServer();
    const connection = await connectInspector({ url: server.connectUrl, runId: 'e2e' });
    const browser = await launchChromium();
    try {
      const written: string[] = [];
      const write = defineTool({
        name: 'write_file',
        description: 'Writes a file',
        schema: z.object({ path: z.string() }),
        execute: ({ path }) => {
          written.push(path);
          return `wrote ${path}`;
        },
      });
      const agent = createAgent({
        id: 'writer',
        model: scriptedModel([
          {
            text: 'Writing both files.',
            toolCalls: [
              { name: 'write_file', args: { path: 'plan.md' }, id: 'call_plan' },
              { name: 'write_file', args: { path: '/etc/passwd' }, id: 'call_passwd' },
            ],
            usage: { input: 120, output: 24 },
          },
          { text: 'Wrote plan.md; writing /etc/passwd was denied.', usage: { input: 180, output: 12 } },
        ]),
        tools: [write],
        policy: () => 'ask',
        inspect: connection.inspect,
      });

      const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(server.pageUrl);

      // The tree: the agent and its two workers, with the agent's parentage.
      await page.locator('[data-testid="actor"][data-name="writer"]').waitFor();
      const treeNames = await page
        .locator('[data-testid="actor"]')
        .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-name')));
      expect(treeNames).toEqual(['writer', 'worker.model', 'worker.tools']);

      const result = agent.prompt('Write the plan, and also /etc/passwd.');

      // Both calls wait for a person; the tree shows each call's status, the statechart the active phase.
      await page.locator('[data-testid="approval"]').nth(1).waitFor();
      expect(
        await page
          .locator('[data-testid="actor"][data-name="writer"] [data-testid="tool-call"]')
          .evaluateAll((calls) =>
            calls.map((c) => `${c.getAttribute('data-tool-call-id')}:${c.getAttribute('data-status')}`),
          ),
      ).toEqual(['call_plan:awaiting', 'call_passwd:awaiting']);
      await page
        .locator('[data-testid="state-node"][data-path="running.turn.step.tools.awaitingApproval"].active')
        .waitFor();
      await page.locator('[data-testid="transition"].last[data-event="AUTHORIZED"]').first().waitFor();
      await page.locator('[data-testid="usage-row"][data-agent="writer"] td:nth-child(4):text-is("120")').waitFor();
      if (process.env.UPDATE_SCREENSHOTS) await page.screenshot({ path: SCREENSHOT });

      await page.click('[data-testid="approval"][data-tool-call-id="call_plan"] button[data-action="approve"]');
      await page.click('[data-testid="approval"][data-tool-call-id="call_passwd"] button[data-action="deny"]');

      const done = await result;
      expect(done.stopReason).toBe('completed');
      expect(written).toEqual(['plan.md']);
      expect(connection.commands.map((c) => `${c.command.command}:${c.command.toolCallId}:${c.ok}`)).toEqual([
        'APPROVE:call_plan:true',
        'DENY:call_passwd:true',
      ]);
      const tool = done.messages.find((m) => m.role === 'tool');
      expect(tool?.role === 'tool' && tool.content.map((r) => r.isError)).toEqual([false, true]);

      // The page follows the run to its end.
      await page.locator('[data-testid="actor"][data-name="writer"][data-state="idle"]').waitFor();
      await page.locator('[data-testid="approvals"] .empty').waitFor();
      await page.locator('[data-testid="log-entry"][data-type="APPROVE"]').waitFor();
      await page.locator('[data-testid="log-entry"][data-type="DENY"]').waitFor();
      await page.screenshot({ path: join(mkdtempSync(join(tmpdir(), 'troupe-inspector-')), 'end.png') });

      // Nothing but the inspector itself was asked for anything.
      const origin = new URL(server.pageUrl).origin;
      expect(
        requests.filter((url) => !url.startsWith(origin) && !url.startsWith(origin.replace('http', 'ws'))),
      ).toEqual([]);
      expect(errors).toEqual([]);
      await agent.stop();
    } finally {
      await browser.close();
      await connection.close();
      await server.close();
    }
  });
});
