// A specimen of each object an agent's step makes per agent or per call, and of XState's per actor, kept with
// keepShape (see src/protocol/shapes.ts) once the process makes its first agent (specimensToTake): without them,
// every collection that finds no agent alive drops the optimised code of the model and tool workers, the context
// projection and the transcript, and the next agents warm it up again.
import { createActor, enqueueActions, fromCallback, sendTo, setup } from 'xstate';
import { Permissions } from '../../permissions/index.js';
import type { Message, Model, ToolCallPart } from '../../protocol/index.js';
import { keepShape, specimensToTake } from '../../protocol/shapes.js';
import { ToolRegistry } from '../../tools/index.js';
import { EventBus } from '../env/bus.js';
import { AgentEnv } from '../env/env.js';
import { ToolBatch } from '../env/in-flight.js';
import { retryPolicy } from '../env/retry.js';
import { Transcript } from '../env/transcript.js';
import { CallContext } from './call-context.js';
import { ToolResultOutbox } from './tool-result-outbox.js';
import { UnaskedRun } from './tool-worker.js';
import { WorkerInbox } from './worker-inbox.js';

const model: Model = {
  id: 'specimen',
  provider: 'specimen',
  stream: () => {
    throw new Error('a specimen is never asked');
  },
};
const call: ToolCallPart = { type: 'tool_call', id: 'specimen', name: 'specimen', arguments: {} };
const history: Message[] = [
  { role: 'user', content: [{ type: 'text', text: 'specimen' }] },
  {
    role: 'assistant',
    content: [call],
    provider: 'specimen',
    model: 'specimen',
    stopReason: 'tool_calls',
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
  },
  {
    role: 'tool',
    content: [{ type: 'tool_result', toolCallId: 'specimen', toolName: 'specimen', content: [], isError: false }],
  },
];

specimensToTake(() => {
  const env = new AgentEnv(
    'specimen',
    undefined,
    {
      model,
      tools: new ToolRegistry([]),
      toolConcurrency: 1,
      permissions: new Permissions(),
      retry: retryPolicy(undefined),
      toolIntent: false,
    },
    new Transcript(history),
    new EventBus(),
    { ref: undefined },
  );
  // A call's projection, chunk and call ids, as the model worker makes them.
  env.buildRequest(undefined);
  env.transcript.callIds();
  keepShape(env);
  const outbox = new ToolResultOutbox(env, () => {});
  keepShape(outbox);
  keepShape(new WorkerInbox(env));
  keepShape(new UnaskedRun(env, [call], { outcomes: [{ toolCallId: call.id }] }, outbox, 0));
  keepShape(new CallContext(env, call, new ToolBatch()));

  // XState's own per-actor objects (the actor, its mailbox, its system, a callback child's scope): the worker's
  // replies are sent through them, and the model and tool workers' optimised code inlines that path. And the `enqueue`
  // function an enqueueActions action is given (made per call, its methods added one by one), which the supervision
  // machines' actions take on every spawn and settle.
  const specimenWorker = fromCallback<{ type: 'ASK' }>(({ receive, sendBack }) => {
    receive(() => sendBack({ type: 'ANSWER' }));
  });
  const specimenActor = createActor(
    setup({
      types: { events: {} as { type: 'GO' } | { type: 'ANSWER' } },
      actors: { specimenWorker },
    }).createMachine({
      entry: enqueueActions(({ enqueue }) => keepShape(enqueue)),
      invoke: { id: 'worker', src: 'specimenWorker' },
      on: { GO: { actions: sendTo('worker', { type: 'ASK' }) }, ANSWER: {} },
    }),
  ).start();
  specimenActor.send({ type: 'GO' });
  keepShape(specimenActor);

  // Node's own timer objects (a Timeout and the list of its duration): hooks' deadlines, retries' waits and a model
  // client's timers make them per call, and a collection may find none pending. Unref'd: it never holds the process.
  keepShape(setInterval(() => {}, 2 ** 31 - 1).unref());
});
