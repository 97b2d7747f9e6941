import type { Escalation, TaskFailed, TaskVerdict } from '../../../machines/supervisor/index.js';
import type { VerdictRecord } from '../../session/index.js';

/** The failed run a batch's verdict answers, and the batch (see TreeObserver.verdict). */
export interface FailureInHand {
  ownerId: string;
  batchId: string;
  failed: TaskFailed;
}

/** A verdict as the tree's journal keeps it, without its kind. */
export type VerdictFact = Omit<VerdictRecord, 'k'>;

function factOf({ ownerId, batchId, failed }: FailureInHand) {
  const { taskId, attempt, failure, at } = failed;
  return { a: ownerId, batchId, taskId, attempt, failure, t: at };
}

/** What a batch told task `taskId` about the failure in hand: a sibling a restart takes along names itself. */
export function toldVerdict(decided: FailureInHand, taskId: string, event: TaskVerdict): VerdictFact {
  const restart = event.type === 'RESTART';
  return {
    ...factOf(decided),
    v: restart ? 'restart' : event.type === 'RESUME' ? 'resume' : 'stop',
    ...(event.type === 'GIVE_UP' ? {} : { delayMs: event.delayMs }),
    ...(restart && taskId !== decided.failed.taskId ? { restarted: [taskId] } : {}),
  };
}

export function escalationVerdict(decided: FailureInHand, { because, text }: Escalation): VerdictFact {
  return { ...factOf(decided), v: 'escalate', because, text };
}
