/**
 * The inspector as a control plane, in headless Chromium against a live swarm: steer, interrupt, cancel a task,
 * cancel a batch and resume a finished subagent, each clicked on the page, answered with its outcome, shown in the
 * event log, and checked in the agents' own histories. Under CI=true a missing browser fails it.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/index.js';
import { missing } from '../helpers/requires.js';
import { inspectorInBrowser } from './browser.js';
import { controlFixture } from './swarm.js';

/** Every tool call in a history has its result: what an interrupt or a cancellation must leave behind. */
function answeredCalls(messages: Message[]): boolean {
  const calls = messages.flatMap((m) =>
    m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool_call') : [],
  );
  const results = new Set(messages.flatMap((m) => (m.role === 'tool' ? m.content.map((r) => r.toolCallId) : [])));
  return calls.every((call) => call.type === 'tool_call' && results.has(call.id));
}

const textsOf = (messages: Message[], role: Message['role']) =>
  messages.filter((m) => m.role === role).map((m) => m.content.map((p) => ('text' in p ? p.text : '')).join(''));

describe.skipIf(missing('chromium', 'the inspector control-plane tests'))('the inspector as a control plane', () => {
  it('steers, interrupts, cancels a task and a batch, and resumes a subagent from the page', {
    timeout: 120_000,
  }, async () => {
    const inspector = await inspectorInBrowser('live');
    const { page, errors } = inspector;
    const { supervisor, unpriced, hold, held, release } = controlFixture(inspector.connection.inspect);
    inspector.connection.attach(supervisor);
    try {
      const lead = supervisor.agent({ id: 'lead', tools: [hold], model: unpriced });
      const runner = supervisor.agent({ id: 'runner', tools: [hold] });
      await inspector.open();
      const actor = (name: string) => page.locator(`[data-testid="actor"][data-name="${name}"]`);
      const outcome = page.locator('[data-testid="command-outcome"]');

      // Steer: the message joins the running turn at its next step, and the model sees it.
      const leadRun = lead.prompt('hold lead');
      await held('lead');
      await actor('lead').click();
      await page.locator('[data-testid="steer-text"]').fill('Also list the open questions.');
      await page.locator('button[data-action="steer"]').click();
      await page.locator('[data-testid="command-outcome"][data-state="applied"]').waitFor();
      expect(await outcome.textContent()).toMatch(/STEER applied: joins at the next step boundary/);
      await page.locator('[data-testid="log-entry"][data-type="⇢ STEER"]').waitFor();
      await page.locator('[data-testid="log-entry"][data-type="STEER"]').waitFor();
      release('lead');
      const led = await leadRun;
      expect(led.text).toBe('lead answers: Also list the open questions.');
      expect(lead.messages.some((m) => m.role === 'user' && m.source === 'steer')).toBe(true);

      // Interrupt: the turn ends as interrupted, and the history stays valid.
      const runnerRun = runner.prompt('hold runner');
      await held('runner');
      await actor('runner').click();
      await page.locator('button[data-action="interrupt"]').click();
      expect((await runnerRun).stopReason).toBe('interrupted');
      await page.locator('[data-testid="command-outcome"][data-state="applied"]').waitFor();
      expect(answeredCalls(runner.messages)).toBe(true);
      // Once idle, there is nothing left to interrupt: the panel no longer offers it.
      await page.locator('[data-testid="controls"][data-mode="idle"]').waitFor();
      expect(await page.locator('button[data-action="interrupt"]').count()).toBe(0);

      // A background batch of three, two at a time: cancel one running task, then the rest of the batch.
      const taskIds = await supervisor.swarm(['hold a', 'hold b', 'hold c'], { background: true, concurrency: 2 });
      await Promise.all([held('a'), held('b')]);
      const task = (i: number) => page.locator(`[data-testid="task"][data-task-id="${taskIds[i]}"]`);
      await task(2).and(page.locator('[data-state="queued"]')).waitFor();
      await task(0).locator('button[data-action="cancel-task"]').click();
      await page.locator('[data-testid="batches-outcome"][data-state="applied"]').waitFor();
      await held('c'); // the freed slot went to the queued task
      await page
        .locator(`[data-testid="batch"]:has([data-task-id="${taskIds[0]}"]) button[data-action="cancel-batch"]`)
        .click();
      await page.locator('[data-testid="batches-outcome"]', { hasText: 'CANCEL_BATCH applied' }).waitFor();
      await page.locator(`[data-testid="batch"][data-open="false"]:has([data-task-id="${taskIds[0]}"])`).waitFor();
      expect(taskIds.map((id) => supervisor.status(id)?.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
      for (const id of taskIds) {
        const agentId = supervisor.status(id)?.agentId as string;
        expect(answeredCalls(supervisor.messagesOf(agentId) ?? []), agentId).toBe(true);
      }
      // A settled batch offers nothing to cancel.
      expect(await page.locator(`[data-testid="task"][data-task-id="${taskIds[1]}"] button`).count()).toBe(0);

      // Resume a finished subagent with a follow-up: its history continues.
      const [quick] = await supervisor.swarm(['quick q']);
      const agentId = quick?.agentId as string;
      await actor(agentId).click();
      await page.locator('[data-testid="controls"][data-mode~="resumable"]').waitFor();
      await page.locator('[data-testid="resume-text"]').fill('Now summarise it in one line.');
      await page.locator('button[data-action="resume"]').click();
      await page.locator('[data-testid="command-outcome"][data-state="applied"]').waitFor();
      expect(await outcome.textContent()).toMatch(/RESUME applied: resumed as task task_/);
      await expect
        .poll(() => textsOf(supervisor.messagesOf(agentId) ?? [], 'assistant'))
        .toEqual(['q done', 'q answers: Now summarise it in one line.']);
      expect(textsOf(supervisor.messagesOf(agentId) ?? [], 'user')).toEqual([
        'quick q',
        'Now summarise it in one line.',
      ]);
      await page.locator('[data-testid="log-entry"][data-type="⇢ RESUME"]').waitFor();
      // Its model is one the context's table prices ($1 / $5 per million tokens): 3,000 + 400 tokens, then
      // 6,000 + 900 after the follow-up. An agent on a model the table does not know shows no cost.
      expect(
        await page
          .locator(`[data-testid="usage-row"][data-agent="${agentId}"] [data-testid="usage-cost"]`)
          .textContent(),
      ).toBe('$0.0155');
      expect(
        await page.locator('[data-testid="usage-row"][data-agent="lead"] [data-testid="usage-cost"]').textContent(),
      ).toBe('—');

      // Every command went through the run's own channel, and was answered.
      expect(inspector.connection.commands.map((c) => `${c.command.command}:${c.ok}`)).toEqual([
        'STEER:true',
        'INTERRUPT:true',
        'CANCEL_TASK:true',
        'CANCEL_BATCH:true',
        'RESUME:true',
      ]);
      expect(errors).toEqual([]);
    } finally {
      await supervisor.stop();
      await inspector.close();
    }
  });
});
