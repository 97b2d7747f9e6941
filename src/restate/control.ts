import * as restate from '@restatedev/restate-sdk';
import type { SerializedError } from '../host/index.js';
import type { UserMessage } from '../index.js';

/**
 * Steering and interrupting a hosted turn. A turn is an exclusive invocation of the agent's object, so nothing
 * else of that object can write to it while it runs; what a user sends it goes through a small object of its own
 * (`<name>-control`, keyed by the same agent id) whose exclusive handlers keep the messages in order, and the turn
 * is woken by an awakeable, its doorbell:
 *
 * 1. A turn creates its doorbell at its start and stores it (with the turn's invocation id) in its object's state,
 *    where the control object reads it through the agent object's shared `doorbell` handler.
 * 2. `steer` / `interrupt` on the control object append the message to its state, ring the doorbell, and send the
 *    agent object a `steered` message, which runs whatever no turn took (below). An interrupt while no turn runs
 *    (no doorbell) has nothing to stop and is dropped at once.
 * 3. The turn races every effect it waits for (a model call, a tool call, an approval, a timer) with its doorbell.
 *    When it rings, the turn arms a new doorbell, *then* takes the messages (a call to the control object, so the
 *    taking is in the turn's journal), and hands them to the agent: `steer()` joins the next step boundary;
 *    `interrupt()` ends the turn with stop reason `interrupted` and an "interrupted" result for every open
 *    tool call. Then it goes back to waiting for the effect.
 * 4. A turn ends by clearing its doorbell, then waits for one journaled no-op raced with the doorbell: a ring
 *    that reached the turn before the clear comes first, and the turn leaves a mark (`waiting`) for the next one.
 *    The control object reads the doorbell again after ringing it: the same turn's means the ring is heard (at a
 *    wait, at the end, or by a take that runs after the ringing accept), none means the turn ended (the `steered`
 *    fallback runs), a later turn's is rung too.
 *
 * Exactly once: a message is in the control object's state from the moment the user's call is accepted (an ingress
 * `send` is durable before it returns), and leaves it only in a `take` whose answer is journaled by the turn that
 * took it; a replay (a worker killed after the take) reads the same answer back and applies the same messages at
 * the same place, since the ring is a journaled notification and Restate's combinators see notifications in journal
 * order. Arming before taking means a message appended after the take rings the new doorbell. A turn takes at its
 * start only when the one before it heard a ring at its end (so a turn without steers is one invocation): then a
 * message that rang a turn as it ended reaches the next turn of the key, whichever invocation runs it, as it would
 * reach the next turn embedded (`openingOf`): a prompt queued behind the ending turn is steered or interrupted by
 * it; with none, the `steered` invocation runs the steers as a turn of their own, as a steer of an idle embedded
 * agent does. Steers taken after an interrupt start a turn of their own once the interrupted one has ended
 * (embedded, the interrupt leaves the agent idle, and a steer then starts a turn).
 */
export type ControlMessage =
  | { kind: 'steer'; text: string }
  | { kind: 'interrupt' }
  /**
   * A join's cancel of a foreground task whose `run` has answered `waiting` (swarm.ts): the turn that takes it ends
   * as an interrupt does and hands off `cancelled`, if the agent still owes that hand-off (`task`, its awakeable).
   */
  | { kind: 'cancel'; task: string }
  /**
   * A background child's result, from the parent's task book before it sends the parent's `notify` (so it is here
   * before that `notify` can run): a running turn that takes it hands it to its agent, where it joins the next step
   * boundary, and the turn stores its task id with the history it joined (`TAKEN`). The `notify` that
   * runs afterwards finds the id there and runs no turn; one that does not withdraws the message, and delivers it.
   * `escalation`: the failure the child's batch escalated with it, which fails the turn that takes it at the step
   * the result joins.
   */
  | { kind: 'notify'; taskId: string; message: UserMessage; escalation?: SerializedError };

/** The running turn's doorbell: an awakeable's id, and the invocation id of the turn that waits for it. */
export interface Doorbell {
  /** The awakeable's id: resolving it rings the turn. */
  id: string;
  /** The turn's invocation id: a doorbell read again after a ring tells the same turn from a later one. */
  turn: string;
}
/** The control object's state key: messages accepted and not taken yet, in order. */
const PENDING = 'pending';

/** The control object's name for an agent object's name. */
export const controlName = (agentObjectName: string) => `${agentObjectName}-control`;

const json = restate.serde.json;

/** Takes (and clears) what the control object holds for this agent: a call, so the answer is in the journal. */
export function takeMessages(ctx: restate.ObjectContext, agentObjectName: string): Promise<ControlMessage[]> {
  return ctx.genericCall<null, ControlMessage[]>({
    service: controlName(agentObjectName),
    method: 'take',
    key: ctx.key,
    parameter: null,
    inputSerde: json,
    outputSerde: json,
  });
}

/** A background child's result offered to its parent's running turn, with the failure its batch escalated. */
type Offer = { taskId: string; message: UserMessage; escalation?: SerializedError };

/**
 * Offers a background child's result to the agent's running turn (a call, so it is there before the `notify` its
 * book sends next): whether a turn ran to take it.
 */
export function offerResult(ctx: restate.ObjectContext, agentObjectName: string, offer: Offer): Promise<boolean> {
  return ctx.genericCall<Offer, boolean>({
    service: controlName(agentObjectName),
    method: 'notify',
    key: ctx.key,
    parameter: offer,
    inputSerde: json,
    outputSerde: json,
  });
}

/**
 * The result of `taskId` is delivered by its `notify`: no turn of this agent may take it any more (a call). Without
 * `taskId`, every result waiting there: the agent was stopped, and hears none of them.
 */
export function withdrawResult(ctx: restate.ObjectContext, agentObjectName: string, taskId?: string): Promise<null> {
  return ctx.genericCall<{ taskId?: string }, null>({
    service: controlName(agentObjectName),
    method: 'withdraw',
    key: ctx.key,
    parameter: taskId === undefined ? {} : { taskId },
    inputSerde: json,
    outputSerde: json,
  });
}

/** The control object of the agents hosted by the object named `agentObjectName` (served beside it). */
export function controlObject(agentObjectName: string) {
  const doorbellOf = (ctx: restate.ObjectContext) =>
    ctx.genericCall<null, Doorbell | null>({
      service: agentObjectName,
      method: 'doorbell',
      key: ctx.key,
      parameter: null,
      inputSerde: json,
      outputSerde: json,
    });
  async function accept(ctx: restate.ObjectContext, message: ControlMessage): Promise<boolean> {
    // A shared handler of the agent's object reads its state as of now. No take can run before this invocation
    // ends (both are exclusive handlers of this object), and a turn always arms its next doorbell before it takes,
    // so a message appended here is taken by the turn that rang, or by a later take. Ringing a doorbell twice, or
    // the doorbell of a turn that has ended, wakes nothing: the messages stay here until taken.
    let doorbell = await doorbellOf(ctx);
    // No turn runs: an interrupt has nothing to stop (an idle embedded agent ignores one too), and a result is
    // delivered by its own `notify`, as today.
    if (!doorbell && (message.kind === 'interrupt' || message.kind === 'notify')) return false;
    ctx.set(PENDING, [...((await ctx.get<ControlMessage[]>(PENDING)) ?? []), message]);
    // Read again after the ring (step 4 above): the same turn hears it; a turn that began meanwhile is rung too.
    while (doorbell) {
      ctx.resolveAwakeable(doorbell.id, null);
      const now = await doorbellOf(ctx);
      if (now?.turn === doorbell.turn) break;
      doorbell = now;
    }
    // A result that no turn takes has its `notify` already on the way: no `steered` for it.
    if (message.kind === 'notify') return true;
    ctx.genericSend({ service: agentObjectName, method: 'steered', key: ctx.key, parameter: null, inputSerde: json });
    return true;
  }
  return restate.object({
    name: controlName(agentObjectName),
    handlers: {
      /** A user message for the agent's running turn (or a turn of its own when none runs). */
      steer: async (ctx: restate.ObjectContext, input: { text: string }): Promise<null> => {
        await accept(ctx, { kind: 'steer', text: input.text });
        return null;
      },
      /**
       * Stops the agent's running turn; nothing when none runs. Answers its own invocation id: a client calls it and
       * waits, so that a prompt it sends next is not the turn it finds running.
       */
      interrupt: async (ctx: restate.ObjectContext): Promise<string> => {
        await accept(ctx, { kind: 'interrupt' });
        return ctx.request().id;
      },
      /** Cancels the foreground task whose hand-off goes to this awakeable: its running turn, or the next. */
      cancel: async (ctx: restate.ObjectContext, input: { task: string }): Promise<null> => {
        await accept(ctx, { kind: 'cancel', task: input.task });
        return null;
      },
      /**
       * A background child's result, for the running turn (called by the parent's task book; see `notify` above):
       * whether a turn ran to take it (when none did, its `notify` has nothing to look for or withdraw).
       */
      notify: async (ctx: restate.ObjectContext, input: Offer): Promise<boolean> =>
        accept(ctx, { kind: 'notify', ...input }),
      /**
       * The parent's `notify` delivers this result itself: no turn may take it any more. Exclusive, so it is
       * ordered after every take; the book's `notify` call came before, so nothing of this task arrives later.
       * Without a task id (the parent's book stops, its owner cancelled): every result, whose `notify` the book
       * cancels, so that a turn of a resumed task does not take one (a stopped embedded agent hears none).
       */
      withdraw: async (ctx: restate.ObjectContext, input: { taskId?: string }): Promise<null> => {
        const pending = (await ctx.get<ControlMessage[]>(PENDING)) ?? [];
        const withdrawn = (message: ControlMessage) =>
          message.kind === 'notify' && (input.taskId === undefined || message.taskId === input.taskId);
        const kept = pending.filter((message) => !withdrawn(message));
        if (kept.length === pending.length) return null;
        if (kept.length > 0) ctx.set(PENDING, kept);
        else ctx.clear(PENDING);
        return null;
      },
      /** What was accepted since the last take, in order; cleared. */
      take: async (ctx: restate.ObjectContext): Promise<ControlMessage[]> => {
        const pending = (await ctx.get<ControlMessage[]>(PENDING)) ?? [];
        if (pending.length > 0) ctx.clear(PENDING);
        return pending;
      },
    },
  });
}

/**
 * What opens a turn: the handler's input (a prompt's text, or a notification, passed on as it is), or a steer, which
 * opens it as a steer opens a turn of an idle embedded agent (stored as `source: 'steer'`, not as a prompt).
 */
export type Opening<Input> = ({ prompt: Input } | { steer: string }) & { messages: ControlMessage[] };

/**
 * How a turn opens, given what waited for it in the control object (messages that rang a turn as it ended, or
 * came between turns): embedded, they would have reached the turn that runs next, so this turn applies them at
 * its start, in order (a steer joins its first step boundary; an interrupt stops it). Without a prompt (the
 * `steered` fallback) there is no turn to stop: the steers after the last interrupt start one, or nothing runs.
 */
export function openingOf<Input>(prompt: Input | undefined, waiting: ControlMessage[]): Opening<Input> | null {
  if (prompt !== undefined) return { prompt, messages: waiting };
  // Results are left to their own `notify` (a taken one that joins no stored turn is delivered there).
  const controls = waiting.filter((message) => message.kind !== 'notify');
  const [first, ...rest] = controls.slice(controls.findLastIndex((message) => message.kind !== 'steer') + 1);
  return first?.kind === 'steer' ? { steer: first.text, messages: rest } : null;
}

/** What a turn does with a message: the hosted agent's own `steer` and `interrupt`. */
export interface Controllable {
  steer(text: string): void;
  interrupt(): void;
}

/**
 * Hands a running agent a result (`HostedAgent.notify`), and the failure its batch escalated with it
 * (`HostedAgent.escalate`); false when it is not running, so it cannot join a step.
 */
export type Notifiable = (message: UserMessage, escalation?: SerializedError) => boolean;

const RUNG: unique symbol = Symbol('rung');

/** One turn's end of the protocol: its doorbell, and the wait that every effect of the turn goes through. */
export class TurnControl {
  private bell: restate.RestatePromise<unknown>;
  /** The turn's agent: set before its first effect, which is the first wait that can take a message. */
  private target: Controllable | undefined;
  /** An interrupt was applied: waits that may be given up (approvals, backoff) return at once. */
  interrupted = false;
  /** The foreground task this agent owes a hand-off was cancelled (a `cancel` for `task`). */
  cancelled = false;
  /** Steers applied after an interrupt: the interrupted turn is over for them, so they start one of their own. */
  private followUps: string[] = [];
  /** Results handed to the agent: those that the stored history holds are this turn's to record (`TAKEN`). */
  readonly taken: Offer[] = [];
  private notifyTarget: Notifiable | undefined;

  /**
   * `store`: keeps the armed doorbell in the agent object's state, where the control object reads it. `task`: the
   * awakeable of the foreground task whose hand-off this agent owes, if any (a `cancel` names it).
   */
  constructor(
    private readonly ctx: restate.ObjectContext,
    private readonly agentObjectName: string,
    private readonly store: (doorbell: Doorbell) => void,
    private readonly task?: string,
  ) {
    this.bell = this.arm();
  }

  attach(target: Controllable, notify?: Notifiable): void {
    this.target = target;
    this.notifyTarget = notify;
  }

  apply(message: ControlMessage): void {
    if (message.kind === 'notify') {
      // An interrupted turn takes no step any more: the result's own `notify` delivers it.
      if (!this.interrupted && this.notifyTarget?.(message.message, message.escalation)) this.taken.push(message);
      return;
    }
    if (message.kind === 'steer') {
      if (this.interrupted) this.followUps.push(message.text);
      else this.target?.steer(message.text);
      return;
    }
    if (message.kind === 'cancel') {
      if (message.task !== this.task) return; // a task that has handed off already
      this.cancelled = true;
    }
    if (this.interrupted) return;
    this.interrupted = true;
    this.target?.interrupt();
  }

  /**
   * Steers that came after an interrupt, for a turn of their own once the interrupted one has ended (an embedded
   * agent, idle after the interrupt, starts one for a steer); that turn's waits are not given up.
   */
  followUp(): string[] | undefined {
    if (this.followUps.length === 0) return undefined;
    this.interrupted = false;
    return this.followUps.splice(0);
  }

  /**
   * Waits for one of the turn's effects, taking and applying control messages whenever the doorbell rings
   * meanwhile. `abandon`, when given, is what the wait answers once the turn is interrupted (an approval or a timer
   * nobody needs any more; a call's run is always waited for, since its signal has been aborted and it ends soon).
   */
  async wait<T>(effect: restate.RestatePromise<T>, abandon?: () => T): Promise<T> {
    for (;;) {
      if (this.interrupted && abandon) return abandon();
      const outcome = await restate.RestatePromise.race([effect, this.bell.map(() => RUNG)]);
      if (outcome !== RUNG) return outcome as T;
      this.bell = this.arm();
      for (const message of await takeMessages(this.ctx, this.agentObjectName)) this.apply(message);
    }
  }

  /**
   * The turn is over, its doorbell cleared from the state already: whether a ring reached it before the clear (step
   * 4 above), so that the next turn takes what it brought. Later messages go to the `steered` fallback.
   */
  async heardAtEnd(): Promise<boolean> {
    try {
      return await restate.RestatePromise.race([this.bell.map(() => true), this.ctx.run('turn end', () => false)]);
    } catch (error) {
      // Restate cancelled the invocation after the turn's last effect: the turn is done all the same (it would have
      // heard no cancel without this wait), and whether a ring came is unknown, so the next turn takes.
      if (error instanceof restate.CancelledError) return true;
      throw error;
    }
  }

  private arm(): restate.RestatePromise<unknown> {
    const doorbell = this.ctx.awakeable<unknown>();
    this.store({ id: doorbell.id, turn: this.ctx.request().id });
    return doorbell.promise;
  }
}
