import * as restate from '@restatedev/restate-sdk';
import type {
  AgentConfig,
  AnyTool,
  AssistantMessage,
  JsonObject,
  Message,
  Model,
  ModelEvent,
  ModelRequest,
  SupervisionOptions,
} from '../../src/index.js';
import type { AgentObject } from '../../src/restate/index.js';
import type { Host } from './host.js';

/**
 * Deliberately broken hosts, for showing that every conformance scenario can fail: each mutant breaks one behaviour
 * of one host, from outside the library (a wrapper around the agents' config, the host's commands, or the Restate
 * objects' handlers), so nothing of it is in the published package. `TROUPE_CONFORMANCE_MUTANT=<name>` makes the
 * suite run on that broken host alone (hosts.ts); `npm run conformance:mutants` runs each and lists which scenarios
 * it broke, and fails when a scenario is broken by none.
 */
export interface Mutant {
  /** What the broken host gets wrong. */
  breaks: string;
  host: 'embedded' | 'restate';
  /** The config the host builds an agent from (a root's; embedded, its subagents inherit it). */
  config?(config: Omit<AgentConfig, 'id'>): Omit<AgentConfig, 'id'>;
  supervision?(options: SupervisionOptions): SupervisionOptions;
  /** The host's commands, as a scenario gives them. */
  commands?(host: Host): Host;
  /** Restate: handlers of the agent object, its control object, its task book, its tree's and its batches' objects. */
  handlers?: Partial<Record<'agent' | 'control' | 'tasks' | 'slots' | 'batches', Record<string, Wrap>>>;
}

// biome-ignore lint/suspicious/noExplicitAny: a handler of any object, called with what Restate gives it.
type Handler = (ctx: any, input: any) => Promise<any>;
type Wrap = (original: Handler) => Handler;

/** A model whose every event passes through `change`. */
function mapModel(model: Model | undefined, change: (event: ModelEvent) => ModelEvent): Model {
  const inner = model as Model;
  return {
    ...inner,
    async *stream(request, signal) {
      for await (const event of inner.stream(request, signal)) yield change(event);
    },
  };
}

/** A model that is asked with `change(request)` instead of the request. */
function mapRequest(model: Model | undefined, change: (request: ModelRequest) => ModelRequest): Model {
  const inner = model as Model;
  return { ...inner, stream: (request, signal) => inner.stream(change(request), signal) };
}

/** A config whose model's `swarm` calls are sent with `change(args)` instead of their arguments. */
function mapSwarmArgs(config: Omit<AgentConfig, 'id'>, change: (args: JsonObject) => JsonObject) {
  return {
    ...config,
    model: mapModel(config.model, (event) => {
      if (event.type !== 'done') return event;
      const content = event.message.content.map((part) =>
        part.type === 'tool_call' && part.name === 'swarm' ? { ...part, arguments: change(part.arguments) } : part,
      );
      return { ...event, message: { ...event.message, content } };
    }),
  };
}

const mapTools = (config: Omit<AgentConfig, 'id'>, change: (tool: AnyTool) => AnyTool) => ({
  ...config,
  tools: (config.tools ?? []).map(change),
});

const NO_USAGE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };

const userText = (message: Message) =>
  message.role === 'user' ? message.content.map((part) => ('text' in part ? part.text : '')).join('') : '';

export const MUTANTS: Record<string, Mutant> = {
  'usage-lost': {
    breaks: 'every model call reports no usage',
    host: 'embedded',
    config: (config) => ({
      ...config,
      model: mapModel(config.model, (event) => {
        if (event.type === 'usage') return { ...event, usage: NO_USAGE };
        return event.type === 'done' ? { ...event, message: { ...event.message, usage: NO_USAGE } } : event;
      }),
    }),
  },
  'tools-twice': {
    breaks: 'every tool call runs twice',
    host: 'embedded',
    config: (config) =>
      mapTools(config, (tool) => ({
        ...tool,
        execute: async (args: never, ctx: never) => {
          await tool.execute(args, ctx);
          return tool.execute(args, ctx);
        },
      })),
  },
  'tool-errors-swallowed': {
    breaks: 'a tool that throws answers an empty result',
    host: 'embedded',
    config: (config) =>
      mapTools(config, (tool) => ({
        ...tool,
        execute: async (args: never, ctx: never) => {
          try {
            return await tool.execute(args, ctx);
          } catch {
            return '';
          }
        },
      })),
  },
  'model-errors-swallowed': {
    breaks: 'a model error ends the call with an empty answer',
    host: 'embedded',
    config: (config) => {
      const inner = config.model as Model;
      const model: Model = {
        ...inner,
        async *stream(request, signal) {
          try {
            yield* inner.stream(request, signal);
          } catch {
            const { id: model, provider } = inner;
            const message: AssistantMessage = {
              role: 'assistant',
              content: [],
              provider,
              model,
              stopReason: 'stop',
              usage: NO_USAGE,
            };
            yield { type: 'done', stopReason: 'stop', message };
          }
        },
      };
      return { ...config, model };
    },
  },
  'results-blanked': {
    breaks: 'the model is sent empty tool results',
    host: 'embedded',
    config: (config) => ({
      ...config,
      model: mapRequest(config.model, (request) => ({
        ...request,
        messages: request.messages.map((message) =>
          message.role === 'tool'
            ? {
                ...message,
                content: message.content.map((part) =>
                  part.type === 'tool_result' ? { ...part, content: [{ type: 'text' as const, text: '' }] } : part,
                ),
              }
            : message,
        ),
      })),
    }),
  },
  'notifications-unseen': {
    breaks: 'the model is never sent a notification',
    host: 'embedded',
    config: (config) => ({
      ...config,
      model: mapRequest(config.model, (request) => ({
        ...request,
        messages: request.messages.filter((message) => !userText(message).startsWith('<notification')),
      })),
    }),
  },
  'wakes-always': {
    breaks: '`wakeOnNotification: false` is ignored',
    host: 'embedded',
    config: ({ wakeOnNotification: _ignored, ...config }) => config,
  },
  'agent-limits-ignored': {
    breaks: "an agent's `maxSteps` and `budget` are ignored",
    host: 'embedded',
    config: ({ maxSteps: _steps, budget: _budget, ...config }) => config,
  },
  'tree-limits-ignored': {
    breaks: '`maxAgents`, `maxDepth` and `concurrency` are ignored',
    host: 'embedded',
    supervision: ({ maxAgents: _agents, maxDepth: _depth, concurrency: _concurrency, ...options }) => options,
  },
  'keeps-one-fewer': {
    breaks: 'a parent keeps one finished task fewer than `keepHistory`',
    host: 'embedded',
    supervision: (options) => ({ ...options, keepHistory: (options.keepHistory ?? 64) - 1 }),
  },
  'no-restart': {
    breaks: 'a failed task is never restarted',
    host: 'embedded',
    supervision: (options) => ({ ...options, maxRestarts: 0 }),
  },
  'join-lost': {
    breaks: "a swarm's join policy is lost on its way to the supervisor",
    host: 'embedded',
    config: (config) => mapSwarmArgs(config, ({ join: _join, k: _k, ...args }) => args),
  },
  'strategy-ignored': {
    breaks: 'a batch restarts only the failed task, whatever strategy its swarm asks for',
    host: 'restate',
    config: (config) => mapSwarmArgs(config, ({ strategy: _strategy, ...args }) => args),
  },
  'one-for-all-always': {
    breaks: 'a failed task restarts every running sibling, whatever strategy its swarm asks for',
    host: 'embedded',
    config: (config) => mapSwarmArgs(config, (args) => ({ ...args, strategy: 'oneForAll' })),
  },
  'intensity-unbounded': {
    breaks: "a batch's restart intensity is never exceeded",
    host: 'embedded',
    supervision: ({ intensity: _intensity, ...options }) => options,
  },
  'on-failure-ignored': {
    breaks: 'every class of failure restarts its task, whatever `onFailure` says',
    host: 'embedded',
    supervision: ({ onFailure: _onFailure, ...options }) => options,
  },
  'escalation-swallowed': {
    breaks: "a background batch's escalation never reaches its owner's turn",
    host: 'restate',
    handlers: {
      agent: {
        notify:
          (original) =>
          (ctx, { escalation: _escalation, ...notification }) =>
            original(ctx, notification),
      },
    },
  },
  'escalation-next-turn': {
    breaks: "a background batch's escalation fails its owner's next turn, not the running one its result joins",
    host: 'restate',
    handlers: {
      control: {
        notify:
          (original) =>
          (ctx, { escalation: _escalation, ...offer }) =>
            original(ctx, offer),
      },
      agent: {
        notify: (original) => (ctx, notification) => {
          if (notification.escalation) ctx.set('escalation', notification.escalation);
          return original(ctx, notification);
        },
      },
    },
  },
  'approvals-inverted': {
    breaks: 'an approval is answered the other way',
    host: 'embedded',
    commands: (host) => ({
      ...host,
      approval: async (root, toolName) => {
        const asked = await host.approval(root, toolName);
        return { ...asked, answer: (approve, reason, remember) => asked.answer(!approve, reason, remember) };
      },
    }),
  },
  'remember-ignored': {
    breaks: 'an approval given with `remember` is not remembered',
    host: 'embedded',
    commands: (host) => ({
      ...host,
      approval: async (root, toolName) => {
        const asked = await host.approval(root, toolName);
        return { ...asked, answer: (approve, reason) => asked.answer(approve, reason) };
      },
    }),
  },
  'interrupt-ignored': {
    breaks: 'an interrupt stops nothing',
    host: 'restate',
    handlers: { control: { interrupt: () => async (ctx) => ctx.request().id } },
  },
  'steer-dropped': {
    breaks: 'a steer is accepted and never delivered',
    host: 'restate',
    handlers: { control: { steer: () => async () => null } },
  },
  'notify-twice': {
    breaks: "a child's result is delivered to its parent twice",
    host: 'restate',
    handlers: {
      agent: {
        notify: (original) => async (ctx, notification) => {
          await original(ctx, notification);
          return original(ctx, notification);
        },
      },
    },
  },
  'settle-dropped': {
    breaks: "a background child's end never reaches its parent's book",
    host: 'restate',
    handlers: { tasks: { settle: () => async () => null } },
  },
  'cancel-ignored': {
    breaks: '`task_cancel` answers "cancelled" and cancels nothing',
    host: 'restate',
    handlers: {
      tasks: {
        cancel: () => async (ctx, input: { taskId: string }) =>
          (await ctx.get(`task:${input.taskId}`)) ? 'cancelled' : 'unknown',
      },
    },
  },
  'hand-off-emptied': {
    breaks: "a foreground child's answer reaches its parent empty",
    host: 'restate',
    handlers: {
      agent: {
        run: (original) => async (ctx, request) => {
          const answer = await original(ctx, request);
          return answer.status === 'waiting' ? answer : { ...answer, text: '' };
        },
      },
    },
  },
  'remember-dropped': {
    breaks: 'an approval answered "always" is not kept for the tree',
    host: 'restate',
    handlers: { slots: { remember: () => async () => null } },
  },
  'resume-unchecked': {
    breaks: 'a resume is accepted for a child beyond `keepFinished` and `keepHistory`',
    host: 'restate',
    handlers: {
      tasks: { resume: () => async (_ctx, input: { agentIds: string[] }) => input.agentIds.map(() => null) },
    },
  },
  'background-unbudgeted': {
    breaks: "a background child is started without its parent's accounts",
    host: 'restate',
    handlers: {
      tasks: {
        batch:
          (original) =>
          (ctx, { budget: _budget, ...request }) =>
            original(ctx, request),
      },
    },
  },
  'task-spend-forgotten': {
    breaks: "a subagent's hand-off owes only its last turn's spending, not its earlier turns' or its children's",
    host: 'restate',
    handlers: {
      agent: {
        notify:
          (original) =>
          async (ctx, { spent: _spent, ...notification }) => {
            const { spent: _owed, ...task } = (await ctx.get('task')) ?? {};
            if (Object.keys(task).length > 0) ctx.set('task', task);
            return original(ctx, notification);
          },
      },
    },
  },
  'history-forgotten': {
    breaks: 'a prompt starts from an empty history',
    host: 'restate',
    handlers: {
      agent: {
        prompt: (original) => async (ctx, input) => {
          ctx.clear('turns');
          return original(ctx, input);
        },
      },
    },
  },
};

/** The mutant this run's hosts are broken by (`TROUPE_CONFORMANCE_MUTANT`), if any; an unknown name throws. */
export const MUTANT: (Mutant & { name: string }) | undefined = (() => {
  const name = process.env.TROUPE_CONFORMANCE_MUTANT;
  if (!name) return undefined;
  const mutant = MUTANTS[name];
  if (!mutant) throw new Error(`TROUPE_CONFORMANCE_MUTANT: no mutant "${name}" (${Object.keys(MUTANTS).join(', ')})`);
  return { name, ...mutant };
})();

/** What `host` builds an agent from, as the mutant (if it breaks that host) has it. */
export function brokenConfig(host: Mutant['host'], config: Omit<AgentConfig, 'id'>): Omit<AgentConfig, 'id'> {
  return MUTANT?.host === host && MUTANT.config ? MUTANT.config(config) : config;
}

/** The supervision `host` runs a tree under, as the mutant (if it breaks that host) has it. */
export function brokenSupervision(host: Mutant['host'], options: SupervisionOptions): SupervisionOptions {
  return MUTANT?.host === host && MUTANT.supervision ? MUTANT.supervision(options) : options;
}

/** The host's commands, as the mutant (if it breaks that host) has them. */
export function brokenCommands(host: Host): Host {
  const name = host.name.startsWith('embedded') ? 'embedded' : 'restate';
  return MUTANT?.host === name && MUTANT.commands ? MUTANT.commands(host) : host;
}

/** The same Restate object, with the handlers named in `wraps` wrapped (shared stays shared, serdes are kept). */
function rewrap<D extends { name: string; object: Record<string, Handler> }>(definition: D, wraps = {}): D {
  const wrapsOf = wraps as Record<string, Wrap>;
  if (Object.keys(wrapsOf).length === 0) return definition;
  const meta = (definition as unknown as { _handlers: Record<string, { _shared: boolean }> })._handlers;
  const options = (definition as unknown as { options?: restate.ObjectOptions }).options;
  const handlers = Object.fromEntries(
    Object.entries(definition.object).map(([name, original]) => {
      const wrap = wrapsOf[name];
      const handler: Handler = wrap ? wrap((ctx, input) => original(ctx, input)) : (ctx, input) => original(ctx, input);
      return [name, meta[name]?._shared ? restate.handlers.object.shared(handler) : handler];
    }),
  );
  return restate.object({ name: definition.name, handlers, ...(options ? { options } : {}) }) as unknown as D;
}

/** The agent objects as the mutant breaks them (unchanged without one, or for an embedded one). */
export function mutated(objects: AgentObject[]): AgentObject[] {
  const wraps = MUTANT?.host === 'restate' ? MUTANT.handlers : undefined;
  if (!wraps) return objects;
  return objects.map(
    (object) =>
      Object.assign(rewrap(object as never, wraps.agent), {
        control: rewrap(object.control as never, wraps.control),
        tasks: rewrap(object.tasks as never, wraps.tasks),
        slots: rewrap(object.slots as never, wraps.slots),
        batches: rewrap(object.batches as never, wraps.batches),
      }) as unknown as AgentObject,
  );
}
