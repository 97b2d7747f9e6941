import type { AnyActorRef } from 'xstate';
import type { AgentMachineEvent, WorkerRequest } from '../../../machines/agent/index.js';
import type { AgentEnv } from '../env/env.js';
import { requestModel } from './model-worker.js';
import { ToolResultOutbox } from './tool-result-outbox.js';
import { requestTools } from './tool-worker.js';

/**
 * The inbox's observer hears an agent's failure too: it leaves it to whoever handles it (the agent's parent, or the
 * Agent handle), where an observer without an error listener would make XState report it as unhandled.
 */
const leftToOthers = (): void => {};

/**
 * The agent's worker (worker.ts): takes the requests its chart's actions make and answers by sending the agent its
 * replies; the model's go to model-worker.ts, the tools' to tool-worker.ts. One per agent, made at its first request.
 *
 * A request action runs inside the macrostep that makes it, before the snapshot that macrostep makes is current:
 * the request is held until the agent's observers hear that snapshot, so that the model, the tools and every
 * listener of what they publish find the agent where the request put it (as a message to a child actor would).
 * Its methods are bound once rather than closures, whose optimised code V8 drops at a collection that finds none
 * of them alive.
 */
export class WorkerInbox {
  /** The agent's actor: where replies go, and whose snapshots release held requests. */
  private agent?: AnyActorRef;
  private held: WorkerRequest[] = [];
  private readonly sendBack = this.reply.bind(this);
  private readonly flushNow = this.flush.bind(this);
  private readonly outbox: ToolResultOutbox;

  constructor(private readonly env: AgentEnv) {
    this.outbox = new ToolResultOutbox(env, this.sendBack);
  }

  /** A request made by an action of `agent`'s macrostep in progress: taken once that macrostep's snapshot is current. */
  request(request: WorkerRequest, agent: AnyActorRef): void {
    this.follow(agent);
    this.held.push(request);
  }

  /** Takes a request at once: the agent's snapshot is current (a restored agent asks again outside a macrostep). */
  take(request: WorkerRequest, agent: AnyActorRef): void {
    this.follow(agent);
    this.handle(request);
  }

  /** The agent's actor, observed from its first request on; a restored session makes a new one for the same agent. */
  private follow(agent: AnyActorRef): void {
    if (agent === this.agent) return;
    this.agent = agent;
    agent.subscribe({ next: this.flushNow, error: leftToOthers });
  }

  private handle(request: WorkerRequest): void {
    if (request.type === 'MODEL_REQUEST') requestModel(this.env, request, this.sendBack, this.outbox);
    else requestTools(this.env, request, this.outbox);
  }

  private flush(): void {
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    try {
      for (const request of held) this.handle(request);
    } catch (error) {
      // A bug of our own (the workers turn every failure they expect into a reply): the agent fails as it would for
      // a child actor that threw, with XState's error event for it, which its chart does not take.
      this.agent?.send({ type: 'xstate.error.actor.worker', error } as unknown as AgentMachineEvent);
    }
  }

  /** A reply for the agent: dropped once it has stopped (its actor would take no more events). */
  private reply(reply: AgentMachineEvent): void {
    if (!this.env.stopped) this.agent?.send(reply);
  }
}
