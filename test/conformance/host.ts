import type { Message, Usage } from '../../src/index.js';
import type { TurnStopReason } from '../../src/protocol/index.js';

/**
 * The two hosts the conformance suite runs on, behind one interface: `embedded` drives the runtime in this process,
 * `restate` a real restate-server with a worker serving the same agents in this process (so the tools' log and
 * gates are shared with the test). A root's id picks its flavour (script.ts); each scenario uses a root of its own.
 */
export interface Outcome {
  stopReason: TurnStopReason;
  text: string;
  usage: Usage;
}

/** A call waiting for approval somewhere in a root's tree. */
export interface Approval {
  toolName: string;
  /** Approves or denies it; false when it was not waiting any more. `remember`: approve the same call tree-wide. */
  answer(approve: boolean, reason?: string, remember?: boolean): Promise<boolean>;
}

export interface Host {
  readonly name: string;
  prompt(root: string, text: string): Promise<Outcome>;
  /** Starts a turn and returns at once: its outcome comes later. */
  send(root: string, text: string): Promise<{ outcome: Promise<Outcome> }>;
  history(root: string): Promise<Message[]>;
  /** The root's own usage over all its turns. */
  usage(root: string): Promise<Usage>;
  /** A user message for the running turn (or a new one): resolved once the turn holds it. */
  steer(root: string, text: string): Promise<void>;
  interrupt(root: string): Promise<void>;
  /** Runs `cause` during a turn of the root and resolves once that turn holds the notification it causes. */
  notifiedDuringTurn(root: string, cause: () => void): Promise<void>;
  /** Resolves once the root has received `count` notifications (taken by a turn or held for the next). */
  notified(root: string, count: number): Promise<void>;
  /** Kills the process that runs the agents at this moment and starts another (nothing where none can die). */
  crash(): Promise<void>;
  /** What the tools did, in every process that ran them (script.ts's log). */
  executed(): string[];
  /** Waits for a call of `toolName` to ask for approval in the root's tree. */
  approval(root: string, toolName: string): Promise<Approval>;
  close(): Promise<void>;
}
