/**
 * The sessions of a folder (`-C`, `--sessions-dir`), as the verbs reach them: a prompt runs `troupe run`'s agent
 * in this process on the session; the history, usage and waiting calls are read from its journal, so they can be
 * read while another process runs it. A session's running turn is reached only by the process that runs it (its
 * terminal, or its inspector page), so the verbs that act on a turn from outside are not done here.
 */
import type { Message, Usage } from '../index.js';
import { emptyUsage, toolCallsOf } from '../protocol/index.js';
import { momentAt, readJournal, type TreeMoment } from '../session/index.js';
import type { AgentTarget, Verb } from './agents.js';
import type { RunIO } from './run.js';
import { startRun } from './run.js';
import { promptOptions, type RunValues } from './run-options.js';
import { findRecorded } from './session-files.js';
import type { PendingCall } from './target.js';

/** A moment after every record: the tree as its journal leaves it. */
const LAST = Number.MAX_SAFE_INTEGER;

type AgentMoment = TreeMoment['agents'][number];

export function sessionAgents(values: RunValues, inspectUrl: string | undefined, io: RunIO): AgentTarget {
  /** Every agent of session `id` as its journal leaves it, the root first. */
  const tree = async (id: string): Promise<AgentMoment[]> => {
    const { manager } = findRecorded(io, { cwd: values.cwd, sessionsDir: values['sessions-dir'] }, id);
    const journal = readJournal(manager.store, id, (warning) => io.stderr(`troupe: ${warning}`));
    return journal ? momentAt(journal.records, LAST).agents : [];
  };
  const root = async (id: string) => (await tree(id))[0];
  return {
    prompt: (id, text, view) => startRun(promptOptions(id, text, values, inspectUrl, io), io, view, false),
    approvals: async (id) => ({ calls: (await tree(id)).flatMap(waitingCalls) }),
    history: async (id): Promise<Message[]> => (await root(id))?.messages ?? [],
    usage: async (id): Promise<Usage> => (await root(id))?.usage ?? emptyUsage(),
    cannot: (verb) => CANNOT[verb] ?? `${verb} is not a verb of sessions`,
    refused: () => undefined,
  };
}

const OUTSIDE =
  "a session's running turn is reached only by the process that runs it (its terminal, or its inspector page with " +
  'troupe run --inspect); --restate <ingress> reaches agents hosted on Restate';
const SENT =
  "a session's turn runs in the process that prompts it, so none is sent to be waited for later: troupe prompt " +
  'waits for it (--restate <ingress> for agents hosted on Restate)';

const CANNOT: Partial<Record<Verb, string>> = {
  send: SENT,
  attach: SENT,
  steer: OUTSIDE,
  interrupt: OUTSIDE,
  approve: OUTSIDE,
  deny: OUTSIDE,
};

/** An agent's calls asked about and not answered, with what each would run. */
function waitingCalls(agent: AgentMoment): PendingCall[] {
  const calls = agent.messages.flatMap((message) => (message.role === 'assistant' ? toolCallsOf(message) : []));
  return agent.pendingApprovals.flatMap((id) => {
    const call = calls.find((one) => one.id === id);
    return call ? [{ agentId: agent.id, toolCallId: id, toolName: call.name, args: call.arguments }] : [];
  });
}
