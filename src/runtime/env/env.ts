import type { AgentContext } from '../../../machines/agent/index.js';
import {
  ContextEngine,
  type ContextOptions,
  costOf,
  type SystemPrompt,
  SystemPromptParts,
} from '../../context/index.js';
import type { AgentInfo, Permissions, Policy } from '../../permissions/index.js';
import {
  type AgentEventBody,
  addUsage,
  describeThrown,
  emptyUsage,
  type JsonObject,
  type Message,
  type MessageDelta,
  type Model,
  type ModelError,
  type ModelRequest,
  type ReasoningEffort,
  type SerializedError,
  type ToolCallFacts,
  type ToolCallPart,
  type TurnError,
  type TurnStopReason,
  type Usage,
  type UserMessage,
} from '../../protocol/index.js';
import {
  type AnyTool,
  intentOf,
  type OutputSpec,
  ToolRegistry,
  type ToolResultOptions,
  ToolResults,
} from '../../tools/index.js';
import type { Budget, BudgetLimits } from '../budget/budget.js';
import { type ApprovalRecipient, ApprovalWaits } from './approval-waits.js';
import type { EventBus, EventOrigin, Place } from './bus.js';
import type { HookRunner } from './hooks.js';
import { giveBack, listened, type ModelCall, partialMessage, ToolBatch, takeController } from './in-flight.js';
import type { LiveTools } from './live-tools.js';
import { type Journaling, unrecorded } from './recording.js';
import type { RetryPolicy } from './retry.js';
import type { Transcript } from './transcript.js';

export type { AgentInfo, Policy, PolicyAnswer } from '../../permissions/index.js';

/** How an env reaches its agent's actor: given when the env is built, found once the actor is spawned. */
export interface AgentHandle {
  readonly ref: { getSnapshot(): { context: AgentContext } } | undefined;
}

/** Where an agent whose actor is not running yet stands. */
const NOWHERE: Place = { turn: 0, step: 0 };

/** Everything about an agent's model calls and tools that stays fixed while it lives. */
export interface AgentSettings {
  model: Model;
  tools: ToolRegistry;
  system?: SystemPrompt;
  toolConcurrency: number;
  /** The agent's policies as one: the first that answers decides (see `Permissions.decide`). */
  policy?: Policy;
  /** How long a call waits for approval before it is denied; unset: no limit. */
  approvalTimeoutMs?: number;
  /** Rules, mode and remembered approvals; a subagent's is a child of its parent's. */
  permissions: Permissions;
  /** Hooks around model and tool calls; subagents inherit them. */
  hooks?: HookRunner;
  output?: OutputSpec;
  retry: RetryPolicy;
  maxTokens?: number;
  temperature?: number;
  reasoning?: ReasoningEffort;
  /** Every tool gets an `_intent` argument: why the model calls it, carried on the call's events. */
  toolIntent: boolean;
  /** Context windows, compaction and repairs (src/context). */
  context?: ContextOptions;
  /** The tool-result budget and the repetition ladder (src/tools/tool-results.ts). */
  toolResults?: ToolResultOptions;
  /** What each turn of this agent may spend, with everything it starts (src/runtime/budget/budget.ts). */
  budget?: BudgetLimits;
}

/**
 * What a finished turn gives the caller of `agent.prompt`: why it stopped, the messages it added, its final text, the
 * tokens it used, and the structured answer or the error it ended with.
 */
export interface RunResult<Output = unknown> {
  stopReason: TurnStopReason;
  /** The messages this turn added to the history, its input first. */
  messages: Message[];
  /** The text of the turn's last assistant message. */
  text: string;
  usage: Usage;
  /** The validated structured answer, when an `outputSchema` was given and the answer matched it. */
  output?: Output;
  error?: TurnError;
}

/**
 * The caller's side of an input (`prompt()`'s promise and the options it gave): the input itself is queued in the
 * agent's machine context alone, and its caller is found from it by its id. Its turn's `turn_end` resolves it, or
 * the agent's stop, once.
 */
export interface PendingTurn {
  resolve(result: RunResult): void;
  /** This turn's own structured-answer schema, overriding the agent's. */
  outputSpec?: OutputSpec;
  /** The turn's validated structured answer, for its result. */
  output?: unknown;
  /** This turn's own budget, on top of the agent's. */
  budget?: BudgetLimits;
  /** The caller reads only the turn's end and output (a subagent's task): its result copies no messages. */
  outputOnly?: boolean;
}

/**
 * The runtime side of one agent: its settings, transcript, event origin and in-flight work. The machine's
 * provided actions and workers reach it through {@link envOf}; it never enters machine context, so snapshots
 * stay plain data and inspectors never see a model client or an API key.
 */
export class AgentEnv implements EventOrigin {
  turnUsage: Usage = emptyUsage();
  readonly totalUsage: Usage = emptyUsage();
  /** The callers waiting on its inputs, by input id (see PendingTurn). */
  readonly pending = new Map<string, PendingTurn>();
  /** Where the current turn's messages start in the transcript. */
  turnStart = 0;
  modelCall?: ModelCall;
  // Shared by the model calls of a run until one is aborted (a call that ends normally leaves its signal as it found
  // it), then given back for other agents' calls (see takeController).
  private modelController?: AbortController;
  /** The tool batch in flight: an interrupt closes it, and a new one takes its place. */
  toolBatch = new ToolBatch();
  /** Arguments as the tools' schemas parsed them, for the batch in flight. */
  readonly parsedArgs = new Map<string, unknown>();
  lastModelError?: ModelError;
  /** Its calls waiting for approval: made at its first question. */
  private approvalWaits?: ApprovalWaits;
  stopped = false;
  /** What is sent of the transcript (projection, compaction): see src/context. */
  readonly context: ContextEngine;
  /** The tools of the current step: the settings' own, or what the live tool set made of them at the step's start. */
  tools: ToolRegistry;
  /** Made when the agent's tools are first changed while it lives (`agent.tools`). */
  liveTools?: LiveTools;
  /** The budget account of the current turn (or the last one), when any budget covers it (src/runtime/budget/budget.ts). */
  budget?: Budget;
  /** A batch of its subagents escalated a failure: its next step fails with this instead of asking the model. */
  escalation?: SerializedError;
  /** The budget, dedupe and repetition ladder every tool result passes (see src/tools/tool-results.ts). */
  readonly toolResults: ToolResults;
  /** The system prompt, made from its parts at the start of each turn (see src/context/system-prompt.ts). */
  readonly systemPrompt: SystemPromptParts;

  constructor(
    readonly agentId: string,
    readonly parentId: string | undefined,
    /** Replaced (never changed: a profile's settings are shared by its children) when the agent gains a tool. */
    public settings: AgentSettings,
    readonly transcript: Transcript,
    readonly bus: EventBus,
    /** Its actor, whose machine context is the one home of its turn, its step and its queue. */
    private readonly self: AgentHandle,
    /** Its session's journal, or `unrecorded`: what it stores, and the answers it replays (see recording.ts). */
    readonly journal: Journaling = unrecorded,
    /**
     * The account its turns open theirs under: a subagent's, of the turn or swarm that started its task; a root
     * agent's, its lifetime account (`totalBudget`) or its agent's, for a conversation (`agent.run`).
     */
    public budgetParent?: Budget,
  ) {
    this.tools = settings.tools;
    this.context = new ContextEngine(settings.model, settings.context ?? {}, (body) => this.emit(body));
    this.systemPrompt = new SystemPromptParts(settings.system, (message) =>
      this.emit({ type: 'context_warning', message }),
    );
    this.toolResults = new ToolResults(
      settings.toolResults ?? {},
      (body) => this.emit(body),
      () => this.tools.names,
    );
  }

  /**
   * Gives the agent `read_result` once a result was too long to send whole: only agents that need it pay for its
   * spec in every request (and the prompt cache breaks once, when it first appears).
   */
  offerResultReader(): void {
    const { settings } = this;
    if (!this.toolResults.budget.hasSaved || this.tools.get('read_result')) return;
    const reader = this.toolResults.budget.readerTool();
    const withReader = (registry: ToolRegistry) =>
      new ToolRegistry([...registry.names.map((name) => registry.get(name) as AnyTool), reader]);
    const own = withReader(settings.tools);
    // The live tool set (if any) rebuilds `tools` from the settings at each step: it finds the reader there too.
    this.tools = this.tools === settings.tools ? own : withReader(this.tools);
    this.settings = { ...settings, tools: own };
  }

  /** The messages that opened the current turn (for the beforeTurn hooks). */
  turnInput(): UserMessage[] {
    const messages = this.transcript.since(this.turnStart);
    const input: UserMessage[] = [];
    for (const message of messages) if (message.role === 'user') input.push(message);
    return input;
  }

  get info(): AgentInfo {
    return this.parentId === undefined ? { id: this.agentId } : { id: this.agentId, parentId: this.parentId };
  }

  /** Its machine's context now: an action runs before the snapshot it makes is current, so it places by its own. */
  get machineContext(): AgentContext | undefined {
    return this.self.ref?.getSnapshot().context;
  }

  get place(): Place {
    return this.machineContext ?? NOWHERE;
  }

  get turn(): number {
    return this.place.turn;
  }

  get step(): number {
    return this.place.step;
  }

  /** The input of the turn in progress ('' between turns). */
  get currentInputId(): string {
    return this.machineContext?.current?.inputId ?? '';
  }

  /** Whether an event it publishes reports again what its journal holds (see EventOrigin). */
  replayed(body: AgentEventBody): boolean {
    return this.journal.replayed(body);
  }

  /** Publishes an event of this agent, at `at` (an action's context) or where its machine stands now. */
  emit(body: AgentEventBody, at?: Place): void {
    this.bus.publish(this, body, at);
  }

  /** A streamed delta, as `message_update`: see {@link EventBus.publishDelta}. */
  emitDelta(delta: MessageDelta, at?: Place): void {
    this.bus.publishDelta(this, delta, at);
  }

  /** Appends a message to the history and announces it. */
  append(message: Message, at?: Place): void {
    this.transcript.append(message);
    if (this.bus.wants('message_end')) this.emit({ type: 'message_end', message }, at);
  }

  addUsage(usage: Usage, at?: Place): void {
    addUsage(this.turnUsage, usage);
    addUsage(this.totalUsage, usage);
    this.bus.countUsage?.(this.agentId, usage);
    if (this.bus.wants('usage')) {
      const turnUsage = { ...this.turnUsage };
      const totalUsage = { ...this.totalUsage };
      const cost = costOf(usage, this.context.prices);
      this.emit({ type: 'usage', usage, turnUsage, totalUsage, ...(cost === undefined ? {} : { cost }) }, at);
    }
  }

  /** A call of this agent now waits for approval (see approval-waits.ts). */
  awaitApproval(self: ApprovalRecipient, toolCallId: string): void {
    this.approvalWaits ??= new ApprovalWaits(this.agentId);
    this.approvalWaits.add(self, toolCallId, this.settings.approvalTimeoutMs);
  }

  /** The batch is over (its results recorded, or interrupted): no call of it waits any more. */
  closeApprovals(): void {
    this.approvalWaits?.close();
  }

  /** Settles every turn still waiting (the agent stopped, or its actor failed): nothing waits forever. */
  settleAll(end: { stopReason: TurnStopReason; error?: TurnError }): void {
    if (this.pending.size === 0) return;
    const settled: Array<() => void> = [];
    for (const [inputId, pending] of this.pending) {
      this.pending.delete(inputId);
      // The turn in progress keeps what it added; a queued one added nothing.
      const messages = inputId === this.currentInputId ? this.transcript.since(this.turnStart) : [];
      const result: RunResult = { stopReason: end.stopReason, messages, text: '', usage: { ...this.turnUsage } };
      if (end.error) result.error = end.error;
      settled.push(() => pending.resolve(result));
    }
    const resolveAll = () => {
      for (const resolve of settled) resolve();
    };
    this.journal.stored(resolveAll, undefined);
  }

  outputSpecFor(inputId: string): OutputSpec | undefined {
    return this.pending.get(inputId)?.outputSpec ?? this.settings.output;
  }

  /** What `tool_execution_start` and `approval_requested` say of a call: its tool's label and the model's intent. */
  describeCall(call: ToolCallPart): ToolCallFacts {
    const facts: ToolCallFacts = { toolCallId: call.id, toolName: call.name, args: call.arguments };
    const label = this.tools.get(call.name)?.label;
    if (label !== undefined) facts.label = label;
    if (this.settings.toolIntent) {
      const intent = intentOf(call.arguments);
      if (intent !== undefined) facts.intent = intent;
    }
    return facts;
  }

  buildRequest(outputJsonSchema: JsonObject | undefined): ModelRequest {
    const { settings } = this;
    const tools = settings.toolIntent ? this.tools.specsWithIntent : this.tools.specs;
    const request: ModelRequest = { messages: this.context.project(this.transcript.messages), tools };
    let system = this.systemPrompt.current;
    if (outputJsonSchema) {
      request.outputSchema = { name: 'final_answer', schema: outputJsonSchema };
      const instruction =
        'When you give your final answer, reply with only a JSON object (no prose, no code fence) that matches ' +
        `this JSON Schema:\n${JSON.stringify(outputJsonSchema)}`;
      system = system ? `${system}\n\n${instruction}` : instruction;
    }
    if (system !== undefined) request.system = system;
    if (settings.maxTokens !== undefined) request.maxTokens = settings.maxTokens;
    if (settings.temperature !== undefined) request.temperature = settings.temperature;
    if (settings.reasoning !== undefined) request.reasoning = { effort: settings.reasoning };
    return request;
  }

  /** The agent stops: its worker replies no more, and what is in flight is closed. */
  stop(): void {
    this.stopped = true;
    this.abortInFlight();
  }

  /** Closes the model call (its partial answer announced as discarded) and the batch's tools; later output is dropped. */
  abortInFlight(at?: Place): void {
    const call = this.modelCall;
    if (call && !call.closed) {
      call.closed = true;
      call.controller.abort();
      if (call.streaming && this.bus.wants('message_end')) {
        this.emit(
          {
            type: 'message_end',
            message: partialMessage(call, this.settings.model),
            discarded: 'interrupted',
          },
          at,
        );
      }
    }
    this.modelCall = undefined;
    // No call uses the controller now: another agent's may, unless it was just aborted (see giveBack).
    if (this.modelController) {
      giveBack(this.modelController);
      this.modelController = undefined;
    }
    this.toolBatch.abort();
    this.toolBatch = new ToolBatch();
    this.parsedArgs.clear();
  }

  /** Starts a model call: the run's controller, or an idle one when the last was aborted or is still listened to. */
  openModelCall(): ModelCall {
    this.modelController ??= takeController();
    const call: ModelCall = {
      controller: this.modelController,
      closed: false,
      streaming: false,
      text: '',
      reasoning: '',
      streamedCalls: undefined,
    };
    this.modelCall = call;
    return call;
  }

  /** A model call is over: its controller serves the next call if nothing still listens to it (see listened). */
  closeModelCall(call: ModelCall): void {
    if (call.controller === this.modelController && listened(call.controller)) this.modelController = undefined;
  }
}

/**
 * The runtime's last resort for a failure it has no better answer for (its own bug): say so on stderr, and never
 * throw from here, whatever was thrown (a value util.inspect cannot print is described instead).
 */
export function reportInternalError(where: string, error: unknown): void {
  try {
    console.error(`[troupe] ${where}:`, error);
  } catch {
    console.error(`[troupe] ${where}: ${describeThrown(error)}`);
  }
}
