// A specimen of each object the supervision tree makes per tree or per task, kept with keepShape (see
// src/protocol/shapes.ts) once the process makes its first agent (specimensToTake): a swarm's tree dies with its
// supervisor, so without them every collection between two swarms drops the optimised code of the registry, the task
// book and the tree's effects, and the next swarm warms it up again.
import { createActor, fromCallback } from 'xstate';
import { keepShape, specimensToTake } from '../../protocol/shapes.js';
import { EventBus } from '../env/bus.js';
import type { AgentEnv } from '../env/env.js';
import { RootOwner, SpawnedAgent, TreeNode } from './nodes.js';
import type { TaskRecord } from './tasks.js';
import { Tree } from './tree.js';

specimensToTake(() => {
  const tree = new Tree(new EventBus(), {});
  const actor = createActor(fromCallback(() => {}));
  const spawned = new SpawnedAgent(actor, 'specimen');
  const env = { agentId: 'specimen', parentId: 'specimen', settings: {} } as AgentEnv;
  // A task's record through its life, as the tree changes it: planned, started (prepareTask), settled, retired.
  const record: TaskRecord = {
    taskId: 'specimen',
    agentId: 'specimen',
    ownerId: 'specimen',
    batchId: 'specimen',
    index: 0,
    background: false,
    profile: 'default',
    status: 'running',
    attempt: 0,
  };
  void tree.book.tasks.openBatch('specimen', [record]);
  record.actor = actor;
  record.history = undefined;
  tree.book.tasks.settle(record, { taskId: 'specimen', agentId: 'specimen', status: 'completed', text: '' });
  keepShape(tree);
  keepShape(new TreeNode(env, 1, 'default', actor, spawned));
  keepShape(new RootOwner('specimen', env.settings, actor));
});
