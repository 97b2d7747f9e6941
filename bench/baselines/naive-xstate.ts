import { type AnyActorRef, assign, createActor, emit, fromPromise, setup } from 'xstate';
import type { AssistantMessage, Message, Model, ToolResultPart } from '../../src/protocol/index.js';
import { toolCallsOf, userMessage } from '../../src/protocol/index.js';
import { answerOf, type LoopOptions, type LoopResult, runBatch, type ToolTable, textOfAnswer } from './plain-loop.js';

interface NaiveContext {
  model: Model;
  tools: ToolTable;
  messages: Message[];
  step: number;
  maxSteps: number;
  text: string;
}

interface NaiveInput {
  model: Model;
  tools: ToolTable;
  prompt: string;
  maxSteps: number;
}

type NaiveEvent = { type: 'DELTA'; delta: string };

interface ModelInput {
  parent: AnyActorRef;
  model: Model;
  messages: Message[];
}

/**
 * What XState costs used without care, as the peer harness's xstate-loop does it: one machine (made once) with
 * states `model` → `tools`, a `fromPromise` invoked for every model call and every tool batch, the history copied
 * into context by `assign` on every append. Text deltas go through the machine as events (assign + emit).
 */
const naiveMachine = setup({
  types: {
    context: {} as NaiveContext,
    events: {} as NaiveEvent,
    input: {} as NaiveInput,
    emitted: {} as { type: 'delta'; delta: string },
  },
  actors: {
    // fromPromise makes an AbortController per invocation whether it is used or not: the call listens to its own.
    callModel: fromPromise<AssistantMessage, ModelInput>(({ input, signal }) =>
      answerOf(input.model, input.messages, signal, (delta) => input.parent.send({ type: 'DELTA', delta })),
    ),
    runTools: fromPromise<ToolResultPart[], { tools: ToolTable; answer: AssistantMessage }>(({ input }) =>
      runBatch(input.tools, toolCallsOf(input.answer)),
    ),
  },
}).createMachine({
  id: 'naive',
  context: ({ input }) => ({
    model: input.model,
    tools: input.tools,
    messages: [userMessage(input.prompt)],
    step: 0,
    maxSteps: input.maxSteps,
    text: '',
  }),
  initial: 'model',
  on: {
    DELTA: {
      actions: [
        assign({ text: ({ context, event }) => context.text + event.delta }),
        emit(({ event }) => ({ type: 'delta' as const, delta: event.delta })),
      ],
    },
  },
  states: {
    model: {
      invoke: {
        src: 'callModel',
        input: ({ context, self }) => ({ parent: self, model: context.model, messages: context.messages }),
        onDone: [
          {
            guard: ({ event }) => toolCallsOf(event.output).length > 0,
            target: 'tools',
            actions: assign(({ context, event }) => ({
              step: context.step + 1,
              messages: [...context.messages, event.output],
            })),
          },
          {
            target: 'done',
            actions: assign(({ context, event }) => ({
              step: context.step + 1,
              messages: [...context.messages, event.output],
            })),
          },
        ],
        onError: 'failed',
      },
    },
    tools: {
      invoke: {
        src: 'runTools',
        input: ({ context }) => ({
          tools: context.tools,
          answer: context.messages[context.messages.length - 1] as AssistantMessage,
        }),
        onDone: [
          {
            guard: ({ context }) => context.step >= context.maxSteps,
            target: 'done',
            actions: assign({
              messages: ({ context, event }) => [...context.messages, { role: 'tool', content: event.output }],
            }),
          },
          {
            target: 'model',
            actions: assign({
              messages: ({ context, event }) => [...context.messages, { role: 'tool', content: event.output }],
            }),
          },
        ],
        onError: 'failed',
      },
    },
    done: { type: 'final' },
    failed: { type: 'final' },
  },
});

export function naiveLoop(model: Model, tools: ToolTable, prompt: string, options: LoopOptions): Promise<LoopResult> {
  const actor = createActor(naiveMachine, { input: { model, tools, prompt, maxSteps: options.maxSteps } });
  const { onTextDelta } = options;
  if (onTextDelta) actor.on('delta', (event) => onTextDelta(event.delta));
  return new Promise((resolve, reject) => {
    actor.subscribe({
      complete: () => {
        const snapshot = actor.getSnapshot();
        if (!snapshot.matches('done')) {
          reject(new Error('naive loop failed'));
          return;
        }
        const { messages, step } = snapshot.context;
        const last = messages[messages.length - 1];
        resolve({ messages, steps: step, text: last?.role === 'assistant' ? textOfAnswer(last) : '' });
      },
      error: reject,
    });
    actor.start();
  });
}
