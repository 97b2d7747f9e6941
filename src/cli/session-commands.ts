/** `troupe sessions` (what is recorded) and `troupe replay <id>` (a session run again offline, from its journal). */
import path from 'node:path';
import { type AgentEvent, textOf, type Usage } from '../index.js';
import { addUsage, emptyUsage } from '../protocol/index.js';
import type { SessionInfo } from '../runtime/index.js';
import { ownRecords, sortedJson } from '../runtime/session/replay.js';
import type { JournalRecord } from '../session/index.js';
import { parseCommandLine, UsageError } from './model-choice.js';
import { costOf } from './prices.js';
import type { RunIO } from './run.js';
import { existingFolder, existingStore, findRecorded, loadSettings, rerun, sessionsDir } from './session-files.js';
import { JsonView, PlainView, type View } from './views.js';

const WHERE = `  -C, --cwd <dir>       the folder the sessions were run in (default: the current one)
      --sessions-dir <dir>  where sessions are kept (default: TROUPE_SESSIONS_DIR, else .troupe/sessions in the folder)`;

export const SESSIONS_USAGE = `Usage: troupe sessions [options]

Lists the sessions recorded with troupe run --session, newest first: id, status (idle; interrupted: its run was
cut short and troupe resume continues it; open: a process is using it now; damaged: its journal cannot be read,
and the line below the table says which record), last activity, tokens and cost of the whole tree (the root and
every subagent, as troupe run and troupe replay total them), the root's messages, and title (its first task).
A fork (troupe fork) is named below the table with its parent and the seq it was forked at.

Options:
${WHERE}
      --json            one JSON object per session
  -h, --help            this text`;

export const REPLAY_USAGE = `Usage: troupe replay [options] <id>

Runs a recorded session again, offline: every model answer and tool result comes from its journal (no model is
called, no tool runs, nothing in the folder changes), and its events are printed as troupe run prints them. Every
agent of the session runs again, the root first, then each subagent on its own (an agent or swarm call is answered
by its recorded result). It ends by saying whether each agent's replay matched its recording. Exit codes: 0 it
matched, 1 it went off its recording, 2 usage error.

Options:
${WHERE}
      --json            print every event as a JSON line (and the result last)
  -h, --help            this text`;

function parse(args: string[], positionals: boolean) {
  return parseCommandLine({
    args,
    allowPositionals: positionals,
    options: {
      cwd: { type: 'string', short: 'C' },
      'sessions-dir': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

/** The folder `-C` names (checked), and where its sessions are kept. */
function where(values: ReturnType<typeof parse>['values'], io: RunIO): { folder: string; dir: string } {
  const folder = existingFolder(path.resolve(io.cwd, values.cwd ?? '.'));
  return { folder, dir: sessionsDir(folder, values['sessions-dir'], io.env, io.cwd) };
}

function tokens(usage: Usage): string {
  const n = usage.input + usage.cacheRead + usage.cacheWrite + usage.output;
  return n < 1000 ? `${n}` : `${(n / 1000).toFixed(1)}k`;
}

function when(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

/** `troupe sessions`: a table on stdout, newest first. */
export function sessionsCommand(args: string[], io: RunIO): number {
  const { values } = parse(args, false);
  if (values.help) {
    io.stdout.write(`${SESSIONS_USAGE}\n`);
    return 0;
  }
  const { dir } = where(values, io);
  const list = (existingStore(dir)?.list() ?? []).sort((a, b) => b.lastActivity - a.lastActivity);
  if (values.json) {
    for (const info of list) io.stdout.write(`${JSON.stringify(info)}\n`);
    return 0;
  }
  if (list.length === 0) {
    io.stdout.write(`No sessions in ${dir} (start one with troupe run --session "<task>")\n`);
    return 0;
  }
  const rows = list.map((info) => row(info, dir));
  const header = ['ID', 'STATUS', 'LAST ACTIVITY', 'TREE TOKENS', 'TREE COST', 'MSGS', 'TITLE'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  for (const cells of [header, ...rows]) {
    io.stdout.write(
      `${cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ')}\n`,
    );
  }
  for (const info of list) {
    if (info.damage) io.stdout.write(`${info.id} is damaged: ${info.damage}\n`);
    if (info.forkOf) io.stdout.write(`${info.id} is a fork of ${info.forkOf.id} at seq ${info.forkOf.atSeq}\n`);
  }
  if (list.some((info) => info.status === 'interrupted')) {
    io.stdout.write('An interrupted session goes on where it stopped with: troupe resume <id>\n');
  }
  return 0;
}

function row(info: SessionInfo, dir: string): string[] {
  const settings = loadSettings(dir, info.id);
  const model = settings?.offline ? 'offline' : settings?.model;
  const cost = model ? costOf(model, info.usage) : undefined;
  return [
    info.id,
    info.status,
    when(info.lastActivity),
    tokens(info.usage),
    cost === undefined ? '-' : `$${cost.toFixed(4)}`,
    String(info.messages),
    (info.title ?? '').replace(/\s+/g, ' ').slice(0, 60),
  ];
}

/**
 * Each agent's own records, agent by agent, as JSON to compare (see {@link ownRecords}), without the prompt digests
 * (`troupe test` names a prompt part that differs; a replay shows what the agents did).
 */
function comparable(records: readonly JournalRecord[]): string[] {
  return [...ownRecords(records).values()]
    .flat()
    .map((record) => sortedJson(record.k === 'turn_start' ? { ...record, p: undefined } : record));
}

/** `troupe replay <id>`: the session's agent again, answered only from its journal; its events printed. */
export async function replayCommand(args: string[], io: RunIO): Promise<number> {
  const { values, positionals } = parse(args, true);
  if (values.help) {
    io.stdout.write(`${REPLAY_USAGE}\n`);
    return 0;
  }
  const [wanted, ...extra] = positionals;
  if (!wanted) throw new UsageError('no session: troupe replay <id> (troupe sessions lists them)');
  if (extra.length > 0) throw new UsageError('too many arguments: troupe replay <id>');
  const recorded = findRecorded(io, { cwd: values.cwd, sessionsDir: values['sessions-dir'] }, wanted);
  const { journal, settings, config, close } = await rerun(recorded);
  try {
    const replay = await recorded.manager.replay(recorded.id, config);
    return show(
      replay.events,
      journal.records,
      replay.records,
      settings?.offline ? 'offline' : (settings?.model ?? ''),
      values.json === true,
      io,
    );
  } finally {
    await close();
  }
}

function show(
  events: AgentEvent[],
  original: readonly JournalRecord[],
  replayed: readonly JournalRecord[],
  model: string,
  json: boolean,
  io: RunIO,
): number {
  const rootId = original[0]?.k === 'session' ? original[0].agentId : (events[0]?.agentId ?? 'main');
  const view: View = json ? new JsonView(io.stdout) : new PlainView(io.stdout, rootId, model);
  for (const event of events) view.onEvent(event);
  const ends = events.filter((e) => e.type === 'turn_end' && e.agentId === rootId);
  const last = ends.at(-1);
  const a = comparable(original);
  const b = comparable(replayed);
  const differsAt = a.findIndex((record, i) => record !== b[i]);
  const matched = differsAt === -1 && a.length === b.length;

  view.note(
    matched
      ? `replay matched its recording: ${a.length} records, ${ends.length} turn${ends.length === 1 ? '' : 's'}`
      : `replay went off its recording at record ${differsAt === -1 ? Math.min(a.length, b.length) + 1 : differsAt + 1} of ${a.length}`,
  );
  // The whole tree's tokens, as troupe run and troupe sessions give them.
  const total = emptyUsage();
  for (const event of events) if (event.type === 'usage') addUsage(total, event.usage);
  const answer = events.findLast((e) => e.type === 'message_end' && e.agentId === rootId);
  view.finish(
    last?.type === 'turn_end'
      ? {
          stopReason: last.stopReason,
          text: answer?.type === 'message_end' && answer.message.role === 'assistant' ? textOf(answer.message) : '',
          usage: last.usage,
          ...(last.error ? { error: last.error as never } : {}),
        }
      : undefined,
    total,
  );
  return matched ? 0 : 1;
}
