/**
 * What the context layer reports: repairs the projection made to the history it sends (the stored history is
 * never changed), and compaction. Kept here so that events can name them and every layer can read them.
 */
export type ContextRepair =
  /** A tool result that was stored away from its call was sent right after the call. */
  | { kind: 'late_result_moved'; toolCallId: string; toolName: string }
  /** A tool call with no result anywhere got an error result saying so. */
  | { kind: 'missing_result'; toolCallId: string; toolName: string }
  /** A result whose call is nowhere in the history (or a second result for one call) was left out. */
  | { kind: 'orphan_result_dropped'; toolCallId: string; toolName: string }
  /** Adjacent user messages were sent as one (providers that want roles to alternate). */
  | { kind: 'user_messages_merged'; count: number }
  /** Empty text parts (and messages left with nothing) were left out. */
  | { kind: 'empty_text_dropped'; count: number }
  /** Provider-specific parts (signatures, encrypted reasoning) were left out by a strict projection. */
  | { kind: 'opaque_dropped'; count: number }
  /** Images were replaced by a note after the provider refused the request's size. */
  | { kind: 'images_replaced'; count: number }
  /**
   * The provider gave a tool call an id the agent's history (or the same answer) already holds: the call was
   * given its own, `toolCallId` (the provider's with a suffix), by which it is paired, journaled and replayed.
   */
  | { kind: 'call_id_reused'; toolCallId: string; providerId: string; toolName: string };

/** Why a request was sent again with a different projection. */
export type ContextRetryReason = 'history' | 'media';

export type CompactionReason = 'threshold' | 'overflow';
