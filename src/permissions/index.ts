export { chainPolicies, type Decision, Permissions, type PermissionsConfig } from './permissions.js';
export { PermissionRuleError, parseRule } from './rules.js';
export { type ParsedShell, parseShell, type SimpleCommand } from './shell.js';
export type { AgentInfo, PermissionMode, Policy, PolicyAnswer, RuleArgument, ToolTraits } from './types.js';
