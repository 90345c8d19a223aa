// What the MCP client uses of the MCP SDK, in one module that is required on a server's first start
// (mcp-sdk.ts), not at the service's: the SDK, its zod schemas and ajv are a good part of a start's
// work, and the build keeps this module in a file of its own (esbuild.mjs).
export { Client } from '@modelcontextprotocol/sdk/client/index.js';
export { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
export { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
export { ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
