import type { Usage } from '../protocol/index.js';

/** USD per million tokens. */
export interface Prices {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface ModelInfo {
  /** Tokens the model can take in one request, prompt and answer together. */
  contextWindow: number;
  /** The most the model writes in one answer. */
  maxOutput: number;
  prices?: Prices;
}

const M = 1_000_000;
const p = (input: number, output: number, cacheRead: number, cacheWrite = input): Prices => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});

/**
 * The providers' current models, by id prefix (dated snapshots such as `gpt-4o-2024-08-06` or
 * `claude-sonnet-4-5-20250929` match their family). Public list prices and limits at the time of writing: pass
 * `models` to `createAgent({ context })` to correct or extend them. Longest prefix wins, so `gpt-4o-mini` is not
 * priced as `gpt-4o`. OpenAI bills no cache writes (cacheWrite = input); Anthropic's are the 5-minute ones.
 */
const KNOWN: Record<string, ModelInfo> = {
  'gpt-5': { contextWindow: 400_000, maxOutput: 128_000, prices: p(1.25, 10, 0.125) },
  'gpt-5-mini': { contextWindow: 400_000, maxOutput: 128_000, prices: p(0.25, 2, 0.025) },
  'gpt-5-nano': { contextWindow: 400_000, maxOutput: 128_000, prices: p(0.05, 0.4, 0.005) },
  'gpt-4.1': { contextWindow: 1_047_576, maxOutput: 32_768, prices: p(2, 8, 0.5) },
  'gpt-4.1-mini': { contextWindow: 1_047_576, maxOutput: 32_768, prices: p(0.4, 1.6, 0.1) },
  'gpt-4.1-nano': { contextWindow: 1_047_576, maxOutput: 32_768, prices: p(0.1, 0.4, 0.025) },
  'gpt-4o': { contextWindow: 128_000, maxOutput: 16_384, prices: p(2.5, 10, 1.25) },
  'gpt-4o-mini': { contextWindow: 128_000, maxOutput: 16_384, prices: p(0.15, 0.6, 0.075) },
  o3: { contextWindow: 200_000, maxOutput: 100_000, prices: p(2, 8, 0.5) },
  'o4-mini': { contextWindow: 200_000, maxOutput: 100_000, prices: p(1.1, 4.4, 0.275) },
  'claude-opus-4-5': { contextWindow: 200_000, maxOutput: 64_000, prices: p(5, 25, 0.5, 6.25) },
  'claude-opus-4-1': { contextWindow: 200_000, maxOutput: 32_000, prices: p(15, 75, 1.5, 18.75) },
  'claude-opus-4': { contextWindow: 200_000, maxOutput: 32_000, prices: p(15, 75, 1.5, 18.75) },
  'claude-sonnet-4-5': { contextWindow: 200_000, maxOutput: 64_000, prices: p(3, 15, 0.3, 3.75) },
  'claude-sonnet-4': { contextWindow: 200_000, maxOutput: 64_000, prices: p(3, 15, 0.3, 3.75) },
  'claude-haiku-4-5': { contextWindow: 200_000, maxOutput: 64_000, prices: p(1, 5, 0.1, 1.25) },
  'claude-3-7-sonnet': { contextWindow: 200_000, maxOutput: 64_000, prices: p(3, 15, 0.3, 3.75) },
  'claude-3-5-haiku': { contextWindow: 200_000, maxOutput: 8_192, prices: p(0.8, 4, 0.08, 1) },
};

/** The table's entry for each model id asked about: every agent asks once, and a swarm's agents share a model. */
const known = new Map<string, ModelInfo | undefined>();
const MAX_KNOWN = 256;

/** What is known about a model id: the table, with `overrides` (by exact id or prefix) taking precedence. */
export function modelInfo(id: string, overrides?: Record<string, Partial<ModelInfo>>): ModelInfo | undefined {
  let base = known.get(id);
  if (base === undefined && !known.has(id)) {
    base = longestPrefix(KNOWN, id);
    if (known.size < MAX_KNOWN) known.set(id, base);
  }
  const own = overrides ? longestPrefix(overrides, id) : undefined;
  if (!own) return base;
  const merged = { ...base, ...own };
  return merged.contextWindow === undefined
    ? undefined
    : { maxOutput: 8_192, ...merged, contextWindow: merged.contextWindow };
}

function longestPrefix<T>(table: Record<string, T>, id: string): T | undefined {
  const bare = id.includes('/') ? id.slice(id.lastIndexOf('/') + 1) : id; // `openai/gpt-4o` on gateways
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if ((bare === key || bare.startsWith(`${key}-`)) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table[best];
}

/** What `usage` cost in USD, or undefined when the model's prices are unknown. */
export function costOf(usage: Usage, prices: Prices | undefined): number | undefined {
  if (!prices) return undefined;
  return (
    (usage.input * prices.input +
      usage.output * prices.output +
      usage.cacheRead * prices.cacheRead +
      usage.cacheWrite * prices.cacheWrite) /
    M
  );
}
