/**
 * The agent statechart alone, through XState's pure `initialTransition` / `transition`: no actor runs, no worker
 * answers, and every effect shows up as a named action. One block per stable state, each event it handles and
 * the events it must ignore.
 */

import { describe, expect, it } from 'vitest';
import { transition } from 'xstate';
import { type AgentMachineEvent, agentMachine } from '../../machines/agent/index.js';
import {
  answer,
  call,
  contextsOf,
  drive,
  expectIgnored,
  inAuthorizing,
  inAwaiting,
  inExecuting,
  inModel,
  inValidating,
  MODEL,
  notify,
  prompt,
  requestsOf,
  result,
  type Snapshot,
  start,
  stateOf,
  steer,
  tools,
} from './chart.js';

describe('idle', () => {
  it('starts idle with the configured limits and no workers: an idle agent holds nothing running', () => {
    const [snapshot, actions] = start({ maxSteps: 7 });
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context).toMatchObject({ agentId: 'a1', maxSteps: 7, turn: 0, step: 0, queue: [] });
    expect(actions).toEqual([]);
    expect(Object.keys(snapshot.children)).toEqual([]);
  });

  it('runs no actor for a run: its requests are actions, and leaving the run aborts what is in flight', () => {
    const [running, opening] = drive(start()[0], prompt());
    expect(Object.keys(running.children)).toEqual([]);
    expect(opening).not.toContain('xstate.spawnChild');
    const done: AgentMachineEvent = {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([{ type: 'text', text: 'x' }]),
    };
    const [idle, ending] = drive(running, done);
    expect(idle.value).toBe('idle');
    expect(ending).toEqual(['recordAssistant', 'endStep', 'abortInFlight', 'endTurn', 'endRun']);
    expect(Object.keys(idle.children)).toEqual([]);
  });

  it('PROMPT starts a run, a turn and a step, and asks the model', () => {
    const [snapshot, actions] = drive(start()[0], prompt());
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(actions).toEqual(['startRun', 'startTurn', 'startStep', 'requestModel']);
    expect(snapshot.context).toMatchObject({ turn: 1, step: 1, queue: [], current: { inputId: 'in1' } });
  });

  it('STEER is kept for the next turn', () => {
    const [snapshot] = drive(start()[0], steer);
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.injections).toHaveLength(1);
    const [running] = drive(snapshot, prompt());
    // The runtime's startStep appends what it sees waiting; the step's assign clears it only afterwards.
    expect(contextsOf(snapshot, prompt(), 'startStep').map((c) => c.injections.length)).toEqual([1]);
    expect(running.context.injections).toEqual([]);
  });

  it('NOTIFY wakes the agent with the notification as the turn input', () => {
    const [snapshot, actions] = drive(start()[0], notify);
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(actions).toEqual(['startRun', 'startTurn', 'startStep', 'requestModel']);
    expect(snapshot.context.current).toMatchObject({ inputId: 'n1', expectsOutput: false });
    expect(snapshot.context.current?.messages[0]?.source).toBe('notification');
  });

  it('NOTIFY with several notifications opens one turn with all of them, or injects all of them at once', () => {
    const three: AgentMachineEvent = {
      type: 'NOTIFY',
      inputId: 'n1',
      messages: ['a', 'b', 'c'].map((text) => ({
        role: 'user' as const,
        content: [{ type: 'text' as const, text }],
        source: 'notification' as const,
      })),
    };
    const [woken] = drive(start()[0], three);
    expect(stateOf(woken)).toBe(MODEL);
    expect(woken.context.current?.messages.map((m) => m.source)).toEqual([
      'notification',
      'notification',
      'notification',
    ]);
    const [held] = drive(woken, three);
    expect(held.context.injections).toHaveLength(3);
  });

  it('a NOTIFY that says wake: false does not wake an agent that wakes for notifications', () => {
    const [snapshot] = drive(start()[0], { ...notify, wake: false } as AgentMachineEvent);
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.injections).toHaveLength(1);
  });

  it('NOTIFY does not wake an agent with wakeOnNotification: false', () => {
    const [snapshot] = drive(start({ wakeOnNotification: false })[0], notify);
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.injections).toHaveLength(1);
  });

  it('ignores INTERRUPT, approvals and stray worker replies', () => {
    expectIgnored(
      start()[0],
      { type: 'INTERRUPT' },
      { type: 'APPROVE', toolCallId: 'c1' },
      { type: 'DENY', toolCallId: 'c1' },
      { type: 'MODEL_DONE', turn: 0, step: 0, message: answer([{ type: 'text', text: 'late' }]) },
      { type: 'MODEL_ERROR', turn: 0, step: 0, error: { name: 'ModelError', code: 'unknown', message: 'late' } },
      { type: 'VALIDATED', batch: 0, outcomes: [] },
      { type: 'AUTHORIZED', batch: 0, decisions: [] },
      { type: 'TOOL_RESULTS', batch: 0, results: [{ toolCallId: 'c1', result: result('c1'), terminate: false }] },
      { type: 'OUTPUT_CHECKED', turn: 0, ok: true },
      { type: 'CANCEL_INPUT', inputId: 'in1' },
      { type: 'STOP' },
    );
  });
});

describe('running.turn.step.model', () => {
  it('a text answer ends the turn completed and the run, back to idle', () => {
    const [snapshot, actions] = drive(inModel(), {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([{ type: 'text', text: 'hello' }]),
    });
    expect(snapshot.value).toBe('idle');
    expect(actions).toEqual(['recordAssistant', 'endStep', 'abortInFlight', 'endTurn', 'endRun']);
    expect(snapshot.context.stopReason).toBe('completed');
  });

  it('tool calls start the tool phases at validating, one batch per step', () => {
    const [snapshot, actions] = drive(inModel(), {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([call('c1'), call('c2')], 'tool_calls'),
    });
    expect(stateOf(snapshot)).toBe(tools('validating'));
    expect(actions).toEqual(['recordAssistant', 'requestValidation']);
    expect(snapshot.context.batch).toBe(1);
    expect(snapshot.context.calls.map((c) => [c.call.id, c.status])).toEqual([
      ['c1', 'open'],
      ['c2', 'open'],
    ]);
  });

  it('tool calls cut off by the output limit are answered with errors and never validated or run', () => {
    const [snapshot, actions] = drive(inModel(), {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([call('c1')], 'length'),
    });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(snapshot.context.step).toBe(2);
    expect(actions).toEqual(['recordAssistant', 'recordToolResults', 'endStep', 'startStep', 'requestModel']);
  });

  it('a pending steer keeps the turn going after a text answer', () => {
    const [snapshot, actions] = drive(inModel(), steer, {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([{ type: 'text', text: 'done?' }]),
    });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(snapshot.context.step).toBe(2);
    expect(actions).toContain('startStep');
    expect(actions).not.toContain('endTurn');
    expect(snapshot.context.injections).toEqual([]);
  });

  it('an expected structured answer is checked before the turn ends', () => {
    const [snapshot] = drive(inModel(undefined, true), {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([{ type: 'text', text: '{}' }]),
    });
    expect(stateOf(snapshot)).toBe(JSON.stringify({ running: { turn: { step: 'checkingOutput' } } }));
  });

  it('MODEL_ERROR fails the turn with the error kept, then returns to idle', () => {
    const error = { name: 'ModelError', code: 'rate_limit', message: 'slow down', status: 429 };
    const [snapshot, actions] = drive(inModel(), { type: 'MODEL_ERROR', turn: 1, step: 1, error });
    expect(snapshot.value).toBe('idle');
    expect(actions).toEqual(['endStep', 'abortInFlight', 'endTurn', 'endRun']);
    expect(snapshot.context).toMatchObject({ stopReason: 'error', error });
  });

  it('a failed turn goes on to the next queued prompt', () => {
    const [snapshot, actions] = drive(inModel(), prompt('in2'), {
      type: 'MODEL_ERROR',
      turn: 1,
      step: 1,
      error: { name: 'ModelError', code: 'server_error', message: 'boom' },
    });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(snapshot.context).toMatchObject({ turn: 2, current: { inputId: 'in2' }, error: undefined });
    expect(actions).not.toContain('endRun');
  });

  it('INTERRUPT aborts in-flight work, ends the turn interrupted, and returns to idle', () => {
    const [snapshot, actions] = drive(inModel(), { type: 'INTERRUPT' });
    expect(snapshot.value).toBe('idle');
    expect(actions).toEqual(['endStep', 'abortInFlight', 'recordToolResults', 'endTurn', 'endRun']);
    expect(snapshot.context.stopReason).toBe('interrupted');
  });

  it('PROMPT, STEER and NOTIFY while running are queued, not started', () => {
    const [snapshot] = drive(inModel(), prompt('in2'), steer, notify);
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(snapshot.context.queue.map((q) => q.inputId)).toEqual(['in2']);
    expect(snapshot.context.injections).toHaveLength(2);
  });

  it('ignores replies for another step, and tool-phase events', () => {
    expectIgnored(
      inModel(),
      { type: 'MODEL_DONE', turn: 1, step: 2, message: answer([{ type: 'text', text: 'stale' }]) },
      { type: 'MODEL_DONE', turn: 0, step: 1, message: answer([{ type: 'text', text: 'stale' }]) },
      { type: 'MODEL_ERROR', turn: 1, step: 9, error: { name: 'ModelError', code: 'unknown', message: 'x' } },
      { type: 'VALIDATED', batch: 0, outcomes: [] },
      { type: 'AUTHORIZED', batch: 0, decisions: [] },
      { type: 'TOOL_RESULTS', batch: 0, results: [{ toolCallId: 'c1', result: result('c1'), terminate: false }] },
      { type: 'APPROVE', toolCallId: 'c1' },
      { type: 'DENY', toolCallId: 'c1' },
      { type: 'OUTPUT_CHECKED', turn: 1, ok: true },
    );
  });
});

describe('a tool answer the worker validated as it answered', () => {
  const validatedAnswer = (
    outcomes: Array<{ toolCallId: string; error?: ReturnType<typeof result> }>,
    allowed?: true,
  ): AgentMachineEvent => ({
    type: 'MODEL_DONE',
    turn: 1,
    step: 1,
    message: answer([call('c1'), call('c2')], 'tool_calls'),
    validated: allowed ? { outcomes, allowed } : { outcomes },
  });

  it('nothing can refuse a call: model → executing in the one event, with no request to the worker', () => {
    const event = validatedAnswer([{ toolCallId: 'c1' }, { toolCallId: 'c2' }], true);
    const [snapshot, actions] = drive(inModel(), event);
    expect(stateOf(snapshot)).toBe(tools('executing'));
    expect(requestsOf(inModel(), event)).toEqual([]);
    expect(actions).toEqual(['recordAssistant']);
    expect(snapshot.context).toMatchObject({ batch: 1, validation: 'allowed' });
    expect(snapshot.context.calls.map((c) => c.status)).toEqual(['open', 'open']);
  });

  it('a late answer that nothing could refuse is ignored, as any late answer is', () => {
    const late = { ...validatedAnswer([{ toolCallId: 'c1' }, { toolCallId: 'c2' }], true), step: 0 };
    expectIgnored(inModel(), late as AgentMachineEvent);
  });

  it('invalid calls are answered with their error in the same assign; the valid rest run', () => {
    const error = result('c1', true);
    const [snapshot] = drive(inModel(), validatedAnswer([{ toolCallId: 'c1', error }, { toolCallId: 'c2' }], true));
    expect(stateOf(snapshot)).toBe(tools('executing'));
    expect(snapshot.context.calls.map((c) => c.status)).toEqual(['done', 'open']);
    expect(snapshot.context.calls[0]?.result).toEqual(error);
  });

  it('with rules to ask: validating → authorizing, asking for the valid calls only', () => {
    const event = validatedAnswer([{ toolCallId: 'c1' }, { toolCallId: 'c2', error: result('c2', true) }]);
    const [snapshot] = drive(inModel(), event);
    expect(stateOf(snapshot)).toBe(tools('authorizing'));
    expect(snapshot.context.validation).toBe('checked');
    expect(requestsOf(inModel(), event)).toEqual([{ type: 'AUTHORIZE', batch: 1, calls: [call('c1')] }]);
  });

  it('every call invalid: the results are recorded and the next step asks the model', () => {
    const invalid = [
      { toolCallId: 'c1', error: result('c1', true) },
      { toolCallId: 'c2', error: result('c2', true) },
    ];
    for (const allowed of [true, undefined] as const) {
      const [snapshot, actions] = drive(inModel(), validatedAnswer(invalid, allowed));
      expect(stateOf(snapshot)).toBe(MODEL);
      expect(snapshot.context.step).toBe(2);
      expect(actions).toEqual(['recordAssistant', 'recordToolResults', 'endStep', 'startStep', 'requestModel']);
    }
  });

  it('an answer without its validation asks for it (VALIDATE), and the next batch forgets the last one', () => {
    const allowed = drive(inModel(), validatedAnswer([{ toolCallId: 'c1' }, { toolCallId: 'c2' }], true))[0];
    const asked = drive(inValidating(), { type: 'VALIDATED', batch: 1, outcomes: [] })[0];
    expect(asked.context.validation).toBeUndefined();
    expect(
      requestsOf(inModel(), { type: 'MODEL_DONE', turn: 1, step: 1, message: answer([call('c1')], 'tool_calls') }),
    ).toEqual([{ type: 'VALIDATE', batch: 1, calls: [call('c1')] }]);
    const done = drive(allowed, {
      type: 'TOOL_RESULTS',
      batch: 1,
      results: ['c1', 'c2'].map((id) => ({ toolCallId: id, result: result(id), terminate: false })),
    })[0];
    const next = drive(done, { type: 'MODEL_DONE', turn: 1, step: 2, message: answer([call('c3')], 'tool_calls') })[0];
    expect(stateOf(next)).toBe(tools('validating'));
    expect(next.context.validation).toBeUndefined();
  });
});

describe('running.turn.step.tools.validating', () => {
  it('VALIDATED moves valid calls to authorizing and answers invalid ones with their error', () => {
    const error = { ...result('c2', true) };
    const [snapshot, actions] = drive(inValidating(), {
      type: 'VALIDATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c1' }, { toolCallId: 'c2', error }],
    });
    expect(stateOf(snapshot)).toBe(tools('authorizing'));
    expect(actions).toEqual(['requestAuthorization']);
    expect(snapshot.context.calls.map((c) => c.status)).toEqual(['open', 'done']);
    expect(snapshot.context.calls[1]?.result).toEqual(error);
  });

  it('a batch nothing can refuse goes straight to executing: no AUTHORIZE, no EXECUTE (the worker runs it), no assign', () => {
    const validating = inValidating();
    const snapshot = transition(agentMachine, validating, {
      type: 'VALIDATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c1' }, { toolCallId: 'c2' }],
      allowed: true,
    });
    expect(stateOf(snapshot[0])).toBe(tools('executing'));
    const sent = snapshot[1].flatMap((a) => {
      const event = (a.params as { event?: { type?: string; calls?: Array<{ id: string }> } } | undefined)?.event;
      return event ? [`${event.type} ${event.calls?.map((c) => c.id).join(',')}`] : [];
    });
    expect(sent).toEqual([]);
    expect(snapshot[0].context).toBe(validating.context);
  });

  it('an allowed batch with an invalid call runs only the valid ones', () => {
    const [snapshot, actions] = drive(inValidating(), {
      type: 'VALIDATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c1', error: result('c1', true) }, { toolCallId: 'c2' }],
      allowed: true,
    });
    expect(stateOf(snapshot)).toBe(tools('executing'));
    expect(actions).toEqual([]);
    expect(snapshot.context.calls.map((c) => c.status)).toEqual(['done', 'open']);
  });

  it('a batch nothing can refuse still stops in authorizing when the VALIDATED is not this batch', () => {
    expectIgnored(inValidating(), { type: 'VALIDATED', batch: 0, outcomes: [], allowed: true });
  });

  it('a batch with no valid call skips authorization and execution', () => {
    const [snapshot, actions] = drive(inValidating(['c1']), {
      type: 'VALIDATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c1', error: result('c1', true) }],
    });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(actions.slice(0, 2)).toEqual(['recordToolResults', 'endStep']);
  });

  it('ignores replies for another batch, approvals and results', () => {
    expectIgnored(
      inValidating(),
      { type: 'VALIDATED', batch: 0, outcomes: [] },
      { type: 'AUTHORIZED', batch: 1, decisions: [] },
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c1', result: result('c1'), terminate: false }] },
      { type: 'APPROVE', toolCallId: 'c1' },
      { type: 'MODEL_DONE', turn: 1, step: 1, message: answer([]) },
    );
  });

  it('INTERRUPT closes every open call with an interrupted result', () => {
    const [snapshot, actions] = drive(inValidating(), { type: 'INTERRUPT' });
    expect(snapshot.value).toBe('idle');
    expect(actions).toContain('recordToolResults');
    expect(snapshot.context.calls.every((c) => c.status === 'done' && c.result?.isError)).toBe(true);
  });
});

describe('running.turn.step.tools.authorizing', () => {
  it('waits for the permission chain: other events do not pass it', () => {
    const authorizing = inAuthorizing();
    const [snapshot] = drive(authorizing, { type: 'STEER', message: { role: 'user', content: [] } });
    expect(stateOf(snapshot)).toBe(tools('authorizing'));
  });

  it('all allowed: executing, with the calls still open and sent to the tool worker, and no assign', () => {
    const authorizing = inAuthorizing();
    const [snapshot] = drive(authorizing, {
      type: 'AUTHORIZED',
      batch: 1,
      decisions: [
        { toolCallId: 'c1', decision: 'allow' },
        { toolCallId: 'c2', decision: 'allow' },
      ],
    });
    expect(stateOf(snapshot)).toBe(tools('executing'));
    expect(snapshot.context.calls.map((c) => c.status)).toEqual(['open', 'open']);
    // A phase every call passes leaves the context as it was: no snapshot clone for nothing.
    expect(snapshot.context).toBe(authorizing.context);
  });

  it('a denial becomes an error result the model sees; the rest run', () => {
    const [snapshot] = drive(inAuthorizing(), {
      type: 'AUTHORIZED',
      batch: 1,
      decisions: [
        { toolCallId: 'c1', decision: 'deny', reason: 'not on weekends' },
        { toolCallId: 'c2', decision: 'allow' },
      ],
    });
    expect(stateOf(snapshot)).toBe(tools('executing'));
    expect(snapshot.context.calls[0]?.status).toBe('done');
    expect(snapshot.context.calls[0]?.result?.content).toEqual([
      { type: 'text', text: 'Permission denied: not on weekends' },
    ]);
  });

  it('any ask waits for approval, and the whole batch waits with it', () => {
    const [snapshot, actions] = drive(inAuthorizing(), {
      type: 'AUTHORIZED',
      batch: 1,
      decisions: [
        { toolCallId: 'c1', decision: 'ask' },
        { toolCallId: 'c2', decision: 'allow' },
      ],
    });
    expect(stateOf(snapshot)).toBe(tools('awaitingApproval'));
    expect(actions).toEqual(['announceApprovals']);
    expect(snapshot.context.calls.map((c) => c.status)).toEqual(['awaiting', 'open']);
  });

  it('ignores stale decisions and early approvals', () => {
    expectIgnored(
      inAuthorizing(),
      { type: 'AUTHORIZED', batch: 7, decisions: [{ toolCallId: 'c1', decision: 'allow' }] },
      { type: 'APPROVE', toolCallId: 'c1' },
      { type: 'DENY', toolCallId: 'c1' },
      { type: 'VALIDATED', batch: 1, outcomes: [] },
    );
  });
});

describe('running.turn.step.tools.awaitingApproval', () => {
  it('APPROVE of the last waiting call starts execution', () => {
    const [snapshot, actions] = drive(inAwaiting(), { type: 'APPROVE', toolCallId: 'c1' });
    expect(stateOf(snapshot)).toBe(tools('executing'));
    expect(actions).toEqual(['requestExecution']);
    expect(snapshot.context.calls.map((c) => c.status)).toEqual(['open', 'open']);
  });

  it('DENY answers the call with the reason; the allowed rest still run', () => {
    const [snapshot] = drive(inAwaiting(), { type: 'DENY', toolCallId: 'c1', reason: 'too risky' });
    expect(stateOf(snapshot)).toBe(tools('executing'));
    expect(snapshot.context.calls[0]?.result?.content).toEqual([
      { type: 'text', text: 'The user denied this tool call: too risky' },
    ]);
    expect(snapshot.context.calls[1]?.status).toBe('open');
  });

  it('ignores approvals of calls that are not waiting, and tool results', () => {
    expectIgnored(
      inAwaiting(),
      { type: 'APPROVE', toolCallId: 'c2' },
      { type: 'APPROVE', toolCallId: 'nope' },
      { type: 'DENY', toolCallId: 'c2' },
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c2', result: result('c2'), terminate: false }] },
    );
  });

  it('INTERRUPT while waiting closes the waiting call too', () => {
    const [snapshot] = drive(inAwaiting(), { type: 'INTERRUPT' });
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.calls.map((c) => c.status)).toEqual(['done', 'done']);
  });
});

describe('running.turn.step.tools.executing', () => {
  it('results are taken one by one; the last one finalizes the step and starts the next', () => {
    const [partway] = drive(inExecuting(), {
      type: 'TOOL_RESULTS',
      batch: 1,
      results: [{ toolCallId: 'c2', result: result('c2'), terminate: false }],
    });
    expect(stateOf(partway)).toBe(tools('executing'));
    const [snapshot, actions] = drive(partway, {
      type: 'TOOL_RESULTS',
      batch: 1,
      results: [{ toolCallId: 'c1', result: result('c1'), terminate: false }],
    });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(snapshot.context.step).toBe(2);
    expect(actions).toEqual(['recordToolResults', 'endStep', 'startStep', 'requestModel']);
  });

  it('results that finished together arrive as one event, in any order, and finalize the step at once', () => {
    const [snapshot, actions] = drive(inExecuting(), {
      type: 'TOOL_RESULTS',
      batch: 1,
      results: [
        { toolCallId: 'c2', result: result('c2'), terminate: false },
        { toolCallId: 'c1', result: result('c1'), terminate: false },
      ],
    });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(actions).toEqual(['recordToolResults', 'endStep', 'startStep', 'requestModel']);
    const recorded = contextsOf(
      inExecuting(),
      {
        type: 'TOOL_RESULTS',
        batch: 1,
        results: [
          { toolCallId: 'c2', result: result('c2'), terminate: false },
          { toolCallId: 'c1', result: result('c1'), terminate: false },
        ],
      },
      'recordToolResults',
    );
    // The history gets them in call order, whatever order they finished in.
    expect(recorded[0]?.calls.map((c) => c.result?.toolCallId)).toEqual(['c1', 'c2']);
  });

  it('a list that answers some open calls takes those and drops the rest', () => {
    const [snapshot] = drive(inExecuting(), {
      type: 'TOOL_RESULTS',
      batch: 1,
      results: [
        { toolCallId: 'zz', result: result('zz'), terminate: false },
        { toolCallId: 'c1', result: result('c1'), terminate: false },
      ],
    });
    expect(stateOf(snapshot)).toBe(tools('executing'));
    expect(snapshot.context.calls.map((c) => [c.call.id, c.status])).toEqual([
      ['c1', 'done'],
      ['c2', 'open'],
    ]);
  });

  it('ends the turn when every result of the batch says terminate', () => {
    const [snapshot, actions] = drive(
      inExecuting(),
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c1', result: result('c1'), terminate: true }] },
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c2', result: result('c2'), terminate: true }] },
    );
    expect(snapshot.value).toBe('idle');
    expect(actions).toEqual(['recordToolResults', 'endStep', 'endTurn', 'abortInFlight', 'endRun']);
  });

  it('does not end the turn when only some results say terminate', () => {
    const [snapshot] = drive(
      inExecuting(),
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c1', result: result('c1'), terminate: true }] },
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c2', result: result('c2'), terminate: false }] },
    );
    expect(stateOf(snapshot)).toBe(MODEL);
  });

  it('ends the turn with max_steps after the step that reaches the limit', () => {
    const [snapshot, actions] = drive(
      drive(start({ maxSteps: 1 })[0], prompt())[0],
      { type: 'MODEL_DONE', turn: 1, step: 1, message: answer([call('c1')], 'tool_calls') },
      { type: 'VALIDATED', batch: 1, outcomes: [{ toolCallId: 'c1' }] },
      { type: 'AUTHORIZED', batch: 1, decisions: [{ toolCallId: 'c1', decision: 'allow' }] },
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c1', result: result('c1'), terminate: false }] },
    );
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.stopReason).toBe('max_steps');
    expect(actions.slice(-4)).toEqual(['endStep', 'endTurn', 'abortInFlight', 'endRun']);
  });

  it('drops results of another batch, duplicates and unknown calls', () => {
    const [once] = drive(inExecuting(), {
      type: 'TOOL_RESULTS',
      batch: 1,
      results: [{ toolCallId: 'c1', result: result('c1'), terminate: false }],
    });
    expectIgnored(
      once,
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c1', result: result('c1', true), terminate: false }] },
      { type: 'TOOL_RESULTS', batch: 0, results: [{ toolCallId: 'c2', result: result('c2'), terminate: false }] },
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'zz', result: result('zz'), terminate: false }] },
      { type: 'APPROVE', toolCallId: 'c2' },
    );
  });

  it('INTERRUPT closes the running calls with interrupted results, keeping finished ones', () => {
    const [snapshot, actions] = drive(
      inExecuting(),
      { type: 'TOOL_RESULTS', batch: 1, results: [{ toolCallId: 'c1', result: result('c1'), terminate: false }] },
      { type: 'INTERRUPT' },
    );
    expect(snapshot.value).toBe('idle');
    expect(actions).toContain('abortInFlight');
    expect(snapshot.context.calls[0]?.result).toEqual(result('c1'));
    expect(snapshot.context.calls[1]?.result?.isError).toBe(true);
    expect(snapshot.context.calls[1]?.result?.content[0]).toMatchObject({
      text: expect.stringContaining('interrupted'),
    });
  });
});

describe('running.turn.step.checkingOutput', () => {
  const checking = () =>
    drive(inModel(undefined, true), {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([{ type: 'text', text: '{' }]),
    })[0];

  it('a valid answer ends the turn completed', () => {
    const [snapshot, actions] = drive(checking(), { type: 'OUTPUT_CHECKED', turn: 1, ok: true });
    expect(snapshot.value).toBe('idle');
    expect(actions).toEqual(['endStep', 'endTurn', 'abortInFlight', 'endRun']);
    expect(snapshot.context.stopReason).toBe('completed');
  });

  it('an invalid answer goes back to the model as feedback, in a new step', () => {
    const [snapshot, actions] = drive(checking(), { type: 'OUTPUT_CHECKED', turn: 1, ok: false, feedback: 'fix x' });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(snapshot.context.outputAttempts).toBe(1);
    expect(actions).toContain('startStep');
    expect(
      contextsOf(checking(), { type: 'OUTPUT_CHECKED', turn: 1, ok: false, feedback: 'fix x' }, 'startStep'),
    ).toMatchObject([{ injections: [{ source: 'feedback', content: [{ text: 'fix x' }] }] }]);
  });

  it('the turn fails with output_invalid when the attempts run out', () => {
    const [snapshot] = drive(
      drive(start({ maxOutputAttempts: 1 })[0], prompt('in1', true))[0],
      { type: 'MODEL_DONE', turn: 1, step: 1, message: answer([{ type: 'text', text: 'nope' }]) },
      { type: 'OUTPUT_CHECKED', turn: 1, ok: false, feedback: 'bad' },
    );
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.stopReason).toBe('error');
    expect(snapshot.context.error?.code).toBe('output_invalid');
  });

  it('ignores a check of another turn', () => {
    expectIgnored(checking(), { type: 'OUTPUT_CHECKED', turn: 0, ok: true }, { type: 'APPROVE', toolCallId: 'x' });
  });
});

describe('interrupted and failed', () => {
  it('an interrupt goes on to the next queued prompt without ending the run', () => {
    const [snapshot, actions] = drive(inExecuting(), prompt('in2'), { type: 'INTERRUPT' });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(snapshot.context.current?.inputId).toBe('in2');
    expect(actions).not.toContain('endRun');
    expect(actions.filter((a) => a === 'endTurn')).toHaveLength(1);
  });
});

/** The inputs each `settleDropped` of a transition was given, in order. */
function droppedBy(snapshot: Snapshot, event: AgentMachineEvent): string[][] {
  const [, executed] = transition(agentMachine, snapshot, event);
  return executed
    .filter((action) => action.type === 'settleDropped')
    .map((action) => (action.params as { inputIds: string[] }).inputIds);
}

describe('dropping queued inputs', () => {
  const queued = () => drive(inModel(), prompt('in2'), prompt('in3'))[0];

  it('CANCEL_INPUT of a queued input drops it alone: its caller is settled, the running turn goes on', () => {
    const [snapshot, actions] = drive(queued(), { type: 'CANCEL_INPUT', inputId: 'in2' });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(actions).toEqual(['settleDropped']);
    expect(droppedBy(queued(), { type: 'CANCEL_INPUT', inputId: 'in2' })).toEqual([['in2']]);
    expect(snapshot.context).toMatchObject({ turn: 1, step: 1, current: { inputId: 'in1' } });
    expect(snapshot.context.queue.map((input) => input.inputId)).toEqual(['in3']);
    // The dropped input never opens a turn: the next one is in3.
    const [next] = drive(snapshot, { type: 'INTERRUPT' });
    expect(next.context).toMatchObject({ turn: 2, current: { inputId: 'in3' }, queue: [] });
  });

  it('CANCEL_INPUT of the running input interrupts its turn, and the next queued input starts', () => {
    const [snapshot, actions] = drive(queued(), { type: 'CANCEL_INPUT', inputId: 'in1' });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(actions).toEqual([
      'endStep',
      'abortInFlight',
      'recordToolResults',
      'endTurn',
      'startTurn',
      'startStep',
      'requestModel',
    ]);
    expect(snapshot.context).toMatchObject({ turn: 2, current: { inputId: 'in2' } });
    expect(snapshot.context.queue.map((input) => input.inputId)).toEqual(['in3']);
  });

  it('CANCEL_INPUT of an input the agent does not hold (its turn is over, or never given) is ignored', () => {
    const [after] = drive(queued(), { type: 'INTERRUPT' });
    expectIgnored(after, { type: 'CANCEL_INPUT', inputId: 'in1' }, { type: 'CANCEL_INPUT', inputId: 'other' });
    expectIgnored(inExecuting(), { type: 'CANCEL_INPUT', inputId: 'in2' });
  });

  it('STOP drops every queued input, then interrupts the turn: no queued input starts, and the run ends', () => {
    const [snapshot, actions] = drive(queued(), { type: 'STOP' });
    expect(snapshot.value).toBe('idle');
    // Leaving the run aborts what is in flight before the transition's own actions drop the queue.
    expect(actions).toEqual(['endStep', 'abortInFlight', 'settleDropped', 'recordToolResults', 'endTurn', 'endRun']);
    expect(droppedBy(queued(), { type: 'STOP' })).toEqual([['in2', 'in3']]);
    expect(snapshot.context).toMatchObject({ turn: 1, queue: [], stopReason: 'interrupted' });
  });

  it('STOP during a tool batch closes its open calls, as an interrupt does', () => {
    const [snapshot] = drive(inExecuting(), prompt('in2'), { type: 'STOP' });
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.queue).toEqual([]);
    expect(snapshot.context.calls.map((state) => state.status)).toEqual(['done', 'done']);
    expect(droppedBy(drive(inExecuting(), prompt('in2'))[0], { type: 'STOP' })).toEqual([['in2']]);
  });

  it('STOP with nothing queued drops nothing', () => {
    expect(droppedBy(inModel(), { type: 'STOP' })).toEqual([[]]);
    expect(drive(inModel(), { type: 'STOP' })[0].value).toBe('idle');
  });
});
