// Over 400 lines: the Agent class is an agent's public API, a method for each thing a user does with it; each method
// is a few lines that hand the call to the env, the machine or the tree.
import { nanoid } from 'nanoid';
import { type AnyActorRef, createActor, type Snapshot } from 'xstate';
import type { z } from 'zod';
import type { AgentActorRef } from '../../../machines/agent/index.js';
import type { PermissionMode, Permissions } from '../../permissions/index.js';
import type {
  AccountView,
  AgentEvent,
  AgentEventOf,
  AgentEventType,
  Message,
  SerializedError,
  Usage,
  UserContent,
  UserMessage,
} from '../../protocol/index.js';
import {
  AgentFailedError,
  describeThrown,
  type NotificationDelivery,
  notificationDelivery,
  resumableHistory,
  userMessage,
} from '../../protocol/index.js';
import { takeSpecimens } from '../../protocol/shapes.js';
import { type OutputSpec, outputSpec } from '../../tools/index.js';
import { Budget, type BudgetLimits, checkLimits, checkTotalLimits } from '../budget/budget.js';
import { takeApproval } from '../env/approval-waits.js';
import { EventBus, type Listener, type ListenOptions, withinSubtree } from '../env/bus.js';
import { AgentEnv, type PendingTurn, type RunResult, reportInternalError } from '../env/env.js';
import { LiveTools } from '../env/live-tools.js';
import { resolveProfile } from '../env/profile.js';
import { journalAnswer, registerEnv, unregisterEnv } from '../env/registry.js';
import { Transcript } from '../env/transcript.js';
import { ScheduleBook, type ScheduleJournal } from '../schedule/book.js';
import type { Schedule, ScheduleOptions } from '../schedule/schedule.js';
import { positive } from '../tree/supervision-options.js';
import { type ApprovalTarget, Tree, type TreeNode } from '../tree/tree.js';
import { type AgentConfig, agentSettings } from './config.js';
import { EventQueue } from './event-stream.js';
import { type GoalOptions, type GoalResult, GoalTracker, pursueGoal } from './goal.js';
import { type AgentState, agentStateOf, ChildrenWatch } from './state.js';
import { droppedResult, runtimeAgentMachine, settleDroppedInput } from './wiring.js';

/** How an Agent handle is bound to an agent spawned inside a supervision tree (see `supervisor.agent()`). */
export interface AttachedAgent {
  env: AgentEnv;
  actor: AgentActorRef;
  tree: Tree;
  /** Asks the supervisor to stop this agent. */
  detach(): void;
}

/** Per-turn options of `agent.prompt`: a signal that interrupts the turn, a structured-answer schema, a budget. */
export interface PromptOptions<Output> {
  /** Aborting it interrupts this turn. */
  signal?: AbortSignal;
  /** Overrides the agent's `outputSchema` for this turn. */
  outputSchema?: z.ZodType<Output>;
  /** This turn's budget; the agent's own `budget` still holds (the tighter of each limit counts). */
  budget?: BudgetLimits;
}

/** What a prompt may be: text, or content parts (text and images). */
export type PromptInput = string | UserContent[];

/** A turn of a conversation whose history the caller keeps (see `agent.run`). */
export interface ConversationInput<Output> extends PromptOptions<Output> {
  /** The history so far; validated like `createAgent({ messages })`, and never modified. */
  messages: readonly Message[];
  input: PromptInput;
  /** Every event of this conversation's turn, its subagents' too (the agent's own listeners do not hear it). */
  on?: Listener;
}

/** A stream of one turn's events, ending with its `turn_end`; `result` settles with the turn. */
export interface TurnStream<Output> extends AsyncIterable<AgentEvent> {
  readonly result: Promise<RunResult<Output>>;
}

/**
 * What a host that runs an agent's turns itself (`troupe/restate`) does to the agent beyond its public methods,
 * each as the agent's own supervisor would (see docs/architecture/decisions/0007-host-seams-not-options.md). Not
 * for programs: get one with `hostedAgent(agent)` from `troupe/host`.
 */
export interface HostedAgent {
  /**
   * Hands the agent notifications (`notificationMessage()`) as its own supervisor does, with the machine's
   * `NOTIFY`, so they are stored as `source: 'notification'` and follow the agent's `wakeOnNotification`. An idle
   * agent that wakes for them runs a turn they open: its result is returned. A running agent takes them at its next
   * step boundary, an idle one that does not wake at its next turn's first: then nothing is returned. Not a method
   * of `Agent`, since a session replays a turn that notifications opened only when they are its own tree's results
   * (`notify.<taskId>` inputs). `wake: false`: an idle agent keeps them for its next turn's first step even if it
   * wakes for notifications (a host giving back what a turn took and ended without, as an embedded agent's machine
   * keeps it across turns).
   */
  notify(messages: UserMessage[], options?: { wake?: boolean }): Promise<RunResult> | undefined;
  /**
   * Steers the agent exactly as `agent.steer()` does, so a turn the steer opens on an idle agent stores it as
   * `source: 'steer'`, and returns that turn's result (awaited by its input id, as a prompt's is): a host's steer
   * may wait for a turn to open. A running agent takes the steer at its next step boundary: then nothing is
   * returned.
   */
  steer(input: PromptInput): Promise<RunResult> | undefined;
  /**
   * Charges what a subagent the host ran spent (its turn's budget view's `spent`) to the account its turn opened
   * under, as an embedded child's account charges its parent's: the running turn's, else the lifetime
   * (`totalBudget`). An account that runs out ends the agent's turn with `budget_exhausted`, as embedded.
   */
  charge(spent: { tokens: number; costUsd: number }): void;
  /** What a notification given now would do (`notificationDelivery` of the agent's state): the host's question. */
  delivery(): NotificationDelivery;
  /** Notifications the agent holds for its next turn's first step (a turn interrupted before it took them). */
  held(): UserMessage[];
  /** A batch of its subagents escalated a failure: its next step fails with `error` instead of asking the model. */
  escalate(error: SerializedError): void;
  /**
   * The accounts its spending counts against now (its running turn's, else its lifetime's, and theirs up the chain)
   * that have token or dollar limits, nearest first: what a subagent the host runs elsewhere opens under.
   */
  accounts(): AccountView[];
  /**
   * Before its first turn: its turns open under these accounts (another agent's, as `accounts()` gave them), so it
   * stops when one of them runs out, named as it is, as an embedded subagent's turn opens under its parent's.
   */
  openUnder(accounts: readonly AccountView[]): void;
}

/** The host's seams into `agent` (see {@link HostedAgent}). */
export function hostedAgent(agent: Agent<unknown>): HostedAgent {
  return {
    notify: (messages, options = {}) => agent.notified(messages, options.wake ?? true),
    steer: (input) => agent.steered(input, true),
    charge: (spent) => agent.charged(spent.tokens, spent.costUsd),
    delivery: () => {
      const snapshot = agent.actor.getSnapshot();
      return notificationDelivery({ running: snapshot.matches('running'), wakes: snapshot.context.wakeOnNotification });
    },
    held: () => agent.actor.getSnapshot().context.injections.filter((message) => message.source === 'notification'),
    escalate: (error) => agent.escalated(error),
    accounts: () => agent.accounts(),
    openUnder: (accounts) => agent.openedUnder(accounts),
  };
}

/** One agent: an XState actor running the model–tool loop, with its history, events and controls. */
export class Agent<Output = unknown> {
  readonly id: string;
  /**
   * The agent's XState actor, for the runtime and its inspector: a program uses the methods below.
   *
   * @internal
   */
  readonly actor: AgentActorRef;
  private readonly env: AgentEnv;
  private readonly bus: EventBus;
  private stopping?: Promise<void>;
  /** The supervision tree this agent roots or belongs to, when it has subagents. */
  private readonly tree?: Tree;
  private readonly node?: TreeNode;
  private readonly detach?: () => void;
  private scheduleBook?: ScheduleBook;
  /** This agent's running subagents, for `getState()`; only agents that can have subagents keep one. */
  private readonly children?: ChildrenWatch;
  /** What `run()` builds its conversations from; absent on a handle bound to a spawned subagent. */
  private readonly config?: AgentConfig<Output>;
  private readonly goal?: GoalTracker;
  /** The lifetime account (`totalBudget`): every turn's account opens under it. */
  private total?: Budget;

  constructor(config: AgentConfig<Output>);
  /**
   * `attached` binds the handle to an agent a supervisor spawned, instead of creating a root actor.
   *
   * @internal
   */
  constructor(config: AgentConfig<Output>, attached: AttachedAgent);
  /**
   * A conversation of `conversationOf` (see `run`): it spends from that agent's lifetime account.
   *
   * @internal
   */
  constructor(config: AgentConfig<Output>, conversationOf: Agent<Output>);
  constructor(original: AgentConfig<Output>, from?: AttachedAgent | Agent<Output>) {
    takeSpecimens();
    const config = resolveProfile(original);
    const attached = from instanceof Agent ? undefined : from;
    const conversationOf = from instanceof Agent ? from : undefined;
    if (attached) {
      this.id = attached.env.agentId;
      this.env = attached.env;
      this.bus = attached.env.bus;
      this.actor = attached.actor;
      this.tree = attached.tree;
      this.node = attached.tree.registry.node(this.id);
      this.detach = attached.detach;
      this.children = new ChildrenWatch(this.bus, this.id);
      return;
    }
    if (!config.model) throw new TypeError('createAgent: `model` is required');
    this.config = config;
    // A saved history is checked and its open tool calls closed, so that strict providers take it on resume.
    const given = config.messages === undefined ? [] : resumableHistory(config.messages);
    const bound = config.session?.bind(config.id, given);
    this.id = bound?.agentId ?? config.id ?? `agent_${nanoid(10)}`;
    this.bus = new EventBus();
    // A session builds the tree, with its journal as the tree's observer.
    if (config.subagents)
      this.tree = config.session?.openTree(this.bus, config.subagents) ?? new Tree(this.bus, config.subagents);
    if (config.goals) this.goal = new GoalTracker();
    const extraTools = this.goal ? [...(this.tree?.tools ?? []), this.goal.tool] : this.tree?.tools;
    // A fork edited at its system prompt runs on that prompt: the edit is the fork's first fact.
    const settings = agentSettings(
      bound?.system === undefined ? config : { ...config, system: bound.system },
      extraTools,
    );
    // A conversation (`run`) spends from its agent's lifetime account.
    if (config.totalBudget) this.total = new Budget(`total ${this.id}`, checkTotalLimits(config.totalBudget));
    else if (conversationOf?.total) this.total = conversationOf.total;
    const inspect = config.inspect;
    this.actor = createActor(runtimeAgentMachine, {
      id: this.id,
      input: {
        agentId: this.id,
        maxSteps: positive(config.maxSteps ?? 25, 'maxSteps'),
        maxOutputAttempts: positive(config.maxOutputAttempts ?? 3, 'maxOutputAttempts'),
        wakeOnNotification: config.wakeOnNotification ?? true,
      },
      ...(inspect ? { inspect } : {}),
      ...(bound?.snapshot ? { snapshot: bound.snapshot as Snapshot<unknown> } : {}),
    });
    this.env = new AgentEnv(
      this.id,
      bound?.parentId,
      settings,
      new Transcript(bound?.messages ?? given),
      this.bus,
      { ref: this.actor },
      bound?.journal,
      this.total,
    );
    registerEnv(this.actor.system, this.env);
    if (this.tree) {
      this.children = new ChildrenWatch(this.bus, this.id);
      this.tree.attach(this.actor.system);
      this.node = this.tree.registry.addRoot(this.env, this.actor as AnyActorRef);
    }
    this.actor.subscribe({ error: (error) => this.failed(error) });
    this.actor.start();
    config.session?.attach(this.env, this.actor);
    const scheduleJournal = config.session?.scheduleJournal();
    if (scheduleJournal) this.book(scheduleJournal).restore();
  }

  /** Runs one turn (queued behind any running one) and settles on its `turn_end`. */
  prompt<O = Output>(input: PromptInput, options: PromptOptions<O> = {}): Promise<RunResult<O>> {
    return this.submit(input, options, newInputId());
  }

  /**
   * Runs one turn against a history the caller owns, in a conversation actor of its own, and returns the turn's
   * result: its `messages` (input first) are what to append to the caller's history. The agent's own history is
   * untouched, and any number of conversations may run on one agent definition at once.
   */
  async run<O = Output>(conversation: ConversationInput<O>): Promise<RunResult<O>> {
    if (!this.config) throw new TypeError(`run() needs an agent made by createAgent; ${this.id} is a subagent handle`);
    if (this.stopping) throw new Error(`Agent ${this.id} is stopped`);
    const { messages, input, on, ...options } = conversation;
    const actor = new Agent<Output>({ ...this.config, id: undefined, messages, totalBudget: undefined }, this);
    const off = on ? actor.on('*', on, { subtree: true }) : undefined;
    try {
      return await actor.prompt(input, options);
    } finally {
      off?.();
      await actor.stop();
    }
  }

  /** The events of one turn as they happen, ending with its `turn_end`. */
  stream<O = Output>(input: PromptInput, options: PromptOptions<O> & { highWaterMark?: number } = {}): TurnStream<O> {
    // The id exists before the prompt is sent: the turn may start (and publish turn_start) during the send.
    const inputId = newInputId();
    let inTurn = false;
    const queue = new EventQueue(options.highWaterMark, () => off());
    const off = this.bus.on(
      '*',
      (event) => {
        if (!inTurn) {
          if (event.type !== 'turn_start' || event.inputId !== inputId) return;
          inTurn = true;
        }
        queue.push(event);
        if (event.type === 'turn_end' && event.inputId === inputId) {
          off();
          queue.end();
        }
      },
      this.id,
    );
    const result = this.submit(input, options, inputId);
    // A prompt refused up front (a stopped agent, an outputSchema JSON Schema cannot express) starts no turn: the
    // iteration ends at once instead of waiting for a turn_end that never comes, and `result` carries the error.
    // The same for a turn that settles without its turn_end (the actor failed): the iteration ends with it.
    const close = () => {
      off();
      queue.end();
    };
    result.then(close, close);
    return { result, [Symbol.asyncIterator]: () => queue };
  }

  /**
   * Listens to this agent's events of one type, or all (`'*'`); returns the unsubscribe function. With
   * `{ subtree: true }` it also hears every subagent below this agent (each event carries its `agentId` and
   * `parentId`); never its siblings in a supervisor's tree.
   */
  on<T extends AgentEventType>(type: T, listener: Listener<AgentEventOf<T>>, options?: ListenOptions): () => void;
  on(type: '*', listener: Listener, options?: ListenOptions): () => void;
  on(type: string, listener: Listener<never>, options: ListenOptions = {}): () => void {
    const fn = listener as Listener;
    // An agent with no tree is alone on its bus, and a root agent's tree is its subtree: nothing to filter.
    if (!this.tree) return this.bus.on(type as '*', fn);
    if (!options.subtree) return this.bus.on(type as '*', fn, this.id);
    if (!this.node?.parent) return this.bus.on(type as '*', fn);
    const tree = this.tree;
    const parentOf = (agentId: string) => tree.registry.node(agentId)?.env.parentId;
    return this.bus.on(type as '*', (event) => {
      if (withinSubtree(this.id, event, parentOf)) fn(event);
    });
  }

  /**
   * Prompts this agent at every time a cron expression names (`'0 9 * * 1-5'`: weekdays at nine), for recurring
   * background work. A run that falls due while the previous one still runs is skipped unless `overlap: 'queue'`.
   * With a session attached the schedule is journaled, and restored when an agent is opened from the session.
   */
  schedule(cron: string, input: PromptInput, options?: ScheduleOptions): Schedule {
    if (this.stopping) throw new Error(`Agent ${this.id} is stopped`);
    return this.book().add(cron, input, options);
  }

  /** The live schedules, those a session restored included. */
  get schedules(): Schedule[] {
    return this.scheduleBook?.list() ?? [];
  }

  private book(journal?: ScheduleJournal): ScheduleBook {
    this.scheduleBook ??= new ScheduleBook(
      this.id,
      (input) => this.prompt(input),
      (body) => this.bus.publish(this.env, body),
      journal,
    );
    return this.scheduleBook;
  }

  /**
   * The agent at a glance: idle or running, its turn and step, queued prompts, calls waiting for approval, running
   * subagents, history length and usage. Cheap (read from the actor's snapshot) and a plain copy.
   */
  getState(): AgentState {
    return agentStateOf(this.actor, {
      id: this.id,
      stopped: this.stopping !== undefined,
      messages: this.env.transcript.length,
      usage: this.env.totalUsage,
      children: this.children,
      goal: this.goal?.view(),
      context: this.env.context.windowState(this.env.transcript.messages),
      schedules: this.scheduleBook?.state(),
      budget: this.env.budget?.view(),
      totalBudget: this.total?.view(),
    });
  }

  /**
   * Goal mode: keeps taking turns towards `goal` until the model calls `goal_done` or the budget (`maxTurns`,
   * default 10; `maxTokens`) is spent. The pursuit is a statechart of its own (`pursuing.turn` → `checking` →
   * `achieved` | `budgetExhausted` | `failed` | `interrupted`), shown by the inspector and by `getState().goal`.
   */
  pursue(goal: string, options: GoalOptions = {}): Promise<GoalResult> {
    if (!this.goal)
      return Promise.reject(new TypeError('pursue() needs an agent made with createAgent({ goals: true })'));
    if (this.stopping) return Promise.reject(new Error(`Agent ${this.id} is stopped`));
    return pursueGoal(this, this.goal, goal, options, this.config?.inspect);
  }

  /**
   * Adds a user message to the running turn at the next step boundary (it starts no turn of its own). On an idle
   * agent there is no turn to steer: the message starts one, as `prompt()` would (listen for its `turn_end`), so
   * it is answered now and keeps its place before anything sent after it.
   */
  steer(input: PromptInput): void {
    this.steered(input, false);
  }

  /**
   * `steer`, and for a host (`HostedAgent.steer`, `awaited`) the result of the turn it opens: registered by its
   * input id, as `submit` does, so that turn's `endTurn` resolves it. A program's steer registers nothing (it
   * listens for the turn's `turn_end`).
   *
   * @internal
   */
  steered(input: PromptInput, awaited: boolean): Promise<RunResult> | undefined {
    const message = userMessage(input, 'steer');
    const snapshot = this.actor.getSnapshot();
    if (snapshot.status === 'active' && snapshot.matches('idle') && !this.stopping) {
      const inputId = newInputId();
      const result = awaited ? this.awaitTurn(inputId) : undefined;
      this.actor.send({ type: 'PROMPT', input: { inputId, messages: [message], expectsOutput: false } });
      return result;
    }
    this.actor.send({ type: 'STEER', message });
    return undefined;
  }

  /** Stops the running turn: the model call and tools are aborted, open tool calls get an "interrupted" result. */
  interrupt(): void {
    this.actor.send({ type: 'INTERRUPT' });
  }

  /**
   * Answers a tool call waiting for approval. A subagent's call is routed by its agent id: pass the
   * `approval_requested` event itself (or `{ agentId, toolCallId }`); a bare id goes to this agent, or to the
   * one agent of its tree that waits on it. Returns whether an open approval was answered: false for an unknown
   * id, one already answered (or timed out), or one whose turn has ended. `remember: true` approves the same call
   * (that tool with that path or command) for the rest of the session, in the whole tree; `remember: 'bash(npm test
   * *)'` remembers a rule.
   */
  approve(call: string | ApprovalTarget, options: { remember?: boolean | string } = {}): boolean {
    const toolCallId = typeof call === 'string' ? call : call.toolCallId;
    const target = this.routeApproval(call);
    if (!takeApproval(target, toolCallId)) return false;
    if (options.remember) this.remember(target, toolCallId, options.remember);
    journalAnswer(target, call, true);
    target.send({ type: 'APPROVE', toolCallId });
    return true;
  }

  private remember(target: Pick<AnyActorRef, 'send'>, toolCallId: string, remember: true | string): void {
    const { permissions } = this.env.settings;
    if (typeof remember === 'string') {
      permissions.remember(remember);
      return;
    }
    const snapshot = (target as AgentActorRef).getSnapshot?.();
    const waiting = snapshot?.context.calls.find((state) => state.call.id === toolCallId)?.call;
    if (!waiting) return;
    const env = this.tree?.registry.node(snapshot.context.agentId)?.env ?? this.env;
    env.settings.permissions.rememberCall(waiting, env.tools.get(waiting.name));
  }

  /**
   * The permission mode in force (`undefined`: none set, calls nothing refuses run). Setting it applies from the
   * next authorization on, to this agent and to every subagent that inherits it.
   */
  get mode(): PermissionMode | undefined {
    return this.env.settings.permissions.mode;
  }

  set mode(mode: PermissionMode | undefined) {
    this.env.settings.permissions.mode = mode;
  }

  /** This agent's rules, mode and the approvals remembered in this session. */
  /**
   * The agent's live tool set: add, remove, disable and enable tools (all, by name, or by a predicate asked at every
   * step) while it runs. Changes apply at the next step boundary; the model then sees the new list.
   */
  get tools(): LiveTools {
    const { env } = this;
    env.liveTools ??= new LiveTools(env.tools);
    return env.liveTools;
  }

  get permissions(): Permissions {
    return this.env.settings.permissions;
  }

  /** Refuses a tool call waiting for approval (the model sees the reason); returns as {@link approve} does. */
  deny(call: string | ApprovalTarget, reason?: string): boolean {
    const toolCallId = typeof call === 'string' ? call : call.toolCallId;
    const target = this.routeApproval(call);
    if (!takeApproval(target, toolCallId)) return false;
    journalAnswer(target, call, false, reason);
    target.send({ type: 'DENY', toolCallId, ...(reason === undefined ? {} : { reason }) });
    return true;
  }

  private routeApproval(call: string | ApprovalTarget): AnyActorRef {
    const own = this.actor as AnyActorRef;
    if (!this.tree) return own;
    if (typeof call !== 'string') return call.agentId === this.id ? own : (this.tree.registry.route(call) ?? own);
    return this.tree.registry.findAwaiting(call) ?? own;
  }

  /**
   * A handle on a live subagent of this agent's tree (running, or finished and kept alive), or undefined. Its
   * `stop()` asks its supervisor to stop it once it is idle; a running task is stopped with `task_cancel`.
   */
  subagent(agentId: string): Agent | undefined {
    return this.tree ? attachTo(this.tree, agentId) : undefined;
  }

  /** Tokens used by this agent and every subagent under it, stopped ones included. */
  get subtreeUsage(): Usage {
    return this.tree?.book.usageOf(this.id, 'subtree') ?? this.usage;
  }

  /** A deep, JSON-safe copy of the whole history: editing it changes nothing the agent holds. */
  get messages(): Message[] {
    return this.env.transcript.since(0);
  }

  /** Tokens used by every turn so far. */
  get usage(): Usage {
    return { ...this.env.totalUsage };
  }

  /** Interrupts the running turn (so the history stays valid), then stops the actor and its work in flight. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.scheduleBook?.haltAll();
      this.children?.stop();
      // The queue is dropped with the interrupt: no queued input starts on the way out.
      if (this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'STOP' });
      // Subagents first: their running tasks are interrupted and settled, so every history stays valid.
      if (!this.detach) this.node?.stopSubagents();
      this.env.stop();
      if (this.detach) this.detach();
      else {
        this.actor.stop();
        this.tree?.shutdown();
        unregisterEnv(this.actor.system, this.id);
      }
      this.env.settleAll({ stopReason: 'interrupted' });
    })();
    return this.stopping;
  }

  /**
   * The actor stopped on an error (a bug, or an event sent to `agent.actor` that the machine cannot take): it will
   * never end another turn, so every turn waiting on it settles now, with the error.
   */
  private failed(thrown: unknown): void {
    reportInternalError(`agent ${this.id} failed`, thrown);
    const error = new AgentFailedError(`Agent ${this.id} stopped on an error: ${describeThrown(thrown)}`, {
      cause: thrown,
    });
    this.env.settleAll({ stopReason: 'error', error });
  }

  /**
   * See `HostedAgent.escalate`.
   *
   * @internal
   */
  escalated(error: SerializedError): void {
    this.env.escalation = error;
  }

  /**
   * See `HostedAgent.accounts`.
   *
   * @internal
   */
  accounts(): AccountView[] {
    const { budget, budgetParent } = this.env;
    return (budget?.isOpen ? budget : budgetParent)?.chain() ?? [];
  }

  /**
   * See `HostedAgent.openUnder`: a lifetime account opens anew below them, with what it had counted.
   *
   * @internal
   */
  openedUnder(accounts: readonly AccountView[]): void {
    const mirror = Budget.mirror(accounts);
    if (!mirror) return;
    if (this.total) {
      const total = new Budget(this.total.account, this.total.limits, mirror);
      total.tokens = this.total.tokens;
      total.cost = this.total.cost;
      this.total = total;
    }
    this.env.budgetParent = this.total ?? mirror;
  }

  /**
   * See `HostedAgent.charge`.
   *
   * @internal
   */
  charged(tokens: number, costUsd: number): void {
    const { budget, budgetParent } = this.env;
    (budget?.isOpen ? budget : budgetParent)?.add(tokens, costUsd);
  }

  /**
   * See `HostedAgent.notify`. A turn it opens is awaited by its input id as a prompt's is (`submit` stays as it was).
   *
   * @internal
   */
  notified(messages: UserMessage[], wake = true): Promise<RunResult> | undefined {
    if (this.stopping) return Promise.reject(new Error(`Agent ${this.id} is stopped`));
    const snapshot = this.actor.getSnapshot();
    if (snapshot.status !== 'active')
      return Promise.reject(new AgentFailedError(`Agent ${this.id} is ${snapshot.status}`));
    const inputId = newInputId();
    // Only an idle agent that wakes opens a turn (the machine's guard); otherwise the messages are injected.
    const opens = wake && snapshot.matches('idle') && snapshot.context.wakeOnNotification;
    const result = opens ? this.awaitTurn(inputId) : undefined;
    this.actor.send({ type: 'NOTIFY', messages, inputId, ...(wake ? {} : { wake: false }) });
    return result;
  }

  /** The result of the turn `inputId` opens, resolved by its `endTurn` as a prompt's is (for a host's turns). */
  private awaitTurn(inputId: string): Promise<RunResult> {
    return new Promise<RunResult>((resolve) => this.env.pending.set(inputId, { resolve }));
  }

  private submit<O>(input: PromptInput, options: PromptOptions<O>, inputId: string): Promise<RunResult<O>> {
    if (this.stopping) return Promise.reject(new Error(`Agent ${this.id} is stopped`));
    const status = this.actor.getSnapshot().status;
    if (status !== 'active') {
      const error = this.actor.getSnapshot().error;
      return Promise.reject(
        new AgentFailedError(
          `Agent ${this.id} takes no prompts: its actor is ${status === 'error' ? `failed (${describeThrown(error)})` : status}`,
        ),
      );
    }
    let turnOutput: OutputSpec | undefined;
    try {
      turnOutput = options.outputSchema ? outputSpec(options.outputSchema) : undefined;
      if (options.budget) checkLimits(options.budget, 'prompt budget');
    } catch (error) {
      return Promise.reject(error);
    }
    const { signal } = options;
    // Withdrawn before it was given: it never starts.
    if (signal?.aborted) return Promise.resolve(droppedResult() as RunResult<O>);
    let onAbort: (() => void) | undefined;
    const result = new Promise<RunResult<O>>((resolve) => {
      const pending: PendingTurn = { resolve: resolve as (result: RunResult) => void };
      if (turnOutput) pending.outputSpec = turnOutput;
      if (options.budget) pending.budget = options.budget;
      this.env.pending.set(inputId, pending);
      if (!signal) return;
      // The machine drops the input if it is queued, or interrupts its turn if it runs; a restored session that
      // still holds it back (behind the prompts it submits again) lets it go.
      const abort = () => {
        if (this.env.journal.withdraw(inputId)) settleDroppedInput(this.env, inputId);
        else this.actor.send({ type: 'CANCEL_INPUT', inputId });
      };
      onAbort = abort;
      signal.addEventListener('abort', abort, { once: true });
      // A long-lived signal (one per session, say) would otherwise collect a listener per turn.
      pending.resolve = (turn) => {
        signal.removeEventListener('abort', abort);
        resolve(turn as RunResult<O>);
      };
    });
    const expectsOutput = Boolean(turnOutput ?? this.env.settings.output);
    const turnInput = { inputId, messages: [userMessage(input)], expectsOutput };
    let now: boolean;
    try {
      now = this.env.journal.input(turnInput);
    } catch (error) {
      // Its input could not be journaled (the session stopped recording): the prompt is refused, not run, and
      // leaves no caller behind.
      this.env.pending.delete(inputId);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      return Promise.reject(error);
    }
    if (now) this.actor.send({ type: 'PROMPT', input: turnInput });
    const session = this.config?.session;
    // A turn whose facts the journal could not store is not reported done: the program hears why instead.
    return session
      ? result.then((turn) => {
          if (session.failure) throw session.failure;
          return turn;
        })
      : result;
  }
}

/** An Agent handle on an agent a supervisor spawned. */
export function attachTo(tree: Tree, agentId: string): Agent | undefined {
  const node = tree.registry.node(agentId);
  const actor = node?.ref as AgentActorRef | undefined;
  if (!node || !actor || actor.getSnapshot().status !== 'active') return undefined;
  const parent = node.parent;
  return new Agent(
    { model: node.env.settings.model },
    {
      env: node.env,
      actor,
      tree,
      detach: () => parent?.send({ type: 'RELEASE', agentId }),
    },
  );
}

function newInputId(): string {
  return `in_${nanoid(10)}`;
}

/**
 * Starts an agent: an actor that runs turns (model calls and tool calls) on the given model and tools, and reports
 * everything it does as events. `Output` is the type of a structured answer, when `outputSchema` is given.
 *
 * @example
 * ```ts
 * const agent = createAgent({
 *   model: scriptedModel([{ text: 'Go to Lisbon.' }]),
 *   system: 'You are a travel planner.',
 * });
 * const result = await agent.prompt('Where should I go?');
 * console.log(result.stopReason, result.text); // completed Go to Lisbon.
 * ```
 */
export function createAgent<Output = unknown>(config: AgentConfig<Output>): Agent<Output> {
  return new Agent(config);
}
