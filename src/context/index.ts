export { ContextEngine, type ContextOptions, type ContextWindowState } from './engine.js';
export {
  collectInstructions,
  type InstructionFile,
  instructionDirs,
  type ProjectInstructionsOptions,
  projectInstructions,
} from './instructions.js';
export { costOf, type ModelInfo, modelInfo, type Prices } from './models.js';
export { MISSING_RESULT, Projection, project } from './projection.js';
export { type SystemPart, type SystemPartContext, type SystemPrompt, SystemPromptParts } from './system-prompt.js';
