import { z } from 'zod';
import {
  escapeEnvelope,
  type JoinPolicy,
  joinMet,
  type StrategyOptions,
  type TaskStatus,
} from '../../protocol/index.js';
import { type AnyTool, defineTool, type ToolOutput } from '../../tools/index.js';

/** A request for one subagent: a fresh one from a profile, or a finished one resumed by id. */
export interface SubagentRequest {
  profile?: string;
  prompt: string;
  /** Resume this finished subagent (its history continues) instead of starting a new one. */
  agentId?: string;
}

/**
 * How a subagent's task ended, as its parent (or the caller of `supervisor.swarm`) receives it: its status, its
 * hand-off text and its structured answer.
 */
export interface TaskResult<Output = unknown> {
  taskId: string;
  agentId: string;
  status: Exclude<TaskStatus, 'running'>;
  /** The hand-off: the child's last assistant message (or its output as JSON), or why it did not finish. */
  text: string;
  /** The validated structured answer, when the child's profile has an `outputSchema`. */
  output?: Output;
}

/** What the subagent tools need from their host: the supervision tree embedded, child objects on Restate. */
export interface SubagentHost {
  readonly profileNames: readonly string[];
  /** What a profile is for, shown to the model next to its name. */
  profileDescription(name: string): string | undefined;
  /**
   * Starts the tasks under the caller's supervisor. Foreground: settles with the results in task order.
   * Background: settles at once with the task ids. A refusal (maxDepth, maxAgents, unknown profile) throws
   * a {@link SpawnRefused}.
   */
  run(
    callerId: string,
    tasks: SubagentRequest[],
    background: boolean,
    signal: AbortSignal,
    join?: JoinPolicy,
    /** The tool call that starts them: a restored session's call gets its journaled tasks back. */
    callId?: string,
    /** How the batch answers a failed task, where the call names it (else the tree's own). */
    supervision?: StrategyOptions,
  ): Promise<{ taskIds: string[]; results?: TaskResult[] }>;
  /** A task of the caller's (a host that keeps its book elsewhere, as on Restate, answers later). */
  status(callerId: string, taskId: string): TaskLookup | Promise<TaskLookup>;
  /** Cancels a task of the caller's: `finished` when it had already settled, `unknown` when it is not the caller's. */
  cancel(callerId: string, taskId: string): CancelOutcome | Promise<CancelOutcome>;
}

export type TaskLookup = { status: TaskStatus; agentId: string; text?: string } | undefined;
export type CancelOutcome = 'cancelled' | 'finished' | 'unknown';

/** A hard limit or a bad request: answered at once with an error result, never by waiting. */
export class SpawnRefused extends Error {
  override readonly name = 'SpawnRefused';
}

/** The refusal of a batch that would take the tree past `maxAgents` open tasks (the same words on every host). */
export function tooManyAgents(requested: number, maxAgents: number, open: number): SpawnRefused {
  return new SpawnRefused(
    `Refused: ${requested} more subagent(s) would exceed the limit of ${maxAgents} running at once ` +
      `(maxAgents; ${open} open now). Try fewer, or do the work yourself.`,
  );
}

function describeProfile(name: string, description: string | undefined): string {
  return description ? `"${name}" (${description})` : `"${name}"`;
}

function formatResult(result: TaskResult): string {
  return (
    `<result task_id="${escapeEnvelope(result.taskId)}" agent_id="${escapeEnvelope(result.agentId)}" ` +
    `status="${result.status}">${escapeEnvelope(result.text)}</result>`
  );
}

async function spawn(
  host: SubagentHost,
  tasks: SubagentRequest[],
  background: boolean,
  ctx: { agentId: string; signal: AbortSignal; toolCallId: string },
  single: boolean,
  join?: JoinPolicy,
  supervision?: StrategyOptions,
): Promise<ToolOutput> {
  // Out of the caller's transition before any actor is touched.
  await null;
  try {
    const { taskIds, results } = await host.run(
      ctx.agentId,
      tasks,
      background,
      ctx.signal,
      join,
      ctx.toolCallId,
      supervision,
    );
    if (background) {
      return {
        content:
          `Started in the background: ${taskIds.map((id) => `task_id="${id}"`).join(', ')}. ` +
          'Each result will arrive as a <notification>; use task_status or task_cancel with these ids meanwhile.',
        details: { taskIds },
      };
    }
    const list = results ?? [];
    const only = list[0];
    if (single && only) {
      return {
        content: only.status === 'completed' ? only.text : formatResult(only),
        isError: only.status !== 'completed',
        details: { taskIds, agentId: only.agentId, status: only.status },
      };
    }
    const body = list.map(formatResult).join('\n');
    if (!join || join.kind === 'all') return { content: body, details: { taskIds } };
    const completed = list.filter((r) => r.status === 'completed').length;
    const met = joinMet(join, list.length, completed);
    const name = join.kind === 'allSettled' ? 'allSettled' : `${join.kind}(${join.k})`;
    return {
      content: `<join policy="${name}" outcome="${met ? 'met' : 'failed'}" completed="${completed}"/>\n${body}`,
      isError: !met,
      details: { taskIds, join: name, met },
    };
  } catch (error) {
    if (error instanceof SpawnRefused) return { content: error.message, isError: true };
    throw error;
  }
}

/** The model-callable tools of one supervision tree: `agent`, `swarm`, `task_status`, `task_cancel`. */
export function subagentTools(host: SubagentHost): AnyTool[] {
  const names = host.profileNames;
  const profile = z
    .string()
    .optional()
    .describe(
      names.length > 0
        ? `The subagent's profile: one of ${names.map((n) => describeProfile(n, host.profileDescription(n))).join(', ')} (default: "default", like you)`
        : 'The subagent profile (default: "default", like you)',
    );
  const agent = defineTool({
    name: 'agent',
    // Delegating changes nothing by itself: the subagent's own calls meet the same rules and mode (inherited).
    readOnly: true,
    // A restored session runs the call again and gets back the tasks it had started (see TreeObserver).
    safeToRepeat: true,
    description:
      'Starts a subagent on a task and returns its final answer. It does not see your conversation: give it ' +
      'everything it needs in the prompt. With background: true it returns a task id at once and the result ' +
      'arrives later as a <notification>. Give agent_id to resume a finished subagent with a follow-up.',
    schema: z.object({
      profile,
      prompt: z.string().min(1).describe('The complete task for the subagent'),
      background: z.boolean().optional().describe('Return at once; the result arrives as a notification'),
      agent_id: z.string().optional().describe('Resume this finished subagent instead of starting a new one'),
    }),
    execute: ({ profile: p, prompt, background, agent_id }, ctx) =>
      spawn(
        host,
        [
          {
            prompt,
            ...(p === undefined ? {} : { profile: p }),
            ...(agent_id === undefined ? {} : { agentId: agent_id }),
          },
        ],
        background === true,
        ctx,
        true,
      ),
  });
  const swarm = defineTool({
    name: 'swarm',
    readOnly: true,
    safeToRepeat: true,
    description:
      'Starts several subagents at once (a capped number run together, the rest wait) and returns their final ' +
      'answers in task order. With background: true it returns the task ids at once and each result arrives ' +
      'later as a <notification>.',
    schema: z.object({
      tasks: z
        .array(z.object({ profile, prompt: z.string().min(1).describe('The complete task for this subagent') }))
        .min(1),
      background: z.boolean().optional().describe('Return at once; the results arrive as notifications'),
      join: z
        .enum(['all', 'allSettled', 'any', 'first', 'quorum'])
        .optional()
        .describe(
          'When the swarm is done: all (default: every task, succeeds if all completed), allSettled (every task), ' +
            'any (the first to complete; the rest are cancelled), first (the first k to complete), quorum (k ' +
            'completed, or failed as soon as k cannot be reached; the rest are cancelled)',
        ),
      k: z.number().int().min(1).optional().describe('For first and quorum: how many tasks must complete'),
      strategy: z
        .enum(['oneForOne', 'oneForAll', 'restForOne'])
        .optional()
        .describe(
          'When a task fails and is restarted: oneForOne (default: only it), oneForAll (every task still running ' +
            'restarts with it: they depend on each other), restForOne (it and the tasks listed after it)',
        ),
    }),
    execute: ({ tasks, background, join, k, strategy }, ctx) =>
      spawn(
        host,
        tasks.map((t) => ({ prompt: t.prompt, ...(t.profile === undefined ? {} : { profile: t.profile }) })),
        background === true,
        ctx,
        false,
        joinPolicyOf(join, k ?? 1),
        strategy === undefined ? undefined : { strategy },
      ),
  });
  const taskStatus = defineTool({
    name: 'task_status',
    readOnly: true,
    description: 'Looks up a background task by id: running, completed, failed, interrupted or cancelled.',
    schema: z.object({ task_id: z.string() }),
    execute: async ({ task_id }, ctx) => {
      const found = await host.status(ctx.agentId, task_id);
      if (!found) return { content: `No task "${task_id}" of yours is known.`, isError: true };
      const text = found.text === undefined ? '' : `\n${escapeEnvelope(found.text)}`;
      return {
        content: `task_id="${task_id}" agent_id="${found.agentId}" status="${found.status}"${text}`,
        details: { status: found.status },
      };
    },
  });
  const taskCancel = defineTool({
    name: 'task_cancel',
    readOnly: true,
    description: 'Cancels a background task by id; its subagent is stopped.',
    schema: z.object({ task_id: z.string() }),
    execute: async ({ task_id }, ctx) => {
      await null;
      const outcome = await host.cancel(ctx.agentId, task_id);
      if (outcome === 'unknown') return { content: `No task "${task_id}" of yours is known.`, isError: true };
      if (outcome === 'finished') return `Task "${task_id}" had already finished.`;
      return `Task "${task_id}" is cancelled.`;
    },
  });
  return [agent, swarm, taskStatus, taskCancel];
}

/** The join policy a swarm call names (`any` is `first` with k = 1). */
function joinPolicyOf(
  name: 'all' | 'allSettled' | 'any' | 'first' | 'quorum' | undefined,
  k: number,
): JoinPolicy | undefined {
  switch (name) {
    case 'allSettled':
      return { kind: 'allSettled' };
    case 'any':
      return { kind: 'first', k: 1 };
    case 'first':
    case 'quorum':
      return { kind: name, k };
    default:
      return undefined;
  }
}

export const SUBAGENT_TOOL_NAMES: readonly string[] = ['agent', 'swarm', 'task_status', 'task_cancel'];
