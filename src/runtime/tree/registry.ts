import type { AnyActorRef } from 'xstate';
import type { Message } from '../../protocol/index.js';
import type { EventBus } from '../env/bus.js';
import type { AgentEnv, AgentSettings } from '../env/env.js';
import { type AnyActorSystem, registerEnv, unregisterEnv } from '../env/registry.js';
import { ApprovalRouting, type ApprovalTarget } from './approval-routing.js';
import { type Owner, TreeNode } from './nodes.js';

/** A member's config (`supervisor.agent()`) until its supervisor spawns it. */
export interface PendingMember {
  settings: AgentSettings;
  messages?: readonly Message[];
}

/**
 * Who exists in one tree: its agents and owners, the parent links between agents, the members about to be spawned,
 * and the actor system where each agent's runtime is found. An agent stays registered from its build until its
 * release has finished (`node` hides one already released); approvals are routed to agents by id from here.
 */
export class TreeRegistry {
  private readonly nodes = new Map<string, TreeNode>();
  private readonly owners = new Map<string, Owner>();
  private readonly pendingMembers = new Map<string, PendingMember>();
  private readonly approvals: ApprovalRouting;
  private rootOwnerId?: string;
  private system?: AnyActorSystem;

  constructor(bus: EventBus) {
    this.approvals = new ApprovalRouting(bus);
  }

  /** The actor system the tree's agents run in; nothing is built before it is known. */
  attach(system: AnyActorSystem): void {
    this.system = system;
  }

  get attached(): boolean {
    return this.system !== undefined;
  }

  /** A live agent of the tree (running, kept alive or a member), not yet released. */
  node(agentId: string): TreeNode | undefined {
    const node = this.nodes.get(agentId);
    return node?.released ? undefined : node;
  }

  /** An agent still registered, released or not (a release finishes after its stop has run). */
  registered(agentId: string): TreeNode | undefined {
    return this.nodes.get(agentId);
  }

  owner(id: string): Owner | undefined {
    return this.owners.get(id);
  }

  /** The owner of a `createSupervisor()` tree's top-level tasks and members. */
  get rootOwner(): Owner | undefined {
    return this.rootOwnerId === undefined ? undefined : this.owners.get(this.rootOwnerId);
  }

  setRootOwner(owner: Owner): void {
    this.rootOwnerId = owner.id;
    this.owners.set(owner.id, owner);
  }

  /** A root agent (`createAgent` with subagents): depth 0, its own actor, its runtime registered by itself. */
  addRoot(env: AgentEnv, actor: AnyActorRef): TreeNode {
    const node = new TreeNode(env, 0, 'root', undefined, { ref: actor });
    this.add(node);
    return node;
  }

  /** Registers a member (`supervisor.agent()`) that the root supervisor is about to adopt. */
  addMember(agentId: string, settings: AgentSettings, messages: readonly Message[] | undefined): void {
    if (this.nodes.has(agentId)) throw new Error(`An agent with id "${agentId}" already exists in this tree`);
    this.pendingMembers.set(agentId, { settings, ...(messages ? { messages } : {}) });
  }

  /** The config of a member about to be spawned, once. */
  takeMember(agentId: string): PendingMember | undefined {
    const pending = this.pendingMembers.get(agentId);
    this.pendingMembers.delete(agentId);
    return pending;
  }

  /** A child built by the tree: its runtime is found through the actor system from now on. */
  register(node: TreeNode): void {
    if (this.system) registerEnv(this.system, node.env);
    this.add(node);
  }

  /** A released agent leaves the tree; its runtime is no longer found. */
  unregister(node: TreeNode): void {
    node.env.stop();
    if (this.system) unregisterEnv(this.system, node.id);
    this.nodes.delete(node.id);
    this.owners.delete(node.id);
    this.parentOf(node)?.children?.delete(node.id);
  }

  parentOf(node: TreeNode): TreeNode | undefined {
    const parentId = node.env.parentId;
    return parentId === undefined ? undefined : this.nodes.get(parentId);
  }

  /** A snapshot of every registered agent (a release changes the registry while it is walked). */
  all(): TreeNode[] {
    return [...this.nodes.values()];
  }

  /** Every agent's runtime is stopped and unregistered (the tree shuts down). */
  clear(): void {
    for (const node of this.nodes.values()) {
      node.env.stop();
      if (this.system) unregisterEnv(this.system, node.id);
    }
    this.nodes.clear();
  }

  /** The agent whose tool call waits for this answer, for routing approve / deny. */
  route(target: ApprovalTarget): AnyActorRef | undefined {
    return this.nodes.get(this.approvals.take(target))?.ref;
  }

  findAwaiting(toolCallId: string): AnyActorRef | undefined {
    const agentId = this.approvals.takeById(toolCallId);
    return agentId === undefined ? undefined : this.nodes.get(agentId)?.ref;
  }

  private add(node: TreeNode): void {
    this.nodes.set(node.id, node);
    this.owners.set(node.id, node);
    const parent = this.parentOf(node);
    if (parent) {
      parent.children ??= new Set();
      parent.children.add(node.id);
    }
  }
}
