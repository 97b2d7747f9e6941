/**
 * A recorded session as a test of the current code: every agent of its tree runs again on the recorded model answers
 * and tool results, and the first record of an agent that differs from its recording is thrown as a
 * {@link SessionDivergence} naming the agent, turn and step, and what differed.
 */
import { redactSecrets } from '../protocol/index.js';
import { type AgentReplay, type ReplayConfig, replayAgents } from '../runtime/replay-agents.js';
import { sortedJson as json, ownRecords } from '../runtime/session/replay.js';
import { offlineModel } from '../runtime/sessions.js';
import { SUBAGENT_TOOL_NAMES } from '../runtime/tree/subagent-tools.js';
import { decodeRecord, type HeaderRecord, type JournalRecord, type PromptDigest } from '../session/index.js';

/**
 * What differed first: a tool called, its arguments, a tool's result, a state entered, a stop reason, a prompt part
 * the code sets (its digest), or else a record.
 */
export type DivergenceKind =
  | 'tool'
  | 'arguments'
  | 'result'
  | 'state'
  | 'stop'
  | 'prompt'
  | 'missing'
  | 'extra'
  | 'record';

/** A recorded session's replay went another way than its recording did. */
export class SessionDivergence extends Error {
  override name = 'SessionDivergence';
  constructor(
    readonly agentId: string,
    readonly turn: number,
    readonly step: number,
    readonly kind: DivergenceKind,
    /** The recorded fact and the replay's, as JSON (secrets redacted). */
    readonly expected: string,
    readonly actual: string,
  ) {
    super(
      `agent "${agentId}", turn ${turn}, step ${step}: ${WHAT[kind]}\n  recorded: ${clip(expected)}\n  replayed: ${clip(actual)}`,
    );
  }
}

const WHAT: Record<DivergenceKind, string> = {
  tool: 'a different tool was called',
  arguments: 'the tool was called with different arguments',
  result: 'a tool returned a different result',
  state: 'a different state was entered',
  stop: 'the turn stopped for a different reason',
  prompt: 'a prompt part differs',
  missing: 'the replay stopped short of the recording',
  extra: 'the replay went on past the recording',
  record: 'a different fact was recorded',
};

/**
 * Runs the recorded session `journal` (its records, or a JSONL journal's text, as a fixture file holds it) against
 * the current code, with `config` as the agents' config (its tools, policy, prompts; its model is never called:
 * answers come from the journal). Resolves with each agent's replay when every agent did what it recorded; throws
 * the first {@link SessionDivergence} otherwise.
 */
export async function replaySessionAsTest(
  journal: string | readonly JournalRecord[],
  config: ReplayConfig,
): Promise<AgentReplay[]> {
  const records = typeof journal === 'string' ? parseJournal(journal) : [...journal];
  const header = records[0];
  if (header?.k !== 'session') throw new TypeError('a journal starts with its session header');
  const gone = missingTool(records, config);
  if (gone) throw gone;
  const replays = await replayAgents(header as HeaderRecord, records, config, offlineModel);
  const replayed = new Map<string, JournalRecord[]>();
  for (const replay of replays)
    replayed.set(replay.agentId, [...(replayed.get(replay.agentId) ?? []), ...replay.records]);
  for (const [agentId, recorded] of ownRecords(records)) {
    // Only the root's prompt is the config's: a subagent's comes from its tree's profiles, which a replay does not
    // rebuild.
    const prompts = agentId === header.agentId;
    const own = ownRecords(replayed.get(agentId) ?? []).get(agentId) ?? [];
    const divergence = firstDivergence(agentId, recorded, own, prompts);
    if (divergence) throw divergence;
  }
  return replays;
}

/**
 * A recorded call of a tool the current build no longer has (renamed, removed): a replay answers it from the journal
 * without running it, so it is caught here, before the replay, at the call's turn and step.
 */
function missingTool(records: readonly JournalRecord[], config: ReplayConfig): SessionDivergence | undefined {
  if (!config.tools) return undefined;
  // The tools every agent of a tree has besides its own, the config's, and those its subagent profiles add.
  const names = new Set([...SUBAGENT_TOOL_NAMES, ...config.tools.map((tool) => tool.name)]);
  for (const profile of Object.values(config.subagents?.profiles ?? {}))
    for (const tool of profile.tools ?? []) names.add(typeof tool === 'string' ? tool : tool.name);
  const at = new Map<string, [number, number]>();
  for (const record of records) {
    if (record.k === 'msg') at.set(record.a, [record.turn, record.step]);
    if (record.k !== 'tool_start' || names.has(record.name)) continue;
    const [turn, step] = at.get(record.a) ?? [0, 0];
    const { s: _s, ...rest } = record;
    return new SessionDivergence(
      record.a,
      turn,
      step,
      'tool',
      shown(rest as JournalRecord),
      `no tool "${record.name}" now`,
    );
  }
  return undefined;
}

function parseJournal(text: string): JournalRecord[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line, i) => {
      const record = decodeRecord(line);
      if (!record) throw new TypeError(`journal line ${i + 1} is not a journal record`);
      return record;
    });
}

function firstDivergence(
  agentId: string,
  recorded: readonly JournalRecord[],
  replayed: readonly JournalRecord[],
  prompts: boolean,
): SessionDivergence | undefined {
  let turn = 0;
  let step = 0;
  for (let i = 0; i < Math.max(recorded.length, replayed.length); i++) {
    const want = recorded[i];
    const got = replayed[i];
    if (want?.k === 'msg') [turn, step] = [want.turn, want.step];
    if (want?.k === 'turn_start') [turn, step] = [want.turn, 0];
    if (want?.k === 'turn_start' && got?.k === 'turn_start') {
      // A journal written before prompts were digested, or a turn digested on one side only (an agent resumed
      // mid-session digests its first turn again): absence is no divergence.
      const part = prompts && want.p && got.p ? promptPart(want.p, got.p) : undefined;
      if (part) return new SessionDivergence(agentId, turn, step, 'prompt', part[0], part[1]);
      if (json({ ...want, p: undefined }) === json({ ...got, p: undefined })) continue;
    }
    if (json(want) === json(got)) continue;
    const kind = !got ? 'missing' : !want ? 'extra' : kindOf(want, got);
    return new SessionDivergence(agentId, turn, step, kind, shown(want), shown(got));
  }
  return undefined;
}

function kindOf(want: JournalRecord, got: JournalRecord): DivergenceKind {
  if (want.k !== got.k) {
    // The same call ran in one and was answered without running in the other (a denial): its result differs.
    const [a, b] = [callOf(want), callOf(got)];
    if (a !== undefined && a === b) return 'result';
    return want.k === 'tool_start' || got.k === 'tool_start' ? 'tool' : 'record';
  }
  if (want.k === 'tool_start' && got.k === 'tool_start') return 'tool';
  if (want.k === 'tool_end') return 'result';
  if (want.k === 'snapshot') return 'state';
  if (want.k === 'turn_end' && got.k === 'turn_end' && want.stopReason !== got.stopReason) return 'stop';
  if (want.k === 'msg' && got.k === 'msg') {
    const calls = (m: typeof want.m) =>
      ('content' in m && Array.isArray(m.content) ? m.content : []).filter(
        (p) => 'type' in p && p.type === 'tool_call',
      );
    const [a, b] = [calls(want.m), calls(got.m)];
    if (json(a.map((p) => 'name' in p && p.name)) !== json(b.map((p) => 'name' in p && p.name))) return 'tool';
    if (json(a) !== json(b)) return 'arguments';
  }
  return 'record';
}

/**
 * The first prompt part whose digest differs, as the recording's and the replay's: `system`, or a tool's description
 * or schema. Tools on one side only, and those a tree adds (their wording follows the tree's settings), are not
 * compared: a replay gives an agent the tools its calls need (a called tool the build lacks is a `tool` divergence).
 */
function promptPart(want: PromptDigest, got: PromptDigest): [string, string] | undefined {
  if (want.system !== got.system) return [`system ${want.system ?? '(none)'}`, `system ${got.system ?? '(none)'}`];
  for (const name of Object.keys(want.tools).sort()) {
    const [w, g] = [want.tools[name], got.tools[name]];
    if (!w || !g || SUBAGENT_TOOL_NAMES.includes(name)) continue;
    if (w.d !== g.d) return [`tool:${name} description ${w.d}`, `tool:${name} description ${g.d}`];
    if (w.s !== g.s) return [`tool:${name} schema ${w.s}`, `tool:${name} schema ${g.s}`];
  }
  return undefined;
}

/** The tool call a record is about: a call's start or end, or a tool message's result. */
function callOf(record: JournalRecord): string | undefined {
  if (record.k === 'tool_start' || record.k === 'tool_end') return record.id;
  if (record.k !== 'msg' || !('role' in record.m) || record.m.role !== 'tool') return undefined;
  const part = record.m.content.find((p) => 'type' in p && p.type === 'tool_result');
  return part && 'toolCallId' in part ? part.toolCallId : undefined;
}

function shown(record: JournalRecord | undefined): string {
  return redactSecrets(json(record));
}

function clip(text: string): string {
  return text.length > 400 ? `${text.slice(0, 400)}… (${text.length} characters)` : text;
}
