import type OpenAI from 'openai';
import type { Model, ModelEvent, ModelRequest, ReasoningEffort } from '../protocol/index.js';
import { redactError, registerSecret } from '../protocol/index.js';
import { type ClassifyContext, classifyError } from './http-errors.js';
import { chatEvents, chatRequestBody } from './openai-chat.js';
import { responsesEvents, responsesRequestBody } from './openai-responses.js';
import { apiKeyFrom, lazyClient } from './shared.js';

/**
 * What `openai()` takes: the model id, the key and endpoint (OpenAI or any compatible server), which API to speak, and
 * its reasoning and output settings.
 */
export interface OpenAIOptions {
  /** The model id sent to the API, e.g. `gpt-5` or `deepseek-chat`. */
  model: string;
  /** Defaults to `OPENAI_API_KEY`. */
  apiKey?: string;
  /**
   * An OpenAI-compatible server (DeepSeek, vLLM, Ollama, OpenRouter, a gateway …), e.g. `http://localhost:8000/v1`.
   * Defaults to `OPENAI_BASE_URL`, as in the SDK.
   */
  baseURL?: string;
  /** Responses by default for OpenAI itself (no `baseURL`), Chat Completions by default for compatible servers. */
  api?: 'responses' | 'chat';
  /** Reasoning effort when the agent asks for none. */
  reasoning?: ReasoningEffort;
  /** Responses: reasoning summaries to ask for when reasoning is on (default `auto`; `false` for none). */
  reasoningSummary?: 'auto' | 'concise' | 'detailed' | false;
  /** Responses: `false` keeps nothing on OpenAI's side and carries reasoning encrypted in the history. */
  store?: boolean;
  /** Chat: which field carries `maxTokens` (default `max_completion_tokens` for OpenAI, `max_tokens` elsewhere). */
  maxTokensField?: 'max_completion_tokens' | 'max_tokens';
  /** Chat: how `outputSchema` is asked for (default `json_schema` for OpenAI, `json_object` elsewhere). */
  structuredOutput?: 'json_schema' | 'json_object' | false;
  /** Chat: ask for the final usage chunk (default true). */
  includeUsage?: boolean;
  /** Chat: strict mode for strict-compatible tool schemas (default true for OpenAI, false for compatible servers). */
  strictTools?: boolean;
  /** The name messages and opaque parts are tagged with (default `openai`, or `openai-chat` for Chat Completions). */
  provider?: string;
  organization?: string;
  project?: string;
  defaultHeaders?: Record<string, string>;
  /** Per-request timeout of the SDK, in ms (the SDK default is 10 minutes). */
  timeoutMs?: number;
  /** Extra request body fields, merged over ours (for a compatible server's own options). */
  extraBody?: Record<string, unknown>;
  /** Use this client instead of making one (retries are still turned off per request). */
  client?: OpenAI;
}

/**
 * A model behind the OpenAI API (Responses or Chat Completions) or any OpenAI-compatible server.
 * Everything is streamed; failures are thrown as classified ModelErrors. The SDK's own retries are off
 * (`maxRetries: 0`): the runtime's retry policy is the only one. The abort signal goes to the SDK, so an
 * interrupt closes the HTTP request at once.
 */
export function openai(options: OpenAIOptions): Model {
  // The SDK falls back to OPENAI_BASE_URL, so the defaults follow where the requests will really go.
  const baseURL = options.baseURL ?? (options.client ? undefined : process.env.OPENAI_BASE_URL || undefined);
  const api = options.api ?? (baseURL ? 'chat' : 'responses');
  const provider = options.provider ?? (api === 'responses' ? 'openai' : 'openai-chat');
  const ctx: ClassifyContext = { provider, label: api === 'responses' ? 'OpenAI Responses' : 'Chat Completions' };
  const own = !baseURL;
  // Known from now on to every error this process reports and to the inspector's sanitiser.
  registerSecret(options.apiKey ?? options.client?.apiKey ?? undefined);
  // The SDK is imported on the first request (~17 MB of memory, tens of ms of start-up, otherwise paid by every user).
  const getClient = lazyClient({ name: 'openai', feature: 'openai()' }, options.client, () => {
    const apiKey = apiKeyFrom(options.apiKey, 'OPENAI_API_KEY', ctx);
    return import('openai').then(
      ({ default: OpenAI }) =>
        new OpenAI({
          apiKey,
          maxRetries: 0,
          ...(baseURL ? { baseURL } : {}),
          ...(options.organization ? { organization: options.organization } : {}),
          ...(options.project ? { project: options.project } : {}),
          ...(options.defaultHeaders ? { defaultHeaders: options.defaultHeaders } : {}),
          ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}),
        }),
    );
  });

  async function* stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<ModelEvent> {
    try {
      const sdk = await getClient();
      const requestOptions = { signal, maxRetries: 0 };
      if (api === 'responses') {
        const body = responsesRequestBody(request, {
          provider,
          model: options.model,
          store: options.store,
          reasoning: options.reasoning,
          reasoningSummary: options.reasoningSummary ?? 'auto',
          extraBody: options.extraBody,
        });
        const events = await sdk.responses.create(body, requestOptions);
        yield* responsesEvents(events, { provider, model: options.model }, ctx, signal);
      } else {
        const body = chatRequestBody(
          options.reasoning && !request.reasoning ? { ...request, reasoning: { effort: options.reasoning } } : request,
          {
            provider,
            model: options.model,
            maxTokensField: options.maxTokensField ?? (own ? 'max_completion_tokens' : 'max_tokens'),
            structuredOutput: options.structuredOutput ?? (own ? 'json_schema' : 'json_object'),
            includeUsage: options.includeUsage ?? true,
            strictTools: options.strictTools ?? own,
            extraBody: options.extraBody,
          },
        );
        const chunks = await sdk.chat.completions.create(body, requestOptions);
        yield* chatEvents(chunks, { provider, model: options.model }, ctx, signal);
      }
    } catch (error) {
      throw redactError(classifyError(ctx, error, signal));
    }
  }

  return { id: options.model, provider, stream };
}
