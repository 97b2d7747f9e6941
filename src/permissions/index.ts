export { Permissions, type PermissionsConfig } from './permissions.js';
export { PermissionRuleError, parseRule } from './rules.js';
export { type ParsedShell, parseShell, type SimpleCommand } from './shell.js';
export type { PermissionMode, Policy, RuleArgument, ToolTraits } from './types.js';
