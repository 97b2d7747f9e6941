/**
 * Picks the model the examples run on: a real one when an API key is set, else the offline scripted model.
 *
 *   OPENAI_API_KEY=…     OpenAI (Responses API), or any compatible server with OPENAI_BASE_URL (Chat Completions)
 *   ANTHROPIC_API_KEY=…  Anthropic Messages
 *   TROUPE_PROVIDER=anthropic|openai   which one, when both keys are set
 *   TROUPE_MODEL=…       the model id (defaults: gpt-5-mini, claude-sonnet-4-5)
 */
import { anthropic, type Model, openai, scriptedModel } from '../src/index.js';
import type { Script } from '../src/testing/index.js';

export function modelFromEnv(offlineScript: Script): { model: Model; note: string } {
  const wanted = process.env.TROUPE_PROVIDER;
  const openaiKey = process.env.OPENAI_API_KEY;
  const anthropicKey = process.env.ANTHROPIC_API_KEY;
  if (anthropicKey && (wanted === 'anthropic' || !openaiKey)) {
    const id = process.env.TROUPE_MODEL ?? 'claude-sonnet-4-5';
    return { model: anthropic({ model: id, apiKey: anthropicKey }), note: `Anthropic Messages, ${id}` };
  }
  if (openaiKey) {
    const baseURL = process.env.OPENAI_BASE_URL;
    const id = process.env.TROUPE_MODEL ?? 'gpt-5-mini';
    const model = openai({ model: id, apiKey: openaiKey, ...(baseURL ? { baseURL } : {}) });
    return { model, note: baseURL ? `Chat Completions at ${baseURL}, ${id}` : `OpenAI Responses, ${id}` };
  }
  return {
    model: scriptedModel(offlineScript),
    note: 'offline on the scripted model (set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real one)',
  };
}
