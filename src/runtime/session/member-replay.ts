import type { AnyActorRef } from 'xstate';
import type { AgentEnv } from '../env/env.js';
import type { JournalLink } from './link.js';
import { copyJournaled, type RecordSink } from './record-sink.js';
import { SessionRecorder } from './recorder.js';
import { type AgentJournal, markReplayed } from './restore.js';

/**
 * A supervisor's member (`supervisor.agent({ id })`) on a session: journaled from its start, and rebuilt from the
 * journal when the journal knows it (the same id, after a restart). Apart from the tree journal (tree-journal.ts)
 * because a member is no batch's task: no `taskStarted` starts its replay and a spawned member cannot be given a
 * machine snapshot, so it replays from its first message, its journaled inputs sent again by this module. The tree
 * journal keeps its recorder and its `SubagentReplay` with the subagents' (see `TreeJournal.member`).
 */

/** Whether the journal holds facts of this member: then it is rebuilt, not started new. */
export function knowsMember(journal: AgentJournal): boolean {
  return journal.journaled.messages > 0 || journal.inputs.size > 0;
}

/** A member's recorder: a new member's starting history is the journal's first fact of it. */
export function recordMember(
  env: AgentEnv,
  actor: AnyActorRef,
  journal: AgentJournal,
  sink: RecordSink,
  dir: string | undefined,
): SessionRecorder {
  const journaled = copyJournaled(journal.journaled);
  if (!knowsMember(journal)) {
    env.transcript.messages.forEach((m, i) => {
      sink.add({ k: 'msg', s: 0, a: env.agentId, i, turn: 0, step: 0, m });
    });
    journaled.messages = env.transcript.length;
  }
  const recorder = new SessionRecorder(env, sink, journaled);
  recorder.watchApprovals(actor);
  if (dir) env.toolResults.useSessionDir(dir, env.agentId);
  return recorder;
}

/**
 * A known member answers from its journal: each turn from its recorded answers and results (nothing runs twice),
 * until the first turn the journal has not finished goes on live. A steer that had joined joins again at the same
 * step boundary (`joinedAt`); one still waiting at the crash is its `SubagentReplay`'s to send again.
 */
export function replayMember(env: AgentEnv, journal: AgentJournal, recorder: SessionRecorder, link: JournalLink): void {
  for (const [inputId, input] of journal.inputs) recorder.knowInput(inputId, input.messages);
  link.answerFrom(journal);
  markReplayed(env, journal, link);
}

/**
 * A member's journaled inputs, in the journal's turn order: queued together, each journaled turn replays and the
 * first unfinished one goes on live, the rest follow it. A turn its background results opened (no input: the
 * member was idle) is opened again by its replay when the member goes idle there (SubagentReplay), so the prompts
 * journaled after it are sent only once it has been replayed. Returns what stops the wait for those.
 */
export function replayInputs(journal: AgentJournal, actor: AnyActorRef): () => void {
  const segments: Array<{ after: number; inputIds: string[] }> = [{ after: 0, inputIds: [] }];
  const turned = new Set<string>();
  for (const { turn, inputId } of journal.turnOrder()) {
    turned.add(inputId);
    if (inputId.startsWith('notify.')) segments.push({ after: turn, inputIds: [] });
    else if (journal.inputs.has(inputId)) segments.at(-1)?.inputIds.push(inputId);
  }
  for (const inputId of journal.inputs.keys()) if (!turned.has(inputId)) segments.at(-1)?.inputIds.push(inputId);
  const send = (inputIds: string[]) => {
    for (const inputId of inputIds) {
      const input = journal.inputs.get(inputId);
      if (!input) continue;
      actor.send({
        type: 'PROMPT',
        input: { inputId, messages: input.messages, expectsOutput: input.expectsOutput },
      });
    }
  };
  send(segments[0]?.inputIds ?? []);
  let next = 1;
  if (segments.length === 1) return () => {};
  const subscription = actor.subscribe({
    next: (snapshot: { matches(state: string): boolean; context: { turn: number } }) => {
      if (!snapshot.matches('idle')) return;
      for (let segment = segments[next]; segment && snapshot.context.turn >= segment.after; segment = segments[next]) {
        next++;
        send(segment.inputIds);
      }
      if (next >= segments.length) subscription.unsubscribe();
    },
    error: () => {},
  });
  return () => subscription.unsubscribe();
}
