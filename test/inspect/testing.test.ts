/** `troupe/testing` as a user would use it: assertions on a recorded run, and pure transitions of a machine. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentMachine } from '../../machines/agent/index.js';
import { createAgent, defineTool } from '../../src/index.js';
import {
  agentEvents,
  assertEmitted,
  assertNotVisited,
  assertToolCalls,
  assertVisited,
  createRunRecorder,
  RunAssertionError,
  runEvents,
  scriptedModel,
  startMachine,
  stateStrings,
  transitionMachine,
} from '../../src/testing/index.js';

describe('run recorder and assertions', () => {
  it('records the states visited, the events emitted and the tool calls made', async () => {
    const recorder = createRunRecorder();
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks a word up',
      schema: z.object({ word: z.string() }),
      execute: ({ word }) => `${word}: a greeting`,
    });
    const agent = createAgent({
      id: 'a1',
      model: scriptedModel([
        { toolCalls: [{ name: 'lookup', args: { word: 'hello' } }] },
        { text: 'It is a greeting.' },
      ]),
      tools: [lookup],
      policy: () => 'ask',
      inspect: recorder.inspect,
    });
    recorder.attach(agent);
    agent.on('approval_requested', (e) => agent.approve(e.toolCallId));
    await agent.prompt('What does hello mean?');

    assertVisited(recorder, [
      'idle',
      'running.turn.step.model',
      'running.turn.step.tools.awaitingApproval',
      'running.turn.step.tools.executing',
      'running.turn.step.tools.finalizing',
      'running.turn.step.answered',
      'idle',
    ]);
    assertVisited(recorder, ['running.turn.step.tools'], 'a1');
    assertNotVisited(recorder, 'failed');
    assertEmitted(recorder, ['agent_start', 'turn_start', 'approval_requested', 'tool_execution_end', 'turn_end']);
    assertToolCalls(recorder, [{ name: 'lookup', args: { word: 'hello' }, isError: false }]);
    expect(recorder.toolCalls()[0]?.askedApproval).toBe(true);
    expect(recorder.eventsOf('turn_end', 'a1')).toHaveLength(1);
    expect(recorder.eventTypes('a1', { deltas: true })).toContain('message_update');
    expect(recorder.eventTypes('a1')).not.toContain('message_update');

    expect(() => assertVisited(recorder, ['failed'])).toThrow(RunAssertionError);
    expect(() => assertNotVisited(recorder, 'running.turn')).toThrow(/never to be visited/);
    expect(() => assertEmitted(recorder, ['turn_end', 'turn_start'])).toThrow(/"turn_start" did not follow/);
    expect(() => assertToolCalls(recorder, [])).toThrow(/expected tool calls \(none\)/);
    expect(() => assertToolCalls(recorder, [{ name: 'lookup', args: { word: 'bye' } }])).toThrow(RunAssertionError);
    expect(() => assertToolCalls(recorder, [{ name: 'lookup', isError: true }])).toThrow(RunAssertionError);
    expect(() => assertToolCalls(recorder, [{ name: 'other' }])).toThrow(RunAssertionError);
    await agent.stop();
  });
});

describe('pure transitions', () => {
  it('walks the agent machine through a tool step without running any actor', () => {
    const run = runEvents(agentMachine, { agentId: 'a1' }, [
      agentEvents.prompt('hi'),
      agentEvents.toolCalls(1, 1, [{ id: 'c1', name: 'lookup', args: { word: 'hi' } }]),
      agentEvents.validated(1, ['c1']),
      agentEvents.authorized(1, { c1: 'ask' }),
      agentEvents.approve('c1'),
      agentEvents.toolResult(1, 'c1', 'a greeting'),
      agentEvents.answer(1, 2, 'It is a greeting.'),
    ]);
    expect(run.steps.map((s) => s.states[0])).toEqual([
      'idle',
      'running.turn.step.model',
      'running.turn.step.tools.validating',
      'running.turn.step.tools.authorizing',
      'running.turn.step.tools.awaitingApproval',
      'running.turn.step.tools.executing',
      'running.turn.step.model',
      'idle',
    ]);
    expect(run.steps[4]?.actions.map((a) => a.type)).toContain('announceApprovals');
    // The approval asks the worker to execute, and only the approved call.
    const asked = run.steps[5]?.actions.flatMap((a) => (a.asked ? [{ type: a.type, asked: a.asked }] : []));
    expect(asked).toEqual([
      {
        type: 'requestExecution',
        asked: expect.objectContaining({ type: 'EXECUTE', calls: [expect.objectContaining({ id: 'c1' })] }),
      },
    ]);
    expect(run.steps.at(-1)?.actions.map((a) => a.type)).toEqual(expect.arrayContaining(['endTurn', 'endRun']));
    expect(run.snapshot.context.stopReason).toBe('completed');
    expect(run.states).toEqual(['idle']);
  });

  it('tests a customised machine: a denial, an interrupt, and a provided guard', () => {
    const strict = agentMachine.provide({ guards: { stepLimitReached: () => true } });
    let current = startMachine(strict, { agentId: 'a1' });
    current = transitionMachine(strict, current.snapshot, agentEvents.prompt('hi', { inputId: 'in_9' }));
    current = transitionMachine(strict, current.snapshot, agentEvents.toolCalls(1, 1, [{ id: 'c1', name: 'rm' }]));
    current = transitionMachine(strict, current.snapshot, agentEvents.validated(1, ['c1']));
    current = transitionMachine(strict, current.snapshot, agentEvents.authorized(1, { c1: 'ask' }));
    current = transitionMachine(strict, current.snapshot, agentEvents.deny('c1', 'no'));
    // With the provided guard, the first step boundary ends the turn.
    expect(current.states).toEqual(['idle']);
    expect(current.snapshot.context.stopReason).toBe('max_steps');
    expect(current.snapshot.context.calls[0]?.result?.isError).toBe(true);

    // An agent without permissions: the worker's `allowed` takes the batch to executing at once, and the worker runs
    // it unasked.
    let open = startMachine(agentMachine, { agentId: 'a3' });
    open = transitionMachine(agentMachine, open.snapshot, agentEvents.prompt('hi'));
    open = transitionMachine(agentMachine, open.snapshot, agentEvents.toolCalls(1, 1, [{ id: 'c1', name: 'ls' }]));
    open = transitionMachine(agentMachine, open.snapshot, agentEvents.validated(1, ['c1'], { allowed: true }));
    expect(open.states).toEqual(['running.turn.step.tools.executing']);
    expect(open.actions.flatMap((a) => (a.sent ? [a.sent.event.type] : []))).toEqual([]);

    let other = startMachine(agentMachine, { agentId: 'a2' });
    other = transitionMachine(agentMachine, other.snapshot, agentEvents.prompt('hi'));
    other = transitionMachine(agentMachine, other.snapshot, agentEvents.interrupt());
    expect(other.states).toEqual(['idle']);
    expect(other.actions.map((a) => a.type)).toEqual(expect.arrayContaining(['abortInFlight', 'endTurn', 'endRun']));
    expect(transitionMachine(agentMachine, other.snapshot, agentEvents.deny('zz')).states).toEqual(['idle']);
    expect(agentEvents.toolResult(1, 'c', 't', { isError: true, terminate: true })).toMatchObject({
      type: 'TOOL_RESULTS',
      results: [{ toolCallId: 'c', terminate: true, result: { isError: true } }],
    });
  });

  it('names the active states of any state value', () => {
    expect(stateStrings('idle')).toEqual(['idle']);
    expect(stateStrings({ a: { b: 'c' }, d: 'e' })).toEqual(['a.b.c', 'd.e']);
    expect(stateStrings({ a: {} })).toEqual(['a']);
    expect(stateStrings(undefined)).toEqual([]);
  });
});
