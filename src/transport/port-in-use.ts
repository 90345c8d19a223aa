/** The port to listen on is taken by another program. */
export class PortInUseError extends Error {
  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    super(`port ${port} on ${host} is already in use by another program; choose another port (--port N, or "port" of the tcp channel in service.json)`);
    this.name = 'PortInUseError';
  }
}
