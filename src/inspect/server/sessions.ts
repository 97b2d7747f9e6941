// The inspector's recorded sessions: the list of a store's sessions, one session's timeline, the whole tree at one
// of its moments (read from the journal by `momentAt`: no model is called, no tool runs), and a fork from a
// moment, written by `manager.fork` and then run live by the caller's `run`. Every answer is summarised and
// redacted as the live frames are: a hostile journal (scripts in messages, huge strings, deep nesting) reaches the
// page as bounded plain data, and a journal that cannot be read is a typed error with its reason.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { agentMachine } from '../../../machines/agent/index.js';
import { ForkEditError, type SessionManager } from '../../runtime/index.js';
import {
  type ForkEdit,
  JournalError,
  type JournalRecord,
  momentAt,
  readJournal,
  type TreeMoment,
} from '../../session/index.js';
import { seqsOf, type Timeline, timelineOf } from '../../session/timeline.js';
import { summarize } from '../sanitize.js';

/** Where the inspector reads recorded sessions from, and how a fork made on its page goes on. */
export interface RecordedSessions {
  /** The store whose sessions the page lists and opens. */
  manager: SessionManager;
  /** The session the page opens first. */
  open?: string;
  /**
   * Runs a fork the page made, live (the configured model, or the scripted one offline), as `troupe resume` would;
   * without it the page cannot fork.
   */
  run?: (forkId: string) => Promise<void>;
}

/** Every JSON answer: bounded like the live frames, with every known secret scrubbed. */
const BOUNDS = { maxStringLength: 4000, maxArrayLength: 100_000, maxKeys: 60, maxDepth: 12 } as const;
/** Events of the selected agent a moment carries: the latest ones up to it. */
const EVENTS = 300;
/** A fork request's body: an id, a seq and an edit. */
const MAX_BODY = 256 * 1024;

/** The agent machine's definition as the page draws it (what a live `@xstate.actor` frame carries). */
const AGENT_DEFINITION = JSON.stringify(agentMachine.config, (_key, value) =>
  typeof value === 'function' ? undefined : value,
);

interface Loaded {
  records: JournalRecord[];
  seqs: number[];
  timeline: Timeline;
}

/** `body` is summarised before it is sent; `own` is ours (the agent machine's definition) and sent as it is. */
type Answer = { status: number; body: unknown; own?: Record<string, unknown> };

/** The routes under `/api/`; `handles` says whether a path is one of them. */
export class SessionRoutes {
  private readonly cache = new Map<string, Loaded>();
  /** Forks made on a page and run here: `running` until their run settles. */
  private readonly forks = new Map<string, { state: 'running' | 'done' | 'failed'; error?: string }>();

  constructor(private readonly source: RecordedSessions) {}

  static handles(path: string): boolean {
    return path.startsWith('/api/');
  }

  /** Answers one request already checked for its host and token; a POST's Origin too. */
  async answer(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    let answer: Answer;
    try {
      answer = await this.route(req, url);
    } catch (error) {
      answer = errorAnswer(error);
    }
    res
      .writeHead(answer.status, { 'Content-Type': 'application/json; charset=utf-8' })
      .end(JSON.stringify({ ...(summarize(answer.body, BOUNDS) as object), ...answer.own }));
  }

  private async route(req: IncomingMessage, url: URL): Promise<Answer> {
    const id = url.searchParams.get('id') ?? '';
    switch (`${req.method} ${url.pathname}`) {
      case 'GET /api/sessions':
        return { status: 200, body: { sessions: this.list(), open: this.source.open, canFork: !!this.source.run } };
      case 'GET /api/timeline': {
        const loaded = this.load(id, true);
        return { status: 200, body: loaded.timeline, own: { definition: AGENT_DEFINITION } };
      }
      case 'GET /api/moment': {
        const seq = Number(url.searchParams.get('seq'));
        if (!Number.isSafeInteger(seq)) return { status: 400, body: { error: 'seq: a whole number' } };
        return { status: 200, body: this.moment(this.load(id, false), seq, url.searchParams.get('agent')) };
      }
      case 'POST /api/fork':
        return this.fork(await readBody(req));
      default:
        return { status: 404, body: { error: 'not found' } };
    }
  }

  private list() {
    return this.source.manager.list().map((info) => ({ ...info, run: this.forks.get(info.id) }));
  }

  /** A session's records, read again when asked for its timeline (a running fork grows) and kept for its moments. */
  private load(id: string, fresh: boolean): Loaded {
    const cached = this.cache.get(id);
    if (cached && !fresh) return cached;
    const journal = readJournal(this.source.manager.store, id, () => {});
    if (!journal) throw new NotFound(`no session "${id}"`);
    const loaded = { records: journal.records, seqs: seqsOf(journal.records), timeline: timelineOf(journal.records) };
    this.cache.set(id, loaded);
    return loaded;
  }

  /** The tree at `seq`, with the selected agent's messages as they stood and its events up to then. */
  private moment({ records, seqs }: Loaded, seq: number, wanted: string | null) {
    const moment: TreeMoment = momentAt(records, seq);
    const selected = moment.agents.find((a) => a.id === wanted) ?? moment.agents[0];
    const events: Array<{ seq: number; record: JournalRecord }> = [];
    for (let i = moment.records - 1; i > 0 && events.length < EVENTS; i--) {
      const record = records[i] as JournalRecord;
      if ('a' in record && record.a === selected?.id) events.push({ seq: seqs[i] ?? -1, record });
    }
    return {
      seq,
      records: moment.records,
      gaps: moment.gaps,
      agents: moment.agents.map(({ messages, ...agent }) => ({ ...agent, messageCount: messages.length })),
      selected: selected?.id,
      messages: selected?.messages ?? [],
      events: events.reverse(),
    };
  }

  private fork(body: unknown): Answer {
    const run = this.source.run;
    if (!run) return { status: 403, body: { error: 'this inspector was started without a way to run a fork' } };
    const request = forkRequest(body);
    if (typeof request === 'string') return { status: 400, body: { error: request } };
    this.load(request.id, true);
    const session = this.source.manager.fork(request.id, {
      atSeq: request.atSeq,
      ...(request.edit ? { edit: request.edit } : {}),
    });
    const forkId = session.id;
    session.close();
    const state: { state: 'running' | 'done' | 'failed'; error?: string } = { state: 'running' };
    this.forks.set(forkId, state);
    run(forkId).then(
      () => {
        state.state = 'done';
      },
      (error: unknown) => {
        state.state = 'failed';
        state.error = error instanceof Error ? error.message : String(error);
      },
    );
    return { status: 200, body: { id: forkId, forkOf: { id: request.id, atSeq: request.atSeq } } };
  }
}

class NotFound extends Error {}

function errorAnswer(error: unknown): Answer {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof NotFound) return { status: 404, body: { error: message } };
  if (error instanceof ForkEditError || error instanceof BadRequest) return { status: 400, body: { error: message } };
  // A damaged or too new journal: the page says why, the store is untouched.
  if (error instanceof JournalError) return { status: 422, body: { error: message, kind: error.name } };
  return { status: 500, body: { error: message } };
}

class BadRequest extends Error {}

async function readBody(req: IncomingMessage): Promise<unknown> {
  if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
    throw new BadRequest('a fork request is JSON (Content-Type: application/json)');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new BadRequest(`a fork request is at most ${MAX_BODY} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new BadRequest('a fork request is JSON');
  }
}

const isText = (value: unknown): value is string => typeof value === 'string' && value.length <= 100_000;

/** `{ id, atSeq, edit? }` with an edit of one of ForkEdit's shapes, or why not. */
function forkRequest(body: unknown): { id: string; atSeq: number; edit?: ForkEdit } | string {
  if (typeof body !== 'object' || body === null) return 'a fork request is an object';
  const { id, atSeq, edit } = body as Record<string, unknown>;
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) return 'id: the session to fork';
  if (typeof atSeq !== 'number' || !Number.isSafeInteger(atSeq) || atSeq < 0) return 'atSeq: a seq, from 0';
  if (edit === undefined) return { id, atSeq };
  if (typeof edit !== 'object' || edit === null) return 'edit: an object';
  const e = edit as Record<string, unknown>;
  if (isText(e.input)) return { id, atSeq, edit: { input: e.input } };
  if (isText(e.system)) return { id, atSeq, edit: { system: e.system } };
  const result = e.toolResult as Record<string, unknown> | undefined;
  if (result && typeof result === 'object' && isText(result.id) && isText(result.text)) {
    const agentId = isText(result.agentId) && result.agentId ? { agentId: result.agentId } : {};
    return { id, atSeq, edit: { toolResult: { id: result.id, text: result.text, ...agentId } } };
  }
  return 'edit: { input }, { system } or { toolResult: { id, text, agentId? } }';
}
