// A process the SIGKILL fault-injection test kills while batches' restarts are pending: it runs batches `from` …
// `to` − 1 in turn, each a session of its own whose root swarms a random batch of the strategy fault generator
// (test/helpers/strategy-faults.ts), its failures injected by the scripted model. A batch whose root turn is
// journaled as ended is skipped, so a process started again after a kill goes on where the journals stand.
// Each task's model calls are counted in the side file across processes; every failed task turn is announced
// (`moment failed`) so that kills land in restart backoffs. In one batch of ten the process kills itself once
// where a task's own (nested) batch has just failed its leaf, or where the task's turn has just ended with its
// batch's escalation (noted in `<side>.selfkills` first): an escalation must reach the same ancestor after it.
// Run (bundled by the test): node strategy-faults-child.mjs <dir> <side> <from> <to> <seed>
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAgent, sessions } from '../../src/index.js';
import type { SupervisionStrategy } from '../../src/protocol/index.js';
import { describeTree } from '../../src/runtime/index.js';
import { decodeRecord } from '../../src/session/index.js';
import { answerFor, faultAgentConfig, ROOT_PROMPT, type StepOutcome } from '../helpers/strategy-faults.js';
import { faultBatch } from './strategy-faults-plan.js';

const [dir, side, from, to, seed] = process.argv.slice(2) as [string, string, string, string, string];
const STRATEGIES: SupervisionStrategy[] = ['oneForOne', 'oneForAll', 'restForOne'];

const manager = sessions({ dir, onWarning: () => {} });
const rootEnded = (id: string) =>
  existsSync(join(dir, `${id}.jsonl`)) &&
  readFileSync(join(dir, `${id}.jsonl`), 'utf8')
    .split('\n')
    .some((line) => {
      const record = decodeRecord(line);
      return record?.k === 'turn_end' && record.a === 'root';
    });
const selfKilled = () => (existsSync(`${side}.selfkills`) ? readFileSync(`${side}.selfkills`, 'utf8').split('\n') : []);
const SELF_KILLS: Record<number, string> = { 3: 'leaf-failed', 7: 'task-escalated' };
function die(k: number): void {
  appendFileSync(`${side}.selfkills`, `${k}\n`);
  process.kill(process.pid, 'SIGKILL');
}

for (let k = Number(from); k < Number(to); k++) {
  const id = `batch-${k}`;
  const { config, outcomes } = faultBatch(Number(seed) + k, STRATEGIES[k % 3] as SupervisionStrategy);
  const exists = manager.list().some((info) => info.id === id);
  const session = exists ? manager.open(id) : manager.create({ id, agentId: 'root' });
  if (rootEnded(id)) {
    session.close();
    continue;
  }
  // Task i's n-th model call (all runs and processes counted) answers with its n-th outcome, then completes.
  const callsOf = (index: number) =>
    existsSync(side)
      ? readFileSync(side, 'utf8')
          .split('\n')
          .filter((line) => line === `${k} ${index}`).length
      : 0;
  const answer = (index: number) => {
    const call = callsOf(index) + 1;
    appendFileSync(side, `${k} ${index}\n`);
    const outcome: StepOutcome = outcomes[index]?.[call - 1] ?? 'complete';
    return answerFor(index, call, outcome);
  };
  const agent = createAgent({ ...faultAgentConfig(config, (index) => answer(index)), session });
  const selfKill = selfKilled().includes(String(k)) ? undefined : SELF_KILLS[k % 10];
  agent.on(
    'turn_end',
    (event) => {
      if (event.agentId !== agent.id && event.stopReason !== 'completed') process.stdout.write('moment failed\n');
      if (selfKill === 'task-escalated' && event.error?.code === 'escalated' && event.agentId !== agent.id) die(k);
    },
    { subtree: true },
  );
  agent.on(
    'subagent_end',
    (event) => {
      if (selfKill === 'leaf-failed' && event.status === 'failed' && event.agentId !== agent.id) die(k);
    },
    { subtree: true },
  );
  // A batch that waits on nothing left to run ends the process with 13 (an unsettled top-level await), its 'exit'
  // event saying 0: the process leaving before the batch went idle says where it stood.
  const stuck = () =>
    process.stderr.write(`batch ${k} never went idle: ${JSON.stringify(describeTree(agent.actor, agent.id))}\n`);
  process.once('exit', stuck);
  if (session.journal.inputs.size === 0) void agent.prompt(ROOT_PROMPT);
  await session.idle();
  process.off('exit', stuck);
  session.close();
  await agent.stop();
  process.stdout.write(`batch ${k}\n`);
}
process.stdout.write('done\n');
