// A process that ends itself the moment a public promise of a session resolves (or an event reports a fact), to
// show that what it reported is in the store: `exit` is `process.exit(0)`, `kill` a SIGKILL of itself in the
// same tick. Run (bundled by the test): node acknowledged-child.mjs <jsonl|sqlite> <where> <id> <side> <mode> <exit|kill>
import { createAgent, createSupervisor } from '../../src/index.js';
import { agentConfig, openStore, type StoreKind } from './acknowledged-fixture.js';

const [kind, where, id, side, mode, ending] = process.argv.slice(2) as [
  StoreKind,
  string,
  string,
  string,
  string,
  'exit' | 'kill',
];

const session = openStore(kind, where).manager.create({ id, agentId: 'root' });
const config = agentConfig(side);

function end(): void {
  if (ending === 'kill') process.kill(process.pid, 'SIGKILL');
  process.exit(0);
}

switch (mode) {
  case 'prompt': {
    await createAgent({ ...config, session }).prompt('go');
    end();
    break;
  }
  case 'stream': {
    const turn = createAgent({ ...config, session }).stream('go');
    for await (const _event of turn) {
      // drained: the result settles with the turn's last event
    }
    await turn.result;
    end();
    break;
  }
  case 'turn_end': {
    const agent = createAgent({ ...config, session });
    agent.on('turn_end', () => end());
    void agent.prompt('go');
    break;
  }
  case 'idle': {
    void createAgent({ ...config, session }).prompt('go');
    await session.idle();
    end();
    break;
  }
  case 'idle_background': {
    // The root's first turn starts three subagents in the background and ends; their results wake it again.
    void createAgent({ ...config, session }).prompt('background');
    await session.idle();
    end();
    break;
  }
  case 'approve': {
    const agent = createAgent({ ...config, session });
    agent.on('approval_requested', (event) => {
      if (agent.approve(event)) end();
    });
    void agent.prompt('risky');
    break;
  }
  case 'tree_approve': {
    // A subagent's question, answered through the supervisor from the listener that hears it.
    const supervisor = createSupervisor({ ...config, session });
    supervisor.on('approval_requested', (event) => {
      supervisor.approve(event);
      end();
    });
    void supervisor.swarm(['risky']);
    break;
  }
  case 'swarm': {
    await createSupervisor({ ...config, session }).swarm(['one', 'two']);
    end();
    break;
  }
  case 'member': {
    await createSupervisor({ ...config, session })
      .agent({ id: 'member', tools: config.tools })
      .prompt('go');
    end();
    break;
  }
  case 'result': {
    const supervisor = createSupervisor({ ...config, session });
    const [taskId] = await supervisor.swarm(['one', 'two'], { background: true });
    await supervisor.result(taskId as string);
    end();
    break;
  }
  case 'notification': {
    const supervisor = createSupervisor({ ...config, session });
    supervisor.on('subagent_end', () => end());
    await supervisor.swarm(['one'], { background: true });
    break;
  }
  default:
    throw new Error(`unknown mode ${mode}`);
}
