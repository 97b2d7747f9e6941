import { assign, createActor, fromPromise, type InspectionEvent, setup, toPromise } from 'xstate';
import { echo, type Script, type ToolCall, type Turn } from './script.js';

type Msg =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content?: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

type Tools = Record<string, (args: { i: number }) => unknown>;
const tools: Tools = { echo };

interface Ctx {
  model: () => Promise<Turn>;
  tools: Tools;
  messages: Msg[];
  pending: ToolCall[];
  steps: number;
  text?: string;
}

type DoneEvent<T> = { type: string; output: T };

/**
 * The peer harness's naive XState loop (`xstate-loop`), as it is there: states model → tools → model … → done, a
 * `fromPromise` invoked for every model call and every tool batch, the history copied into context by `assign` on
 * every append.
 */
const naiveMachine = setup({
  types: {
    context: {} as Ctx,
    input: {} as { model: () => Promise<Turn>; tools: Tools; prompt: string },
    output: {} as { text: string; steps: number },
  },
  actors: {
    callModel: fromPromise<Turn, { model: () => Promise<Turn>; messages: Msg[] }>(({ input }) => input.model()),
    runTools: fromPromise<Msg[], { tools: Tools; calls: ToolCall[] }>(({ input }) =>
      Promise.all(
        input.calls.map(async (c) => ({
          role: 'tool' as const,
          toolCallId: c.id,
          content: JSON.stringify(await input.tools[c.name]?.(c.args)),
        })),
      ),
    ),
  },
  guards: {
    isText: ({ event }) => (event as DoneEvent<Turn>).output.type === 'text',
  },
}).createMachine({
  id: 'agent',
  context: ({ input }) => ({
    model: input.model,
    tools: input.tools,
    messages: [{ role: 'user', content: input.prompt }],
    pending: [],
    steps: 0,
  }),
  initial: 'model',
  states: {
    model: {
      invoke: {
        src: 'callModel',
        input: ({ context }) => ({ model: context.model, messages: context.messages }),
        onDone: [
          {
            guard: 'isText',
            target: 'done',
            actions: assign(({ context, event }) => {
              const turn = event.output as Extract<Turn, { type: 'text' }>;
              return {
                text: turn.text,
                steps: context.steps + 1,
                messages: [...context.messages, { role: 'assistant' as const, content: turn.text }],
              };
            }),
          },
          {
            target: 'tools',
            actions: assign(({ context, event }) => {
              const turn = event.output as Extract<Turn, { type: 'tools' }>;
              return {
                pending: turn.calls,
                steps: context.steps + 1,
                messages: [...context.messages, { role: 'assistant' as const, toolCalls: turn.calls }],
              };
            }),
          },
        ],
      },
    },
    tools: {
      invoke: {
        src: 'runTools',
        input: ({ context }) => ({ tools: context.tools, calls: context.pending }),
        onDone: {
          target: 'model',
          actions: assign(({ context, event }) => ({ pending: [], messages: [...context.messages, ...event.output] })),
        },
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => ({ text: context.text ?? '', steps: context.steps }),
});

/** One run of the naive loop: its final text. */
export async function naiveRun(script: Script, inspect?: (event: InspectionEvent) => void): Promise<string> {
  const input = { model: () => script.next(), tools, prompt: 'go' };
  const actor = createActor(naiveMachine, { input, ...(inspect ? { inspect } : {}) });
  actor.start();
  return (await toPromise(actor)).text;
}
