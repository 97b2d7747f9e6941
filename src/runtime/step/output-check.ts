import type { WorkerReply } from '../../../machines/agent/index.js';
import { describeThrown, textOf } from '../../protocol/index.js';
import { describeIssues } from '../../tools/index.js';
import type { AgentEnv } from '../env/env.js';

/**
 * The structured-output check (the tool worker's CHECK_OUTPUT): a final answer must be a JSON object matching the
 * turn's `outputSchema`; the validated value waits on the pending turn for its result, and a failure is feedback
 * the model gets for another try.
 */
export function checkOutput(env: AgentEnv, turn: number, inputId: string): WorkerReply {
  const schema = env.outputSpecFor(inputId)?.schema;
  const pending = env.pending.get(inputId);
  const last = env.transcript.messages[env.transcript.length - 1];
  if (!schema) return { type: 'OUTPUT_CHECKED', turn, ok: true };
  const text = last?.role === 'assistant' ? textOf(last) : '';
  let json: unknown;
  try {
    json = JSON.parse(stripCodeFence(text));
  } catch (error) {
    return {
      type: 'OUTPUT_CHECKED',
      turn,
      ok: false,
      feedback: `Your final answer must be only a JSON object matching the schema, but it is not valid JSON (${describeThrown(error)}). Reply again with the JSON object alone.`,
    };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) {
    if (pending) pending.output = parsed.data;
    return { type: 'OUTPUT_CHECKED', turn, ok: true };
  }
  return {
    type: 'OUTPUT_CHECKED',
    turn,
    ok: false,
    feedback: `Your final answer does not match the schema:\n${describeIssues(parsed.error)}\nReply again with the corrected JSON object alone.`,
  };
}

function stripCodeFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/.exec(text);
  return fenced?.[1] ?? text.trim();
}
