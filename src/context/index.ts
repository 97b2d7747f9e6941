export { ContextEngine, type ContextOptions, type ContextWindowState } from './engine.js';
export {
  collectInstructions,
  instructionDirs,
  projectInstructions,
} from './instructions.js';
export { costOf, type ModelInfo, modelInfo, type Prices } from './models.js';
export { MISSING_RESULT, Projection, project } from './projection.js';
export { type SystemPart, type SystemPrompt, SystemPromptParts } from './system-prompt.js';
