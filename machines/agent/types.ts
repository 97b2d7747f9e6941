import type {
  AssistantMessage,
  BudgetView,
  CompactionReason,
  SerializedError,
  SupervisorCommand,
  ToolCallPart,
  ToolResultPart,
  TurnStopReason,
  UserMessage,
} from '../../src/protocol/index.js';

/** Where one tool call of the current batch stands. */
/**
 * Where one call stands besides the batch's phase. An `open` call has passed every phase the batch has passed
 * (in `authorizing` it was validated, in `executing` it was allowed and runs) and has no result yet; a call that
 * failed a phase is `done` with an error result at once. So a phase that every call passes changes no context.
 */
export type ToolCallStatus = 'open' | 'awaiting' | 'done';

/**
 * One tool call of the current batch as the agent's machine tracks it: the call, where it stands, and its result once
 * it has one.
 */
export interface ToolCallState {
  call: ToolCallPart;
  status: ToolCallStatus;
  result?: ToolResultPart;
  /** The tool asked to end the turn after this batch (the turn ends only if every result asks). */
  terminate?: boolean;
  /** The call was repeated too often: the turn stops after this batch (`stopReason: 'repetition'`). */
  halt?: boolean;
}

/**
 * What opens a turn of the agent's machine: the input's id, its messages, and whether a structured answer is expected.
 */
export interface TurnInput {
  inputId: string;
  /** One or more messages that open the turn: a prompt, or the notifications that woke the agent. */
  messages: UserMessage[];
  /** The runtime holds the schema itself; the machine only needs to know the answer must be checked. */
  expectsOutput: boolean;
}

/** What permission rules and policies decide for a tool call: run it, refuse it, or ask a person. */
export type PolicyDecision = 'allow' | 'deny' | 'ask';

/** What the agent's machine starts from: its id, its parent's, and its step limit. */
export interface AgentMachineInput {
  agentId: string;
  parentId?: string;
  maxSteps?: number;
  /** How many corrections a structured answer gets before the turn fails. */
  maxOutputAttempts?: number;
  wakeOnNotification?: boolean;
}

/**
 * The working set of one agent: counters, queues and the current tool batch. The transcript is not here:
 * the runtime owns it as an append-only log, so a long session costs nothing per transition.
 */
export interface AgentContext {
  agentId: string;
  parentId?: string;
  maxSteps: number;
  maxOutputAttempts: number;
  wakeOnNotification: boolean;
  turn: number;
  step: number;
  /** Increases with every tool batch, so results of a closed batch are recognised and dropped. */
  batch: number;
  current?: TurnInput;
  queue: TurnInput[];
  /** Steers, notifications and output feedback waiting for the next step boundary. */
  injections: UserMessage[];
  calls: ToolCallState[];
  /**
   * The worker validated the current batch as it gave the answer (MODEL_DONE's `validated`): `allowed` when nothing
   * can refuse a call too. Unset, the batch waits in `validating` for a VALIDATED it requested.
   */
  validation?: 'checked' | 'allowed';
  outputAttempts: number;
  /** The step that last compacted the context: one compaction per step, so a history that will not fit never loops. */
  compactedAt?: { turn: number; step: number };
  stopReason?: TurnStopReason;
  error?: SerializedError;
  /** Its supervisor (the child `supervisor`) exists. */
  supervising: boolean;
}

/** Events the outside world sends to an agent. */
export type AgentCommand =
  | { type: 'PROMPT'; input: TurnInput }
  | { type: 'STEER'; message: UserMessage }
  /**
   * Background results due together (one model call answers them all); `inputId` names the turn they may open.
   * `wake: false`: an idle agent keeps them for its next turn even if it wakes for notifications (a host giving back
   * results that an interrupted turn had taken, which an embedded agent's machine would still hold).
   */
  | { type: 'NOTIFY'; messages: UserMessage[]; inputId: string; wake?: false }
  | { type: 'INTERRUPT' }
  /**
   * The caller of input `inputId` withdrew it (its prompt's signal aborted): dropped if it waits in the queue, its
   * turn interrupted if it runs; ignored once its turn is over.
   */
  | { type: 'CANCEL_INPUT'; inputId: string }
  /** The agent is stopping: its queued inputs are dropped, none of them starts, and the running turn is interrupted. */
  | { type: 'STOP' }
  | { type: 'APPROVE'; toolCallId: string }
  | { type: 'DENY'; toolCallId: string; reason?: string }
  /** A command for the agent's subagents, forwarded to its supervisor (created by the first one). */
  | { type: 'DELEGATE'; command: SupervisorCommand }
  /**
   * A budget covering turn `turn` ran out (the agent's own, or an ancestor's: a parent's turn, a swarm's); `error`
   * says which and by how much. Sent by the runtime when spending or the clock passes a limit, and by the model
   * worker when a step would start on a spent budget.
   */
  | { type: 'BUDGET_EXHAUSTED'; turn: number; error: SerializedError };

/** Each call's validation (an error result for a call whose arguments failed), and whether nothing can refuse one. */
export interface ValidationOutcomes {
  /** One per call, in call order: `error` is the result of a call whose arguments failed validation. */
  outcomes: Array<{ toolCallId: string; error?: ToolResultPart }>;
  /** Nothing can refuse or hold a call (no policy, rules or mode): the valid calls run without authorization. */
  allowed?: boolean;
}

/** Replies from the agent's workers. `turn`/`step`/`batch` let the machine drop replies to closed requests. */
export type WorkerReply =
  /** `cost`: what the answer cost in USD where the model's prices are known; for observers, the machine ignores it. */
  | {
      type: 'MODEL_DONE';
      turn: number;
      step: number;
      message: AssistantMessage;
      cost?: number;
      /** The turn's budget once this answer is charged, where one covers it; for observers, the machine ignores it. */
      budget?: BudgetView;
      /**
       * The answer's tool calls, validated by the worker as it answered: the batch asks for no VALIDATE. `allowed`:
       * nothing can refuse a call, and the worker runs the valid ones once the machine has taken the answer.
       */
      validated?: ValidationOutcomes;
    }
  | { type: 'MODEL_ERROR'; turn: number; step: number; error: SerializedError }
  /** The request would pass the compaction threshold: compact before calling the model. */
  | { type: 'CONTEXT_FULL'; turn: number; step: number; tokens: number; window: number }
  /**
   * `allowed`: nothing can refuse or hold a call of this agent (no policy, rules or mode), so every valid call is
   * allowed: the batch goes from `validating` to `executing`, and the worker runs the valid calls unasked.
   */
  | ({ type: 'VALIDATED'; batch: number } & ValidationOutcomes)
  | {
      type: 'AUTHORIZED';
      batch: number;
      decisions: Array<{ toolCallId: string; decision: PolicyDecision; reason?: string }>;
    }
  /** Results of calls that finished together (the worker gathers those of one tick), in any order. */
  | { type: 'TOOL_RESULTS'; batch: number; results: ToolResultEntry[] }
  | { type: 'OUTPUT_CHECKED'; turn: number; ok: boolean; feedback?: string }
  // Hook waits: the workers say when a step waits on a hook, so the chart shows it (and an agent without hooks
  // never passes these states). See docs/architecture/agent.md, "Workers".
  /** The model call waits on the turn's input checks and the beforeModelCall hooks. */
  | { type: 'PREPARING'; turn: number; step: number }
  /** The hooks are done; the model is being called. */
  | { type: 'PREPARED'; turn: number; step: number }
  /** The model answered; the afterModelCall hooks (output checks) are reviewing the answer. */
  | { type: 'REVIEWING'; turn: number; step: number }
  /** The batch's allowed calls wait on the beforeToolCall hooks. */
  | { type: 'GATING'; batch: number }
  /** The gate's verdicts: a call with a `result` was answered or refused by a hook and does not run. */
  | { type: 'GATED'; batch: number; outcomes: Array<{ toolCallId: string; result?: ToolResultPart }> };

export interface ToolResultEntry {
  toolCallId: string;
  result: ToolResultPart;
  /** The tool asked to end the turn after this batch. */
  terminate: boolean;
  /** The runtime stops the turn after this batch (the repetition ladder's last rung). */
  halt?: boolean;
}

/**
 * Every event the agent's machine handles: the caller's commands (prompt, steer, interrupt, approvals) and its workers'
 * replies.
 */
export type AgentMachineEvent = AgentCommand | WorkerReply;

/** Requests the agent sends to its workers. */
export type ModelWorkerRequest = {
  type: 'MODEL_REQUEST';
  turn: number;
  step: number;
  inputId: string;
  /** False once this step has compacted: the worker then calls the model whatever the request's size. */
  mayCompact: boolean;
};

/** What the compactor is asked: whose context, and why (the threshold, or the provider's overflow error). */
export interface CompactorInput {
  agentId: string;
  reason: CompactionReason;
}
export type ToolWorkerRequest =
  | { type: 'VALIDATE'; batch: number; calls: ToolCallPart[] }
  | { type: 'AUTHORIZE'; batch: number; calls: ToolCallPart[] }
  | { type: 'EXECUTE'; batch: number; calls: ToolCallPart[] }
  | { type: 'CHECK_OUTPUT'; turn: number; inputId: string };

/** Every request the agent sends its worker: one actor runs the model and the tools, in turn. */
export type WorkerRequest = ModelWorkerRequest | ToolWorkerRequest;
