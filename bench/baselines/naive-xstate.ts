import { type AnyActorRef, assign, createActor, emit, fromPromise, setup } from 'xstate';
import type { AssistantMessage, Message, Model, ToolResultPart } from '../../src/protocol/index.js';
import { toolCallsOf, userMessage } from '../../src/protocol/index.js';
import { type AnyTool, ToolRegistry } from '../../src/tools/index.js';
import { type LoopOptions, type LoopResult, runBatch, textOfAnswer } from './plain-loop.js';

interface NaiveContext {
  messages: Message[];
  step: number;
  maxSteps: number;
  text: string;
}

type NaiveEvent = { type: 'DELTA'; delta: string };

interface ModelInput {
  parent: AnyActorRef;
  messages: Message[];
}

/**
 * What XState costs used without care: one machine with states `model` → `tools`, a `fromPromise` invoked for
 * every model call and every tool batch, the context updated by `assign` and the history copied into it on
 * every append. Text deltas go through the machine as events, as they would if the machine were the only bus.
 */
function naiveMachine(model: Model, registry: ToolRegistry, toolConcurrency: number) {
  const signal = new AbortController().signal;
  return setup({
    types: {
      context: {} as NaiveContext,
      events: {} as NaiveEvent,
      input: {} as { prompt: string; maxSteps: number },
      emitted: {} as { type: 'delta'; delta: string },
    },
    actors: {
      callModel: fromPromise<AssistantMessage, ModelInput>(async ({ input }) => {
        for await (const event of model.stream({ messages: input.messages, tools: registry.specs }, signal)) {
          if (event.type === 'text_delta') input.parent.send({ type: 'DELTA', delta: event.delta });
          else if (event.type === 'done') return event.message;
        }
        throw new Error('naive loop: the model stream ended without a message');
      }),
      runTools: fromPromise<ToolResultPart[], AssistantMessage>(({ input }) =>
        runBatch(registry, toolCallsOf(input), toolConcurrency, signal),
      ),
    },
  }).createMachine({
    id: 'naive',
    context: ({ input }) => ({ messages: [userMessage(input.prompt)], step: 0, maxSteps: input.maxSteps, text: '' }),
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
        entry: assign({ step: ({ context }) => context.step + 1 }),
        invoke: {
          src: 'callModel',
          input: ({ context, self }) => ({ parent: self, messages: context.messages }),
          onDone: [
            {
              guard: ({ event }) => toolCallsOf(event.output).length > 0,
              target: 'tools',
              actions: assign({ messages: ({ context, event }) => [...context.messages, event.output] }),
            },
            {
              target: 'done',
              actions: assign({ messages: ({ context, event }) => [...context.messages, event.output] }),
            },
          ],
          onError: 'failed',
        },
      },
      tools: {
        invoke: {
          src: 'runTools',
          input: ({ context }) => context.messages[context.messages.length - 1] as AssistantMessage,
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
}

export function naiveLoop(
  model: Model,
  tools: readonly AnyTool[],
  prompt: string,
  options: LoopOptions,
): Promise<LoopResult> {
  const machine = naiveMachine(model, new ToolRegistry(tools), options.toolConcurrency);
  const actor = createActor(machine, { input: { prompt, maxSteps: options.maxSteps } });
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
