/// <reference lib="dom" />
/**
 * The supervision strategies in the inspector, in headless Chromium: a writer and its critic under `oneForAll`,
 * the critic failing at once, so that both wait out a long backoff in `restarting` (the writer because of the
 * critic), and a second batch whose one task fails past an intensity of 0, so that it escalates. The page shows
 * each task's state and cause, the escalation, and the selected task's chart in `restarting`.
 * `TROUPE_SCREENSHOTS=1` also writes the picture into docs/.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSupervisor, scriptedModel, textOf } from '../../src/index.js';
import { missing } from '../helpers/requires.js';
import { inspectorInBrowser } from './browser.js';

const docs = join(import.meta.dirname, '..', '..', 'docs');

describe.skipIf(missing('chromium', 'the inspector strategy tests'))('supervision strategies in the inspector', () => {
  it('shows a task restarted because of its sibling, and a batch that escalated', { timeout: 120_000 }, async () => {
    const inspector = await inspectorInBrowser('strategies');
    const { page, errors } = inspector;
    const model = scriptedModel((request) => {
      const task = textOf(request.messages[0]);
      if (task === 'critic' || task === 'leaf')
        return { error: { code: 'invalid_request', message: `${task} failed` } };
      // The writer is still drafting when the critic fails.
      return { text: 'a draft', latencyMs: 600_000 };
    });
    // A backoff long enough that both restarting tasks are still waiting when the page is read.
    const supervisor = createSupervisor({ model, restartDelayMs: 600_000, inspect: inspector.connection.inspect });
    try {
      void supervisor.swarm(['writer', 'critic'], { strategy: 'oneForAll' }).catch(() => {});
      const escalated = await supervisor.swarm(['leaf'], { intensity: { maxRestarts: 0, withinMs: 60_000 } }).then(
        (results) => results,
        (error: unknown) => error,
      );

      await inspector.open();
      // The batches panel: both tasks restarting, the writer because the critic failed.
      const restarting = page.locator('[data-testid="task"][data-state="restarting (1)"]');
      await expect.poll(() => restarting.count()).toBe(2);
      const writerRow = restarting.filter({ has: page.locator('[data-testid="restarted-by"]') });
      const criticRow = restarting.filter({ hasNot: page.locator('[data-testid="restarted-by"]') });
      expect(await writerRow.count()).toBe(1);
      expect(await criticRow.count()).toBe(1);
      const criticAgent = await criticRow.getAttribute('data-agent');
      expect(await writerRow.locator('[data-testid="restarted-by"]').textContent()).toBe(
        `because ${criticAgent} failed`,
      );
      const writerTask = await writerRow.getAttribute('data-task-id');
      // The second batch escalated: its head names the failed task and the cause.
      const escalation = page.locator('[data-testid="batch-escalated"]');
      await escalation.waitFor();
      expect(await escalation.textContent()).toMatch(/^escalated: \S+ failed \(too many restarts\)$/);
      expect(escalated).toBeDefined();

      // The writer's task actor, selected: its chart has `restarting` active.
      await page.locator(`[data-testid="actor"][data-name="${writerTask}"]`).click();
      await page.locator('#chart [data-testid="state-node"][data-path="restarting"].active').waitFor();
      expect(
        await page
          .locator('#chart [data-testid="state-node"].active')
          .evaluateAll((nodes) => nodes.map((n) => (n as HTMLElement).dataset.path)),
      ).toEqual(['restarting']);
      if (process.env.TROUPE_SCREENSHOTS) await page.screenshot({ path: join(docs, 'inspector-strategies.png') });
      expect(errors).toEqual([]);
    } finally {
      await supervisor.stop();
      await inspector.close();
    }
  });
});
