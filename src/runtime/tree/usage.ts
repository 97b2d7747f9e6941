import { addUsage, emptyUsage, type Usage } from '../../protocol/index.js';
import type { EventBus } from '../env/bus.js';
import type { TreeRegistry } from './registry.js';

/** Token accounts of a tree: the whole tree's, and each live agent's subtree (stopped descendants included). */
export class TreeUsage {
  readonly total: Usage = emptyUsage();

  constructor(bus: EventBus, nodes: TreeRegistry) {
    bus.countUsage = (agentId, usage) => {
      addUsage(this.total, usage);
      for (const node of nodes.lineage(agentId)) addUsage(node.subtreeUsage, usage);
    };
  }
}
