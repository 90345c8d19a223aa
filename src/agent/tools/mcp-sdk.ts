/** The MCP SDK's parts we use (mcp-sdk-modules.ts), loaded when first needed: a server started, an error read. */
export function mcpSdk(): typeof import('./mcp-sdk-modules') {
  return require('./mcp-sdk-modules') as typeof import('./mcp-sdk-modules');
}
