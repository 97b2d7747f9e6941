/**
 * `npm run bench:restate -- --background`: what one background subagent costs on Restate, counted (not timed). A
 * root starts N subagents in the background in one step (N `agent` calls with `background: true`, or one `swarm`
 * of N with `background: true`); each child answers in one step, and its result wakes the root for a notification
 * turn. Once every invocation the tree caused is over, the server's own tables (`sys_invocation`, `sys_journal`) are
 * read by object: invocations and journal entries per subagent.
 */
import { createServer, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as restate from '@restatedev/restate-sdk';
import { type ModelRequest, type ScriptedAnswer, scriptedModel } from '../src/index.js';
import type { RestateDevServer } from '../src/restate/dev-server.js';
import { agentClient, agentObject } from '../src/restate/index.js';
import { adminQuery } from './restate-admin.js';
import { check } from './workload.js';

const NAME = 'bg';
/** The objects a hosted tree uses: the agents, their control objects, task books, slot counters and batches. */
const FAMILY = ['', '-control', '-tasks', '-slots', '-batches'].map((suffix) => `${NAME}${suffix}`);

const textOf = (request: ModelRequest) => {
  const last = request.messages.at(-1);
  return last?.role === 'user' ? last.content.map((part) => ('text' in part ? part.text : '')).join('') : '';
};

/** The root's script: `<how> <n>` starts n children in one step, then every notification is answered `noted`. */
function rootAnswer(request: ModelRequest): ScriptedAnswer {
  const text = textOf(request);
  if (text.startsWith('<notification')) return { text: 'noted' };
  if (request.messages.some((message) => message.role === 'tool')) return { text: 'started' };
  const [how, count] = text.split(' ');
  const prompts = Array.from({ length: Number(count) }, (_, i) => `part ${i}`);
  if (how === 'swarm') {
    const args = { tasks: prompts.map((prompt) => ({ prompt })), background: true };
    return { toolCalls: [{ name: 'swarm', args, id: 'sw' }] };
  }
  return {
    toolCalls: prompts.map((prompt, i) => ({ name: 'agent', args: { prompt, background: true }, id: `a${i}` })),
  };
}

/** Invocations and journal entries of the tree under `root`, by object, once none of them is left running. */
async function costOf(server: RestateDevServer, root: string, notifications: number) {
  const family = FAMILY.map((name) => `'${name}'`).join(', ');
  const of = `FROM sys_invocation WHERE target_service_name IN (${family}) AND target_service_key LIKE '${root}%'`;
  for (let i = 0; ; i++) {
    const [open] = await adminQuery<{ n: number }>(server, `SELECT count(*) AS n ${of} AND status != 'completed'`);
    const [told] = await adminQuery<{ n: number }>(
      server,
      `SELECT count(*) AS n ${of} AND target_service_name = '${NAME}' AND target_handler_name = 'notify' ` +
        `AND target_service_key = '${root}' AND status = 'completed'`,
    );
    if (open?.n === 0 && told?.n === notifications) break;
    check(i < 600, `the tree under ${root} did not settle: ${open?.n} open, ${told?.n} notifications`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const rows = await adminQuery<{ service: string; handler: string; invocations: number }>(
    server,
    `SELECT target_service_name AS service, target_handler_name AS handler, count(*) AS invocations ${of} ` +
      'GROUP BY 1, 2 ORDER BY 1, 2',
  );
  const entries = await adminQuery<{ service: string; handler: string; n: number }>(
    server,
    'SELECT i.target_service_name AS service, i.target_handler_name AS handler, count(*) AS n FROM sys_journal j ' +
      `JOIN sys_invocation i ON j.id = i.id WHERE i.target_service_name IN (${family}) ` +
      `AND i.target_service_key LIKE '${root}%' GROUP BY 1, 2`,
  );
  return rows.map((row) => ({
    ...row,
    entries: entries.find((entry) => entry.service === row.service && entry.handler === row.handler)?.n ?? 0,
  }));
}

export async function backgroundCosts(server: RestateDevServer, children: number, smoke: boolean): Promise<string[]> {
  const child = scriptedModel((request) => ({ text: `did ${textOf(request)}` }), { record: false });
  const root = scriptedModel(rootAnswer, { record: false });
  const object = agentObject({
    name: NAME,
    subagents: true,
    supervision: { concurrency: children },
    agent: (agentId) => ({ model: agentId.includes('/') ? child : root }),
  });
  const endpoint = createServer(
    restate.createEndpointHandler({
      services: [object, object.control, object.tasks, object.slots, object.batches],
      logger: (meta, message, ...rest) => {
        if (meta.level === 'warn' || meta.level === 'error') console.error(`[restate ${meta.level}]`, message, ...rest);
      },
    }),
  );
  const sessions = new Set<ServerHttp2Session>();
  endpoint.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  try {
    await server.register(`http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`);
    const client = agentClient(server.ingressUrl, NAME);
    const out = [
      `## Background subagents on Restate (${new Date().toISOString()})`,
      '',
      `A root starts ${children} background subagents in one step; each answers in one step and its result wakes ` +
        'the root. Counted from sys_invocation and sys_journal once the tree is idle, per subagent:',
      '',
      '| started by | invocations | journal entries | by object.handler (invocations / entries, per subagent) |',
      '| --- | ---: | ---: | --- |',
    ];
    for (const how of smoke ? ['agent'] : ['agent', 'swarm']) {
      const rootId = `${how}-root`;
      const outcome = await client.prompt(rootId, `${how} ${children}`);
      // A result that comes while the root's turn runs joins its next step: then it answers `noted`.
      check(['started', 'noted'].includes(outcome.text), `the ${how} root answered ${JSON.stringify(outcome.text)}`);
      const rows = await costOf(server, rootId, children);
      const sum = (of: 'invocations' | 'entries') => rows.reduce((total, row) => total + row[of], 0) / children;
      const by = rows
        .map(
          (row) => `${row.service}.${row.handler} ${fmt(row.invocations / children)} / ${fmt(row.entries / children)}`,
        )
        .join(', ');
      out.push(`| ${how} (background) | ${fmt(sum('invocations'))} | ${fmt(sum('entries'))} | ${by} |`);
    }
    return out;
  } finally {
    for (const session of sessions) session.destroy();
    await new Promise((resolve) => endpoint.close(resolve));
  }
}

const fmt = (value: number) => (value >= 10 ? value.toFixed(1) : value.toFixed(2));
