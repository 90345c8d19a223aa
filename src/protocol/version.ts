/**
 * The protocol's version, told in the hello (the `auth` reply) and sent by clients in their `auth`:
 * 1 was every build before the hello carried it; 2 added client_message_id, queued messages and the hello.
 * Raise it when a client of the previous version would misread or miss what the service sends.
 * Written without zod: the page bundle takes it in with the shared client (protocol/client.ts).
 */
export const PROTOCOL_VERSION = 2;

/** What the hello adds to the `auth` reply: our version and build, and who must update when the client speaks another version. */
export function helloOf(clientProtocol: number | undefined, serverBuild: string): { protocol: number; server_build: string; update?: 'client' | 'service' } {
  const hello = { protocol: PROTOCOL_VERSION, server_build: serverBuild };
  if (clientProtocol === undefined || clientProtocol === PROTOCOL_VERSION) return hello;
  return { ...hello, update: clientProtocol < PROTOCOL_VERSION ? 'client' : 'service' };
}
