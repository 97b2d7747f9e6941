/**
 * Dollars per million tokens for the default models, so the live view can show a cost per agent. A seam: the
 * context work (issue 14) keeps the full, overridable table; this one covers only what `troupe run` picks itself.
 */
import type { Usage } from '../protocol/index.js';

const PER_MILLION: Record<string, { input: number; output: number; cacheRead: number; cacheWrite: number }> = {
  'gpt-5-mini': { input: 0.25, output: 2, cacheRead: 0.025, cacheWrite: 0 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6, cacheRead: 0.1, cacheWrite: 0 },
  'claude-sonnet-4-5': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  offline: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
};

/** The cost of some usage on a model, or undefined when its price is not known. */
export function costOf(model: string, usage: Usage): number | undefined {
  const price = PER_MILLION[model];
  if (!price) return undefined;
  return (
    (usage.input * price.input +
      usage.output * price.output +
      usage.cacheRead * price.cacheRead +
      usage.cacheWrite * price.cacheWrite) /
    1e6
  );
}
