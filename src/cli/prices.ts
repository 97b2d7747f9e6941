/**
 * Cost per agent for the live view, priced from the context's model table (the one every usage event uses), so
 * that the command and the library never disagree on a price. The offline scripted team costs nothing.
 */
import { type ModelInfo, modelInfo, costOf as priced } from '../context/index.js';
import type { Usage } from '../index.js';

const FREE: Record<string, Partial<ModelInfo>> = {
  offline: { contextWindow: 1_000_000, prices: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 } },
};

/** The cost of some usage on a model, or undefined when its price is not known. */
export function costOf(model: string, usage: Usage): number | undefined {
  return priced(usage, modelInfo(model, FREE)?.prices);
}
