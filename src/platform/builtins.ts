/**
 * Node's builtins that nothing before the service listens needs, required at their first use (one home
 * for them). An `import` of a builtin is a `require` where its module sits in the bundle, that is when the
 * bundle starts: child_process, dns and readline cost about 3 ms of the service thread's load (issue 25,
 * "editor activation"), though only a git, a tool's process, an MCP server or a push use them.
 */
export const childProcess = () => require('node:child_process') as typeof import('node:child_process');
export const dns = () => require('node:dns') as typeof import('node:dns');
export const readline = () => require('node:readline') as typeof import('node:readline');
