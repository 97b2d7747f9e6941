import { createHash } from 'node:crypto';
import type { ToolSpec } from '../../protocol/index.js';
import type { PromptDigest } from '../../session/index.js';

/**
 * The digest an agent's turn journals of the prompt parts its code sets (see {@link PromptDigest}), made once per
 * distinct system text and tool list: a turn whose parts are the same objects as the last one's costs two
 * comparisons. Only digests are kept, so no text of a prompt or schema (nor any secret in it) reaches the journal.
 */
export class PromptDigests {
  private system?: string;
  private specs?: readonly ToolSpec[];
  private last?: PromptDigest;

  /** The digest for a turn, or undefined when it is the one the agent's previous turn journaled. */
  next(system: string | undefined, specs: readonly ToolSpec[]): PromptDigest | undefined {
    if (this.last && system === this.system && specs === this.specs) return undefined;
    const digest: PromptDigest = {
      tools: Object.fromEntries(
        specs.map((spec) => [spec.name, { d: hash(spec.description), s: hash(JSON.stringify(spec.inputSchema)) }]),
      ),
    };
    if (system !== undefined) digest.system = hash(system);
    const same = this.last !== undefined && JSON.stringify(digest) === JSON.stringify(this.last);
    [this.system, this.specs, this.last] = [system, specs, digest];
    return same ? undefined : digest;
  }
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 16);
}
