import type { BatchVerdict, Escalation, TaskFailed } from '../../../machines/supervisor/index.js';
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

/** A batch's verdict on the failure in hand (restart, with the siblings it takes along; resume; stop). */
export function verdictFact(decided: FailureInHand, { verdict, delayMs, restarted }: BatchVerdict): VerdictFact {
  return {
    ...factOf(decided),
    v: verdict,
    ...(delayMs === undefined ? {} : { delayMs }),
    ...(restarted ? { restarted } : {}),
  };
}

export function escalationVerdict(decided: FailureInHand, { because, text }: Escalation): VerdictFact {
  return { ...factOf(decided), v: 'escalate', because, text };
}
