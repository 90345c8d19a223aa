/** Why a tunnel frame was refused. Messages never hold key material or plaintext. */
export type E2EFailure = 'malformed' | 'version' | 'decrypt' | 'closed' | 'key';

export class E2EError extends Error {
  constructor(
    readonly reason: E2EFailure,
    message: string,
  ) {
    super(message);
    this.name = 'E2EError';
  }
}
