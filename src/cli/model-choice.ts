/** Which model `troupe run` uses: flags first, then TROUPE_MODEL / TROUPE_PROVIDER, then whichever key is set. */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { Model } from '../protocol/index.js';
import { anthropic, openai } from '../providers/index.js';

export type ProviderName = 'openai' | 'anthropic';

/** A choice that cannot work, said in one line. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Node's `parseArgs`, its errors as usage errors: the first sentence (the rest goes on about positionals after '--'). */
export function parseCommandLine<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message.split(/\.\s/)[0] ?? 'bad arguments');
  }
}

export interface ModelChoice {
  provider?: string;
  model?: string;
  env: NodeJS.ProcessEnv;
}

const DEFAULT_MODELS: Record<ProviderName, string> = { openai: 'gpt-5-mini', anthropic: 'claude-sonnet-4-5' };

/** The provider a model name belongs to, when the name says so. */
function providerOf(model: string): ProviderName | undefined {
  if (/^claude-/.test(model)) return 'anthropic';
  if (/^(gpt-|o\d|chatgpt-|codex-)/.test(model)) return 'openai';
  return undefined;
}

/** The `--provider` name that chooses `model` again (the adapter's own name says which API, e.g. `openai-chat`). */
export function providerNameOf(model: Model): ProviderName {
  return model.provider === 'anthropic' ? 'anthropic' : 'openai';
}

export function chooseModel(choice: ModelChoice): Model {
  const { env } = choice;
  const requested = choice.provider ?? env.TROUPE_PROVIDER;
  if (requested !== undefined && requested !== 'openai' && requested !== 'anthropic') {
    throw new UsageError(`unknown provider "${requested}": use openai or anthropic`);
  }
  const modelName = choice.model ?? env.TROUPE_MODEL;
  // A compatible server (OPENAI_BASE_URL) serves models of any name through the openai adapter.
  const compatible = Boolean(env.OPENAI_BASE_URL);
  let provider: ProviderName | undefined = requested;
  if (!provider && modelName) {
    provider = providerOf(modelName) ?? (compatible ? 'openai' : undefined);
    if (!provider) {
      throw new UsageError(
        `unknown model "${modelName}": pass --provider openai|anthropic (or set OPENAI_BASE_URL for a compatible server)`,
      );
    }
  }
  if (!provider) {
    if (env.ANTHROPIC_API_KEY && !env.OPENAI_API_KEY) provider = 'anthropic';
    else if (env.OPENAI_API_KEY || compatible) provider = 'openai';
    else {
      throw new UsageError('no API key: set OPENAI_API_KEY or ANTHROPIC_API_KEY, or run offline with --offline');
    }
  }
  const keyName = provider === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY';
  if (!env[keyName] && !(provider === 'openai' && compatible)) {
    throw new UsageError(`no API key for ${provider}: set ${keyName}, or run offline with --offline`);
  }
  const model = modelName ?? DEFAULT_MODELS[provider];
  // The key and address come from the environment this command was given (which a caller may set apart from the
  // process's own), not from whatever the SDK would find in process.env.
  const apiKey = env[keyName];
  if (provider === 'anthropic') return anthropic({ model, ...(apiKey ? { apiKey } : {}) });
  // A local compatible server often wants no key; the SDK still needs one to send, so it gets a placeholder.
  const key = apiKey || (compatible ? 'no-key' : undefined);
  return openai({ model, ...(key ? { apiKey: key } : {}), ...(compatible ? { baseURL: env.OPENAI_BASE_URL } : {}) });
}
