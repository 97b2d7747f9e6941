import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RestateDevServer, startRestateDevServer } from '../../src/restate/dev-server.js';
import { type AgentWorker, agentClient, serveAgents } from '../../src/restate/index.js';
import { conformanceObjects, objectName } from '../conformance/objects.js';
import { until } from '../helpers/until.js';
import { sql } from './fixtures/journal.js';

// What a hosted tree stores stays bounded by what it may still resume: a child beyond its parent's `keepFinished` +
// `keepHistory` windows has its object's state cleared (the conformance suite shows that its resume is refused).

let server: RestateDevServer;
let worker: AgentWorker;
beforeAll(async () => {
  server = await startRestateDevServer();
  worker = await serveAgents(conformanceObjects());
  await server.register(worker.url);
}, 90_000);
afterAll(async () => {
  await worker?.close();
  await server?.stop();
});

const NAME = objectName('keep2');
const stateKeys = async (key: string) =>
  (
    await sql<{ key: string }>(
      server.adminUrl,
      `SELECT key FROM state WHERE service_name = '${NAME}' AND service_key = '${key}' ORDER BY key`,
    )
  ).map((row) => row.key);

it("a finished child beyond its parent's windows is forgotten: its object keeps no state", async () => {
  // keep2: one kept alive, two archived; four finish, then the first is asked for and the second resumed.
  const client = agentClient(server.ingressUrl, NAME);
  expect((await client.prompt('keep2-forget', '#keepresume')).text).toBe('kept');
  expect(
    await until(
      () => stateKeys('keep2-forget/t0.k0'),
      (keys) => keys.length === 0,
    ),
  ).toEqual([]);
  // The ones still kept keep their histories.
  for (const child of ['keep2-forget/t0.k1', 'keep2-forget/t0.k2', 'keep2-forget/t0.k3']) {
    expect(await client.history(child), child).not.toEqual([]);
  }
}, 60_000);
