/**
 * What the agent statechart takes from its workers' replies and what it asks them, through XState's pure
 * `transition`: a stale reply that carries errors, asks, denials or a tripped guardrail must not drive the current
 * step; each request carries exactly the calls its phase is about; results land on their own calls.
 */
import { describe, expect, it } from 'vitest';
import { type AnyEventObject, createActor, transition } from 'xstate';
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

const toolAnswer = (ids: string[], turn = 1, step = 1): AgentMachineEvent => ({
  type: 'MODEL_DONE',
  turn,
  step,
  message: answer(
    ids.map((id) => call(id)),
    'tool_calls',
  ),
});
const textAnswer = (turn = 1, step = 1): AgentMachineEvent => ({
  type: 'MODEL_DONE',
  turn,
  step,
  message: answer([{ type: 'text', text: 'done' }]),
});
const results = (batch: number, ...ids: string[]): AgentMachineEvent => ({
  type: 'TOOL_RESULTS',
  batch,
  results: ids.map((id) => ({ toolCallId: id, result: result(id), terminate: false })),
});
const textOf = (snapshot: Snapshot, index: number) =>
  (snapshot.context.calls[index]?.result?.content[0] as { text?: string } | undefined)?.text;
const trip = { name: 'GuardrailTripped', code: 'guardrail_tripped', message: 'no secrets' };

describe('stale replies do not drive the current step', () => {
  it('a VALIDATED of another batch that fails every call does not finalize this one', () => {
    expectIgnored(inValidating(), {
      type: 'VALIDATED',
      batch: 0,
      outcomes: [
        { toolCallId: 'c1', error: result('c1', true) },
        { toolCallId: 'c2', error: result('c2', true) },
      ],
    });
  });

  it('a VALIDATED of another batch that fails one call answers nothing here', () => {
    expectIgnored(
      inValidating(),
      {
        type: 'VALIDATED',
        batch: 0,
        outcomes: [{ toolCallId: 'c1', error: result('c1', true) }, { toolCallId: 'c2' }],
      },
      {
        type: 'VALIDATED',
        batch: 2,
        outcomes: [{ toolCallId: 'c1', error: result('c1', true) }, { toolCallId: 'c2' }],
        allowed: true,
      },
    );
  });

  it('an AUTHORIZED of another batch that asks or denies neither holds nor refuses a call', () => {
    expectIgnored(
      inAuthorizing(),
      { type: 'AUTHORIZED', batch: 0, decisions: [{ toolCallId: 'c1', decision: 'ask' }] },
      { type: 'AUTHORIZED', batch: 0, decisions: [{ toolCallId: 'c2', decision: 'deny', reason: 'old rule' }] },
    );
  });

  it('a tripped guardrail of another step does not end the turn waiting on hooks', () => {
    const preparing = drive(inModel(), { type: 'PREPARING', turn: 1, step: 1 })[0];
    const reviewing = drive(inModel(), { type: 'REVIEWING', turn: 1, step: 1 })[0];
    for (const waiting of [preparing, reviewing]) {
      expectIgnored(
        waiting,
        { type: 'MODEL_ERROR', turn: 1, step: 2, error: trip },
        { type: 'MODEL_ERROR', turn: 0, step: 1, error: trip },
      );
    }
  });

  it('a failed output check of another turn neither retries nor fails this one', () => {
    const checking = drive(inModel(undefined, true), textAnswer())[0];
    expectIgnored(checking, { type: 'OUTPUT_CHECKED', turn: 0, ok: false, feedback: 'old' });
  });

  it('a duplicate result that comes with the last open call keeps the first result', () => {
    const [once] = drive(inExecuting(), results(1, 'c1'));
    const late = { toolCallId: 'c1', result: result('c1', true), terminate: false };
    const recorded = contextsOf(
      once,
      { type: 'TOOL_RESULTS', batch: 1, results: [late, { toolCallId: 'c2', result: result('c2'), terminate: false }] },
      'recordToolResults',
    );
    expect(recorded.map((context) => context.calls.map((state) => state.result?.isError))).toEqual([[false, false]]);
  });
});

describe('what the workers are asked', () => {
  it('the model request names the turn, the step and the input that opened the turn', () => {
    expect(requestsOf(start()[0], prompt('in7'))).toEqual([
      { type: 'MODEL_REQUEST', turn: 1, step: 1, inputId: 'in7', mayCompact: true },
    ]);
    const [validating] = drive(drive(start()[0], prompt('in7'))[0], toolAnswer(['c1']));
    const [executing] = drive(validating, {
      type: 'VALIDATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c1' }],
      allowed: true,
    });
    expect(requestsOf(executing, results(1, 'c1'))).toEqual([
      { type: 'MODEL_REQUEST', turn: 1, step: 2, inputId: 'in7', mayCompact: true },
    ]);
  });

  it('validation gets every call of the batch', () => {
    expect(requestsOf(inModel(), toolAnswer(['c1', 'c2']))).toEqual([
      { type: 'VALIDATE', batch: 1, calls: [call('c1'), call('c2')] },
    ]);
  });

  it('authorization gets only the calls that passed validation', () => {
    expect(
      requestsOf(inValidating(), {
        type: 'VALIDATED',
        batch: 1,
        outcomes: [{ toolCallId: 'c1', error: result('c1', true) }, { toolCallId: 'c2' }],
      }),
    ).toEqual([{ type: 'AUTHORIZE', batch: 1, calls: [call('c2')] }]);
    expect(
      requestsOf(inValidating(), {
        type: 'VALIDATED',
        batch: 1,
        outcomes: [{ toolCallId: 'c1' }, { toolCallId: 'c2' }],
      }),
    ).toEqual([{ type: 'AUTHORIZE', batch: 1, calls: [call('c1'), call('c2')] }]);
  });

  it('execution gets only the allowed calls: not the denied one, and the approved one once approved', () => {
    expect(
      requestsOf(inAuthorizing(), {
        type: 'AUTHORIZED',
        batch: 1,
        decisions: [
          { toolCallId: 'c1', decision: 'deny' },
          { toolCallId: 'c2', decision: 'allow' },
        ],
      }),
    ).toEqual([{ type: 'EXECUTE', batch: 1, calls: [call('c2')] }]);
    expect(requestsOf(inAwaiting(), { type: 'APPROVE', toolCallId: 'c1' })).toEqual([
      { type: 'EXECUTE', batch: 1, calls: [call('c1'), call('c2')] },
    ]);
    expect(requestsOf(inAwaiting(), { type: 'DENY', toolCallId: 'c1' })).toEqual([
      { type: 'EXECUTE', batch: 1, calls: [call('c2')] },
    ]);
  });

  it('the output check names the turn and the input whose schema applies', () => {
    const [running] = drive(start()[0], prompt('in9', true));
    expect(requestsOf(running, textAnswer())).toEqual([{ type: 'CHECK_OUTPUT', turn: 1, inputId: 'in9' }]);
  });

  it('each step is announced with its own number', () => {
    const steps = (snapshot: Snapshot, event: AgentMachineEvent) =>
      transition(agentMachine, snapshot, event)[1]
        .filter((action) => action.type === 'startStep')
        .map((action) => action.params);
    expect(steps(start()[0], prompt())).toEqual([{ step: 1 }]);
    expect(steps(inExecuting(), results(1, 'c1', 'c2'))).toEqual([{ step: 2 }]);
  });

  it('the compactor is told why it runs: the threshold, or the provider refused the request as too long', () => {
    const reasonOf = (event: AgentMachineEvent) =>
      transition(agentMachine, inModel(), event)[1]
        .filter((action) => action.type === 'xstate.spawnChild')
        .map((action) => (action.params as unknown as { input: unknown }).input);
    expect(reasonOf({ type: 'CONTEXT_FULL', turn: 1, step: 1, tokens: 900, window: 1000 })).toEqual([
      { agentId: 'a1', reason: 'threshold' },
    ]);
    const overflow = { name: 'ModelError', code: 'context_overflow', message: 'prompt is too long' };
    expect(reasonOf({ type: 'MODEL_ERROR', turn: 1, step: 1, error: overflow })).toEqual([
      { agentId: 'a1', reason: 'overflow' },
    ]);
  });
});

describe('answers, decisions and results', () => {
  it('an answer with text and tool calls runs the calls', () => {
    const [snapshot] = drive(inModel(), {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([{ type: 'text', text: 'let me look' }, call('c1')], 'tool_calls'),
    });
    expect(stateOf(snapshot)).toBe(tools('validating'));
  });

  it('a text answer cut off by the output limit ends the turn like any final answer', () => {
    const [snapshot] = drive(inModel(), {
      type: 'MODEL_DONE',
      turn: 1,
      step: 1,
      message: answer([{ type: 'text', text: 'and then' }], 'length'),
    });
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.stopReason).toBe('completed');
  });

  it('cut-off tool calls are a batch of their own, answered with an error that says to issue them again', () => {
    const cutOff: AgentMachineEvent = { type: 'MODEL_DONE', turn: 1, step: 1, message: answer([call('c1')], 'length') };
    const [recorded] = contextsOf(inModel(), cutOff, 'recordToolResults');
    expect(recorded?.batch).toBe(1);
    expect(recorded?.calls).toEqual([
      {
        call: call('c1'),
        status: 'done',
        result: expect.objectContaining({
          toolCallId: 'c1',
          isError: true,
          content: [{ type: 'text', text: expect.stringContaining('output token limit') }],
        }),
      },
    ]);
    // The next batch is numbered after it, so late results of either are told apart.
    const [validating] = drive(inModel(), cutOff, toolAnswer(['c1'], 1, 2));
    expect(validating.context.batch).toBe(2);
  });

  it('a denial without a reason still tells the model it was denied', () => {
    const [snapshot] = drive(inAuthorizing(), {
      type: 'AUTHORIZED',
      batch: 1,
      decisions: [
        { toolCallId: 'c1', decision: 'deny' },
        { toolCallId: 'c2', decision: 'allow' },
      ],
    });
    expect(textOf(snapshot, 0)).toBe('Permission denied');
    const [denied] = drive(inAwaiting(), { type: 'DENY', toolCallId: 'c1' });
    expect(textOf(denied, 0)).toBe('The user denied this tool call');
  });

  it('approving one of two waiting calls keeps the batch waiting for the other', () => {
    const [waiting] = drive(inAuthorizing(), {
      type: 'AUTHORIZED',
      batch: 1,
      decisions: [
        { toolCallId: 'c1', decision: 'ask' },
        { toolCallId: 'c2', decision: 'ask' },
      ],
    });
    const [snapshot, actions] = drive(waiting, { type: 'APPROVE', toolCallId: 'c2' });
    expect(stateOf(snapshot)).toBe(tools('awaitingApproval'));
    expect(snapshot.context.calls.map((state) => state.status)).toEqual(['awaiting', 'open']);
    expect(actions).toEqual([]);
  });

  it('denying the only call of a batch finishes the step with the denial in the history', () => {
    const [validating] = drive(inModel(), toolAnswer(['c1']));
    const [authorizing] = drive(validating, { type: 'VALIDATED', batch: 1, outcomes: [{ toolCallId: 'c1' }] });
    const [waiting] = drive(authorizing, {
      type: 'AUTHORIZED',
      batch: 1,
      decisions: [{ toolCallId: 'c1', decision: 'ask' }],
    });
    const deny: AgentMachineEvent = { type: 'DENY', toolCallId: 'c1', reason: 'no' };
    const [snapshot] = drive(waiting, deny);
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(snapshot.context.step).toBe(2);
    expect(contextsOf(waiting, deny, 'recordToolResults')[0]?.calls).toEqual([
      { call: call('c1'), status: 'done', result: expect.objectContaining({ isError: true }) },
    ]);
  });

  it('a result marked halt (the repetition ladder) ends the turn after its batch, whatever the others say', () => {
    const [snapshot, actions] = drive(inExecuting(), {
      type: 'TOOL_RESULTS',
      batch: 1,
      results: [
        { toolCallId: 'c1', result: result('c1'), terminate: false, halt: true },
        { toolCallId: 'c2', result: result('c2'), terminate: true },
      ],
    });
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.stopReason).toBe('repetition');
    expect(actions).toEqual(['recordToolResults', 'endStep', 'endTurn', 'abortInFlight', 'endRun']);
    const [goesOn] = drive(inExecuting(), results(1, 'c1', 'c2'));
    expect(goesOn.context.calls.some((state) => state.halt)).toBe(false);
  });

  it('a prompt opens its turn at once, the last results of a batch go straight to finalizing: microsteps per step and turn', () => {
    // The cost of a step is charged per microstep (docs/architecture/xstate.md); the inspector shows each of them.
    let opening: string[] = [];
    const microstepsOf = (...events: AgentMachineEvent[]) => {
      const microsteps: string[] = [];
      const actor = createActor(agentMachine, {
        input: { agentId: 'a1' },
        inspect: (event) => {
          if (event.type !== '@xstate.microstep') return;
          const { snapshot, event: cause } = event as unknown as { snapshot: Snapshot; event: AnyEventObject };
          microsteps.push(`${cause.type} ${stateOf(snapshot)}`);
        },
      });
      actor.start();
      microsteps.length = 0;
      actor.send(prompt());
      opening = [...microsteps];
      microsteps.length = 0;
      for (const event of events) actor.send(event);
      const taken = [...microsteps];
      actor.stop();
      return taken;
    };
    const allowed: AgentMachineEvent = {
      type: 'VALIDATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c1' }, { toolCallId: 'c2' }],
      allowed: true,
    };
    const untilExecuting = [`MODEL_DONE ${tools('validating')}`, `VALIDATED ${tools('executing')}`];
    expect(microstepsOf(toolAnswer(['c1', 'c2']), allowed, results(1, 'c2'), results(1, 'c1'))).toEqual([
      ...untilExecuting,
      `TOOL_RESULTS ${tools('executing')}`,
      `TOOL_RESULTS ${tools('finalizing')}`,
      `TOOL_RESULTS ${MODEL}`,
    ]);
    expect(microstepsOf(toolAnswer(['c1', 'c2']), allowed, results(1, 'c2', 'c1'))).toEqual([
      ...untilExecuting,
      `TOOL_RESULTS ${tools('finalizing')}`,
      `TOOL_RESULTS ${MODEL}`,
    ]);
    // Validated with the answer and nothing can refuse a call (the worker runs them as it answers): the answer goes
    // straight to executing, a step with tools is three microsteps.
    const validated: AgentMachineEvent = {
      ...toolAnswer(['c1', 'c2']),
      validated: { outcomes: [{ toolCallId: 'c1' }, { toolCallId: 'c2' }], allowed: true },
    } as AgentMachineEvent;
    expect(microstepsOf(validated, results(1, 'c2', 'c1'))).toEqual([
      `MODEL_DONE ${tools('executing')}`,
      `TOOL_RESULTS ${tools('finalizing')}`,
      `TOOL_RESULTS ${MODEL}`,
    ]);
    // A final answer: answered, then the turn completes and the run ends (or the next input's turn starts) at once.
    const answered = JSON.stringify({ running: { turn: { step: 'answered' } } });
    expect(microstepsOf(textAnswer())).toEqual([`MODEL_DONE ${answered}`, 'MODEL_DONE "idle"']);
    expect(microstepsOf(prompt(), textAnswer())).toEqual([
      `PROMPT ${MODEL}`,
      `MODEL_DONE ${answered}`,
      `MODEL_DONE ${MODEL}`,
    ]);
    // An idle agent's prompt starts the run, the turn and its first step in one microstep.
    expect(opening).toEqual([`PROMPT ${MODEL}`]);
  });

  it('a gate that holds back one call leaves the calls refused before it as they were', () => {
    const [executing] = drive(inAuthorizing(), {
      type: 'AUTHORIZED',
      batch: 1,
      decisions: [
        { toolCallId: 'c1', decision: 'deny', reason: 'read-only' },
        { toolCallId: 'c2', decision: 'allow' },
      ],
    });
    const [gating] = drive(executing, { type: 'GATING', batch: 1 });
    // The gate is sent the allowed calls only, so its verdicts name c2 alone.
    const [snapshot] = drive(gating, {
      type: 'GATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c2', result: result('c2', true) }],
    });
    expect(stateOf(snapshot)).toBe(MODEL);
    expect(textOf(executing, 0)).toBe('Permission denied: read-only');
    const [recorded] = contextsOf(
      gating,
      { type: 'GATED', batch: 1, outcomes: [{ toolCallId: 'c2', result: result('c2', true) }] },
      'recordToolResults',
    );
    expect(recorded?.calls.map((state) => state.result)).toEqual([
      executing.context.calls[0]?.result,
      result('c2', true),
    ]);
  });
});

describe('structured answers', () => {
  const checking = (maxOutputAttempts = 3) =>
    drive(drive(start({ maxOutputAttempts })[0], prompt('in1', true))[0], textAnswer())[0];

  it('a failed check without feedback still tells the model what went wrong', () => {
    const event: AgentMachineEvent = { type: 'OUTPUT_CHECKED', turn: 1, ok: false };
    expect(contextsOf(checking(), event, 'startStep')[0]?.injections).toEqual([
      { role: 'user', source: 'feedback', content: [{ type: 'text', text: 'The answer did not match the schema.' }] },
    ]);
  });

  it('the turn fails naming how many answers were tried', () => {
    const failed: AgentMachineEvent = { type: 'OUTPUT_CHECKED', turn: 1, ok: false, feedback: 'no' };
    const [snapshot] = drive(checking(2), failed, textAnswer(1, 2), failed);
    expect(snapshot.value).toBe('idle');
    expect(snapshot.context.error).toEqual({
      name: 'OutputValidationError',
      code: 'output_invalid',
      message: 'The final answer did not match the output schema after 2 attempts',
    });
  });
});

describe('between steps and turns', () => {
  it('a fresh agent has nothing waiting, no batch and no supervisor', () => {
    expect(start({ agentId: 'a1', parentId: 'p1' })[0].context).toEqual({
      agentId: 'a1',
      parentId: 'p1',
      maxSteps: 25,
      maxOutputAttempts: 3,
      wakeOnNotification: true,
      turn: 0,
      step: 0,
      batch: 0,
      queue: [],
      injections: [],
      calls: [],
      outputAttempts: 0,
      supervising: false,
    });
  });

  it('the first command for subagents spawns the supervisor; later ones are only forwarded to it', () => {
    const delegate: AgentMachineEvent = {
      type: 'DELEGATE',
      command: { type: 'CANCEL', taskId: 't1', batchId: 'b1' },
    };
    const actionsOf = (snapshot: Snapshot) => transition(agentMachine, snapshot, delegate)[1].map((a) => a.type);
    const idle = start()[0];
    expect(actionsOf(idle)).toEqual(['xstate.spawnChild', 'xstate.sendTo']);
    const [first] = drive(idle, delegate);
    expect(first.context.supervising).toBe(true);
    expect(Object.keys(first.children)).toEqual(['supervisor']);
    expect(actionsOf(first)).toEqual(['xstate.sendTo']);
  });

  it('an agent woken by a notification opens its turn with what was waiting, and nothing stays waiting', () => {
    const [woken] = drive(start()[0], steer, notify);
    expect(woken.context.current?.messages.map((message) => message.content[0])).toEqual([
      { type: 'text', text: 'also' },
      { type: 'text', text: 'done' },
    ]);
    expect(woken.context.injections).toEqual([]);
    // The step boundary appends what is waiting: the steer is in the turn's opening already, not to be sent twice.
    const [waiting] = drive(start()[0], steer);
    expect(contextsOf(waiting, notify, 'startStep').map((context) => context.injections)).toEqual([[]]);
  });

  it('a step with nothing injected keeps the empty list as it was, so the session recorder sees no new steer', () => {
    const executing = inExecuting();
    const [next] = drive(executing, results(1, 'c1', 'c2'));
    expect(next.context.step).toBe(2);
    expect(next.context.injections).toBe(executing.context.injections);
  });

  it('compaction is once per step, not once per turn or per agent: the next step and the next turn may compact', () => {
    const full = (turn: number, step: number): AgentMachineEvent => ({
      type: 'CONTEXT_FULL',
      turn,
      step,
      tokens: 900,
      window: 1000,
    });
    const done = { type: 'xstate.done.actor.compactor', output: undefined } as unknown as AgentMachineEvent;
    const mayCompact = (snapshot: Snapshot, event: AgentMachineEvent) =>
      requestsOf(snapshot, event).map((request) => (request.type === 'MODEL_REQUEST' ? request.mayCompact : undefined));
    // Turn 1 compacts in step 1, then its step 2 may compact again.
    const [compacted] = drive(inModel(), full(1, 1), done, toolAnswer(['c1']), {
      type: 'VALIDATED',
      batch: 1,
      outcomes: [{ toolCallId: 'c1' }],
      allowed: true,
    });
    expect(mayCompact(compacted, results(1, 'c1'))).toEqual([true]);
    // A turn that compacted in step 1 and ended leaves the next turn's step 1 free to compact.
    const [ended] = drive(inModel(), prompt('in2'), full(1, 1), done);
    expect(mayCompact(ended, textAnswer())).toEqual([true]);
  });
});
