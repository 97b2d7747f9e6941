import { addUsage, emptyUsage, type Usage } from '../../protocol/index.js';
import type { EventBus } from '../env/bus.js';
import type { TreeRegistry } from './registry.js';

/** Token accounts of a tree: the whole tree's, and each live agent's subtree (stopped descendants included). */
export class TreeUsage {
  readonly total: Usage = emptyUsage();

  constructor(bus: EventBus, nodes: TreeRegistry) {
    bus.countUsage = (agentId, usage) => {
      addUsage(this.total, usage);
      // The agent and its live ancestors, walked in place: this runs once per model answer of every agent.
      for (let node = nodes.registered(agentId); node; node = nodes.parentOf(node)) addUsage(node.subtreeUsage, usage);
    };
  }
}
