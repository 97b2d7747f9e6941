/**
 * `troupe prompt | send | attach | steer | interrupt | approvals | approve | deny | history | usage <agent> …`:
 * one command per verb, against either target. Without `--restate` the agent is a session of the folder, run in
 * this process; with it (or `TROUPE_RESTATE_URL`), an agent hosted on Restate. Each verb's parsing, rendering,
 * questions and wait are written here once, over the target's interface (agents.ts).
 */
import type { Message, Usage } from '../index.js';
import { redactedArgs } from './agent-rows.js';
import { type AgentTarget, type Listed, VERBS, type Verb } from './agents.js';
import { defaultAdmin, WALKED } from './hosted-approvals.js';
import { parseCommandLine, UsageError } from './model-choice.js';
import type { RunIO } from './run.js';
import { RUN_OPTIONS, type RunValues, takeValue } from './run-options.js';
import { sessionAgents } from './session-target.js';
import { awaitTurn } from './target.js';
import { VERBS_USAGE } from './verbs-usage.js';
import { OutcomeView } from './views.js';

const OPTIONS = {
  ...RUN_OPTIONS,
  restate: { type: 'string' },
  admin: { type: 'string' },
  name: { type: 'string' },
  reason: { type: 'string' },
  'idempotency-key': { type: 'string' },
} as const;

type Values = RunValues & {
  restate?: string;
  admin?: string;
  name?: string;
  reason?: string;
  'idempotency-key'?: string;
};

/** The options only hosted agents take, and those only a session's prompt takes (its agent runs here). */
const HOSTED_ONLY = ['admin', 'name', 'idempotency-key'] as const;
const RUN_ONLY = [
  'offline',
  'provider',
  'model',
  'mode',
  'max-steps',
  'mcp-config',
  'no-agents-md',
  'inspect',
] as const;
const SESSION_ONLY = ['cwd', 'sessions-dir'] as const;

/** Whether `name` is a verb that takes a target. */
export function isVerb(name: string | undefined): name is Verb {
  return name !== undefined && Object.hasOwn(VERBS, name);
}

/** `troupe <verb> …`; resolves with the exit code. Usage errors throw `UsageError` (one line, exit 2). */
export async function verbCommand(verb: Verb, args: string[], io: RunIO): Promise<number> {
  const { rest, value: inspectUrl } = takeValue(args, 'inspect');
  const { values, positionals } = parseCommandLine({ args: rest, allowPositionals: true, options: OPTIONS });
  if (values.help) {
    io.stdout.write(`${VERBS_USAGE}\n`);
    return 0;
  }
  const [agentId, ...given] = positionals;
  const wanted: readonly string[] = VERBS[verb];
  const placeholders = wanted.map((name) => `<${name}>`).join(' ');
  if (!agentId) throw new UsageError(`which agent? troupe ${verb} <agent|session> ${placeholders}`.trimEnd());
  if (given.length < wanted.length) throw new UsageError(`missing <${wanted[given.length]}>`);
  if (given.length > wanted.length) {
    throw new UsageError(`unexpected ${JSON.stringify(given[wanted.length])} (quote a text of several words)`);
  }
  if (values.reason !== undefined && verb !== 'deny') throw new UsageError('--reason goes with deny');
  const restate = values.restate ?? io.env.TROUPE_RESTATE_URL;
  const seen = (names: readonly string[]) =>
    names.find((name) => (values as Record<string, unknown>)[name] !== undefined || (name === 'inspect' && inspectUrl));
  const target =
    restate === undefined
      ? sessionTarget(verb, values, inspectUrl, io, seen)
      : await restateTarget(restate, values, io, seen);
  const [argument = ''] = given;
  try {
    return await run(target, verb, agentId, argument, values, io);
  } catch (error) {
    const line = target.refused(error);
    if (line === undefined) throw error;
    io.stderr(`troupe ${verb}: ${line}`);
    return 1;
  }
}

function sessionTarget(
  verb: Verb,
  values: Values,
  inspectUrl: string | undefined,
  io: RunIO,
  seen: (names: readonly string[]) => string | undefined,
): AgentTarget {
  const hosted = seen(HOSTED_ONLY);
  if (hosted) throw new UsageError(`--${hosted} goes with --restate (a session's agents run in this process)`);
  const run = verb === 'prompt' ? undefined : seen(RUN_ONLY);
  if (run) throw new UsageError(`--${run} goes with prompt (it sets up the agent a prompt runs here)`);
  return sessionAgents(values, inspectUrl, io);
}

async function restateTarget(
  ingress: string,
  values: Values,
  io: RunIO,
  seen: (names: readonly string[]) => string | undefined,
): Promise<AgentTarget> {
  const here = seen([...RUN_ONLY, ...SESSION_ONLY]);
  if (here) {
    throw new UsageError(`--${here}: a hosted agent runs in its worker, with the worker's folder, model and mode`);
  }
  address('restate', ingress);
  const given = values.admin ?? io.env.TROUPE_RESTATE_ADMIN;
  const admin = given === undefined ? defaultAdmin(ingress) : address('admin', given);
  const again = [
    values.restate ? ` --restate ${values.restate}` : '',
    values.name ? ` --name ${values.name}` : '',
  ].join('');
  // Loaded on demand: the Restate SDK is for hosted agents only.
  const { restateAgents } = await import('./restate-target.js');
  const name = values.name ?? 'troupe-agent';
  return restateAgents({ ingress, name, again, ...(admin === undefined ? {} : { admin }) });
}

/** An http(s) address given for `option`, checked. */
function address(option: string, url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--${option}: not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    const what = option === 'restate' ? 'ingress' : 'admin API';
    throw new UsageError(`--${option}: Restate's ${what} is an http:// or https:// address, not ${url}`);
  }
  return url;
}

async function run(
  target: AgentTarget,
  verb: Verb,
  agentId: string,
  argument: string,
  values: Values,
  io: RunIO,
): Promise<number> {
  /** The target's method for this verb; a target without it cannot do the verb (a usage error, exit 2). */
  const able = <K extends Exclude<Verb, 'deny'> & keyof AgentTarget>(method: K): NonNullable<AgentTarget[K]> => {
    const found = target[method];
    if (found === undefined) throw new UsageError(target.cannot(verb));
    return found as NonNullable<AgentTarget[K]>;
  };
  const json = values.json === true;
  const write = (line: string) => io.stdout.write(`${line}\n`);
  const key = values['idempotency-key'];
  switch (verb) {
    case 'prompt':
    case 'attach': {
      const view = new OutcomeView(io.stdout, io.stderr, json);
      const started =
        verb === 'prompt' ? await target.prompt(agentId, argument, view, key) : able('attach')(agentId, argument);
      return awaitTurn(started, { io, view, json });
    }
    case 'send': {
      const invocationId = await able('send')(agentId, argument, key);
      write(json ? JSON.stringify({ invocationId }) : invocationId);
      return 0;
    }
    case 'steer':
    case 'interrupt': {
      const invocationId =
        verb === 'steer' ? await able('steer')(agentId, argument, key) : await able('interrupt')(agentId, key);
      write(
        json
          ? JSON.stringify({ accepted: true, invocationId })
          : verb === 'steer'
            ? `steer accepted: ${agentId}'s running turn takes it at its next step (none running: it starts one)`
            : `interrupt accepted: ${agentId}'s running turn stops (none running: nothing happens)`,
      );
      return 0;
    }
    case 'approvals': {
      const listed = await target.approvals(agentId);
      for (const line of approvalLines(agentId, listed, json)) write(line);
      if (listed.unlisted) io.stderr(`troupe approvals: ${listed.unlisted}; ${WALKED}`);
      return 0;
    }
    case 'approve':
    case 'deny': {
      const answerCall = able('approve');
      const approve = verb === 'approve';
      const answer = {
        toolCallId: argument,
        approve,
        ...(values.reason === undefined ? {} : { reason: values.reason }),
      };
      if (await answerCall(agentId, answer)) {
        write(json ? JSON.stringify({ ...answer, answered: true }) : `${approve ? 'approved' : 'denied'} ${argument}`);
        return 0;
      }
      io.stderr(
        `troupe ${verb}: ${agentId} has no call ${argument} waiting for approval (answered already, or not asked yet: troupe approvals ${agentId})`,
      );
      return 1;
    }
    case 'history': {
      const history = await target.history(agentId);
      if (json) write(JSON.stringify(history));
      else for (const line of transcript(history)) write(line);
      return 0;
    }
    case 'usage': {
      const usage = await target.usage(agentId);
      write(json ? JSON.stringify(usage) : usageLine(usage));
      return 0;
    }
  }
}

function approvalLines(agentId: string, { calls }: Listed, json: boolean): string[] {
  if (json) return [JSON.stringify(calls.map((call) => ({ ...call, args: JSON.parse(redactedArgs(call.args)) })))];
  if (calls.length === 0) return [`${agentId} has no calls waiting for approval`];
  return calls.map(
    (call) => `${call.agentId}  ${call.toolCallId}  ${call.label ?? call.toolName}  ${redactedArgs(call.args)}`,
  );
}

function usageLine(usage: Usage): string {
  return `${usage.input + usage.cacheRead + usage.cacheWrite} in / ${usage.output} out (cache read ${usage.cacheRead}, cache write ${usage.cacheWrite}, reasoning ${usage.reasoning})`;
}

/** The conversation, a line per message (a tool call and a tool result each on its own). */
function transcript(history: Message[]): string[] {
  const lines: string[] = [];
  for (const message of history) {
    if (message.role === 'tool') {
      for (const result of message.content) {
        const text = result.content.map((part) => (part.type === 'text' ? part.text : '[image]')).join('');
        lines.push(`tool ${result.toolName}${result.isError ? ' (error)' : ''}: ${text}`);
      }
      continue;
    }
    const who =
      message.role === 'user' && message.source && message.source !== 'prompt'
        ? `user (${message.source})`
        : message.role;
    const text = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
    if (text) lines.push(`${who}: ${text}`);
    if (message.role !== 'assistant') continue;
    for (const part of message.content) {
      if (part.type === 'tool_call')
        lines.push(`${who} calls ${part.name} ${redactedArgs(part.arguments)} (${part.id})`);
    }
  }
  return lines;
}
