import { z } from 'zod';
import type { JournalRecord } from './records.js';

/**
 * The shape of every record kind this build reads, checked when a journal is read: a record of a known kind with a
 * field of the wrong type is refused where it stands (its line named), instead of surfacing later as a TypeError
 * deep in a restore or, worse, as a history quietly shorter than the journal. Objects are loose: a field added
 * within the same journal version is carried, not refused. Values the runtime only passes along (a tool's
 * arguments and details, a provider's opaque data, a machine snapshot's state value) are not looked into.
 */

type RecordKinds = Record<JournalRecord['k'], z.ZodType>;

/**
 * The schemas, made on the first record read and kept: a program that never reads a journal does not build them
 * (about 750 KB of memory and 12 ms of start-up when `troupe` is imported).
 */
let made: RecordKinds | undefined;
const recordKinds = (): RecordKinds => {
  made ??= makeRecordKinds();
  return made;
};

function makeRecordKinds(): RecordKinds {
  const count = z.number().int().nonnegative();
  const time = z.number().finite();

  const text = z.looseObject({ type: z.literal('text'), text: z.string() });
  const image = z.looseObject({
    type: z.literal('image'),
    source: z.union([
      z.looseObject({ kind: z.literal('base64'), mediaType: z.string(), data: z.string() }),
      z.looseObject({ kind: z.literal('url'), url: z.string() }),
    ]),
  });
  const userContent = z.discriminatedUnion('type', [text, image]);
  const providerData = z.looseObject({ provider: z.string(), model: z.string(), data: z.unknown() });

  const usage = z.looseObject({
    input: z.number(),
    output: z.number(),
    cacheRead: z.number(),
    cacheWrite: z.number(),
    reasoning: z.number(),
  });
  /** An answer without usage (a given history's may lack it): none we know of, as for a model that reports none. */
  const noUsage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 };

  const userMessage = z.looseObject({
    role: z.literal('user'),
    content: z.array(userContent),
    source: z.enum(['prompt', 'steer', 'notification', 'feedback', 'compaction']).optional(),
  });

  const toolResult = z.looseObject({
    type: z.literal('tool_result'),
    toolCallId: z.string(),
    toolName: z.string().optional(),
    content: z.array(userContent),
    isError: z.boolean().optional(),
    details: z.unknown().optional(),
  });

  /** As loose as a history given to `createAgent({ messages })` may be (see protocol's `resumableHistory`). */
  const assistantMessage = z.looseObject({
    role: z.literal('assistant'),
    content: z.array(
      z.discriminatedUnion('type', [
        text,
        z.looseObject({ type: z.literal('reasoning'), text: z.string(), opaque: providerData.optional() }),
        z.looseObject({
          type: z.literal('tool_call'),
          id: z.string(),
          name: z.string(),
          arguments: z.record(z.string(), z.unknown()),
          invalidArguments: z.looseObject({ text: z.string(), error: z.string() }).optional(),
          opaque: providerData.optional(),
        }),
        z.looseObject({ type: z.literal('opaque'), kind: z.string(), provider: z.string() }),
      ]),
    ),
    provider: z.string().default(''),
    model: z.string().default(''),
    stopReason: z.enum(['stop', 'tool_calls', 'length', 'content_filter', 'refusal', 'pause_turn']).optional(),
    usage: usage.default(noUsage),
    responseId: z.string().optional(),
  });

  const storedMessage = z.union([
    userMessage,
    assistantMessage,
    z.looseObject({
      role: z.literal('tool'),
      content: z.array(z.union([toolResult, z.looseObject({ ref: z.string() })])),
    }),
    z.strictObject({ input: z.string(), n: count }),
  ]);

  const budget = z.looseObject({
    tokens: z.number().optional(),
    costUsd: z.number().optional(),
    timeMs: z.number().optional(),
  });

  /** A turn's input as the machine's snapshot holds it (its messages may be left out: the input record has them). */
  const turnInput = z.looseObject({ inputId: z.string(), messages: z.array(userMessage), expectsOutput: z.boolean() });

  /** The agent machine's persisted snapshot: its context as the restore reads it (the state value is the machine's). */
  const agentSnapshot = z.looseObject({
    status: z.enum(['active', 'done', 'error', 'stopped']),
    value: z.union([z.string(), z.record(z.string(), z.unknown())]),
    historyValue: z.record(z.string(), z.unknown()),
    children: z.record(z.string(), z.unknown()),
    context: z.looseObject({
      agentId: z.string(),
      maxSteps: z.number(),
      maxOutputAttempts: z.number(),
      wakeOnNotification: z.boolean(),
      turn: count,
      step: count,
      batch: count,
      current: turnInput.optional(),
      queue: z.array(turnInput),
      injections: z.array(userMessage),
      calls: z.array(
        z.looseObject({
          call: z.looseObject({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) }),
          status: z.enum(['open', 'awaiting', 'done']),
          result: toolResult.optional(),
        }),
      ),
      outputAttempts: count,
      supervising: z.boolean(),
    }),
  });

  /** A SerializedError: what a turn's or a task's failure is journaled as. */
  const serializedError = z.looseObject({ name: z.string(), code: z.string(), message: z.string() });
  const base = { a: z.string() };
  const seq = { s: z.number().int(), a: z.string() };

  return {
    session: z.looseObject({
      v: z.number(),
      id: z.string(),
      agentId: z.string(),
      title: z.string().optional(),
      t: time,
      forkOf: z.looseObject({ id: z.string(), atSeq: z.number() }).optional(),
    }),
    input: z.looseObject({
      ...base,
      inputId: z.string(),
      messages: z.array(userMessage),
      expectsOutput: z.boolean(),
      budget: budget.optional(),
    }),
    dropped: z.looseObject({ ...base, inputId: z.string() }),
    msg: z.looseObject({ ...seq, i: count, turn: count, step: count, m: storedMessage }),
    tool_start: z.looseObject({ ...seq, id: z.string(), name: z.string() }),
    tool_end: z.looseObject({ ...seq, id: z.string(), result: toolResult }),
    asked: z.looseObject({ ...seq, id: z.string() }),
    approval: z.looseObject({ ...base, id: z.string(), approved: z.boolean(), reason: z.string().optional() }),
    turn_start: z.looseObject({
      ...seq,
      turn: count,
      inputId: z.string(),
      t: time,
      p: z
        .object({
          system: z.string().optional(),
          tools: z.record(z.string(), z.object({ d: z.string(), s: z.string() })),
        })
        .optional(),
    }),
    turn_end: z.looseObject({
      ...seq,
      turn: count,
      inputId: z.string(),
      stopReason: z.enum([
        'completed',
        'max_steps',
        'repetition',
        'interrupted',
        'error',
        'guardrail_tripped',
        'budget_exhausted',
      ]),
      usage,
      error: serializedError.optional(),
      t: time,
    }),
    run: z.looseObject({ ...seq, running: z.boolean(), t: time }),
    snapshot: z.looseObject({
      ...base,
      v: z.number(),
      n: count,
      snapshot: agentSnapshot,
    }),
    steer: z.looseObject({ ...base, n: count, message: userMessage }),
    batch: z.looseObject({
      ...base,
      batchId: z.string(),
      call: z.string().optional(),
      background: z.boolean(),
      join: z.looseObject({ kind: z.string(), k: z.number().optional() }).optional(),
      budget: budget.optional(),
      supervision: z.looseObject({}).optional(),
      tasks: z.array(
        z.looseObject({ taskId: z.string(), agentId: z.string(), profile: z.string(), prompt: z.string() }),
      ),
    }),
    task: z.looseObject({
      ...base,
      taskId: z.string(),
      agentId: z.string(),
      ev: z.enum(['started', 'settled']),
      attempt: count.optional(),
      status: z.string().optional(),
      text: z.string().optional(),
      output: z.unknown().optional(),
      error: serializedError.optional(),
    }),
    verdict: z.looseObject({
      ...base,
      batchId: z.string(),
      taskId: z.string(),
      attempt: count,
      failure: z.string(),
      v: z.enum(['restart', 'resume', 'stop', 'escalate']),
      restarted: z.array(z.string()).optional(),
      delayMs: z.number().nonnegative().optional(),
      because: z.string().optional(),
      text: z.string().optional(),
      t: time,
    }),
    notice: z.looseObject({ ...base, taskId: z.string() }),
    compaction: z.looseObject({ ...seq, base: count, first: count.optional(), note: userMessage }),
    schedule: z.looseObject({
      ...base,
      id: z.string(),
      ev: z.enum(['created', 'ran', 'skipped', 'missed', 'cancelled']),
      t: time,
      cron: z.string().optional(),
      prompt: z.union([z.string(), z.array(userContent)]).optional(),
      timezone: z.string().optional(),
      overlap: z.enum(['skip', 'queue']).optional(),
      count: count.optional(),
      first: time.optional(),
    }),
    remember: z.looseObject({ ...base, id: z.string(), rules: z.array(z.string()) }),
  } satisfies Record<JournalRecord['k'], z.ZodType>;
}

/**
 * A record of a kind this build knows as its schema reads it (a default filled in), or its first problem: where,
 * and what. A kind this build does not know passes as it is (readers skip it).
 */
function checked(kind: string, value: object): { record: JournalRecord } | { problem: string } {
  const kinds = recordKinds();
  const schema = (kinds as Record<string, z.ZodType | undefined>)[kind];
  if (!schema || !Object.hasOwn(kinds, kind)) return { record: value as JournalRecord };
  const result = schema.safeParse(value);
  if (result.success) return { record: result.data as JournalRecord };
  const [issue] = result.error.issues;
  if (!issue) return { problem: `a "${kind}" record of the wrong shape` };
  const where = issue.path.length > 0 ? issue.path.join('.') : 'the record';
  return { problem: `a "${kind}" record whose ${where} is wrong: ${issue.message}` };
}

/** One record's text read: the record, or what is wrong with it (`torn`: not whole JSON, as a crash mid-write leaves). */
export type DecodedRecord = { record: JournalRecord } | { problem: string; torn: boolean };

/**
 * Parses one record's text and checks its shape. A kind this build does not know (a kind added within the same
 * journal version, say a compaction) is a well-formed record that readers skip. A whole JSON object of a known kind
 * with a field of the wrong type is not what a crash leaves (a cut line is never whole JSON): it is damage.
 */
export function readRecord(text: string): DecodedRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: 'not a whole JSON record', torn: true };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { problem: 'not a JSON object', torn: false };
  }
  const kind = (value as { k?: unknown }).k;
  if (typeof kind !== 'string' || kind === '') return { problem: 'a record without a kind', torn: false };
  const result = checked(kind, value);
  return 'problem' in result ? { ...result, torn: false } : result;
}

/** A record's text parsed and checked (see {@link readRecord}); undefined when it is not a well-formed record. */
export function decodeRecord(text: string): JournalRecord | undefined {
  const decoded = readRecord(text);
  return 'record' in decoded ? decoded.record : undefined;
}
