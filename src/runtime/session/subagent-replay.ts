import type { AnyActorRef } from 'xstate';
import { notifiedTaskIds, type UserMessage } from '../../protocol/index.js';
import type { AgentEnv } from '../env/env.js';
import type { Tree } from '../tree/tree.js';
import type { SessionRecorder } from './recorder.js';
import { type AgentJournal, afterCatchUp } from './restore.js';

/**
 * A subagent (or a supervisor's member) rebuilt after a restart, while it replays its journal (see
 * docs/architecture/journal.md): a steer that was still waiting for a step boundary at the crash is sent again once the
 * replay has caught up with the journal, as a root's is, and so are its background results, held until then (joining a
 * replayed step, either would make that step's journaled answer follow it again); a turn that its results opened before
 * the crash (an idle subagent woken by `NOTIFY`) is opened again with the same notifications when the replay goes idle
 * there; and a result it had taken in before the crash counts as open until it joins the history again, so the subagent
 * does not hand off before its replay is through.
 */
export class SubagentReplay {
  private releaseHeld?: () => void;
  private stopWaiting?: () => void;
  /** The history length at which the journal's notification turn was sent again (once per place). */
  private wokenAt = -1;
  /** Background tasks whose notification the journal holds in this agent's history. */
  readonly inHistory = new Set<string>();
  /** Of those, the ones whose notification has not joined the replayed history yet. */
  private readonly rejoining = new Set<string>();

  constructor(
    readonly journal: AgentJournal,
    private readonly env: AgentEnv,
    private readonly tree: Tree,
    /** Its recorder: a steer sent again is one it has journaled already. */
    private readonly recorder: SessionRecorder,
  ) {
    for (const message of journal.messages) {
      if (message.role === 'user' && message.source === 'notification') {
        for (const taskId of notifiedTaskIds(message)) this.inHistory.add(taskId);
      }
    }
    this.releaseHeld = tree.effects.holdNotifications(env.agentId);
  }

  /** Its actor runs (its first `agent_start`): the wait for the replay to catch up starts. */
  started(actor: AnyActorRef): void {
    if (this.stopWaiting) return;
    this.stopWaiting = afterCatchUp(
      this.env,
      actor,
      this.journal.messages.length,
      () => {
        this.steerAgain(actor);
        this.release();
      },
      () => this.wakeAgain(actor),
    );
  }

  /** Steers journaled that had not joined its history at the crash (it has no restored state to hold any). */
  private steerAgain(actor: AnyActorRef): void {
    for (const record of this.journal.waitingSteers(0)) {
      this.recorder.knowSteer(record.message);
      actor.send({ type: 'STEER', message: record.message });
    }
  }

  /** A result it had taken in before the crash: open until its notification joins the replayed history. */
  expectAgain(taskId: string): void {
    const node = this.tree.registry.node(this.env.agentId);
    if (!node || this.rejoining.has(taskId)) return;
    this.rejoining.add(taskId);
    node.openBackground++;
  }

  /** A notification joined the replayed history. */
  joined(message: UserMessage): void {
    const node = this.tree.registry.node(this.env.agentId);
    for (const taskId of notifiedTaskIds(message)) {
      if (!this.rejoining.delete(taskId) || !node) continue;
      node.openBackground--;
    }
  }

  stop(): void {
    this.stopWaiting?.();
    this.release();
  }

  private release(): void {
    const release = this.releaseHeld;
    this.releaseHeld = undefined;
    release?.();
  }

  /** Idle where the journal has a turn its notifications opened: they are sent again, and the replay goes on. */
  private wakeAgain(actor: AnyActorRef): boolean {
    const at = this.env.transcript.length;
    const turn = this.journal.notifyTurnAt(at);
    if (!turn) return false;
    if (this.wokenAt !== at) {
      this.wokenAt = at;
      // After the transition that made it idle; meanwhile its task does not take it for finished, as the result
      // counts as open until it joins again (expectAgain).
      queueMicrotask(() => actor.send({ type: 'NOTIFY', messages: turn.messages, inputId: turn.inputId }));
    }
    return true;
  }
}
