export { chainPolicies, type Decision, Permissions, type PermissionsConfig } from './permissions.js';
export { PermissionRuleError, parseRule } from './rules.js';
export { parseShell } from './shell.js';
export type { AgentInfo, PermissionMode, Policy, PolicyAnswer, ToolTraits } from './types.js';
