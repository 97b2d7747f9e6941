/**
 * One wait for a turn on both runtimes: the same prompt to the same agent, embedded in this process and hosted on a
 * real restate-server, waited for through each one's target by the same loop, questions and view. What each shows
 * is the same, line for line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hostedTarget } from '../../src/cli/restate-target.js';
import { embeddedTarget } from '../../src/cli/run.js';
import { type PendingCall, type Target, waitForTurn } from '../../src/cli/target.js';
import { OutcomeView, type TurnEnd } from '../../src/cli/views.js';
import { createAgent, defineTool, type ModelRequest, scriptedModel, textOf } from '../../src/index.js';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentWorker, agentClient, agentObject, serveAgents } from '../../src/restate/index.js';
import { FakeTerminalInput, harness } from './harness.js';

const deploy = defineTool({
  name: 'deploy',
  description: 'Deploys',
  schema: z.object({ target: z.string() }),
  execute: ({ target }) => `deployed ${target}`,
});

/** Asks to deploy its prompt, then says what the deploy answered; decided from the request alone. */
const config = () => ({
  model: scriptedModel((request: ModelRequest) => {
    const last = request.messages.at(-1);
    const usage = { input: 10, output: 5 };
    if (last?.role === 'tool') return { text: `deploy said: ${textOf(last)}`, usage };
    return { toolCalls: [{ name: 'deploy', args: { target: textOf(last) }, id: 'd0' }], usage };
  }),
  tools: [deploy],
  policy: (call: { name: string }) => (call.name === 'deploy' ? 'ask' : 'allow'),
});

let server: RestateDevServer;
let worker: AgentWorker;
beforeAll(async () => {
  server = await startRestateDevServer();
  worker = await serveAgents([agentObject({ agent: () => config() })]);
  await server.register(worker.url);
}, 90_000);

afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

/** A turn and the target that drives it. */
type Started = { target: Target; turn: Promise<TurnEnd> };

async function embedded(agentId: string, prompt: string): Promise<Started> {
  const agent = createAgent({ id: agentId, ...config() });
  const turn = agent.prompt(prompt).then((result) => ({ agentId, ...result }));
  return { target: embeddedTarget(agent, new Map([['deploy', deploy]]), () => {}), turn };
}

async function hosted(agentId: string, prompt: string): Promise<Started> {
  const client = agentClient(server.ingressUrl);
  const invocationId = await client.send(agentId, prompt);
  const restate = { ingress: server.ingressUrl, name: 'troupe-agent', again: '' };
  const target = hostedTarget(restate, client, agentId, invocationId);
  return { target, turn: client.result(invocationId) };
}

/**
 * `prompt` sent to `agentId` on a runtime and waited for with --json: the question is answered through the
 * target, as another command or the inspector's page would answer it. What the wait printed.
 */
async function promptOn(runtime: 'embedded' | 'hosted', agentId: string, prompt: string): Promise<string[]> {
  const h = harness(process.cwd(), { tty: true, stdin: new FakeTerminalInput() });
  const { target, turn } = runtime === 'embedded' ? await embedded(agentId, prompt) : await hosted(agentId, prompt);
  const view = new OutcomeView(h.io.stdout, h.io.stderr, true);
  const asked = new Promise<PendingCall>((resolve) => {
    const write = h.io.stdout.write;
    h.io.stdout.write = (text) => {
      write(text);
      const line = JSON.parse(text) as PendingCall & { type: string };
      if (line.type === 'question') resolve(line);
    };
  });
  const waiting = waitForTurn(target, turn, { io: h.io, view, json: true });
  await target.answer(await asked, 'yes');
  const ended = await waiting;
  if (ended === 'left') throw new Error('left');
  view.finish(ended);
  expect(h.err).toEqual([]);
  return h.out().trimEnd().split('\n');
}

describe('a turn waited for on either runtime', () => {
  it('shows the same question and the same outcome, embedded and hosted', async () => {
    const both = [await promptOn('embedded', 'approver-1', 'prod'), await promptOn('hosted', 'approver-1', 'prod')];
    const [here, there] = both.map((lines) => lines.map((line) => JSON.parse(line) as unknown));
    expect(here).toEqual([
      {
        type: 'question',
        agentId: 'approver-1',
        toolCallId: 'd0',
        toolName: 'deploy',
        args: { target: 'prod' },
        text: 'approver-1 wants to run deploy {"target":"prod"}',
      },
      {
        type: 'result',
        agentId: 'approver-1',
        stopReason: 'completed',
        text: 'deploy said: deployed prod',
        usage: { input: 20, output: 10, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      },
    ]);
    expect(there).toEqual(here);
  }, 120_000);
});
