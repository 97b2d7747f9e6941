export { type AiSdkOptions, aiSdkModel } from './ai-sdk.js';
export { type AnthropicOptions, anthropic } from './anthropic.js';
export { classifyError, errorFromBody, retryAfterMs, shouldRetryHint } from './http-errors.js';
export { type OpenAIOptions, openai } from './openai.js';
export {
  type Script,
  type ScriptedAnswer,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedToolCall,
  type ScriptStep,
  scriptedModel,
} from './scripted.js';
