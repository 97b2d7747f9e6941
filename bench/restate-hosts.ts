/**
 * `npm run bench:restate -- --hosts`: how to host an agent on Restate, measured. The same small workload (turns of
 * `steps` steps: a model call, then a tool call, until a final answer; scripted, no latency) on
 *  - Troupe's host (`troupe/restate`): the unchanged agent machine and runtime inside one exclusive handler per turn,
 *    model and tool calls as journaled side effects;
 *  - `@restatedev/xstate` 0.5.2: a machine with the same loop (a `model` and a `tool` state, each invoking a
 *    promise actor whose body is one `ctx.run`), hosted as its virtual object: every event an exclusive invocation
 *    that loads, transitions and stores the snapshot, every promise actor an `invokePromise` invocation and a `send`
 *    back.
 * And Troupe's own agent machine given to `@restatedev/xstate`, to show where it stops.
 *
 * Both hosts are served by this process (one endpoint), so they share the same worker and server.
 */
import { createServer, type ServerHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as restate from '@restatedev/restate-sdk';
import { xstate } from '@restatedev/xstate';
import { fromPromise } from '@restatedev/xstate/promise';
import { assign, setup } from 'xstate';
import { z } from 'zod';
import { defineTool, scriptedModel } from '../src/index.js';
import type { RestateDevServer } from '../src/restate/dev-server.js';
import { agentClient, agentObject } from '../src/restate/index.js';
import { runtimeAgentMachine } from '../src/runtime/agent/wiring.js';
import { median } from './measure.js';
import { adminQuery } from './restate-admin.js';
import { check, pool } from './workload.js';

interface LoopInput {
  steps: number;
}

/** The agent loop as a plain machine for `@restatedev/xstate`: model → tool → model … → done. */
function loopMachine(steps: number) {
  return setup({
    types: { context: {} as { step: number; steps: number; text: string }, input: {} as LoopInput },
    actors: {
      model: fromPromise<{ tool: boolean; text: string }, { step: number; steps: number }>(async ({ input, ctx }) =>
        ctx.run(`model ${input.step}`, () => ({ tool: input.step + 1 < input.steps, text: 'done' })),
      ),
      tool: fromPromise<string, { step: number }>(async ({ input, ctx }) =>
        ctx.run(`tool ${input.step}`, () => `step ${input.step}`),
      ),
    },
  }).createMachine({
    id: `loop${steps}`,
    context: ({ input }) => ({ step: 0, steps: input?.steps ?? steps, text: '' }),
    initial: 'model',
    states: {
      model: {
        invoke: {
          src: 'model',
          input: ({ context }) => ({ step: context.step, steps: context.steps }),
          onDone: [
            { guard: ({ event }) => event.output.tool, target: 'tool' },
            { target: 'done', actions: assign({ text: ({ event }) => event.output.text }) },
          ],
        },
      },
      tool: {
        invoke: {
          src: 'tool',
          input: ({ context }) => ({ step: context.step }),
          onDone: { target: 'model', actions: assign({ step: ({ context }) => context.step + 1 }) },
        },
      },
      done: { type: 'final' },
    },
  });
}

const echo = defineTool({
  name: 'echo',
  description: 'Returns its text.',
  schema: z.object({ text: z.string() }),
  execute: ({ text }) => text,
});

/** Invocations and journal entries of one object's keys that start with `prefix`. */
async function costOf(server: RestateDevServer, object: string, prefix: string) {
  const of = `FROM sys_invocation WHERE target_service_name = '${object}' AND target_service_key LIKE '${prefix}%'`;
  const [invocations] = await adminQuery<{ n: number }>(server, `SELECT count(*) AS n ${of}`);
  const [entries] = await adminQuery<{ n: number }>(
    server,
    `SELECT count(*) AS n FROM sys_journal WHERE id IN (SELECT id ${of})`,
  );
  const [state] = await adminQuery<{ n: number }>(
    server,
    `SELECT count(*) AS n FROM sys_journal WHERE entry_type = 'Command: SetState' AND id IN (SELECT id ${of})`,
  );
  return { invocations: invocations?.n ?? 0, entries: entries?.n ?? 0, stateWrites: state?.n ?? 0 };
}

export async function compareHosts(
  server: RestateDevServer,
  options: { steps: number; turns: number; concurrency: number; rounds: number },
): Promise<string[]> {
  const { steps, turns, concurrency, rounds } = options;
  const model = scriptedModel((request) => {
    const done = request.messages.filter((message) => message.role === 'tool').length;
    return done + 1 < steps ? { toolCalls: [{ name: 'echo', args: { text: `step ${done}` } }] } : { text: 'done' };
  });
  const troupe = agentObject({ name: 'hostTroupe', agent: () => ({ model, tools: [echo] }) });
  const onXState = xstate('hostXState', loopMachine(steps));
  const ourMachine = xstate('hostTroupeMachine', runtimeAgentMachine);
  // @restatedev/xstate logs every relayed event at info: only warnings and errors are shown.
  const logger: restate.LoggerTransport = (meta, message, ...rest) => {
    if (meta.level === 'warn' || meta.level === 'error') console.error(`[restate ${meta.level}]`, message, ...rest);
  };
  const endpoint = createServer(
    restate.createEndpointHandler({ services: [troupe, troupe.control, onXState, ourMachine], logger }),
  );
  // Restate keeps its HTTP/2 sessions open: closing the endpoint must drop them, not wait for them.
  const sessions = new Set<ServerHttp2Session>();
  endpoint.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
  try {
    await server.register(url);
    const client = agentClient(server.ingressUrl, 'hostTroupe');
    const post = async (path: string, body: unknown, signal?: AbortSignal) => {
      const response = await fetch(`${server.ingressUrl}/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      });
      const text = await response.text();
      return { ok: response.ok, status: response.status, text };
    };
    const onTroupe = async (key: string) => {
      const outcome = await client.prompt(key, 'go');
      check(outcome.text === 'done', `Troupe's host: turn ${key} ended with ${outcome.stopReason}`);
    };
    const onRestateXState = async (key: string) => {
      const created = await post(`hostXState/${key}/create`, { input: { steps } });
      check(created.ok, `@restatedev/xstate create: ${created.status} ${created.text}`);
      const done = await post(`hostXState/${key}/waitFor`, { condition: 'done', timeout: 120_000 });
      check(done.ok && JSON.parse(done.text).context.text === 'done', `@restatedev/xstate: ${done.text}`);
    };
    const hosts = [
      { label: "Troupe's host (troupe/restate)", object: 'hostTroupe', turn: onTroupe },
      { label: '@restatedev/xstate 0.5.2', object: 'hostXState', turn: onRestateXState },
    ];
    const times = new Map<string, number[]>();
    for (const host of hosts) await pool(Math.min(turns, concurrency), concurrency, (n) => host.turn(`warm.${n}`));
    for (let round = 1; round <= rounds; round++) {
      for (const host of hosts) {
        const start = performance.now();
        await pool(turns, concurrency, (n) => host.turn(`r${round}.${n}`));
        const ms = performance.now() - start;
        process.stderr.write(`hosts round ${round}/${rounds} ${host.label}: ${ms.toFixed(0)} ms\n`);
        times.set(host.label, [...(times.get(host.label) ?? []), ms]);
      }
    }
    const ours = median(times.get(hosts[0]?.label ?? '') ?? []);
    const out = [
      `## Hosting an agent on Restate (${new Date().toISOString()}, ${rounds} round${rounds > 1 ? 's' : ''})`,
      '',
      `${turns} turns of ${steps} steps (${steps - 1} tool calls), ${concurrency} at a time, scripted, no latency.`,
      '',
      "| host | wall ms (median) | × Troupe's host | invocations per turn | journal entries per step | state writes per step |",
      '| --- | ---: | ---: | ---: | ---: | ---: |',
    ];
    for (const host of hosts) {
      const ms = median(times.get(host.label) ?? []);
      const cost = await costOf(server, host.object, 'r1.');
      out.push(
        `| ${host.label} | ${ms.toFixed(0)} | ${(ms / ours).toFixed(2)}× | ${(cost.invocations / turns).toFixed(1)} | ` +
          `${(cost.entries / turns / steps).toFixed(1)} | ${(cost.stateWrites / turns / steps).toFixed(1)} |`,
      );
    }
    // Troupe's agent machine on @restatedev/xstate: what it answers to a prompt (a handler that throws is retried
    // by Restate for ever, so the probe gives up after a while and says so).
    const probe = async (path: string, body: unknown) => {
      try {
        const answer = await post(path, body, AbortSignal.timeout(15_000));
        if (!answer.ok) return `HTTP ${answer.status} ${answer.text.slice(0, 300)}`;
        const snapshot = JSON.parse(answer.text) as { status: string; value: unknown };
        return `status ${snapshot.status}, state ${JSON.stringify(snapshot.value)}`;
      } catch (error) {
        return `no answer in 15 s (${String(error)})`;
      }
    };
    const created = await probe('hostTroupeMachine/probe/create', { input: { agentId: 'probe' } });
    const prompted = await probe('hostTroupeMachine/probe/send', {
      event: {
        type: 'PROMPT',
        input: {
          inputId: 'p1',
          messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
          expectsOutput: false,
        },
      },
    });
    out.push(
      '',
      `Troupe's agent machine on @restatedev/xstate: create → ${created}`,
      '',
      `then a PROMPT → ${prompted}`,
    );
    return out;
  } finally {
    for (const session of sessions) session.destroy();
    await new Promise((resolve) => endpoint.close(resolve));
  }
}
