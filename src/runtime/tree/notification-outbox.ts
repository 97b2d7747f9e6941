import type { AnyActorRef } from 'xstate';
import type { UserMessage } from '../../protocol/index.js';

/** One background result on its way to its owner agent. */
interface Parcel {
  inputId: string;
  /** The notification, once the owner's supervisor has said to send it (a supervisor stopping sends none). */
  message?: UserMessage;
  /** What counts the result as delivered (the `notification` event, the owner's open count): run at the flush. */
  delivered: () => void;
}

/** Where an owner's parcels go: its actor, read at the flush (the owner may have stopped meanwhile). */
type Recipient = () => AnyActorRef | undefined;

const nextMacrotask: (run: () => void) => void =
  typeof setImmediate === 'function' ? (run) => setImmediate(run) : (run) => setTimeout(run, 0);

/**
 * Background results for owner agents, gathered and handed to each owner as one `NOTIFY` carrying all of its
 * notifications. An idle owner wakes for a model call of each NOTIFY, and children of a burst finish in the same
 * macrotask: sent one by one, the first result of a burst woke the owner and the rest waited for a second call. So
 * an idle owner gets its results once the current macrotask is over, all together. A busy owner takes them at its
 * next step boundary anyway (they join that step's request together), so it gets them at once (a microtask
 * later, after the transition that settled them), never later than it did before.
 *
 * A result counts as delivered (its `notification` event, the owner's count of open background tasks, and so the
 * owner's own hand-off) only when the owner has it.
 */
export class NotificationOutbox {
  private readonly byOwner = new Map<string, { recipient: Recipient; parcels: Parcel[] }>();
  /** Parcels by the input id their notification will carry (`notify.<taskId>`), until they are delivered. */
  private readonly byInputId = new Map<string, Parcel>();
  private microtask = false;
  private macrotask = false;
  private closed = false;
  /** Owners whose results wait: a resumed agent replaying its journal takes them once it has caught up. */
  private readonly held = new Set<string>();

  /** A background task of `ownerId` settled: its accounting waits for the delivery, with its notification if any. */
  settled(ownerId: string, recipient: Recipient, inputId: string, delivered: () => void): void {
    if (this.closed) return;
    let box = this.byOwner.get(ownerId);
    if (!box) {
      box = { recipient, parcels: [] };
      this.byOwner.set(ownerId, box);
    }
    const parcel: Parcel = { inputId, delivered };
    box.parcels.push(parcel);
    this.byInputId.set(inputId, parcel);
    if (!this.microtask) {
      this.microtask = true;
      queueMicrotask(() => {
        this.microtask = false;
        this.flush(false);
      });
    }
    if (!this.macrotask) {
      this.macrotask = true;
      nextMacrotask(() => {
        this.macrotask = false;
        this.flush(true);
      });
    }
  }

  /** Results settled and not yet delivered to their owners (held ones included): the tree is not quiet while any is. */
  get undelivered(): number {
    return this.byInputId.size;
  }

  /** The supervisor sends the settled task's notification (right after `settled`, in the same transition). */
  notify(inputId: string, message: UserMessage): void {
    const parcel = this.byInputId.get(inputId);
    if (parcel) parcel.message = message;
  }

  /**
   * Keeps an owner's results until the returned release is called (then they go with the next flush). A resumed
   * agent replays the steps after its last snapshot from the journal: a notification joining one of those steps
   * would change a history the journaled answers were made without (see docs/architecture/journal.md).
   */
  hold(ownerId: string): () => void {
    this.held.add(ownerId);
    return () => {
      if (!this.held.delete(ownerId) || this.closed || !this.byOwner.has(ownerId)) return;
      nextMacrotask(() => this.flush(true));
    };
  }

  /** The tree stopped: nothing more is delivered. */
  close(): void {
    this.closed = true;
    this.byOwner.clear();
    this.byInputId.clear();
  }

  /** Delivers to busy owners, and at the end of a macrotask to every owner. */
  private flush(all: boolean): void {
    for (const [ownerId, { recipient, parcels }] of [...this.byOwner]) {
      if (this.held.has(ownerId)) continue;
      const ref = recipient();
      const snapshot = ref?.getSnapshot() as { status?: string; value?: unknown } | undefined;
      const active = snapshot?.status === 'active';
      if (!all && active && snapshot?.value === 'idle') continue;
      this.byOwner.delete(ownerId);
      for (const parcel of parcels) this.byInputId.delete(parcel.inputId);
      const sent = parcels.filter((parcel) => parcel.message !== undefined);
      // The events first, so that a log reads "the result arrived" before the turn it wakes.
      for (const parcel of parcels) parcel.delivered();
      const first = sent[0];
      if (first && active && ref) {
        // A turn the notifications open is named after the first of them.
        const messages = sent.map((parcel) => parcel.message as UserMessage);
        ref.send({ type: 'NOTIFY', messages, inputId: first.inputId });
      }
    }
  }
}
