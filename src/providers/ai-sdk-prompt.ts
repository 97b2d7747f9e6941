import type {
  JSONSchema7,
  LanguageModelV3CallOptions,
  LanguageModelV3Prompt,
  LanguageModelV4CallOptions,
  LanguageModelV4Prompt,
  SharedV4ProviderOptions,
} from '@ai-sdk/provider';
import type { ImagePart, JsonValue, ModelRequest, ProviderData, ReasoningEffort } from '../protocol/index.js';
import { sameOrigin, toolResultImages, toolResultText, toolSchema } from './shared.js';

/** The model the request goes to: reasoning metadata and thought signatures go back only to the one that made them. */
export interface Origin {
  provider: string;
  model: string;
}

export interface CallSettings {
  /** Reasoning effort when the request asks for none. */
  reasoning?: ReasoningEffort;
  providerOptions?: SharedV4ProviderOptions;
  headers?: Record<string, string>;
}

type V4Message = LanguageModelV4Prompt[number];
type V4Assistant = Extract<V4Message, { role: 'assistant' }>['content'][number];
type V4ToolResult = Extract<Extract<V4Message, { role: 'tool' }>['content'][number], { type: 'tool-result' }>;
type V4Output = V4ToolResult['output'];
type V4File = Extract<V4Assistant, { type: 'file' }>;

/**
 * The spec's call options for a ModelRequest.
 * Mapped: system (a `system` message), messages, images (file parts: base64 data or a URL), tools (their JSON
 * Schema as it is), toolChoice, maxTokens (`maxOutputTokens`), temperature, reasoning effort (the spec's own
 * `reasoning` option, which each provider maps to its API), outputSchema (`responseFormat: json`), and the
 * caller's `providerOptions` and `headers`.
 * Replayed only to the same provider and model: reasoning parts and the provider metadata of reasoning and tool
 * calls (Gemini's thought signatures), as the providerOptions the provider reads back.
 * Ignored: opaque parts and `details` of tool results. An error result goes as `error-text`; a result with images
 * as `content` with file parts.
 */
export function callOptions(
  request: ModelRequest,
  origin: Origin,
  settings: CallSettings,
  signal: AbortSignal,
): LanguageModelV4CallOptions {
  const prompt: LanguageModelV4Prompt = [];
  if (request.system) prompt.push({ role: 'system', content: request.system });
  for (const message of request.messages) {
    if (message.role === 'user') {
      prompt.push({
        role: 'user',
        content: message.content.map((part) => (part.type === 'text' ? { type: 'text', text: part.text } : file(part))),
      });
    } else if (message.role === 'assistant') {
      const content: V4Assistant[] = [];
      for (const part of message.content) {
        if (part.type === 'text') {
          if (part.text) content.push({ type: 'text', text: part.text });
        } else if (part.type === 'reasoning') {
          // Reasoning is the model's own: another model gets none of it (it would read it as its own thoughts).
          if (sameOrigin(part.opaque, origin.provider, origin.model))
            content.push({ type: 'reasoning', text: part.text, ...replayed(part.opaque, origin) });
        } else if (part.type === 'tool_call') {
          content.push({
            type: 'tool-call',
            toolCallId: part.id,
            toolName: part.name,
            input: part.arguments,
            ...replayed(part.opaque, origin),
          });
        }
      }
      if (content.length > 0) prompt.push({ role: 'assistant', content });
    } else {
      prompt.push({
        role: 'tool',
        content: message.content.map((part) => ({
          type: 'tool-result',
          toolCallId: part.toolCallId,
          toolName: part.toolName,
          output: toolOutput(toolResultText(part), toolResultImages(part), part.isError),
        })),
      });
    }
  }

  const options: LanguageModelV4CallOptions = { prompt, abortSignal: signal };
  if (request.tools.length > 0) {
    options.tools = request.tools.map((tool) => ({
      type: 'function',
      name: tool.name,
      description: tool.description,
      inputSchema: toolSchema(tool.inputSchema) as JSONSchema7,
    }));
    const choice = request.toolChoice;
    if (choice)
      options.toolChoice = typeof choice === 'string' ? { type: choice } : { type: 'tool', toolName: choice.name };
  }
  if (request.maxTokens !== undefined) options.maxOutputTokens = request.maxTokens;
  if (request.temperature !== undefined) options.temperature = request.temperature;
  const effort = request.reasoning?.effort ?? settings.reasoning;
  if (effort) options.reasoning = effort;
  if (request.outputSchema) {
    options.responseFormat = {
      type: 'json',
      name: request.outputSchema.name,
      schema: toolSchema(request.outputSchema.schema) as JSONSchema7,
    };
  }
  if (settings.providerOptions) options.providerOptions = settings.providerOptions;
  if (settings.headers) options.headers = settings.headers;
  return options;
}

function file(image: ImagePart): V4File {
  const { source } = image;
  return source.kind === 'url'
    ? { type: 'file', mediaType: 'image', data: { type: 'url', url: new URL(source.url) } }
    : { type: 'file', mediaType: source.mediaType, data: { type: 'data', data: source.data } };
}

function toolOutput(text: string, images: ImagePart[], isError: boolean): V4Output {
  if (images.length === 0) return isError ? { type: 'error-text', value: text } : { type: 'text', value: text };
  const value: Extract<V4Output, { type: 'content' }>['value'] = [];
  if (text) value.push({ type: 'text', text: isError ? `Error: ${text}` : text });
  for (const image of images) value.push(file(image));
  return { type: 'content', value };
}

/** Provider metadata kept from the model's stream, handed back as the providerOptions it reads (same origin only). */
function replayed(data: ProviderData | undefined, origin: Origin): { providerOptions?: SharedV4ProviderOptions } {
  const value = data?.data;
  if (!sameOrigin(data, origin.provider, origin.model) || !isOptions(value)) return {};
  return { providerOptions: value as SharedV4ProviderOptions };
}

/** Provider options are an object of objects, one per provider; anything else was not kept by this adapter. */
function isOptions(value: JsonValue | undefined): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const entries = Object.values(value);
  return (
    entries.length > 0 && entries.every((entry) => typeof entry === 'object' && entry !== null && !Array.isArray(entry))
  );
}

/**
 * The same call for a model of the previous version of the spec, which names a file by its data alone (a URL, or
 * base64 text), has its own tool-result image parts and knows no `reasoning` option (a V3 provider takes
 * reasoning through its providerOptions). Only the forms {@link callOptions} makes are converted.
 */
export function v3CallOptions(options: LanguageModelV4CallOptions): LanguageModelV3CallOptions {
  const { reasoning: _reasoning, prompt, ...rest } = options;
  const v3 = prompt.map((message) => {
    if (message.role === 'user') {
      const content = message.content.map((part) => (part.type === 'file' ? v3File(part) : part));
      return { ...message, content };
    }
    if (message.role !== 'tool') return message;
    const content = message.content.map((part) => {
      if (part.type !== 'tool-result' || part.output.type !== 'content') return part;
      const value = part.output.value.map((item) => {
        if (item.type !== 'file') return item;
        const { data, mediaType } = v3File(item);
        return data instanceof URL
          ? { type: 'image-url', url: data.href }
          : { type: 'image-data', mediaType, data: typeof data === 'string' ? data : '' };
      });
      return { ...part, output: { type: 'content', value } };
    });
    return { ...message, content };
  });
  return { ...rest, prompt: v3 as LanguageModelV3Prompt };
}

function v3File(part: V4File): { type: 'file'; mediaType: string; data: string | Uint8Array | URL } {
  const { data, mediaType } = part;
  if (data.type === 'url')
    return { type: 'file', mediaType: mediaType.includes('/') ? mediaType : `${mediaType}/*`, data: data.url };
  return { type: 'file', mediaType, data: data.type === 'data' ? data.data : '' };
}
