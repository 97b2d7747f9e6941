import type { AnyActorRef } from 'xstate';
import type { AgentActorRef } from '../../../machines/agent/index.js';
import { childId } from '../../../machines/supervisor/index.js';
import {
  emptyUsage,
  type SerializedError,
  type SupervisorCommand,
  type TurnStopReason,
  type Usage,
} from '../../protocol/index.js';
import type { EventOrigin } from '../env/bus.js';
import type { AgentEnv, AgentHandle, AgentSettings } from '../env/env.js';
import type { TaskRecord } from './tasks.js';

/** Whoever starts subagents: an agent, or a root supervisor. */
export interface Owner {
  readonly id: string;
  readonly depth: number;
  /** What children inherit. */
  readonly settings: AgentSettings;
  readonly origin: EventOrigin;
  /** Background tasks started and not yet delivered. */
  openBackground: number;
  /** Sends a command to its supervisor (an agent's is created by the first one). */
  delegate(command: SupervisorCommand): void;
}

/** One agent of the tree. */
export class TreeNode implements Owner {
  openBackground = 0;
  /** Live child agents, made with the first one (most agents never have any). */
  children?: Set<string>;
  readonly subtreeUsage: Usage = emptyUsage();
  /** The task it is running, until settled. */
  task?: TaskRecord;
  lastStop?: { stopReason: TurnStopReason | undefined; error: SerializedError | undefined };
  lastOutput?: unknown;
  released = false;
  /** Its supervisor exists (it was sent a command). */
  private supervising = false;

  constructor(
    readonly env: AgentEnv,
    readonly depth: number,
    readonly profile: string,
    /** The actor it lives under (its task actor, or the root supervisor for a member); undefined for a root agent. */
    readonly parent: AnyActorRef | undefined,
    /** Its actor: given for a root agent; for a spawned one, the handle its runtime finds it by (one look-up for both). */
    private readonly actor: { readonly ref: AnyActorRef | undefined },
  ) {}

  get id(): string {
    return this.env.agentId;
  }
  get settings(): AgentSettings {
    return this.env.settings;
  }
  get origin(): EventOrigin {
    return this.env;
  }

  get ref(): AnyActorRef | undefined {
    return this.actor.ref;
  }

  delegate(command: SupervisorCommand): void {
    const ref = this.ref;
    if (!ref) throw new Error(`Agent ${this.id} is not running`);
    // A stopped agent's subagents were stopped with it: there is nobody left to command.
    if (ref.getSnapshot().status !== 'active') return;
    this.supervising = true;
    ref.send({ type: 'DELEGATE', command });
  }

  /** Stops its supervisor, if it has one: running subagents are interrupted and their tasks settled. */
  stopSubagents(): void {
    if (!this.supervising) return;
    this.supervising = false;
    const ref = this.ref;
    if (ref?.getSnapshot().status === 'active') ref.send({ type: 'DELEGATE', command: { type: 'STOP' } });
  }
}

/**
 * The actor of an agent spawned under `parent` (its task actor, or the root supervisor for a member), once it runs:
 * found among its parent's children at the first ask after its spawn, then kept.
 */
export class SpawnedAgent implements AgentHandle {
  private found?: AgentActorRef;

  constructor(
    private readonly parent: AnyActorRef,
    private readonly agentId: string,
  ) {}

  get ref(): AgentActorRef | undefined {
    this.found ??= this.parent.getSnapshot().children[childId(this.agentId)] as AgentActorRef | undefined;
    return this.found;
  }
}

/** The root of a `createSupervisor()` tree, as an owner of top-level tasks and agents. */
export class RootOwner implements Owner {
  readonly depth = -1;
  openBackground = 0;

  constructor(
    readonly id: string,
    readonly settings: AgentSettings,
    private readonly supervisor: AnyActorRef,
  ) {}

  get origin(): EventOrigin {
    return { agentId: this.id, turn: 0, step: 0 };
  }

  delegate(command: SupervisorCommand): void {
    if (this.supervisor.getSnapshot().status !== 'active') throw new Error('The supervisor is stopped');
    this.supervisor.send(command);
  }
}
