import type { TurnInput } from '../../machines/agent/index.js';
import type { JournalRecord } from '../session/index.js';
import type { RecordSink } from './session-recorder.js';

/*
 * A replay of a session (`SessionManager.replay`, `troupe replay`): its records are kept in memory to be compared
 * with the original's, and the original's inputs are fed to the agent at the places they arrived.
 */

/** The records of a replay, kept in memory. */
export class ReplaySink implements RecordSink {
  readonly records: JournalRecord[] = [];
  /** Records other than inputs, which is what the original's input positions count. */
  produced = 0;
  onRecord?: () => void;

  add(record: JournalRecord): void {
    this.records.push(record);
    if (record.k === 'input') return;
    this.produced++;
    this.onRecord?.();
  }
}

/**
 * A replay submits each input when the replay has produced as many records as preceded it in the original, so a
 * prompt queued behind a running turn is queued again, and one sent to an idle agent starts a run again. `submit`
 * journals the input and prompts the agent.
 */
export function feedInputs(
  original: readonly JournalRecord[],
  agentId: string,
  sink: ReplaySink,
  submit: (input: TurnInput) => void,
): Promise<void> {
  const due: Array<{ after: number; input: TurnInput }> = [];
  let before = 0;
  for (const record of original) {
    // Schedule facts are the timers' (a replay runs none), not the agent's: they hold no input's place.
    if (record.k === 'session' || record.k === 'schedule' || ('a' in record && record.a !== agentId)) continue;
    if (record.k === 'input') {
      due.push({
        after: before,
        input: { inputId: record.inputId, messages: record.messages, expectsOutput: record.expectsOutput },
      });
    } else before++;
  }
  const feed = () => {
    while (due.length > 0 && (due[0]?.after ?? 0) <= sink.produced) {
      const next = due.shift();
      if (!next) break;
      submit(next.input);
    }
  };
  sink.onRecord = () => queueMicrotask(feed);
  return new Promise((resolve) =>
    setImmediate(() => {
      feed();
      resolve();
    }),
  );
}
