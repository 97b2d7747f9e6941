import type { AgentActorRef } from '../../../machines/agent/index.js';
import type { ContextWindowState } from '../../context/index.js';
import type { BudgetView, Usage } from '../../protocol/index.js';
import type { EventBus } from '../env/bus.js';
import type { ScheduleState } from '../schedule/book.js';
import type { GoalView } from './goal.js';

/** An agent at a glance: what `agent.getState()` returns, the same facts the inspector shows. */
export interface AgentState {
  id: string;
  /** `running` from a prompt (or a notification) until the run ends; `failed` when its actor stopped on an error. */
  status: 'idle' | 'running' | 'stopped' | 'failed';
  /** The statechart's active state, e.g. `running.turn.step.tools.awaitingApproval`. */
  state: string;
  turn: number;
  step: number;
  /** Prompts waiting behind the running turn. */
  queuedPrompts: number;
  /** Tool calls of the current step waiting for `approve` / `deny`. */
  pendingApprovals: { toolCallId: string; toolName: string; arguments: unknown }[];
  /** Subagents of this agent whose task is running, with the task that runs them. */
  runningChildren: { agentId: string; taskId: string; background: boolean }[];
  messages: number;
  usage: Usage;
  /** The goal being pursued (`agent.pursue`), and where its statechart stands. */
  goal?: GoalView;
  /** Its schedules (`agent.schedule`, or restored from a session), when it has any. */
  schedules?: ScheduleState[];
  /** The context window: tokens the next request would carry, the window's size, whether it compacts. */
  context: ContextWindowState;
  /** The budget of the current (or last) turn, where one covers it: limits, spent by its subtree, what is left. */
  budget?: BudgetView;
  /** The lifetime account (`totalBudget`): limits, spent over every turn (and, with a session, before restarts). */
  totalBudget?: BudgetView;
}

/**
 * Keeps the running children of one agent from its own subagent events, so a glance at the agent never walks the
 * supervision tree (whose shape belongs to the supervisor).
 */
export class ChildrenWatch {
  private readonly running = new Map<string, { agentId: string; taskId: string; background: boolean }>();
  readonly stop: () => void;

  constructor(bus: EventBus, agentId: string) {
    const offStart = bus.on('subagent_start', (event) => {
      if (event.agentId !== agentId) return;
      this.running.set(event.taskId, { agentId: event.childId, taskId: event.taskId, background: event.background });
    });
    const offEnd = bus.on('subagent_end', (event) => {
      if (event.agentId === agentId) this.running.delete(event.taskId);
    });
    this.stop = () => {
      offStart();
      offEnd();
    };
  }

  list(): AgentState['runningChildren'] {
    return [...this.running.values()];
  }
}

export function agentStateOf(
  actor: AgentActorRef,
  facts: {
    id: string;
    stopped: boolean;
    messages: number;
    usage: Usage;
    children: ChildrenWatch | undefined;
    goal: GoalView | undefined;
    context: ContextWindowState;
    schedules?: ScheduleState[] | undefined;
    budget?: BudgetView | undefined;
    totalBudget?: BudgetView | undefined;
  },
): AgentState {
  const snapshot = actor.getSnapshot();
  const { context } = snapshot;
  const failed = snapshot.status === 'error';
  const stopped = facts.stopped || snapshot.status === 'stopped';
  const idle = snapshot.matches('idle');
  const state: AgentState = {
    id: facts.id,
    status: failed ? 'failed' : stopped ? 'stopped' : idle ? 'idle' : 'running',
    state: stopped || failed ? (failed ? 'failed' : 'stopped') : stateString(snapshot.value),
    turn: context.turn,
    step: context.step,
    queuedPrompts: context.queue.length,
    pendingApprovals: context.calls
      .filter((call) => call.status === 'awaiting')
      .map(({ call }) => ({ toolCallId: call.id, toolName: call.name, arguments: structuredClone(call.arguments) })),
    runningChildren: facts.children?.list() ?? [],
    messages: facts.messages,
    usage: { ...facts.usage },
    context: facts.context,
  };
  if (facts.goal) state.goal = facts.goal;
  if (facts.schedules?.length) state.schedules = facts.schedules;
  if (facts.budget) state.budget = facts.budget;
  if (facts.totalBudget) state.totalBudget = facts.totalBudget;
  return state;
}

/** A snapshot's state value as a dotted path (`running.turn.step.model`); parallel regions joined by commas. */
export function stateString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    return Object.entries(value)
      .map(([key, inner]) => {
        const rest = stateString(inner);
        return rest ? `${key}.${rest}` : key;
      })
      .join(',');
  }
  return '';
}
