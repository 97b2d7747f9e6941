import type { ContextRetryReason, Message, ModelError } from '../protocol/index.js';

// What providers say when the history itself is what they refuse: a result without its call or the reverse,
// roles out of order, empty content, a signature that does not verify. Other 400s (an unknown parameter, a bad
// model name) would fail again with any history, so they are not retried.
const HISTORY_PROBLEM =
  /tool_use|tool_result|tool_call|function_call|call_id|messages\.\d|roles? must alternate|must be followed by|preceding|empty content|non-empty|must not be empty|thinking|signature|reasoning item|assistant message/i;

/** Why a refused request may pass with a different projection, or undefined when it would not. */
export function retryReasonFor(error: ModelError, messages: readonly Message[]): ContextRetryReason | undefined {
  if (error.status === 413 && hasImages(messages)) return 'media';
  if (error.code === 'invalid_request' && (error.status === 400 || error.status === undefined)) {
    return HISTORY_PROBLEM.test(error.message) ? 'history' : undefined;
  }
  return undefined;
}

function hasImages(messages: readonly Message[]): boolean {
  for (const message of messages) {
    for (const part of message.content) {
      if (part.type === 'image') return true;
      if (part.type === 'tool_result' && part.content.some((item) => item.type === 'image')) return true;
    }
  }
  return false;
}
