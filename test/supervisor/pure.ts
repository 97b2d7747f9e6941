import { expect } from 'vitest';
import { type AnyStateMachine, initialTransition, transition } from 'xstate';
import type { BatchSpec, TaskSpec } from '../../src/protocol/index.js';

/** Pure-transition helpers for the supervision machines: actions as short strings, in order. */

export function task(i: number, agentId = `a${i}`): TaskSpec {
  return { taskId: `t${i}`, agentId, prompt: `p${i}`, expectsOutput: false };
}

export function batch(batchId: string, tasks: TaskSpec[], concurrency = 2, background = false): BatchSpec {
  return { batchId, background, concurrency, tasks };
}

export const settings = { ownerId: 'owner', notifyOwner: true, maxRestarts: 1, restartDelayMs: 100 };

function describeActions(actions: ReadonlyArray<{ type: string; params?: unknown }>): string[] {
  // XState's own timer bookkeeping (an `after` cancelled on exit) is not the machine's behaviour.
  return actions
    .filter((action) => action.type !== 'xstate.cancel')
    .map((action) => {
      const p = (action.params ?? {}) as Record<string, unknown>;
      switch (action.type) {
        case 'prepareTask': {
          const params = p as { task: TaskSpec; attempt: number; resume?: boolean; cause?: string };
          const how = `${params.resume ? ' resumed' : ''}${params.cause ? ` (cause ${params.cause})` : ''}`;
          return `prepare ${params.task.agentId}#${params.attempt}${how}`;
        }
        case 'xstate.spawnChild':
          return `spawn ${p.id as string}`;
        case 'xstate.sendTo': {
          const event = p.event as {
            type: string;
            status?: string;
            task?: TaskSpec;
            taskId?: string;
            index?: number;
            starts?: Array<{ task: TaskSpec }>;
          };
          // A task's place: its index in the batch (what every pool on its way is told).
          const place = event.task || event.index === undefined ? undefined : `index ${event.index}`;
          // A FILL: the tasks a pool starts with, by id.
          const tasks = event.starts?.map((start) => start.task.taskId).join(',');
          const detail = event.task?.taskId ?? event.taskId ?? tasks ?? place ?? event.status ?? '';
          return `send ${p.targetId as string} ${event.type}${detail ? ` ${detail}` : ''}`;
        }
        case 'reportSettled': {
          const event = p as { type: string; taskId?: string; status?: string; batchId?: string };
          return `report ${event.type} ${event.taskId ?? event.batchId ?? ''}${event.status ? ` ${event.status}` : ''}`;
        }
        case 'xstate.stopChild':
          return `stop ${(p as { id?: string }).id ?? JSON.stringify(p)}`;
        case 'releaseChild':
          return `release ${p.agentId as string}`;
        case 'settleTask':
          return `settle ${p.taskId as string} ${p.status as string}${p.kept ? ' kept' : ''}`;
        case 'notifyOwner':
          return `notify ${p.inputId as string}`;
        case 'xstate.raise': {
          const event = p.event as { type: string };
          return `raise ${event.type} after ${p.delay as number}`;
        }
        case 'announceRestart':
          return `restart ${p.agentId as string}#${p.attempt as number}${p.cause ? ` (cause ${p.cause as string})` : ''}`;
        case 'reportFailed':
          return `report ${p.type as string} ${p.taskId as string} ${p.failure as string}#${p.attempt as number}`;
        case 'startInLeaf': {
          const params = p as { leaf: number; event: { type: string; task: TaskSpec } };
          return `send leaf ${params.leaf} ${params.event.type} ${params.event.task.taskId}`;
        }
        case 'tellTask': {
          const event = p.event as { type: string; delayMs?: number; cause?: string };
          const after = event.delayMs === undefined ? '' : ` after ${event.delayMs}`;
          return `tell ${p.taskId as string} ${event.type}${event.cause ? ` (cause ${event.cause})` : ''}${after}`;
        }
        case 'recordVerdict': {
          const verdict = p as { verdict: string; delayMs?: number; restarted?: string[] };
          const also = verdict.restarted ? ` with ${verdict.restarted.join(',')}` : '';
          return `verdict ${verdict.verdict}${also}${verdict.delayMs === undefined ? '' : ` after ${verdict.delayMs}`}`;
        }
        case 'reportEscalation':
          return `escalate ${p.taskId as string} ${p.because as string}`;
        case 'prepareMember':
          return `member ${p.agentId as string}`;
        case 'stopTasks':
          return `stopTasks ${p.ownerId as string}`;
        default:
          return action.type;
      }
    });
}

/** A machine driven by pure transitions: `start(input)` and `step(snapshot, event)` with readable actions. */
export function pure<M extends AnyStateMachine>(machine: M) {
  type S = ReturnType<typeof initialTransition<M>>[0];
  return {
    start(input: unknown): [S, string[]] {
      const [snapshot, actions] = initialTransition(machine, input as never);
      return [snapshot, describeActions(actions as never)];
    },
    step(snapshot: S, event: { type: string; [key: string]: unknown }): [S, string[]] {
      const [next, actions] = transition(machine, snapshot, event as never);
      expect((next as { status: string }).status).not.toBe('error');
      return [next, describeActions(actions as never)];
    },
  };
}
