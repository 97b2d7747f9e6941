import * as restate from '@restatedev/restate-sdk';
import type { Agent, AnyTool, JsonObject, JsonValue } from '../index.js';
import type { RememberedApproval } from './agent-slots.js';
import { type JournalScope, serially } from './journal.js';

/**
 * Approvals of a hosted agent are awakeables: a call waiting for one is a turn suspended on it, which the `approve`
 * handler (or any HTTP client that has its id) resolves. Its state key says what the call asks, so the `pending`
 * handler lists what waits now.
 */

export interface ApprovalAnswer {
  toolCallId: string;
  approve: boolean;
  reason?: string;
  /**
   * With an approval: `true` approves the same call (that tool with that path or command) for the rest of the tree's
   * life, in every agent of it; a rule (`'bash(npm test *)'`) remembers the rule.
   */
  remember?: boolean | string;
}

/** A call waiting for approval, as the `pending` handler lists it: what it asks to run, and its awakeable. */
export interface PendingApproval {
  toolCallId: string;
  toolName: string;
  /** The model's arguments, as they are (a CLI or page that shows them redacts them). */
  args: JsonValue;
  /** The tool's own title, where it declares one. */
  label?: string;
  awakeableId: string;
}

const approvalKey = (toolCallId: string) => `approval:${toolCallId}`;

/**
 * Answers the turn's questions through awakeables; returns the way to stop listening. `approvalTimeoutMs` is a
 * durable timer here, not the runtime's in-process one, which a replay would restart.
 */
export function awaitApprovals(
  ctx: restate.ObjectContext,
  scope: JournalScope,
  agent: Agent<unknown>,
  approvalTimeoutMs: number | undefined,
  /** Keeps what an answer remembers for the agent's whole tree. */
  remember: (approval: RememberedApproval) => void,
): () => void {
  return agent.on('approval_requested', (event) => {
    // An awakeable per call: resolved by the `approve` handler, or by any HTTP client that has its id.
    const awakeable = ctx.awakeable<ApprovalAnswer>();
    const { toolCallId, toolName, args, label } = event;
    ctx.set(approvalKey(toolCallId), {
      toolCallId,
      toolName,
      args,
      ...(label === undefined ? {} : { label }),
      awakeableId: awakeable.id,
    } satisfies PendingApproval);
    const timedOut: ApprovalAnswer = {
      toolCallId: event.toolCallId,
      approve: false,
      reason: `no answer within ${approvalTimeoutMs} ms`,
    };
    const answered =
      approvalTimeoutMs === undefined
        ? awakeable.promise
        : restate.RestatePromise.race([awakeable.promise, ctx.sleep(approvalTimeoutMs).map(() => timedOut)]);
    const interrupted: ApprovalAnswer = { ...timedOut, reason: 'The turn was interrupted' };
    serially(scope, () => scope.wait(answered, () => interrupted)).then(
      (answer) => {
        ctx.clear(approvalKey(event.toolCallId));
        if (!answer.approve) {
          agent.deny(event.toolCallId, answer.reason);
          return;
        }
        if (answer.remember) {
          remember(
            typeof answer.remember === 'string'
              ? { rule: answer.remember }
              : { call: { name: toolName, arguments: args as JsonObject } },
          );
        }
        agent.approve(event.toolCallId, answer.remember ? { remember: answer.remember } : {});
      },
      () => agent.deny(event.toolCallId, 'The approval was cancelled'),
    );
  });
}

/** The agent object's shared handlers for approvals. */
export const approvalHandlers = {
  /** Answers a call waiting for approval (the awakeable its turn is suspended on). */
  approve: restate.handlers.object.shared(
    async (ctx: restate.ObjectSharedContext, answer: ApprovalAnswer): Promise<boolean> => {
      const waiting = await ctx.get<PendingApproval | string>(approvalKey(answer.toolCallId));
      if (!waiting) return false;
      // A bare awakeable id: stored by a worker of an earlier release, for a turn still waiting on it.
      ctx.resolveAwakeable(typeof waiting === 'string' ? waiting : waiting.awakeableId, answer);
      return true;
    },
  ),

  /** The calls waiting for approval now (what `troupe approvals --restate …` lists), by call id. */
  pending: restate.handlers.object.shared(async (ctx: restate.ObjectSharedContext): Promise<PendingApproval[]> => {
    const keys = (await ctx.stateKeys()).filter((key) => key.startsWith(approvalKey(''))).sort();
    const waiting = await Promise.all(keys.map((key) => ctx.get<PendingApproval | string>(key)));
    return waiting.filter((call): call is PendingApproval => typeof call === 'object' && call !== null);
  }),
};

/** Makes an agent's turn allow what its tree remembers, as if each had been approved with `remember` in it. */
export function applyRemembered(
  agent: Agent<unknown>,
  remembered: RememberedApproval[],
  tools: readonly AnyTool[],
): void {
  for (const approval of remembered) {
    if ('rule' in approval) agent.permissions.remember(approval.rule);
    else {
      const call = { type: 'tool_call' as const, id: '', ...approval.call };
      agent.permissions.rememberCall(
        call,
        tools.find((tool) => tool.name === call.name),
      );
    }
  }
}
