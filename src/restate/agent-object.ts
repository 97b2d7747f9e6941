// Over 400 lines: the agent's virtual object is every handler Restate calls on one agent, registered together.
import * as restate from '@restatedev/restate-sdk';
import {
  type AccountView,
  addUsage,
  emptyUsage,
  failureClassOf,
  handOffOf,
  hostedAgent,
  type SerializedError,
  SubagentConfigs,
  type TurnStopReason,
} from '../host/index.js';
import {
  type Agent,
  type AgentConfig,
  type AgentEvent,
  type AnyTool,
  createAgent,
  type Message,
  type RunResult,
  type Usage,
  type UserMessage,
} from '../index.js';
import {
  acquireSlots,
  countedLimit,
  releaseSlots,
  rememberedInTree,
  rememberInTree,
  slotsObject,
} from './agent-slots.js';
import { applyRemembered, approvalHandlers, awaitApprovals } from './approvals.js';
import { batchObject } from './batches.js';
import { controlObject, type Doorbell, openingOf, TurnControl, takeMessages } from './control.js';
import { forwardEvents } from './events.js';
import { forgetHandler } from './finished-agents.js';
import {
  addSpent,
  type BackgroundBatch,
  CANCELLED,
  type HostedBudget,
  type Spent,
  startChildRun,
  tasksOfBatches,
} from './hand-off.js';
import { journaledModel, journaledRetry, journalScope } from './journal.js';
import {
  ESCALATION,
  type HostedTurn,
  NOTES,
  OPEN_CHILDREN,
  PROFILES,
  ROOT,
  recordTaken,
  subagentTasks,
  TAKEN,
  TASK,
  type TaskRecord,
} from './subagent-tasks.js';
import { foregroundHandler, type HostedSupervision, hostedSubagentTools } from './subagents.js';
import { bookedResult, callBook, reopenTasksOf, sendBook, taskBookName, taskBookObject } from './task-book.js';
import { journaledTool } from './tool-batch.js';

/**
 * What an agent hosted on Restate is made of: everything `createAgent` takes, except what the host owns (the id is
 * the object's key, the history lives in the object's state, and Restate is the session). `inspect` watches the
 * agent's statechart in the process that runs the turn: each turn is an actor of its own, with the agent's id,
 * started when the turn starts (or is replayed) and stopped when it ends.
 */
export type HostedAgentConfig = Omit<AgentConfig, 'id' | 'messages' | 'session' | 'subagents'>;

/**
 * What `agentObject` takes: the object's name, how to build the agent for a key, and the tree's profiles and limits.
 */
export interface AgentObjectOptions {
  /** The virtual object's name, the first segment of its URLs (default `troupe-agent`). */
  name?: string;
  /** Builds the agent for a key: called for every invocation, so it must give the same agent for the same key. */
  agent(agentId: string): HostedAgentConfig;
  /**
   * Every event of every agent this process runs, as the embedded runtime publishes them, model deltas included
   * (live only: a journaled answer comes back whole). A replay (after a crash, a suspension, a retry) publishes the
   * turn's events again, marked `replayed: true` up to the first effect the journal does not hold.
   */
  on?(event: AgentEvent): void;
  /**
   * Gives agents the subagent tools: `agent`, `swarm`, `task_status` and `task_cancel` (the embedded runtime's, with
   * join policies and background tasks). A child is another object of this kind, keyed `<parent>/<task>`; background
   * tasks go through the parent's task book (`tasks`, served beside it).
   */
  subagents?: boolean;
  /**
   * Subagents: running children per batch (4), nesting depth (3), restarts of a failed child (2, backoff 1 s
   * doubled), `maxAgents`, open tasks of a tree at once (10,000; counted per root, `Infinity` counts
   * nothing), and `keepHistory` and `keepFinished`, finished tasks whose records each parent's task book keeps
   * (64) and which finished children it may resume (the last `keepFinished` + `keepHistory`, 8 + 64; older ones are
   * forgotten, their state cleared).
   */
  supervision?: HostedSupervision;
  /**
   * How long a turn may send Restate nothing before Restate asks it to suspend (the server's default otherwise,
   * one minute). A model or tool call sends nothing while it runs, so this counts a call's own duration.
   */
  inactivityTimeoutMs?: number;
  /**
   * How long after that request Restate waits before it aborts the attempt (the server's default otherwise, one
   * minute). A call still running then loses its result: the attempt is retried, a tool call is closed as
   * "interrupted by a restart" (or run again when `safeToRepeat`), a model call is asked again. Set the two
   * together above your longest call.
   */
  abortTimeoutMs?: number;
}

/** What a turn handler answers. */
export interface TurnOutcome {
  agentId: string;
  stopReason: TurnStopReason;
  text: string;
  usage: Usage;
}

export type { ApprovalAnswer, PendingApproval } from './approvals.js';

/** The state keys of one agent object. The history is stored a turn per key, so a turn writes only what it added. */
const TURNS = 'turns';
const turnKey = (n: number) => `turn:${n}`;
/** Where an earlier layout kept the usage, beside a bare count under `turns`. */
const USAGE = 'usage';

/**
 * The agent's bookkeeping, one key read and written once a turn: how many turns are stored, what all of its turns
 * used, the running turn's doorbell (control.ts), and `waiting`: the last turn heard a ring as it ended, so the next
 * one takes from the control object at its start.
 */
interface Ledger {
  turns: number;
  usage: Usage;
  /**
   * What the agent's lifetime account (`totalBudget`) has counted: its turns and what their children spent, the
   * background ones' as their results came. Each turn's agent is built anew, its account opening with this.
   */
  spent?: Spent;
  doorbell?: Doorbell;
  waiting?: true;
}

/** The ledger as stored; `legacy` when it was in the earlier layout, whose `usage` key the next write clears. */
async function ledgerOf(ctx: restate.ObjectSharedContext): Promise<Ledger & { legacy?: true }> {
  const stored = await ctx.get<Ledger | number>(TURNS);
  if (typeof stored !== 'number') return stored ?? { turns: 0, usage: emptyUsage() };
  return { turns: stored, usage: (await ctx.get<Usage>(USAGE)) ?? emptyUsage(), legacy: true };
}

function storeLedger(ctx: restate.ObjectContext, { legacy, ...ledger }: Ledger & { legacy?: true }): void {
  ctx.set(TURNS, ledger);
  if (legacy) ctx.clear(USAGE);
}

/**
 * Drops an agent's stored turns, and the notifications kept for its next turn: a restarted task begins again from
 * its prompt alone. Its usage stays: it was spent.
 */
async function clearHistory(ctx: restate.ObjectContext): Promise<void> {
  const ledger = await ledgerOf(ctx);
  for (let n = 0; n < ledger.turns; n++) ctx.clear(turnKey(n));
  storeLedger(ctx, { ...ledger, turns: 0 });
  ctx.clear(NOTES);
  ctx.clear(TAKEN);
}

/**
 * The Restate virtual object that hosts Troupe agents: one object per agent id, running the unchanged agent machine
 * inside an exclusive handler for each turn (so a key runs one turn at a time, and its state is the conversation).
 * Model and tool calls are journaled side effects (`journal.ts`); approvals are awakeables; a subagent is another
 * object of the same kind, and its result reaches the parent as a journaled message to the parent's `notify` (from
 * the parent's task book, `task-book.ts`, for a background one).
 */
export function agentObject(options: AgentObjectOptions) {
  const name = options.name ?? 'troupe-agent';
  const profiles = new SubagentConfigs(options.supervision?.profiles ?? {});

  const tasks = subagentTasks<TurnOutcome>({
    name,
    supervision: options.supervision ?? {},
    turn: (ctx, input, budget) => hostTurn(ctx, input, budget),
    wakes: async (ctx) => configOf(ctx.key, await lineageOf(ctx)).config.wakeOnNotification !== false,
    clearHistory,
    spentBelow: async (ctx, spent) => {
      const ledger = await ledgerOf(ctx);
      storeLedger(ctx, { ...ledger, spent: addSpent(ledger.spent, spent) as Spent });
    },
  });
  const { reportIfSettled } = tasks;

  /** A child is keyed `<parent>/<task>`; a root's key may contain `/` too, but it has no profiles or root of record. */
  const isSubagent = (agentId: string) => Boolean(options.subagents) && agentId.includes('/');

  /** A subagent's line of profiles, the root's child's first (none for a root). */
  async function lineageOf(ctx: restate.ObjectContext): Promise<string[]> {
    return isSubagent(ctx.key) ? ((await ctx.get<string[]>(PROFILES)) ?? []) : [];
  }

  /**
   * An agent's config: a subagent's is its parent's with its profile applied, down from the
   * root's child. `kept`: the tree tools it keeps (all, unless a profile lists its tools).
   */
  function configOf(agentId: string, lineage: readonly string[]) {
    let config = options.agent(agentId);
    let kept: readonly string[] | undefined;
    for (const profile of lineage) ({ config, subagentTools: kept } = profiles.child(config, profile, kept));
    return { config, kept };
  }

  async function runTurn(ctx: restate.ObjectContext, input: string): Promise<TurnOutcome> {
    return (await hostTurn(ctx, input)).outcome;
  }

  /**
   * One turn (and, when steers came after an interrupt, the turns they start). Without an input (the `steered`
   * fallback) the turn is opened by the steers that waited for it, if any.
   */
  async function hostTurn(
    ctx: restate.ObjectContext,
    input: string | UserMessage,
    budget?: HostedBudget,
  ): Promise<HostedTurn<TurnOutcome>>;
  async function hostTurn(
    ctx: restate.ObjectContext,
    input: undefined,
  ): Promise<HostedTurn<TurnOutcome> | 'cancelled' | null>;
  async function hostTurn(
    ctx: restate.ObjectContext,
    input: string | UserMessage | undefined,
    budget?: HostedBudget,
  ): Promise<HostedTurn<TurnOutcome> | 'cancelled' | null> {
    const agentId = ctx.key;
    const ledger = await ledgerOf(ctx);
    const { turns } = ledger;
    const history: Message[] = [];
    for (let n = 0; n < turns; n++) history.push(...((await ctx.get<Message[]>(turnKey(n))) ?? []));
    // Steers and interrupts reach the running turn through its doorbell (control.ts), raced with every effect;
    // those that rang the turn before as it ended (or that the `steered` fallback runs) are this one's first. So
    // does a join's cancel of the foreground task whose hand-off this subagent still owes.
    const subagent = isSubagent(agentId);
    const task = subagent ? await ctx.get<TaskRecord>(TASK) : null;
    const { waiting: rang, doorbell: _ended, ...book } = ledger;
    const control = new TurnControl(
      ctx,
      name,
      (doorbell) => storeLedger(ctx, { ...book, doorbell }),
      task && !task.reported ? task.handOffTo : undefined,
    );
    /** Clears the doorbell with the turn's bookkeeping, then marks a ring heard as it ended for the next turn. */
    const end = async (stored: Ledger) => {
      storeLedger(ctx, stored);
      if (await control.heardAtEnd()) storeLedger(ctx, { ...stored, waiting: true });
    };
    const waiting = rang || input === undefined ? await takeMessages(ctx, name) : [];
    const opening = openingOf(input, waiting);
    if (!opening) {
      await end(book);
      for (const message of waiting) control.apply(message);
      return control.cancelled ? 'cancelled' : null;
    }
    const scope = journalScope(ctx, (effect, abandon) => control.wait(effect, abandon));
    const lineage = await lineageOf(ctx);
    // A key without a root of record is a root's, whatever it contains.
    const root = (subagent && (await ctx.get<string>(ROOT))) || agentId;
    const { config, kept } = configOf(agentId, lineage);
    const keeps = (tool: string) => kept === undefined || kept.includes(tool);
    // Notifications kept for this turn join it at its first step boundary, where the agent's machine
    // holds them until a turn starts: those an agent that does not wake kept (`notify`), and those a turn took and
    // ended without (interrupted before its next step). Only a tree with subagents has results to keep.
    const notes = options.subagents ? ((await ctx.get<UserMessage[]>(NOTES)) ?? []) : [];
    // A failure a background batch escalated: this turn fails with it at its first step.
    const escalation = options.subagents ? await ctx.get<SerializedError>(ESCALATION) : null;
    // A batch's calls run together as journaled effects, capped by the host (tool-batch.ts): the runtime is given
    // no cap of its own, so it starts a batch's parallel calls at once, in call order, on every replay alike.
    const toolConcurrency = config.toolConcurrency ?? 8;
    const tools: AnyTool[] = (config.tools ?? []).map((tool) => journaledTool(scope, tool, toolConcurrency));
    // The turn's agent, made below: its subagent tools read its budget and charge their children's spend to it.
    let agent: Agent | undefined;
    if (options.subagents) {
      let open = (await ctx.get<number>(OPEN_CHILDREN)) ?? 0;
      // A background child may spend what the turn has left when it starts it, as a foreground one may.
      const startBatches = (batches: BackgroundBatch[]) => {
        const budget = spendable(agent);
        sendBook(ctx, name, agentId, 'batch', { batches, root, ...(budget ? { budget } : {}) });
        open += tasksOfBatches(batches).length;
        ctx.set(OPEN_CHILDREN, open);
      };
      tools.push(
        ...hostedSubagentTools({
          scope,
          turn: turns,
          startChild: startChildRun(ctx, name, { parentId: agentId, root, budget: () => spendable(agent) }),
          start: startBatches,
          reopen: (childId) => reopenTasksOf(ctx, name, childId),
          record: (results) => sendBook(ctx, name, agentId, 'record', { tasks: results.map(bookedResult) }),
          status: (taskId) => callBook(ctx, name, 'status', { taskId }),
          cancel: (taskId) => callBook(ctx, name, 'cancel', { taskId }),
          resume: (agentIds) => callBook(ctx, name, 'resume', { agentIds }),
          root,
          acquire: (sizes, max) => acquireSlots(ctx, name, root, sizes, max),
          release: (n) => releaseSlots(ctx, name, root, n),
          supervision: options.supervision ?? {},
          profiles,
          lineage,
          check: (profile) => profiles.child(config, profile, kept),
          charge: (spent) => {
            if (agent) hostedAgent(agent).charge(spent);
          },
          relearn: async () => {
            if (config.permissions === undefined || !agent) return;
            applyRemembered(agent, await scope.wait(rememberedInTree(ctx, name, root)), config.tools ?? []);
          },
          escalate: (error) => {
            if (agent) hostedAgent(agent).escalate(error);
          },
        }).filter((tool) => keeps(tool.name)),
      );
    }
    // The approval timeout is a durable timer here (approvals.ts), not the runtime's in-process one.
    const { approvalTimeoutMs, ...hosted } = config;
    agent = createAgent({
      ...hosted,
      id: agentId,
      model: journaledModel(scope, config.model),
      retry: journaledRetry(scope, config.retry),
      tools,
      toolConcurrency: Number.MAX_SAFE_INTEGER,
      messages: history,
    });
    // Approvals remembered anywhere in the tree decide only where permissions can ask (a mode or rules): an agent
    // without them never reads them, and pays nothing.
    if (config.permissions !== undefined) {
      applyRemembered(agent, await rememberedInTree(ctx, name, root), config.tools ?? []);
    }
    // A result that comes while the turn runs joins its next step (not once the agent is idle: its
    // `notify` delivers it then).
    const seams = hostedAgent(agent);
    // A subagent's turns open under its parent's accounts (a request written before they were sent: what the
    // parent had left, as the turn's own budget).
    const perPrompt = budget && !Array.isArray(budget) ? budget : undefined;
    if (Array.isArray(budget)) seams.openUnder(budget);
    // Charged before the turn opens its account: it goes to the lifetime account.
    if (book.spent) seams.charge(book.spent);
    control.attach(agent, (message, escalation) => {
      if (seams.delivery() !== 'step') return false;
      seams.notify([message]);
      // A background batch escalated with this result: the turn fails at the step the result joins.
      if (escalation) seams.escalate(escalation);
      return true;
    });
    // The idle agent does not wake for them: its machine keeps them, and they join the turn below at its first step.
    if (notes.length > 0) seams.notify(notes, { wake: false });
    if (escalation) {
      seams.escalate(escalation);
      ctx.clear(ESCALATION);
    }
    // Restate cancelled this invocation (a join decided without it, a `task_cancel`, an operator): the turn is
    // interrupted, and its task reported `cancelled`.
    let cancelled = false;
    scope.onCancel = () => {
      cancelled = true;
      control.apply({ kind: 'interrupt' });
    };
    const offEvents = options.on ? forwardEvents(ctx, agent, options.on) : undefined;
    const offApprovals = awaitApprovals(ctx, scope, agent, approvalTimeoutMs, (approval) =>
      rememberInTree(ctx, name, root, approval),
    );
    try {
      // A notification opens the turn through the machine's NOTIFY: the same message, stored as
      // `source: 'notification'`, which compaction, the context engine and replays read. A steer opens it as
      // `agent.steer()` opens one on an idle agent: stored as `source: 'steer'`.
      const running =
        'steer' in opening
          ? steeredTurn(agent, opening.steer)
          : typeof opening.prompt === 'string'
            ? agent.prompt(opening.prompt, perPrompt ? { budget: perPrompt } : {})
            : notifiedTurn(agent, opening.prompt);
      for (const message of opening.messages) control.apply(message);
      const results = [await running];
      // What the turn and the children it charged spent, for the parent that waits for it.
      const spent = spentOf(agent);
      // An interrupted turn may still be finishing an aborted call's journal entry: the turn's effects come first.
      await scope.tail;
      // Steers sent after an interrupt start a turn of their own, as on an idle embedded agent (not once Restate
      // has cancelled this invocation: its task is over).
      for (let next = control.followUp(); next && !cancelled && !control.cancelled; next = control.followUp()) {
        const [first = '', ...rest] = next;
        const following = steeredTurn(agent, first);
        for (const text of rest) agent.steer(text);
        results.push(await following);
        await scope.tail;
      }
      let { usage } = ledger;
      results.forEach((turn, i) => {
        ctx.set(turnKey(turns + i), turn.messages);
        usage = addUsage(usage, turn.usage);
      });
      // Notifications the machine still holds (the turn was interrupted before the step they waited for) stay for
      // the next turn, injected in the idle agent: kept with the taken ids, so their
      // `notify` runs no turn. The rest of the kept ones are in the turn just stored.
      const left = seams.held();
      await recordTaken(ctx, control.taken, results, left);
      if (left.length > 0) ctx.set(NOTES, left);
      else if (notes.length > 0) ctx.clear(NOTES);
      const lifetime = agent.getState().totalBudget?.spent;
      const spentOver = lifetime ? { spent: { tokens: lifetime.tokens, costUsd: lifetime.costUsd } } : {};
      await end({ ...book, turns: turns + results.length, usage, ...spentOver });
      const [result] = results as [RunResult];
      // How the turn failed, for its batch's verdict (a spent budget or a guardrail ends it without `failed`).
      const failure = failureClassOf(result.stopReason, result.error);
      return {
        outcome: { agentId, stopReason: result.stopReason, text: result.text, usage: result.usage },
        handOff: {
          ...(cancelled || control.cancelled ? CANCELLED : handOffOf(result)),
          ...(failure && !cancelled && !control.cancelled ? { failure } : {}),
          ...(spent ? { spent } : {}),
        },
      };
    } finally {
      offEvents?.();
      offApprovals();
      await agent.stop();
    }
  }

  const object = restate.object({
    name,
    options: {
      ...(options.inactivityTimeoutMs === undefined ? {} : { inactivityTimeout: options.inactivityTimeoutMs }),
      ...(options.abortTimeoutMs === undefined ? {} : { abortTimeout: options.abortTimeoutMs }),
    },
    handlers: {
      /** One turn: the prompt, until the model answers without tool calls. */
      prompt: async (ctx: restate.ObjectContext, input: { prompt: string }): Promise<TurnOutcome> =>
        runTurn(ctx, input.prompt),
      ...tasks.handlers,

      /**
       * Steers and interrupts that no running turn took (control.ts): the control object sends this after each,
       * so a turn runs after the one they were meant for even with no prompt waiting (a turn that starts first takes
       * them instead when the turn they rang heard them as it ended). Steers after the last interrupt open a turn of
       * their own.
       */
      steered: async (ctx: restate.ObjectContext): Promise<TurnOutcome | null> => {
        const turn = await hostTurn(ctx, undefined);
        if (!turn) return null;
        // A foreground task cancelled while it waited for its background children, with no turn running.
        if (turn === 'cancelled') {
          await reportIfSettled(ctx, CANCELLED);
          return null;
        }
        await reportIfSettled(ctx, turn.handOff);
        return turn.outcome;
      },

      /** The running turn's doorbell, for the control object to ring; null between turns. */
      doorbell: restate.handlers.object.shared(
        async (ctx: restate.ObjectSharedContext): Promise<Doorbell | null> => (await ledgerOf(ctx)).doorbell ?? null,
      ),

      /** The children its turn's foreground batches run now (with its book's `running`: its live subagents). */
      foreground: foregroundHandler,

      /** The agent's history, turn by turn as stored. */
      history: restate.handlers.object.shared(async (ctx: restate.ObjectSharedContext): Promise<Message[]> => {
        const { turns } = await ledgerOf(ctx);
        const history: Message[] = [];
        for (let n = 0; n < turns; n++) history.push(...((await ctx.get<Message[]>(turnKey(n))) ?? []));
        return history;
      }),

      /** Everything this agent's model calls used, over all its turns. */
      usage: restate.handlers.object.shared(
        async (ctx: restate.ObjectSharedContext): Promise<Usage> => (await ledgerOf(ctx)).usage,
      ),

      ...approvalHandlers,

      /** Beyond its parent's `keepHistory`: the agent's state is cleared (finished-agents.ts). */
      forget: forgetHandler(taskBookName(name)),
    },
  });
  // Served beside it (serveAgents does): where steers and interrupts wait for a turn to take them, where a
  // parent's background tasks are booked and a tree's open tasks counted (`maxAgents`).
  return Object.assign(object, {
    control: controlObject(name),
    tasks: taskBookObject(name, {
      counted: countedLimit(options.supervision?.maxAgents) !== undefined,
      keepHistory: options.supervision?.keepHistory ?? 64,
      keepFinished: options.supervision?.keepFinished ?? 8,
    }),
    slots: slotsObject(name),
    batches: batchObject(name),
  });
}

/**
 * A Restate virtual object that hosts one agent per key: serve it with `serveAgents` and talk to it with `agentClient`.
 */
export type AgentObject = ReturnType<typeof agentObject>;

/** The accounts a child of the agent's turn opens under (its wall time is its own), when a budget covers it. */
function spendable(agent: Agent | undefined): AccountView[] | undefined {
  const accounts = agent && hostedAgent(agent).accounts();
  return accounts && accounts.length > 0 ? accounts : undefined;
}

/** What the agent's last turn's account counted (its own calls and its children's charges), if it had one. */
function spentOf(agent: Agent): Spent | undefined {
  const spent = agent.getState().budget?.spent;
  return spent && { tokens: spent.tokens, costUsd: spent.costUsd };
}

/** The turn a notification opens on the idle agent; `notify` runs one only for an agent that wakes for it. */
function notifiedTurn(agent: Parameters<typeof hostedAgent>[0], notification: UserMessage): Promise<RunResult> {
  const turn = hostedAgent(agent).notify([notification]);
  if (!turn) throw new restate.TerminalError(`Agent ${agent.id} does not wake for a notification`);
  return turn;
}

/** The turn a steer opens on the idle agent (the turn's first, or the first after an interrupted one). */
function steeredTurn(agent: Parameters<typeof hostedAgent>[0], text: string): Promise<RunResult> {
  const turn = hostedAgent(agent).steer(text);
  if (!turn) throw new restate.TerminalError(`Agent ${agent.id} was not idle for the steer that opens its turn`);
  return turn;
}
