export {
  type Script,
  type ScriptedAnswer,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedToolCall,
  type ScriptStep,
  scriptedModel,
} from './scripted.js';
