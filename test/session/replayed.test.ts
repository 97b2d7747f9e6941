import { describe, expect, it } from 'vitest';
import { type AgentEvent, createAgent, scriptedModel, sessions } from '../../src/index.js';
import { latch } from '../agent/helpers.js';
import { byHistory, cleanTempDirs, countTool, crashCopy, tempDir } from './helpers.js';

cleanTempDirs();

/** What an event reports, in a form a test can compare: its type, and its tool call or message index. */
function fact(event: AgentEvent): string {
  if (event.type === 'tool_execution_start' || event.type === 'tool_execution_end') {
    return `${event.type} ${event.toolCallId}`;
  }
  if (event.type === 'message_end') return `message_end ${event.message.role}`;
  return event.type;
}

describe('sessions: events a resume publishes again', () => {
  it('marks what the journal held before the crash as replayed, and only that', async () => {
    const dir = tempDir();
    const session = sessions({ dir }).create();
    const hang = latch();
    const third = latch();
    const count = countTool(3, third, hang.promise);
    const script = byHistory([
      ...[1, 2, 3].map((n) => ({ toolCalls: [{ name: 'count', args: { n } }] })),
      { text: 'three' },
    ]);
    const agent = createAgent({ model: scriptedModel(script), tools: [count], session });
    const before: AgentEvent[] = [];
    agent.on('*', (event) => {
      if (event.type !== 'message_update') before.push(event);
    });
    void agent.prompt('count to three');
    await third.promise;
    const crashed = crashCopy(dir); // killed while step 3's tool runs
    const seenBeforeCrash = new Set(before.map(fact));
    session.close();
    await agent.stop();

    const reopened = sessions({ dir: crashed }).open(session.id);
    const resumed = createAgent({ model: scriptedModel(script), tools: [count], session: reopened });
    const after: AgentEvent[] = [];
    resumed.on('*', (event) => {
      if (event.type !== 'message_update') after.push(event);
    });
    await reopened.idle();
    const replayed = after.filter((event) => event.replayed).map(fact);
    const live = after.filter((event) => !event.replayed).map(fact);
    // Steps 1 and 2 and step 3's answer and start are replayed from the journal: listeners had them already.
    expect(replayed).toEqual([
      'message_start',
      'message_end assistant',
      'usage',
      'tool_execution_start call_0_0',
      'tool_execution_end call_0_0',
      'message_end tool',
      'step_end',
      'step_start',
      'message_start',
      'message_end assistant',
      'usage',
      'tool_execution_start call_1_0',
      'tool_execution_end call_1_0',
      'message_end tool',
      'step_end',
      'step_start',
      'message_start',
      'message_end assistant',
      'usage',
      'tool_execution_start call_2_0',
    ]);
    for (const seen of replayed) expect(seenBeforeCrash.has(seen)).toBe(true);
    // What happened after the crash is new: the interrupted result, the last step, the turn's end.
    expect(live).toEqual([
      'tool_execution_end call_2_0',
      'message_end tool',
      'step_end',
      'step_start',
      'message_start',
      'message_end assistant',
      'usage',
      'step_end',
      'turn_end',
      'agent_end',
    ]);
    expect(seenBeforeCrash.has('tool_execution_end call_2_0')).toBe(false);
    reopened.close();
    await resumed.stop();
  });
});
