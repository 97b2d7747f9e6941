/**
 * `troupe hosted`: agents hosted on Restate (`troupe/restate`), driven through Restate's ingress. The agent runs in
 * a worker, wherever Restate sends its turn; this command sends to it, waits for it and answers its questions, with
 * the words, questions and exit codes of `troupe run`.
 */
import type { Message, Usage } from '../index.js';
import { agentClient, IngressError } from '../restate/client.js';
import { redactedArgs } from './agent-rows.js';
import { defaultAdmin, treeApprovals, WALKED, type WaitingCall } from './hosted-approvals.js';
import { type Hosted, waitForHostedTurn, write } from './hosted-wait.js';
import { parseCommandLine, UsageError } from './model-choice.js';
import type { RunIO } from './run.js';

const DEFAULT_INGRESS = 'http://localhost:8080';

export const HOSTED_USAGE = `Usage: troupe hosted <command> <agent> [arguments] [options]

Drives agents hosted on Restate (troupe/restate, agentObject + serveAgents) through Restate's ingress. The turn
runs in a worker, wherever Restate sends it, and survives this command: leave, and attach to it again.

Commands:
  prompt <agent> "<text>"       send a prompt and wait for its turn: prints the answer, exits by its stop reason
  send <agent> "<text>"         send a prompt without waiting: prints the turn's invocation id
  attach <agent> <invocation>   wait for a sent turn, as prompt does
  steer <agent> "<text>"        add a message to the running turn at its next step (none running: it starts one)
  interrupt <agent>             stop the running turn (its open tool calls get an "interrupted" result)
  approvals <agent>             the calls waiting for approval, its subagents' too: agent, call id, tool,
                                arguments (secrets redacted)
  approve <agent> <call>        let a waiting call run
  deny <agent> <call>           refuse it (--reason tells the model why)
  history <agent>               the conversation, as stored
  usage <agent>                 tokens over all its turns

Options:
      --ingress <url>   Restate's ingress (default: TROUPE_INGRESS, else ${DEFAULT_INGRESS})
      --name <object>   the agents' object name (default troupe-agent; agentObject({ name }))
      --admin <url>     Restate's admin API, where subagents' questions are found (default: TROUPE_ADMIN, else
                        port 9070 beside an ingress on 8080)
      --reason <text>   deny: what the model is told
      --idempotency-key <key>  prompt, send, steer, interrupt: the same key sent again counts once
      --json            JSON output: the outcome, the list, the history (questions as JSON lines)
  -h, --help            this text

While prompt or attach waits, the agent's calls that wait for approval are asked on a terminal (y / n); piped,
they are printed with the commands that answer them. Ctrl-C interrupts the turn; a second Ctrl-C leaves (the turn
goes on). Exit codes: 0 completed, 1 failed or the ingress refused, 2 usage error, 3 step limit, 130 interrupted.`;

/** What each command takes after the agent id. */
const ARGUMENTS: Record<string, string[]> = {
  prompt: ['text'],
  send: ['text'],
  attach: ['invocation'],
  steer: ['text'],
  interrupt: [],
  approvals: [],
  approve: ['call'],
  deny: ['call'],
  history: [],
  usage: [],
};

function parse(args: string[]) {
  return parseCommandLine({
    args,
    allowPositionals: true,
    options: {
      ingress: { type: 'string' },
      name: { type: 'string' },
      admin: { type: 'string' },
      reason: { type: 'string' },
      'idempotency-key': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

type Values = ReturnType<typeof parse>['values'];

/** An http(s) address given for `option`, checked. */
function address(option: string, url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--${option}: not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`--${option}: Restate's ${option} is an http:// or https:// address, not ${url}`);
  }
  return url;
}

/** `troupe hosted …`; resolves with the exit code. Usage errors throw `UsageError` (one line, exit 2). */
export async function hostedCommand(args: string[], io: RunIO): Promise<number> {
  const { values, positionals } = parse(args);
  const [command, agentId, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    io.stdout.write(`${HOSTED_USAGE}\n`);
    return 0;
  }
  const wanted = Object.hasOwn(ARGUMENTS, command) ? ARGUMENTS[command] : undefined;
  if (!wanted) throw new UsageError(`unknown command "${command}": see troupe hosted --help`);
  if (!agentId)
    throw new UsageError(`${command}: which agent? troupe hosted ${command} <agent> ${placeholders(wanted)}`.trimEnd());
  if (rest.length < wanted.length) throw new UsageError(`${command}: missing <${wanted[rest.length]}>`);
  if (rest.length > wanted.length) {
    throw new UsageError(
      `${command}: unexpected ${JSON.stringify(rest[wanted.length])} (quote a text of several words)`,
    );
  }
  if (values.reason !== undefined && command !== 'deny') throw new UsageError('--reason goes with deny');
  const ingress = address('ingress', values.ingress ?? io.env.TROUPE_INGRESS ?? DEFAULT_INGRESS);
  const given = values.admin ?? io.env.TROUPE_ADMIN;
  const admin = given === undefined ? defaultAdmin(ingress) : address('admin', given);
  const again = [
    'troupe hosted',
    values.ingress ? `--ingress ${values.ingress}` : '',
    values.name ? `--name ${values.name}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const name = values.name ?? 'troupe-agent';
  const hosted: Hosted = {
    client: agentClient(ingress, name),
    name,
    ...(admin === undefined ? {} : { admin }),
    io,
    json: values.json === true,
    again,
  };
  try {
    return await run(hosted, command, agentId, rest, values);
  } catch (error) {
    if (!(error instanceof IngressError)) throw error;
    io.stderr(`troupe hosted: ${error.message}${error.status === 404 ? hintFor404(values) : ''}`);
    return 1;
  }
}

function placeholders(wanted: string[]): string {
  return wanted.map((name) => `<${name}>`).join(' ');
}

/** Restate answers 404 for an object it does not know: no worker registered, or another name. */
function hintFor404(values: Values): string {
  return ` (is a worker serving ${values.name ?? 'troupe-agent'} registered? --name picks the object)`;
}

async function run(hosted: Hosted, command: string, agentId: string, rest: string[], values: Values): Promise<number> {
  const { client, io } = hosted;
  const key = values['idempotency-key'];
  const options = key === undefined ? {} : { idempotencyKey: key };
  const [argument = ''] = rest;
  switch (command) {
    case 'prompt':
      return waitForHostedTurn(hosted, agentId, await client.send(agentId, argument, options));
    case 'attach':
      return waitForHostedTurn(hosted, agentId, argument);
    case 'send': {
      const invocationId = await client.send(agentId, argument, options);
      write(hosted, hosted.json ? JSON.stringify({ invocationId }) : invocationId);
      return 0;
    }
    case 'steer':
    case 'interrupt': {
      const invocationId =
        command === 'steer' ? await client.steer(agentId, argument, options) : await client.interrupt(agentId, options);
      write(
        hosted,
        hosted.json
          ? JSON.stringify({ accepted: true, invocationId })
          : command === 'steer'
            ? `steer accepted: ${agentId}'s running turn takes it at its next step (none running: it starts one)`
            : `interrupt accepted: ${agentId}'s running turn stops (none running: nothing happens)`,
      );
      return 0;
    }
    case 'approvals': {
      const tree = await treeApprovals(client, hosted.admin, hosted.name, agentId);
      listApprovals(hosted, agentId, tree.calls);
      if (tree.unlisted) io.stderr(`troupe hosted: ${tree.unlisted}; ${WALKED}`);
      return 0;
    }
    case 'approve':
    case 'deny': {
      const approve = command === 'approve';
      const answer = {
        toolCallId: argument,
        approve,
        ...(values.reason === undefined ? {} : { reason: values.reason }),
      };
      if (await client.approve(agentId, answer)) {
        write(
          hosted,
          hosted.json
            ? JSON.stringify({ ...answer, answered: true })
            : `${approve ? 'approved' : 'denied'} ${argument}`,
        );
        return 0;
      }
      io.stderr(
        `troupe hosted: ${agentId} has no call ${argument} waiting for approval (answered already, or not asked yet: ${hosted.again} approvals ${agentId})`,
      );
      return 1;
    }
    case 'history': {
      const history = await client.history(agentId);
      if (hosted.json) write(hosted, JSON.stringify(history));
      else for (const line of transcript(history)) write(hosted, line);
      return 0;
    }
    default: {
      const usage = await client.usage(agentId);
      write(hosted, hosted.json ? JSON.stringify(usage) : usageLine(usage));
      return 0;
    }
  }
}

function listApprovals(hosted: Hosted, agentId: string, waiting: WaitingCall[]): void {
  if (hosted.json) {
    write(hosted, JSON.stringify(waiting.map((call) => ({ ...call, args: JSON.parse(redactedArgs(call.args)) }))));
    return;
  }
  if (waiting.length === 0) {
    write(hosted, `${agentId} has no calls waiting for approval`);
    return;
  }
  for (const call of waiting) {
    write(hosted, `${call.agentId}  ${call.toolCallId}  ${call.label ?? call.toolName}  ${redactedArgs(call.args)}`);
  }
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
